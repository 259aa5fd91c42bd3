"""Pointwise maxima (since 2026-12-06). A max of a pointwise max (``abs(e)`` is max(e, -e))
is the max of its branches' reductions, planned as one where they are one function: the
spread of a score, ``max(abs(f(s) - f(t)) for s, t)``, is max f - min f, two heads in one
layer, where it was planned as a pair (two layers, and positional encoding under ``s !=
t``). A pointwise max of maxima of one function whose ranges join is one max over the union
(a value at a fixed position being the max over that position): ``max(f(x[1]), max(f(x[t])
for t in T if t >= 2))`` is one head without positional encoding, where it was a fetch
beside a masked max, with PE."""

from __future__ import annotations

import random

import pytest
from rewrite_checks import (
    assert_one_function,
    assert_reading_is_written,
    ranged_term,
    reading_at,
    spec_of,
)

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
#: Branches that are two functions are read two ways (since 2026-12-06): one score over the
#: pair (one head a layer: two layers, [1, 1]) or one reduction a branch (max f - min g and
#: max g - min f: four one-token heads in one layer, [4]); the engine plans both.
BRANCHED = [
    "max(abs(x[s][0] - x[t][1]) for s in T for t in T)",
    "max(abs(x[s][0] - x[t][1]) + 3 for s in T for t in T)",
    "min(-abs(x[s][0] - x[t][1]) for s in T for t in T)",
    "max(max(abs(dot(q, x[s]) - x[t][1]) for t in T) for s in T)",
]
#: Branches that read a token at different offsets: each branch's reduction keeps the range
#: every branch's offsets gave the index (x[t-1] in one branch leaves t = 1 out of both; the
#: first per-branch reading lost it, a review).
OFFSET_BRANCHES = [
    "max(max(x[t][0], x[t-1][1]) for t in T)",
    "max(max(x[s][0] - x[t][1], x[t-1][1] - x[s][0]) for s in T for t in T)",
    "min(min(x[t+1][0], x[t-1][1]) for t in T)",
    # two maxima over one domain merge only where their offsets leave the same range (a review)
    "max(max(x[s][1] for s in T if s <= 3), max(min(x[s-2][2] - x[s][2], x[s][2]) for s in T"
    " if s <= 3))",
]
#: Where one reduction a branch gains nothing, one score over the pair is the plan; a min of
#: a distance (the closest pair) has no branches.
PAIRS = [
    "min(abs(x[s][0] - x[t][0]) for s in T for t in T if s != t)",
    "max(abs(dot(q, x[s]) - dot(q, x[t])) + dot(x[s], x[t]) for s in T for t in T)",
    "sum(max(abs(x[s][0] - x[t][1]) for t in T) for s in T)",
]


WHOLE = "max(dot(q, x[t]) for t in T)"
JOINED = [
    ("max(dot(q, x[1]), max(dot(q, x[t]) for t in T if t >= 2))", WHOLE),
    ("max(max(dot(q, x[t]) for t in T if t <= 3), max(dot(x[s], q) for s in T if s > 3))", WHOLE),
    ("max(dot(x[2], q), dot(q, x[1]), max(dot(q, x[t]) for t in T if t >= 3))", WHOLE),
    (
        "min(norm(x[T] - w), min(norm(w - x[t]) for t in T if t < T))",
        "min(norm(x[t] - w) for t in T)",
    ),
    (
        "max(max(x[t][0] for t in T if t >= 2 and t <= 4), x[5][0], x[1][0])",
        "max(x[t][0] for t in T if t <= 5)",
    ),
    (
        "max(" + ", ".join(f"max(dot(q, x[t]) for t in T if t >= {k})" for k in range(1, 9)) + ")",
        WHOLE,
    ),
    (
        "max(dot(q, x[1]), max(dot(q, x[t]) for t in T if t >= 3))",
        "max(dot(q, x[t]) for t in T if t != 2)",
    ),
    # -min(-f) is max f (a review: it was a fetch beside a masked min, with PE)
    ("max(x[1][0], -min(-x[t][0] for t in T if t >= 2))", "max(x[t][0] for t in T)"),
]
#: Ranges a gap as long as T keeps apart, or a function read at an offset, stay apart.
APART = [
    ("max(dot(q, x[2]), max(dot(q, x[t+1]) for t in T if t >= 2))", [[1]]),
    (
        "max(max(x[t][0] for t in T if t <= 3), max(x[t][0] for t in T if t >= T - 1))",
        [[2], [1, 1]],
    ),
]


