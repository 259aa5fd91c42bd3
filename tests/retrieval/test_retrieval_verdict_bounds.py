"""Verdicts that respect what each model's prediction bounds (a review of the judge,
2026-12-07): a flat ladder beside a failed construction, a flat ladder that ends below the
better one, a diverged seed, a lower bound under the floor. Synthetic ladders: NMSE
``level * (P / P_0) ** slope``, one slope per seed."""

from __future__ import annotations

import math

import pytest

from infoflow.validators.retrieval.expect import Expectation, expect
from infoflow.validators.retrieval.experiment import Expected, Model
from infoflow.validators.retrieval.exponents import Ladder
from infoflow.validators.retrieval.floors import Floors
from infoflow.validators.retrieval.judge import Judge
from infoflow.validators.retrieval.witness_ladder import exponent_claim

SIZES = [204, 408, 816, 1680]
TWO, ONE = Model(16, 32, (1, 1), False), Model(16, 32, (1,), False)
EFFICIENT = Expected(1.0, 1.0, True, True, "paper:theorem_1", "")
UNDER_FLOOR = Expected(1.0, 0.5, False, True, "paper:theorem_1", "")  # the floor lifts 0.5
FAR_ABOVE = Expected(3.0, 3.0, False, True, "paper:theorem_1", "")


def ladder(slopes, level) -> Ladder:
    return Ladder(SIZES, [[level * (p / SIZES[0]) ** s for s in slopes] for p in SIZES])


class _Experiment:
    def __init__(self, expected):
        self.expected = expected

    def derived(self, model):
        return {model.label(): {}}


def judge(two: Ladder, one: Ladder, one_expected: Expected) -> Judge:
    floors = {16: Floors(16, 1.0, 0.5, 0.125)}
    experiment = _Experiment({TWO: EFFICIENT, ONE: one_expected})
    return Judge(experiment, {TWO: two, ONE: one}, floors, {TWO: 0, ONE: 0})


STEEP, FLAT = [-2.0, -2.1, -1.9], [0.0, 0.01, -0.01]


def test_the_floors_equality_is_not_refuted_by_a_construction_that_failed() -> None:
    """The inefficient model steep at the floor's exponent beside a flat efficient one:
    the construction's failure says nothing (it was refuted); the reverse still refutes."""
    floor = Expectation("equality", "reconstruction", TWO, ONE, "the floor", floor=True)
    failed = judge(ladder(FLAT, 0.6), ladder(STEEP, 0.1), UNDER_FLOOR).compare(floor)
    assert failed.verdict == "inconclusive"
    assert "predicted efficient, does not learn" in failed.reason
    flat_inefficient = judge(ladder(STEEP, 0.1), ladder(FLAT, 0.6), UNDER_FLOOR).compare(floor)
    assert flat_inefficient.verdict == "refuted"


def test_a_flat_ladder_below_the_better_one_orders_nothing() -> None:
    """A worse model flat at NMSE 1e-4 beside a better one falling from 0.1: a floor the
    better one has not reached, not a size limit (it was confirmed); flat above it, it is."""
    separation = Expectation("separation", "paper", TWO, ONE, "lower bound 3 against 1")
    below = judge(ladder(STEEP, 0.1), ladder(FLAT, 1e-4), FAR_ABOVE).compare(separation)
    assert below.verdict == "inconclusive" and "does not end above" in below.reason
    above = judge(ladder(STEEP, 0.1), ladder(FLAT, 0.9), FAR_ABOVE).compare(separation)
    assert above.verdict == "confirmed"


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_diverged_seed_is_missing_not_dropped(value) -> None:
    """One seed of three diverged at one rung: the separation is not taken on the other two
    (it was confirmed on two seeds, the report saying seeds 2 and nothing missing)."""
    separation = Expectation("separation", "paper", TWO, ONE, "lower bound 3 against 1")
    worse = ladder(FLAT, 0.9)
    worse.nmse[1][1] = value
    claim = judge(ladder(STEEP, 0.1), worse, FAR_ABOVE).compare(separation)
    assert claim.verdict == "inconclusive" and "diverged" in claim.reason
    assert claim.measured["slope"][ONE.label()]["missing"] == 1
    bound = judge(ladder(STEEP, 0.1), worse, FAR_ABOVE).lower_bound(ONE)
    assert bound.verdict == "inconclusive" and "diverged" in bound.reason


def test_a_diverged_seed_is_named_not_called_flat_or_straddling() -> None:
    """A steep worse ladder with a diverged seed is not "flat" (a review), and a witness's
    exponent claim names the divergence, not a straddle."""
    separation = Expectation("separation", "paper", TWO, ONE, "lower bound 3 against 1")
    worse = ladder([-0.5, -0.5, -0.5], 0.9)
    worse.nmse[3][1] = math.inf
    claim = judge(ladder(STEEP, 0.1), worse, FAR_ABOVE).compare(separation)
    assert claim.verdict == "inconclusive"
    assert "diverged" in claim.reason and "flat" not in claim.reason, claim.reason
    witness = ladder(STEEP, 0.1)
    witness.nmse[2][0] = math.nan
    found = exponent_claim(TWO, witness, 1.0)
    assert found.verdict == "inconclusive" and "1 seed(s) diverged" in found.reason


def test_rungs_of_one_size_measure_nothing() -> None:
    same = Ladder([500] * 4, [[0.1, 0.2, 0.3]] * 4)
    assert same.measured() == [False] * 3
    assert same.unmeasured() == "1 rung(s): a measured exponent needs 4"


def test_a_bound_under_the_floor_orders_no_length() -> None:
    """One architecture at two lengths: the shorter's bound 0 is under the floor of 1, the
    longer's bound 1: the engine predicts 1 at both, so no separation (one was claimed from
    the bounds alone); 1.7 at the longer clears the floor by the margin."""
    short, long = Model(8, 32, (1,), False), Model(16, 32, (1,), False)
    lifted = Expected(1.0, 0.0, False, True, "paper:theorem_1", "")
    at_floor = Expected(1.0, 1.0, False, True, "paper:theorem_1", "")
    none = expect(_Experiment({short: lifted, long: at_floor}), short, long)
    assert isinstance(none, str) and "the floor; the bound 0" in none
    grows = Expected(1.7, 1.7, False, True, "paper:theorem_1", "")
    found = expect(_Experiment({short: lifted, long: grows}), short, long)
    assert isinstance(found, Expectation) and found.outcome == "separation"
