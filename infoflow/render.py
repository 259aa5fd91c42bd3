"""Results -> text: JSON for tools, an aligned table or Markdown for people.

People get binary units (KiB, MiB, GiB, as the papers use) with the exact number beside them;
tools get the exact numbers alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from infoflow.core.results import INFINITE, Prediction, Result
from infoflow.core.text import (
    format_bytes,
    latex_text,
    markdown_text,
    one_line,
    sympy_latex,
    trim,
)

if TYPE_CHECKING:
    from rich.table import Table


def to_json(results: Sequence[Result]) -> str:
    """One JSON object for one result, an array for several (the CLI contract)."""
    data = [r.to_json() for r in results]
    return json.dumps(data[0] if len(data) == 1 else data, indent=2, allow_nan=False)


def format_value(prediction: Prediction) -> str:
    """A prediction's value as a person reads it."""
    value, unit = prediction.value, prediction.unit
    if value is None:  # a note that opens "Unbounded: ..." names what the null means
        if INFINITE in prediction.note:  # it printed "None" (a fresh-user audit)
            return f"infinite {unit}".rstrip()
        head, colon, _ = prediction.note.partition(":")
        size = re.search(r"About (10\^\S+): beyond a float", prediction.note)
        if size:  # a finite number too large for a float
            return f"about {size.group(1)} {unit}".rstrip()
        return head if colon and head.isalpha() else "None"
    if isinstance(value, list):
        return _list_text(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{value} {unit}".rstrip()  # a phase "at step 800", a symbolic count's unit
    if unit in ("B", "B/token"):
        human = format_bytes(value)
        per = "/token" if unit == "B/token" else ""
        return f"{human}{per}" if value < 1024 else f"{human}{per} ({value:,} B)"
    if unit == "x":
        return f"{trim(value)}x"
    if isinstance(value, int):
        return f"{value:,} {unit}".rstrip()
    return f"{trim(value)} {unit}".rstrip()


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


def to_table(result: Result, verbosity: int = 0) -> Table:
    """A rich table of one result: name, value, bound, provenance (verbosity 1: and each
    note); under it (unless verbosity is -1) the spec's description and the result's
    messages."""
    from rich.markup import escape
    from rich.table import Table

    lines = [result.spec.described()] if result.spec.description else []
    lines += result.messages
    shown = lines and verbosity >= 0
    caption = escape("\n".join(one_line(line, 2000) for line in lines)) if shown else None
    table = Table(title=escape(one_line(result.caption(), 400)), caption=caption)
    # a long name or provenance is folded onto a next line, never cut (an ellipsis hid
    # "reconstruction:variable…" at 80 columns)
    table.add_column("prediction", style="bold", overflow="fold")
    table.add_column("value", justify="right", overflow="fold")
    table.add_column("bound", overflow="fold")
    table.add_column("provenance", overflow="fold")
    if verbosity > 0:
        table.add_column("note", overflow="fold")
    for name, prediction in result.predictions.items():
        cells = [name, format_value(prediction), prediction.bound, prediction.provenance]
        cells += [prediction.note] if verbosity > 0 else []
        table.add_row(*(escape(one_line(cell, 2000)) for cell in cells))
    return table


def to_markdown(result: Result) -> str:
    """A Markdown section of one result, notes included."""
    lines = [f"### {markdown_text(result.caption())}", ""]
    if result.spec.description:
        lines += [markdown_text(result.spec.described(), starts_line=True), ""]
    for message in result.messages:
        lines += [markdown_text(message, starts_line=True), ""]
    lines += ["| prediction | value | bound | provenance | note |", "|---|--:|---|---|---|"]
    for name, p in result.predictions.items():
        cells = [format_value(p), p.bound, p.provenance, p.note]
        lines.append(f"| `{name}` | " + " | ".join(map(markdown_text, cells)) + " |")
    return "\n".join(lines) + "\n"


def to_latex(result: Result) -> str:
    """A LaTeX table of one result: each prediction with its value, bound, provenance and,
    for formulas, the expression in maths mode (for a paper: a reconstruction stays marked);
    the result's messages (a measured boundary it disagrees with) as comments above it (they
    were dropped: a review)."""
    lines = [
        f"% {one_line(result.caption())}",
        *(f"% {one_line(message, 10_000)}" for message in result.messages),
        r"\begin{tabular}{lllll}",
        r"\hline",
        r"prediction & value & bound & provenance & expression \\",
        r"\hline",
    ]
    for name, p in result.predictions.items():
        expression = ""
        if p.expression is not None:
            expression = f"${sympy_latex(p.expression)}$"
        cells = [f"\\texttt{{{latex_text(name)}}}", format_value(p), p.bound, p.provenance]
        row = " & ".join([cells[0], *(latex_text(c) for c in cells[1:]), expression])
        lines.append(row + r" \\")
    lines += [r"\hline", r"\end{tabular}"]
    return "\n".join(lines) + "\n"