@pytest.mark.parametrize(("written", "plain"), JOINED)
def test_maxima_whose_ranges_join_are_one(written, plain) -> None:
    names = ("comparison_order", "min_architectures", "feasible", "requires_positional_encoding")
    assert_one_function(written, plain, ([1], [2]), names, pes=(False, True))


@pytest.mark.parametrize(("written", "architectures"), APART)
def test_maxima_apart_stay_apart(written, architectures) -> None:
    assert_reading_is_written(written, pe=True)
    assert infoflow.predict(spec_of(written, [1])).get("min_architectures").value == architectures


@pytest.mark.parametrize(("written", "plain"), SAME)
def test_a_spread_is_the_max_less_the_min(written, plain) -> None:
    names = ("comparison_order", "min_architectures", "feasible", "requires_positional_encoding")
    assert_one_function(written, plain, ([2], [1, 1]), names, pes=(False, True))
    result = infoflow.predict(spec_of(written, [2], pe=False))
    assert result["min_architectures"].value == [[2], [1, 1]]
    assert result["feasible"].value


#: Joined at every T > 8 but not at T = 8, where T - 3 is 5 and every range leaves it out.
NOT_AT_EVERY_T = (
    "max(max(x[a][0] for a in T if a != T and a != T - 3), max(x[b][0] for b in T if b != T and"
    " b != 5), max(x[c][0] for c in T if c != T - 2 and c != T - 3), max(x[d][0] for d in T if"
    " d != 4 and d != 5))"
)


@pytest.mark.parametrize(
    "written", [w for w, _ in SAME + JOINED] + BRANCHED + OFFSET_BRANCHES + PAIRS + [NOT_AT_EVERY_T]
)
def test_the_engines_reading_is_the_written_function(written) -> None:
    assert_reading_is_written(written, pe=True)


@pytest.mark.parametrize("written", BRANCHED)
def test_branches_that_differ_are_planned_both_ways(written) -> None:
    """The fewest layers are the branches' (one layer, [4]), the narrowest the pair's ([1, 1]);
    each architecture takes the reading that serves it, and says so."""
    minimal = infoflow.predict(spec_of(written, [1, 1], pe=False))
    assert minimal["min_layers"].value == 1
    assert minimal["min_architectures"].value == [[4], [1, 1]]
    assert minimal["efficient"].value and minimal["comparison_order"].value == 2
    assert "one score, the one that serves it" in minimal["comparison_order"].note
    branches = infoflow.predict(spec_of(written, [4], pe=False))
    assert branches["efficient"].value and branches["comparison_order"].value == 1
    assert "one reduction a branch, the one" in branches["comparison_order"].note
    assert not infoflow.predict(spec_of(written, [3], pe=False))["efficient"].value


#: The branches spelled out: sums of maxima over unconditioned tokens read at no offset are
#: gathered into one score (the one-score reading) where they join; with a condition or an
#: offset they stay as written in both readings.
OTHER_BRANCH = "max(x[s][1] for s in T) - min(x[t][0] for t in T)"
SPELLED = f"max(max(x[s][0] for s in T) - min(x[t][1] for t in T), {OTHER_BRANCH})"
NOT_GATHERED = [
    f"max(max(x[s][0] for s in T if s <= 3) - min(x[t][1] for t in T), {OTHER_BRANCH})",
    f"max(max(x[s-1][0] for s in T) - min(x[t][1] for t in T), {OTHER_BRANCH})",
]


@pytest.mark.parametrize("written", [SPELLED, *NOT_GATHERED])
def test_branches_spelled_out_are_read_as_written(written) -> None:
    assert_reading_is_written(written, pe=True)


