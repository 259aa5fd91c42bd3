"""How often each rule for the shift claim (K*_1(r) / K*_1(1)) and for a point K*_1 confirms,
refutes or leaves it inconclusive, on outcomes drawn from logistics with known K*_1
(docs/results/2026-12-06-shift-rule-preregistered.md).

Run from the repository root: ``python docs/results/2026-12-06-shift-rule/simulate_shift.py``.
The grid is k2-c5's (K = 16 to 128 in steps of sqrt 2), three seeds a K; each seed's outcome
is "generalization first" with probability 1 / (1 + (K*_1 / K)^b). Shift rules: ``overlap``
(the rule until now: the ratio of opposite ends, any overlap confirms), ``ends-F2`` (the same
interval, the equivalence test with F = 2), ``mover-F2`` (the MOVER interval, F = 2). Point
rules: ``overlap`` (`k1_rules.overlaps` for low = high) and ``point-F2``.
"""

from __future__ import annotations

import math

import numpy as np

from infoflow.validators.icl_markov.ksweep.k1_rules import overlaps
from infoflow.validators.icl_markov.ksweep.logistic import threshold

GRID = [16.0, 23.0, 32.0, 45.0, 64.0, 91.0, 128.0]
SEEDS, DRAWS, F = 3, 2000, 2.0
BASE = 45.3


def sweep(truth: float, slope: float, rng: np.random.Generator) -> dict:
    outcomes = []
    for k in GRID:
        p = 1 / (1 + (truth / k) ** slope)
        outcomes += [(k, bool(won)) for won in rng.random(SEEDS) < p]
    return threshold(outcomes)


def estimate(fit: dict) -> tuple[float | None, float | None, float | None]:
    """(low, estimate, high) of one sweep in K; None where there is none."""
    if fit["status"] == "fit":
        return fit["low"], fit["value"], fit["high"]
    if fit["status"] == "separable" and fit["low"] and fit["high"]:
        return fit["low"], math.sqrt(fit["low"] * fit["high"]), fit["high"]
    if fit["status"] in ("separable", "open"):
        return fit["low"], None, fit["high"]
    return None, None, None


def ends(fit0: dict, fit1: dict) -> tuple[float, float]:
    """The ratio of opposite ends (0 / inf where open): the interval until now."""
    (low0, _, high0), (low1, _, high1) = estimate(fit0), estimate(fit1)
    return (low1 / high0 if low1 and high0 else 0.0, high1 / low0 if high1 and low0 else math.inf)


def mover(fit0: dict, fit1: dict) -> tuple[float, float]:
    """MOVER in log K (Zou and Donner 2008); a side with an open term stays open."""
    (low0, e0, high0), (low1, e1, high1) = estimate(fit0), estimate(fit1)
    if e0 is None or e1 is None:
        return ends(fit0, fit1)
    e = math.log(e1 / e0)
    low, high = 0.0, math.inf
    if low1 and high0:
        low = math.exp(e - math.hypot(math.log(e1 / low1), math.log(high0 / e0)))
    if high1 and low0:
        high = math.exp(e + math.hypot(math.log(high1 / e1), math.log(e0 / low0)))
    return low, high


def overlap_rule(predicted: tuple, measured: tuple) -> bool | None:
    if measured == (0.0, math.inf):
        return None
    holds = predicted[0] <= measured[1] and predicted[1] >= measured[0]
    if holds and (measured[0] == 0.0 or math.isinf(measured[1])):
        return None
    return holds


def equivalence(predicted: tuple, measured: tuple) -> bool | None:
    """Refuted when disjoint; confirmed when the interval lies within [low / F, high x F]."""
    if measured[1] < predicted[0] or measured[0] > predicted[1]:
        return False
    inside = predicted[0] / F <= measured[0] and measured[1] <= predicted[1] * F
    return True if inside and math.isfinite(measured[1]) else None


def point_overlap(point: float, fit: dict) -> bool | None:
    if fit["status"] == "none":
        return None
    return overlaps(point, point, fit)[0]


def point_equivalence(point: float, fit: dict) -> bool | None:
    low, _, high = estimate(fit)
    if (low is not None and point < low) or (high is not None and point > high):
        return False
    if low is None or high is None or fit["status"] not in ("fit", "separable"):
        return None
    return True if point / F <= low and high <= point * F else None


def tally(verdicts: list[bool | None]) -> tuple[float, float, float]:
    n = len(verdicts)
    return tuple(sum(v is w for v in verdicts) / n for w in (True, False, None))


def shift_rows(rng: np.random.Generator) -> None:
    print("predicted ratio  true ratio  slope  rule      confirmed  refuted  inconclusive")
    for predicted in ((0.968, 0.994), (0.7, 1.4)):
        middle = math.sqrt(predicted[0] * predicted[1])
        for slope in (1.5, 3.0):
            for truth in (middle / 2, middle, middle * 2):
                got = {"overlap": [], "ends-F2": [], "mover-F2": []}
                for _ in range(DRAWS):
                    fit0, fit1 = sweep(BASE, slope, rng), sweep(BASE * truth, slope, rng)
                    got["overlap"].append(overlap_rule(predicted, ends(fit0, fit1)))
                    got["ends-F2"].append(equivalence(predicted, ends(fit0, fit1)))
                    got["mover-F2"].append(equivalence(predicted, mover(fit0, fit1)))
                for rule, verdicts in got.items():
                    c, r, i = tally(verdicts)
                    shown = f"{predicted[0]:.3g}-{predicted[1]:.3g}"
                    print(
                        f"{shown:>15}  {truth:10.3f}  {slope:5.1f}  {rule:8}  "
                        f"{c:9.1%}  {r:7.1%}  {i:12.1%}"
                    )


def point_rows(rng: np.random.Generator) -> None:
    print("point  true K*_1  slope  rule      confirmed  refuted  inconclusive")
    for slope in (1.5, 3.0):
        for truth in (BASE / 2, BASE, BASE * 2):
            got = {"overlap": [], "point-F2": []}
            for _ in range(DRAWS):
                fit = sweep(truth, slope, rng)
                got["overlap"].append(point_overlap(BASE, fit))
                got["point-F2"].append(point_equivalence(BASE, fit))
            for rule, verdicts in got.items():
                c, r, i = tally(verdicts)
                print(
                    f"{BASE:5.1f}  {truth:9.1f}  {slope:5.1f}  {rule:8}  "
                    f"{c:9.1%}  {r:7.1%}  {i:12.1%}"
                )


def main() -> None:
    rng = np.random.default_rng(20261206)
    shift_rows(rng)
    point_rows(rng)


if __name__ == "__main__":
    main()
