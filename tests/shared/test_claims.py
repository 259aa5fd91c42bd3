"""The claims every family returns: one seed decides no claim judged over seeds."""

from __future__ import annotations

from infoflow.validators.claims import MIN_SEEDS, Claim, fewer_seeds


def _claim(holds: bool, reason: str = "") -> Claim:
    return Claim.judged("x", "x holds", 1, 2, "within 2x", holds, reason)


def test_a_verdict_over_one_seed_is_inconclusive_saying_what_the_seed_showed() -> None:
    assert MIN_SEEDS == 2 and fewer_seeds(2) is None
    agrees = _claim(True).over_seeds(1)
    assert agrees.verdict == "inconclusive"
    assert agrees.reason == "1 seed(s): an interval over seeds needs 2 at least (alone, it agrees)"
    disagrees = _claim(False, "every seed is 3x off").over_seeds(1)
    assert disagrees.verdict == "inconclusive"
    assert disagrees.reason.endswith("(alone, it disagrees: every seed is 3x off)")
    assert _claim(True).over_seeds(2).verdict == "confirmed"
    assert _claim(False).over_seeds(3).verdict == "refuted"
    undecided = Claim.undecided("x", "x holds", 1, 2, "within 2x", "no data")
    assert undecided.over_seeds(1).reason == "no data"  # its own reason kept
