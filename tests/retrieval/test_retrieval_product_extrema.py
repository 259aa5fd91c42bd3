"""A max or min of a product of factors >= 0 is the product of each factor's own extremum
over the indices only it reads (infoflow/retrieval/product_extrema.py): each case is checked
against the written target on random draws, and its plan against the plan of the nested
form written out."""

from __future__ import annotations

import pytest
from rewrite_checks import assert_one_function, assert_reading_is_written, spec_of

import infoflow

PAIRS = "for a in T for b in T for c in T"

#: (written, the same function with each index in its factor)
SAME = [
    (
        f"max(norm(x[a] - x[b]) * norm(x[b] - x[c]) {PAIRS})",
        "max(max(norm(x[a] - x[b]) for a in T) ** 2 for b in T)",  # equal leaves: one
    ),
    (
        f"min(norm(x[a] - x[b]) * norm(x[b] - x[c]) {PAIRS} if a != b and c != b)",
        "min(min(norm(x[a] - x[b]) for a in T if a != b) ** 2 for b in T)",
    ),
    (
        f"max(2 * abs(dot(x[a], x[b])) * exp(x[b][0]) * sqnorm(x[c]) {PAIRS} if c >= 3)",
        "max(2 * max(abs(dot(x[a], x[b])) for a in T) * exp(x[b][0]) for b in T) "
        "* max(sqnorm(x[c]) for c in T if c >= 3)",
    ),
]

#: products the rule leaves as written: a sign a draw decides, a negative coefficient, a
#: test that couples two indices each factor would take
KEPT = [
    f"max(norm(x[a] - x[b]) * dot(x[b], x[c]) {PAIRS})",
    f"max(-norm(x[a] - x[b]) * norm(x[b] - x[c]) {PAIRS} if a != b and c != b)",
    f"max(norm(x[a] - x[b]) * norm(x[b] - x[c]) {PAIRS} if a != c)",
]


#: a review's counterexamples, left as written: a `!=` beside a test that may leave the
#: index nothing (nan where a factor is 0), a guard on an enclosing index when every index
#: moves
WRITTEN = [
    "min(norm(x[a] - x[b]) * relu(x[b][0]) for a in T for b in T if a == 1 and a != b)",
    "max(abs(x[a][0] - x[b][0]) * relu(dot(q, x[b])) for a in T for b in T if a >= 8 and a != b)",
    "max(x[u][0] + max(abs(x[a][0]) * abs(x[b][1]) for a in T for b in T if u >= 3) for u in T)",
]


@pytest.mark.parametrize(("written", "nested"), SAME)
def test_a_product_of_factors_at_least_zero_separates_as_a_sum(written, nested) -> None:
    shapes, names = ([1], [2, 1], [1, 1, 1]), ("comparison_order", "min_architectures", "efficient")
    assert_one_function(written, nested, shapes, names)


def test_the_max_of_a_product_of_distances_is_a_pair() -> None:
    """It was order 3, not efficient at any size; the farthest token from b, squared, is
    one retrieval a token and one by the readout."""
    result = infoflow.predict(spec_of(SAME[0][0], [1, 1]))
    assert result["comparison_order"].value == 2 and result["efficient"].value
    assert result["min_architectures"].value == [[1, 1]]


@pytest.mark.parametrize("target", KEPT)
def test_a_product_the_rule_cannot_separate_stays_order_three(target) -> None:
    assert infoflow.predict(spec_of(target, [2, 1]))["comparison_order"].value == 3


@pytest.mark.parametrize("target", WRITTEN)
def test_the_engines_reading_keeps_the_written_value(target) -> None:
    assert_reading_is_written(target)
