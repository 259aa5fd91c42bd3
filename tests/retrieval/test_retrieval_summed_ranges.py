"""Sums of one function over ranges of one token index, netted (since 2026-12-06): where the
terms' coefficients weigh one range by one number and every other position by 0, at every
T, they are that number times the sum over that range (a value at a fixed position counting
as the sum over that position). Until then each range was a pool of its own weighting: two
heads, and positional encoding where none is needed."""

from __future__ import annotations

import random

import pytest
from rewrite_checks import assert_one_function, ranged_term, reading_at, spec_of

import infoflow

WHOLE = "sum(x[t][0] for t in T)"
NETTED = [
    ("sum(x[t][0] for t in T if t <= 3) + sum(x[s][0] for s in T if s >= 4)", WHOLE, [[1]], False),
    ("sum(x[t][0] for t in T) - x[1][0]", "sum(x[t][0] for t in T if t >= 2)", [[1]], True),
    ("sum(x[t][0] for t in T) - sum(x[v+1][0] for v in T)", "x[1][0]", [[1]], True),
    (
        "sum(dot(q, x[t]) for t in T if t <= T - 2) + dot(x[T], q) + dot(q, x[T - 1])",
        "sum(dot(q, x[t]) for t in T)",
        [[1]],
        False,
    ),
    (
        "2 * sum(x[t][1] for t in T if t <= 4) - 2 * x[4][1] + 2 * sum(x[s][1] for s in T if s > 4)"
        " - 2 * x[2][1]",
        "2 * sum(x[t][1] for t in T if t != 2 and t != 4)",
        [[1]],
        True,
    ),
    (
        "sum(x[t][0] for t in T if t <= 3) + sum(x[s][0] for s in T if s >= 5 and s != 6)",
        "sum(x[t][0] for t in T if t != 4 and t != 6)",
        [[1]],
        True,
    ),
]
#: Weights of two signs or two levels stay as written (one softmax is one weighting), and so
#: do ranges with a gap that grows with T.
KEPT = [
    "sum(x[t][0] for t in T if t <= 3) - sum(x[s][0] for s in T if s >= 4)",
    "2 * sum(x[t][0] for t in T if t <= 3) + sum(x[s][0] for s in T if s >= 4)",
    "sum(x[t][0] for t in T if t <= 3) + sum(x[s][0] for s in T if s >= T - 2)",
]


@pytest.mark.parametrize(("written", "plain", "architectures", "pe"), NETTED)
def test_sums_that_net_to_one_range_are_one_sum(written, plain, architectures, pe) -> None:
    names = ("comparison_order", "min_architectures", "feasible", "requires_positional_encoding")
    assert_one_function(written, plain, ([1], [2]), names, pes=(False, True))
    result = infoflow.predict(spec_of(written, [1]))
    assert result["min_architectures"].value == architectures
    assert result["requires_positional_encoding"].value is pe


@pytest.mark.parametrize("written", KEPT)
def test_weights_of_two_signs_or_levels_stay_two_pools(written) -> None:
    assert infoflow.predict(spec_of(written, [2]))["min_architectures"].value == [[2], [1, 1]]


def test_the_engines_reading_is_the_written_function_at_every_small_T() -> None:
    """Random sums of x[t][0] over ranges bounded by numbers up to 6 or T - k (twice on one
    side, or every position but two), with values at fixed positions, and coefficients +-1,
    +-2: the rewrite agrees with the target as written at T = 3, 5 and 8 (where the ends'
    order differs from large T's); many of them net."""
    rng, netted, checked = random.Random(0), 0, 0
    for _ in range(60):
        text = " + ".join(
            f"{rng.choice([1, -1, 2, -2])} * {ranged_term(rng, i, 'sum')}" for i in range(3)
        )
        for length in (3, 5, 8):
            if (tree := reading_at(text, length)) is not None:
                netted += repr(tree).count("Reduce") < text.count("sum(")
                checked += 1
    assert checked > 120 and netted > checked // 4, (checked, netted)


@pytest.mark.parametrize(
    "written",
    [
        "sum(x[t][0] for t in T if t <= 4 and t <= T - 2) + sum(x[s][0] for s in T if s >= 5)",
        "sum(x[t][0] for t in T if t <= 5 and t <= T - 1) - sum(x[t][0] for t in T if t <= 4)",
        "max(max(x[t][0] for t in T if t <= 4 and t <= T - 2), max(x[s][0] for s in T if s >= 5))",
        "min(min(x[t][0] for t in T if t >= 3 and t >= T - 5), x[1][0], x[2][0])",
        "sum(x[s][0] * (sum(1 for t in T if t < s) - 3) for s in T)",  # multiplied out
        "max(sum(x[s][0] * (2 - sum(x[t][1] for t in T if t < s)) for s in T if s <= u)"
        " for u in T)",
        # split: each piece keeps the range an offset anywhere gives (a review)
        "sum(x[s][0] + x[s-1][0] * sum(1 for t in T if t > s) for s in T)",
        "sum(x[s-1][0] + x[t][1] for s in T for t in T if s < t)",
        "sum(x[s+1][0] * sum(1 for t in T if t > s) + x[s][1] for s in T)",
        "sum(x[a][0] + x[b][1] for a in T for b in T if a != b)",
    ],
)
def test_found_cases_are_read_as_written_at_every_small_T(written) -> None:
    """Which of t <= 4 and t <= T - 2 binds depends on T: the range was read as t <= 4, and
    joined at T = 5 into the sum over every t, where T - 2 = 3 binds; a split sum's pieces
    summed over s = 1 where x[s-1] in one term leaves it out (reviews, 2026-12-06)."""
    for length in range(2, 10):
        reading_at(written, length)