def test_branches_spelled_out_are_the_spread_of_two_channels() -> None:
    """``max(max f - min g, max g - min f)`` is planned as ``max(abs(f(s) - g(t)) ...)`` is,
    both ways (it was one reduction a branch only: [[4], [1, 1, 1, 1]], where [1, 1] does)."""
    names = ("min_architectures", "min_layers", "efficient", "requires_positional_encoding")
    spread = "max(abs(x[s][0] - x[t][1]) for s in T for t in T)"
    assert_one_function(SPELLED, spread, ([4], [1, 1], [2]), names, pes=(False, True))
    assert infoflow.predict(spec_of(SPELLED, [1, 1]))["min_architectures"].value == [[4], [1, 1]]


SPREAD01 = "max(abs(x[s][0] - x[t][1]) for s in T for t in T)"


@pytest.mark.parametrize(
    ("written", "other"),
    [
        (f"{SPREAD01} - min(x[u][1] for u in T)", f"{SPREAD01} + max(-x[u][1] for u in T)"),
        (f"{SPREAD01} + max(x[u][0] for u in T)", f"{SPREAD01} - min(-x[u][0] for u in T)"),
    ],
)
def test_a_scaled_extremum_is_one_retrieval(written, other) -> None:
    """max(c f) is c max f (c min f for c < 0): the branches' min x1 and a term's max(-x1)
    share one head, [4] as with max x0 beside them (they were [5], a review)."""
    names = ("min_architectures", "min_layers", "efficient")
    assert_one_function(written, other, ([4], [1, 1]), names, pes=(False,))
    plan = infoflow.predict(spec_of(written, [4], pe=False))
    assert plan["min_architectures"].value == [[4], [1, 1, 1]] and plan["efficient"].value


def test_extrema_that_cancel_are_a_constant() -> None:
    with pytest.raises(infoflow.SpecError, match="it is a constant"):
        infoflow.predict(spec_of("max(-x[t][0] for t in T) + min(x[u][0] for u in T)", [1]))


def test_relu_is_the_max_with_zero() -> None:
    """``relu(e)`` is read as ``max(e, 0)``: both spellings planned both ways (relu was one
    score only, a review)."""
    names = ("min_architectures", "min_layers", "efficient", "comparison_order")
    relu = "max(relu(x[s][0] - x[t][1]) for s in T for t in T)"
    zero = "max(max(x[s][0] - x[t][1], 0) for s in T for t in T)"
    assert_one_function(relu, zero, ([2], [1, 1]), names, pes=(False,))
    assert infoflow.predict(spec_of(relu, [2], pe=False))["efficient"].value


def test_the_minimal_architectures_need_no_more_than_positional_encoding_says() -> None:
    """Of two readings, one of which needs positional encoding, the minimal architectures are
    the other's: every one listed is efficient without PE (the one-score reading's [1, 1],
    which needs PE, was listed beside `requires_positional_encoding` false, a review)."""
    written = "max(max(x[s][0] + x[t][0], x[s][1], x[t][2]) for s in T for t in T if t <= s)"
    result = infoflow.predict(spec_of(written, [1], pe=False))
    assert not result["requires_positional_encoding"].value
    for heads in result["min_architectures"].value:
        assert infoflow.predict(spec_of(written, heads, pe=False))["efficient"].value, heads


@pytest.mark.parametrize("written", PAIRS)
def test_branches_that_gain_nothing_stay_one_pair(written) -> None:
    result = infoflow.predict(spec_of(written, [1, 1]))
    assert result["comparison_order"].value == 2
    assert result["min_layers"].value == 2


def test_random_maxima_are_read_as_written_at_every_small_T() -> None:
    """Random maxima (minima) of x[t][0] over ranges bounded by numbers up to 6 or T - k
    (twice on one side), or leaving out two positions, beside values at fixed positions: the
    engine's reading agrees with the target as written at T = 3, 5 and 8; many join."""
    rng, joined, checked = random.Random(1), 0, 0
    for _ in range(40):
        fn = rng.choice(["max", "min"])
        text = f"{fn}(" + ", ".join(ranged_term(rng, i, fn) for i in range(3)) + ")"
        for length in (3, 5, 8):
            if (tree := reading_at(text, length)) is not None:
                joined += repr(tree).count("Reduce(") < text.count("(x[")
                checked += 1
    assert checked > 80 and joined > checked // 4, (checked, joined)
