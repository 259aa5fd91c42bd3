"""Results -> text: JSON for tools, an aligned table or Markdown for people.

People get binary units (KiB, MiB, GiB, as the papers use) with the exact number beside them;
tools get the exact numbers alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from infoflow.errors import one_line
from infoflow.results import Prediction, Result

if TYPE_CHECKING:
    from rich.table import Table

_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def to_json(results: Sequence[Result]) -> str:
    """One JSON object for one result, an array for several (the CLI contract)."""
    data = [r.to_json() for r in results]
    return json.dumps(data[0] if len(data) == 1 else data, indent=2, allow_nan=False)


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
        return _list_text(value) if isinstance(value, list) else str(value)
    if unit in ("B", "B/token"):
        human = format_bytes(value)
        per = "/token" if unit == "B/token" else ""
        return f"{human}{per}" if value < 1024 else f"{human}{per} ({value:,} B)"
    if unit == "x":
        return f"{_trim(value)}x"
    if isinstance(value, int):
        return f"{value:,} {unit}".rstrip()
    return f"{_trim(value)} {unit}".rstrip()


def _list_text(value: list, limit: int = 16) -> str:
    """A list as JSON, a long one cut to its first and last entries with its length."""
    if len(value) <= limit:
        return (
            "["
            + ", ".join(_list_text(v) if isinstance(v, list) else json.dumps(v) for v in value)
            + "]"
        )
    head = ", ".join(json.dumps(v) if not isinstance(v, list) else _list_text(v) for v in value[:3])
    return f"[{head}, ..., {json.dumps(value[-1])}] ({len(value):,} entries)"


def to_table(result: Result) -> Table:
    """A rich table of one result: name, value, bound, provenance."""
    from rich.markup import escape
    from rich.table import Table

    description = result.spec.description
    caption = escape(one_line(description, 2000)) if description else None
    table = Table(title=escape(one_line(_title(result), 400)), caption=caption)
    table.add_column("prediction", style="bold")
    table.add_column("value", justify="right")
    table.add_column("bound")
    table.add_column("provenance")
    for name, prediction in result.predictions.items():
        cells = (name, format_value(prediction), prediction.bound, prediction.provenance)
        table.add_row(*(escape(one_line(cell, 2000)) for cell in cells))
    return table


def to_markdown(result: Result) -> str:
    """A Markdown section of one result, notes included."""
    lines = [f"### {markdown_text(_title(result))}", ""]
    if result.spec.description:
        lines += [markdown_text(result.spec.description, starts_line=True), ""]
    lines += ["| prediction | value | bound | provenance | note |", "|---|--:|---|---|---|"]
    for name, p in result.predictions.items():
        cells = [format_value(p), p.bound, p.provenance, p.note]
        lines.append(f"| `{name}` | " + " | ".join(map(markdown_text, cells)) + " |")
    return "\n".join(lines) + "\n"


def markdown_text(text: object, starts_line: bool = False) -> str:
    """A string as Markdown shows it, on one line, literally: no table cell, link, image,
    HTML tag, entity or code span (and, for text that ``starts_line``, no heading, list or
    quote) can start from what a user wrote."""
    flat = one_line(text, 2000)
    for char in "\\|`":
        flat = flat.replace(char, "\\" + char)
    flat = re.sub(r"\](?=[(\[])", r"\\]", flat)  # no [text](link), ![image](src), [a][ref]
    flat = re.sub(r"&(?=#?\w+;)", "&amp;", flat)
    flat = re.sub(r"<(?=[A-Za-z/!?])", "&lt;", flat)
    return re.sub(r"^([#>+*=-]|\d+[.)])", r"\\\1", flat) if starts_line else flat


def markdown_code(text: object) -> str:
    """A string as a Markdown code span, on one line (backticks inside kept literal)."""
    flat = one_line(text, 2000).replace("|", "\\|")
    return f"`` {flat} ``" if "`" in flat else f"`{flat}`"


def to_latex(result: Result) -> str:
    """A LaTeX table of one result: each prediction with its value and, for formulas, the
    expression in maths mode (for a paper)."""
    import sympy

    lines = [
        f"% {one_line(_title(result))}",
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
    "\\": r"\textbackslash{}",
    "_": r"\_",
    "&": r"\&",
    "%": r"\%",
    "#": r"\#",
    "{": r"\{",
    "}": r"\}",
    "^": r"\^{}",
    "~": r"\~{}",
    "$": r"\$",
}


def _tex(text: str) -> str:
    """``text`` as literal LaTeX on one line: a user's string cannot end the line or run a
    command."""
    return "".join(_TEX_ESCAPES.get(char, char) for char in one_line(text, 2000))


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
