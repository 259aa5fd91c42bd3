"""The second shift candidate (docs/results/2026-12-06-shift-rule-second-preregistered.md):
MOVER, F = 2 from the prediction's geometric middle, at three and six seeds a K.

Run from the repository root:
``python docs/results/2026-12-06-shift-rule/simulate_shift_second.py``. Everything but the
window and the seed count is the first simulation's (``simulate_shift.py``, imported).
"""

from __future__ import annotations

import math

import numpy as np
from simulate_shift import BASE, DRAWS, GRID, F, mover, tally

from infoflow.validators.icl_markov.ksweep.logistic import threshold


def sweep(truth: float, slope: float, seeds: int, rng: np.random.Generator) -> dict:
    outcomes = []
    for k in GRID:
        p = 1 / (1 + (truth / k) ** slope)
        outcomes += [(k, bool(won)) for won in rng.random(seeds) < p]
    return threshold(outcomes)


def middle_equivalence(predicted: tuple, measured: tuple) -> bool | None:
    """Refuted when disjoint; confirmed when the interval lies within [m / F, m x F]."""
    if measured[1] < predicted[0] or measured[0] > predicted[1]:
        return False
    middle = math.sqrt(predicted[0] * predicted[1])
    inside = middle / F <= measured[0] and measured[1] <= middle * F
    return True if inside and math.isfinite(measured[1]) else None


def main() -> None:
    rng = np.random.default_rng(20261206)
    print("seeds  predicted ratio  true ratio  slope  confirmed  refuted  inconclusive")
    for seeds in (3, 6):
        for predicted in ((0.968, 0.994), (0.7, 1.4)):
            middle = math.sqrt(predicted[0] * predicted[1])
            for slope in (1.5, 3.0):
                for truth in (middle / 2, middle, middle * 2):
                    verdicts = []
                    for _ in range(DRAWS):
                        fit0 = sweep(BASE, slope, seeds, rng)
                        fit1 = sweep(BASE * truth, slope, seeds, rng)
                        verdicts.append(middle_equivalence(predicted, mover(fit0, fit1)))
                    c, r, i = tally(verdicts)
                    shown = f"{predicted[0]:.3g}-{predicted[1]:.3g}"
                    print(
                        f"{seeds:5}  {shown:>15}  {truth:10.3f}  {slope:5.1f}  "
                        f"{c:9.1%}  {r:7.1%}  {i:12.1%}"
                    )


if __name__ == "__main__":
    main()
