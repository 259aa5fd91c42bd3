"""A ``looped_kv`` formula -> its sympy expression, and the text and LaTeX that print it.

Printing an expression needs sympy, whose import alone costs more than a whole table of
numbers. So the text and LaTeX of every formula the bundled specs use are printed once, by
sympy, into ``expressions.json``, keyed by the formula written out in full: called with
:func:`traced` symbols, a formula spells every operation it performs, in order, with its exact
constants, so a formula that changes has a new key. A key not in the file is printed by sympy,
as before. A test rebuilds the file with sympy and compares it exactly; ``python -m
infoflow.looped_kv.expressions`` rewrites it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from infoflow.core.text import sympy_latex
from infoflow.looped_kv.formulas import INTEGERS, REALS, Form, symbols

CACHE = Path(__file__).with_name("expressions.json")


class Traced:
    """A formula applied to symbols, as the text of every operation (fully parenthesised)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __add__(self, other: Any) -> Traced:
        return _op(self, "+", other)

    def __radd__(self, other: Any) -> Traced:
        return _op(other, "+", self)

    def __sub__(self, other: Any) -> Traced:
        return _op(self, "-", other)

    def __rsub__(self, other: Any) -> Traced:
        return _op(other, "-", self)

    def __mul__(self, other: Any) -> Traced:
        return _op(self, "*", other)

    def __rmul__(self, other: Any) -> Traced:
        return _op(other, "*", self)

    def __truediv__(self, other: Any) -> Traced:
        return _op(self, "/", other)

    def __rtruediv__(self, other: Any) -> Traced:
        return _op(other, "/", self)

    def __le__(self, other: Any) -> Traced:
        return _op(self, "<=", other)

    def __bool__(self) -> bool:
        raise TypeError("a traced formula has no truth value")


def _text(value: Any) -> str:
    """A traced value's text, or a constant's ``repr`` (so 2, 2.0 and Fraction(2) differ)."""
    return value.text if isinstance(value, Traced) else repr(value)


def _op(left: Any, op: str, right: Any) -> Traced:
    return Traced(f"({_text(left)} {op} {_text(right)})")


def _call(name: str, *args: Any) -> Traced:
    return Traced(f"{name}({', '.join(map(_text, args))})")


@lru_cache(maxsize=1)
def traced() -> SimpleNamespace:
    """The symbols as :class:`Traced`, with floor, min, cancel and piecewise spelled out."""
    return SimpleNamespace(
        **{name: Traced(name) for name in (INTEGERS + " " + REALS).split()},
        floor=lambda x: _call("floor", x),
        min=lambda a, b: _call("Min", a, b),
        cancel=lambda x: _call("cancel", x),
        piecewise=lambda c, then, otherwise: _call("Piecewise", c, then(), otherwise()),
    )


class Expression:
    """A formula's sympy expression, built when called (see Prediction), and its printed
    text and LaTeX, from the cache when it has them."""

    def __init__(self, form: Form) -> None:
        self.form = form

    def __call__(self) -> Any:
        import sympy

        return sympy.sympify(self.form(symbols()))

    def key(self) -> str:
        return _text(self.form(traced()))

    def printed(self) -> tuple[str, str]:
        """``(str(expression), its LaTeX)`` (:func:`~infoflow.core.text.sympy_latex`)."""
        cached = _cache().get(self.key())
        return tuple(cached) if cached else _print(self())

    def __reduce__(self) -> tuple:
        """Pickled as what it builds: a form is a closure over its spec, which pickle cannot
        carry (a result sent to another process, or to Ray, keeps its formulas)."""
        return Built, (self(), self.printed())


class Built:
    """An :class:`Expression` after a pickle: its sympy expression and printed forms."""

    def __init__(self, expression: Any, printed: tuple[str, str]) -> None:
        self.expression, self.text = expression, tuple(printed)

    def __call__(self) -> Any:
        return self.expression

    def printed(self) -> tuple[str, str]:
        return self.text


@lru_cache(maxsize=1)
def _cache() -> dict[str, list[str]]:
    return json.loads(CACHE.read_text())


def _print(expression: Any) -> tuple[str, str]:
    return str(expression), sympy_latex(expression)


def build(specs: Iterable[Path]) -> dict[str, list[str]]:
    """The cache for ``specs`` (every point of their sweeps), printed by sympy."""
    from infoflow.predictor import predict
    from infoflow.spec import expand, load_spec

    out = {}
    for path in specs:
        for _, spec in expand(load_spec(path), path.parent, str(path)):
            for prediction in predict(spec).predictions.values():
                if isinstance(prediction.formula, Expression):
                    out[prediction.formula.key()] = list(_print(prediction.formula()))
    return dict(sorted(out.items()))


def bundled_specs() -> list[Path]:
    """The repository's looped_kv specs (the cache covers them)."""
    return sorted((Path(__file__).parents[2] / "specs" / "looped_kv").glob("*.json"))


def write() -> None:
    """Rewrite the cache for the bundled specs."""
    CACHE.write_text(json.dumps(build(bundled_specs()), indent=1) + "\n")


if __name__ == "__main__":
    from infoflow.looped_kv import expressions  # the module predictions use, not __main__

    expressions.write()
