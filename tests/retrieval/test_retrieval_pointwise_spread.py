"""A max of a pointwise max (``abs(e)`` is max(e, -e)) is the max of its branches'
reductions, planned as one where they are one function (since 2026-12-06): the spread of a
score, ``max(abs(f(s) - f(t)) for s, t)``, is max f - min f, two heads in one layer, where
it was planned as a pair (two layers, and positional encoding under ``s != t``)."""

from __future__ import annotations

import pytest
from rewrite_checks import assert_one_function, assert_reading_is_written, spec_of

import infoflow

SPREAD = "max(dot(q, x[s]) for s in T) - min(dot(q, x[t]) for t in T)"
SAME = [
    (f"max(abs(dot(q, x[s]) - dot(q, x[t])) for s in T for t in T{test})", SPREAD)
    for test in ("", " if s != t", " if s < t")
] + [
    (
        "max(max(abs(x[s][0] - x[t][0]) for t in T if t != s) for s in T)",
        "max(x[s][0] for s in T) - min(x[t][0] for t in T)",
    ),
    (
        "max(max(x[s][1] - x[t][1], x[t][1] - x[s][1]) + 3 for s in T for t in T)",
        "max(x[s][1] for s in T) - min(x[t][1] for t in T) + 3",
    ),
    (
        "min(-2 * abs(dot(q, x[s]) - dot(q, x[t])) for s in T for t in T)",
        f"-2 * ({SPREAD})",
    ),
]
#: Branches that are two functions keep one score over the pair (one head a layer: two
#: layers), as written; so does a min of a distance (the closest pair).
PAIRS = [
    "max(abs(x[s][0] - x[t][1]) for s in T for t in T)",
    "min(abs(x[s][0] - x[t][0]) for s in T for t in T if s != t)",
    "max(abs(dot(q, x[s]) - dot(q, x[t])) + dot(x[s], x[t]) for s in T for t in T)",
]


@pytest.mark.parametrize(("written", "plain"), SAME)
def test_a_spread_is_the_max_less_the_min(written, plain) -> None:
    names = ("comparison_order", "min_architectures", "feasible", "requires_positional_encoding")
    assert_one_function(written, plain, ([2], [1, 1]), names, pes=(False, True))
    result = infoflow.predict(spec_of(written, [2], pe=False))
    assert result["min_architectures"].value == [[2], [1, 1]]
    assert result["feasible"].value


@pytest.mark.parametrize("written", [w for w, _ in SAME] + PAIRS)
def test_the_engines_reading_is_the_written_function(written) -> None:
    assert_reading_is_written(written, pe=True)


@pytest.mark.parametrize("written", PAIRS)
def test_branches_that_differ_stay_one_pair(written) -> None:
    result = infoflow.predict(spec_of(written, [1, 1]))
    assert result["comparison_order"].value == 2
    assert result["min_layers"].value == 2
