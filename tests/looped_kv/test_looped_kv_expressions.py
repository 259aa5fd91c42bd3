"""The text and LaTeX of looped_kv expressions, cached in infoflow/looped_kv/expressions.json so
that ``--format json`` needs no sympy, are exactly what sympy prints; a formula the cache lacks
is printed by sympy."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from conftest import LOOPED_KV

import infoflow
from infoflow.core.text import sympy_latex
from infoflow.looped_kv import expressions


def test_the_cache_is_what_sympy_prints_for_every_bundled_spec() -> None:
    stored = json.loads(expressions.CACHE.read_text())
    rebuilt = expressions.build(expressions.bundled_specs())
    assert len(expressions.bundled_specs()) == len(list(LOOPED_KV.glob("*.json")))
    assert stored == rebuilt, "stale cache: run python -m infoflow.looped_kv.expressions"


#: Windowed layers: Min and Piecewise, which no bundled spec has.
WINDOWED = (
    "model.sliding_window=1024",
    "model.loops=1",
    "codec.variant=none",
    "codec.r_k=null",
    "codec.r_v=null",
)


@pytest.mark.parametrize("overrides", [(), ("model.mlp=gelu",), WINDOWED])
def test_printed_text_is_sympys_cached_or_not(overrides) -> None:
    spec = infoflow.load_spec(LOOPED_KV / "ouro-1.4b-h200.json", overrides)
    predictions = infoflow.predict(spec).predictions.values()
    formulas = [p.formula for p in predictions if p.formula is not None]
    missed = [f for f in formulas if f.key() not in expressions._cache()]
    assert bool(missed) == bool(overrides)  # the overrides make formulas no bundled spec has
    for formula in formulas:
        expression = formula()
        assert formula.printed() == (str(expression), sympy_latex(expression))


def test_keys_tell_constants_apart() -> None:
    keys = {expressions.Expression(lambda s, c=c: c * s.h).key() for c in (2, 2.0, Fraction(2))}
    assert len(keys) == 3
