"""Typed results: one :class:`Prediction` per quantity, gathered in a :class:`Result`.

The JSON form is the contract of ``infoflow predict --format json`` (design.md)::

    {"infoflow_version", "kind", "spec", "predictions": {NAME: {"value", "unit", "bound",
     "provenance", "note", "expression", "latex"}}}

``expression`` and ``latex`` appear only for predictions that are formulas; ``interval``
(low, high) only for estimates that carry one, an open end (unbounded) as null. Values are
computed with plain arithmetic; a formula is built as a sympy expression only when
something asks for it (``expression``, the JSON form), so a table of numbers never imports
sympy; a formula that prints itself (looped_kv's, from cached text) gives the JSON form
without sympy too.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any, Literal

from infoflow.core.spec_base import SpecBase
from infoflow.core.tables import Tabular
from infoflow.core.text import sympy_latex
from infoflow.core.version import __version__

if TYPE_CHECKING:
    from collections.abc import Callable

    import sympy

    #: A sympy expression, or a function of no arguments that builds one when first asked for.
    Formula = sympy.Expr | Callable[[], sympy.Expr] | None

Bound = Literal["exact", "upper", "lower", "estimate"]
COLUMNS = ("name", "value", "unit", "bound", "provenance", "note")
Value = int | float | bool | str | list[Any] | None
#: A note's mark of a value that is infinite (null in JSON): tables show it as "infinite".
INFINITE = "Infinite here (null in JSON)"


@dataclass(frozen=True)
class Prediction(Tabular):
    """One predicted quantity.

    ``provenance`` is a tag (``paper:summary``, ``paper:figure``, ``derived``,
    ``reconstruction:<option>``, ...) saying where the rule comes from; ``note`` says it in
    a sentence. ``formula`` is the sympy formula the value follows from, if any, or a function
    that builds it (and may print it without sympy: ``printed()`` -> text, LaTeX);
    ``expression`` is that formula, built on first use.
    """

    value: Value
    unit: str
    bound: Bound
    provenance: str
    note: str = ""
    formula: Formula = field(default=None, compare=False, repr=False)
    interval: tuple[float, float] | None = None  # where the value is known to lie

    def headers(self) -> tuple[str, ...]:
        return (*COLUMNS[1:], "expression")

    def rows(self) -> list[dict[str, Any]]:
        """The prediction as one row: value, unit, bound, provenance, note, expression."""
        data = self.to_json()
        return [{key: data.get(key) for key in self.headers()}]

    def caption(self) -> str:
        return f"{self.provenance} ({self.bound})"

    @cached_property
    def expression(self) -> sympy.Expr | None:
        """The sympy formula (built now if it was given as a function)."""
        formula = self.formula
        lazy = callable(formula) and not hasattr(formula, "free_symbols")
        return formula() if lazy else formula

    def to_json(self) -> dict[str, Any]:
        """The prediction as strict JSON: a value that is not a finite number is null, and
        the note says what it was."""
        value, note = self.value, self.note
        if isinstance(value, float) and not math.isfinite(value):
            value, note = None, f"{note} (not a finite number: {value})".strip()
        out: dict[str, Any] = {
            "value": value,
            "unit": self.unit,
            "bound": self.bound,
            "provenance": self.provenance,
            "note": note,
        }
        if self.interval is not None:
            out["interval"] = [v if math.isfinite(v) else None for v in self.interval]
        if self.formula is not None:
            out["expression"], out["latex"] = self._printed()
        return out

    def _printed(self) -> tuple[str, str]:
        """The expression's text and LaTeX: from the formula itself when it prints itself
        without sympy (looped_kv's cached expressions), else by sympy."""
        printed = getattr(self.formula, "printed", None)
        if printed is not None:
            return printed()
        return _sympy_printed(self.expression)


@lru_cache(maxsize=4096)
def _sympy_printed(expression: Any) -> tuple[str, str]:
    """An expression's text and LaTeX, printed once (a sweep's points share expressions)."""
    return str(expression), sympy_latex(expression)


@dataclass(frozen=True)
class Result(Tabular, Mapping):
    """All predictions for one spec: a mapping of names to predictions (``Mapping`` gives
    keys, items, values, get and ``in``), and a table (rows, Markdown, HTML, a DataFrame)."""

    kind: str
    spec: SpecBase
    predictions: dict[str, Prediction] = field(default_factory=dict)
    source: str | None = None
    #: What a reader must know about the result as a whole (a model that does not fit its
    #: device), shown with every format.
    messages: tuple[str, ...] = ()

    def __getitem__(self, name: str) -> Prediction:
        if name not in self.predictions:
            known = ", ".join(self.predictions)
            raise KeyError(f"{name!r} is no prediction of this {self.kind} result ({known})")
        return self.predictions[name]

    def __iter__(self) -> Iterator[str]:
        """The predictions' names, in order (a result reads like a mapping)."""
        return iter(self.predictions)

    def __len__(self) -> int:
        return len(self.predictions)

    def rows(self) -> list[dict[str, Any]]:
        """One flat row per prediction: name, value, unit, bound, provenance, note."""
        rows = []
        for name, prediction in self.predictions.items():
            data = prediction.to_json()  # once: it may print a formula
            rows.append({"name": name, **{k: data[k] for k in COLUMNS[1:]}})
        return rows

    def headers(self) -> tuple[str, ...]:
        return COLUMNS

    def shown(self) -> tuple[str, ...]:
        return COLUMNS[:5]  # the note is each row's tooltip

    def caption(self) -> str:
        """The spec's name and kind (and its model's name, where it has one), as the CLI's
        title shows them."""
        model = getattr(getattr(self.spec, "model", None), "name", None)
        parts = [self.source or "<spec>", self.kind] + ([model] if isinstance(model, str) else [])
        return " · ".join(parts)

    def notes(self) -> tuple[str, ...]:
        return self.messages

    def to_json(self) -> dict[str, Any]:
        out = {
            "infoflow_version": __version__,
            "kind": self.kind,
            "source": self.source,
            "spec": self.spec.model_dump(mode="json"),
            "predictions": {name: p.to_json() for name, p in self.predictions.items()},
        }
        if self.messages:
            out["messages"] = list(self.messages)
        return out
