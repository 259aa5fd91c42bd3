"""Objects as tables, for notebooks: :class:`Tabular` gives anything that lists its rows a
Markdown and an HTML form (Jupyter's ``_repr_markdown_`` and ``_repr_html_``, every cell
escaped: what a user wrote cannot break the table or run as HTML) and ``to_dataframe()``
(pandas, optional)."""

from __future__ import annotations

import html
import json
import math
from typing import Any

from infoflow.core.text import markdown_text

PANDAS_MISSING = "to_dataframe needs pandas: pip install pandas"
DIGITS = 4  # significant digits a notebook's table shows


class Tabular:
    """A mixin: a subclass lists its ``rows()`` (flat dicts) and their ``headers()`` (every
    key, in order: the DataFrame's columns), and may narrow what a notebook displays
    (``shown()``) and give a ``caption()`` and ``notes()`` (sentences under the table)."""

    def rows(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def headers(self) -> tuple[str, ...]:
        raise NotImplementedError

    def shown(self) -> tuple[str, ...]:
        return self.headers()

    def caption(self) -> str:
        return type(self).__name__

    def notes(self) -> tuple[str, ...]:
        return ()

    def to_dataframe(self) -> Any:
        """The rows as a pandas DataFrame, one column per header (pandas is
        optional: ModuleNotFoundError saying how to install it)."""
        try:
            import pandas
        except ModuleNotFoundError:
            raise ModuleNotFoundError(PANDAS_MISSING) from None
        return pandas.DataFrame(self.rows(), columns=list(self.headers()))

    def _repr_markdown_(self) -> str:
        """The table Jupyter shows (Markdown), every cell escaped."""
        shown = self.shown()
        lines = [
            f"**{markdown_text(self.caption())}**",
            "",
            "| " + " | ".join(markdown_text(c) for c in shown) + " |",  # a sweep's keys too
            "|" + "---|" * len(shown),
        ]
        for row in self.rows():
            lines.append("| " + " | ".join(markdown_text(cell(row.get(c))) for c in shown) + " |")
        lines += [f"\n{markdown_text(note, starts_line=True)}" for note in self.notes()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """The table Jupyter shows (HTML), every cell escaped; a row's ``note`` (when it has
        one that is not shown) as its tooltip."""
        shown = self.shown()
        head = "".join(f"<th>{html.escape(c)}</th>" for c in shown)
        body = []
        for row in self.rows():
            note = row.get("note") if "note" not in shown else None
            title = f' title="{html.escape(str(note))}"' if note else ""
            cells = "".join(f"<td>{html.escape(cell(row.get(c)))}</td>" for c in shown)
            body.append(f"<tr{title}>{cells}</tr>")
        caption = f"<caption>{html.escape(self.caption())}</caption>"
        notes = "".join(f"<p>{html.escape(note)}</p>" for note in self.notes())
        return f"<table>{caption}<tr>{head}</tr>{''.join(body)}</table>{notes}"


def cell(value: Any) -> str:
    """A cell's text, for reading: JSON for lists and objects (as the CLI prints them),
    ``-`` for None, floats to :data:`DIGITS` significant digits (the rows keep them all)."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{DIGITS}g}"
    return json.dumps(short(value)) if isinstance(value, list | dict) else str(value)


def short(data: Any) -> Any:
    """``data`` with every finite float to :data:`DIGITS` significant digits."""
    if isinstance(data, dict):
        return {key: short(value) for key, value in data.items()}
    if isinstance(data, list):
        return [short(value) for value in data]
    if isinstance(data, float) and math.isfinite(data):
        return float(f"{data:.{DIGITS}g}")
    return data


def flat(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested dict as dotted keys (``{"a": {"b": 1}}`` -> ``{"a.b": 1}``); lists stay."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flat(value, name + "."))
        else:
            out[name] = value
    return out
