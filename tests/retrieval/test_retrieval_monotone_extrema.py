"""A min over s of a max whose range only grows with s is that max at the smallest s
(infoflow/retrieval/monotone_extrema.py), and the ranges the rewrites must keep: a guard
of an index nothing reads (separable.py), the neighbours a cancelled term read
(expression_rewrite.py). Each case is checked against the written target on random draws,
and its plan against the plan of the function written out."""

from __future__ import annotations

import pytest
from rewrite_checks import assert_one_function, assert_reading_is_written, spec_of

import infoflow
from infoflow.retrieval.expression import Apply, Reduce
from infoflow.retrieval.expression_rewrite import rewrite
from infoflow.retrieval.text_to_expression import parse_target

#: (written, the same function written out)
SAME = [
    ("min(max(x[t][0] for t in T if t <= s) for s in T)", "x[1][0]"),
    ("max(min(dot(q, x[t]) for t in T if t <= s) for s in T)", "dot(q, x[1])"),
    ("min(max(x[t][0] for t in T if s <= t) for s in T)", "x[T][0]"),
    (
        "max(min(x[t][0] for t in T if t >= s + 1) for s in T if s <= T - 2)",
        "min(x[T][0], x[T-1][0])",
    ),
    (
        "min(max(x[t][0] for t in T if t <= s + 1) for s in T if s >= 2)",
        "max(x[t][0] for t in T if t <= 3)",
    ),
    (
        "min(max(dot(x[u], x[t]) for t in T if t < s) for u in T for s in T if s > 2)",
        "min(max(dot(x[u], x[t]) for t in T if t <= 2) for u in T)",
    ),
    # an unread index whose tests name an enclosing one: its range guards it
    (
        "max(max(-2 * x[u-1][0] for b in T if abs(b - u) <= 2 and b >= 5 and b <= 5) for u in T)",
        "max(-2 * x[u][0] for u in T if u >= 2 and u <= 6)",
    ),
    (
        "max(max(dot(x[c], x[u]) for b in T for c in T if b >= u and b <= T - 2) for u in T)",
        "max(dot(x[c], x[u]) for c in T for u in T if u <= T - 2)",
    ),
    # a cancelled term keeps the range its neighbour gave the index
    (
        "max(x[t][0] + x[s-1][0] - x[s-1][0] for s in T for t in T if t > s)",
        "max(x[t][0] for t in T if t >= 3)",
    ),
    ("sum(x[t][0] + x[t+2][0] - x[t+2][0] for t in T)", "sum(x[t][0] for t in T if t <= T - 2)"),
]

#: targets whose rewriting once lost a range (a review's fuzz): a guard on an enclosing index
#: only, a neighbour read through t == s, an end that leaves the max empty
READ_AS_WRITTEN = [
    "min(min(min(x[t][0] + x[u][1] for t in T if t <= s and s < T) for s in T if s != 3) "
    "for u in T)",
    "max(max(x[t-1][0] - x[t-1][0] + x[s][0] for t in T if t == s) for s in T)",
    "sum(sum(x[t-1][0] - x[t-1][0] + x[s][0] for t in T if t == s) for s in T)",
    "max(min(max(x[t][0] for t in T if t < s) for s in T), x[1][1])",
    "max(max(x[t][0] + x[u][1] for t in T if s <= u + 2) for s in T for u in T)",
]

#: targets whose s stays as written (the end moves with T, or the range is not one-sided)
KEPT = [
    "min(max(x[t][0] for t in T if t <= s and t >= s - 2) for s in T)",
    "min(max(x[t][0] for t in T if t <= s) for s in T if s >= T - 2)",
    "max(min(x[t][0] for t in T if t >= s) for s in T if s <= 5)",
    "min(max(x[t][0] + x[s][1] for t in T if t <= s) for s in T)",
    "min(max(x[t][0] for t in T if t <= s) for s in T if s != 2)",
]


def _spec(target: str, heads: list[int], pe: bool = True) -> dict:
    return spec_of(target, heads, pe)


@pytest.mark.parametrize(("written", "plain"), SAME)
def test_the_rewrite_is_the_written_function(written, plain) -> None:
    names = ("comparison_order", "min_architectures", "feasible")
    assert_one_function(written, plain, ([1], [1, 1]), names, pes=(False, True))


@pytest.mark.parametrize("written", READ_AS_WRITTEN)
def test_the_engines_reading_is_the_written_function(written) -> None:
    assert_reading_is_written(written, pe=True)


@pytest.mark.parametrize("written", KEPT)
def test_an_end_that_moves_keeps_the_index(written) -> None:
    assert "s" in _bound(rewrite(parse_target(written)))


def test_the_min_of_a_prefix_max_is_one_head_at_position_one() -> None:
    """It was planned as a pair: two layers, where one head reads x[1]."""
    result = infoflow.predict(_spec(SAME[0][0], [1]))
    assert result["min_architectures"].value == [[1]]
    assert result["comparison_order"].value == 1
    assert not infoflow.predict(_spec(SAME[0][0], [1], pe=False))["feasible"].value


def _bound(node) -> set[str]:
    """The indices the reductions of ``node`` bind."""
    if isinstance(node, Reduce):
        return {v.name for v in node.variables} | _bound(node.body)
    if isinstance(node, Apply):
        return set().union(*(_bound(a) for a in node.args))
    return set()
