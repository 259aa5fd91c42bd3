"""Results -> text: JSON for tools, an aligned table or Markdown for people.

People get binary units (KiB, MiB, GiB, as the papers use) with the exact number beside them;
tools get the exact numbers alone.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import sympy
from rich.markup import escape
from rich.table import Table

from infoflow.results import Prediction, Result

_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def to_json(results: Sequence[Result]) -> str:
    """One JSON object for one result, an array for several (the CLI contract)."""
    data = [r.to_json() for r in results]
    return json.dumps(data[0] if len(data) == 1 else data, indent=2)


def format_bytes(count: int | float) -> str:
    """``786432`` -> ``768 KiB``; ``3221225472`` -> ``3 GiB`` (at most two decimals)."""
    value, power = float(count), 0
    while abs(value) >= 1024 and power < len(_BINARY_UNITS) - 1:
        value, power = value / 1024, power + 1
    return f"{_trim(value)} {_BINARY_UNITS[power]}"


def format_value(prediction: Prediction) -> str:
    """A prediction's value as a person reads it."""
    value, unit = prediction.value, prediction.unit
    if isinstance(value, bool) or not isinstance(value, int | float):
        return json.dumps(value) if isinstance(value, list) else str(value)
    if unit in ("B", "B/token"):
        human = format_bytes(value)
        per = "/token" if unit == "B/token" else ""
        return f"{human}{per}" if value < 1024 else f"{human}{per} ({value:,} B)"
    if unit == "x":
        return f"{_trim(value)}x"
    if isinstance(value, int):
        return f"{value:,} {unit}".rstrip()
    return f"{_trim(value)} {unit}".rstrip()


def to_table(result: Result) -> Table:
    """A rich table of one result: name, value, bound, provenance."""
    caption = escape(result.spec.description) if result.spec.description else None
    table = Table(title=escape(_title(result)), caption=caption)
    table.add_column("prediction", style="bold")
    table.add_column("value", justify="right")
    table.add_column("bound")
    table.add_column("provenance")
    for name, prediction in result.predictions.items():
        cells = (name, format_value(prediction), prediction.bound, prediction.provenance)
        table.add_row(*map(escape, cells))
    return table


def to_markdown(result: Result) -> str:
    """A Markdown section of one result, notes included."""
    lines = [f"### {_title(result)}", ""]
    if result.spec.description:
        lines += [result.spec.description, ""]
    lines += ["| prediction | value | bound | provenance | note |", "|---|--:|---|---|---|"]
    for name, p in result.predictions.items():
        note = p.note.replace("|", "\\|")
        lines.append(f"| `{name}` | {format_value(p)} | {p.bound} | {p.provenance} | {note} |")
    return "\n".join(lines) + "\n"


def to_latex(result: Result) -> str:
    """A LaTeX table of one result: each prediction with its value and, for formulas, the
    expression in maths mode (for a paper)."""
    lines = [
        f"% {_title(result)}",
        r"\begin{tabular}{lll}",
        r"\hline",
        r"prediction & value & expression \\",
        r"\hline",
    ]
    for name, p in result.predictions.items():
        expression = f"${sympy.latex(p.expression)}$" if p.expression is not None else ""
        lines.append(rf"\texttt{{{_tex(name)}}} & {_tex(format_value(p))} & {expression} \\")
    lines += [r"\hline", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


_TEX_ESCAPES = {
    "\\": r"\textbackslash{}", "_": r"\_", "&": r"\&", "%": r"\%", "#": r"\#",
    "{": r"\{", "}": r"\}", "^": r"\^{}", "~": r"\~{}", "$": r"\$",
}  # fmt: skip


def _tex(text: str) -> str:
    return "".join(_TEX_ESCAPES.get(char, char) for char in text)


def _title(result: Result) -> str:
    model = getattr(result.spec, "model", None)
    name = getattr(model, "name", None)
    parts = [result.source or "<spec>", result.kind] + ([name] if name else [])
    return " · ".join(parts)


def _trim(value: float) -> str:
    """At most two decimals, no trailing zeros: 768.0 -> 768, 21.333 -> 21.33; three
    significant digits for very large or small values: 1e+06."""
    if value and not 1e-3 <= abs(value) < 1e5:
        return f"{value:.3g}"
    return f"{value:.2f}".rstrip("0").rstrip(".")
