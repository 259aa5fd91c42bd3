"""The code's rules against the scripts' (docs/results/2026-12-06-shift-rule.md): on fresh
draws, `k1_rules.within_factor` on `k1_rules.ratio_interval` gives the second simulation's
verdict, and `k1_rules.two_sided` on a point the first's ``point-F2``, every time.

Run from the repository root: ``python docs/results/2026-12-06-shift-rule/check_code.py``.
"""

from __future__ import annotations

import math

import numpy as np
from simulate_shift import BASE, point_equivalence
from simulate_shift import mover as script_mover
from simulate_shift_second import middle_equivalence, sweep

from infoflow.validators.icl_markov.ksweep.k1_rules import ratio_interval, two_sided, within_factor

DRAWS = 300


def main() -> None:
    rng = np.random.default_rng(7)
    shifts = points = 0
    for seeds in (3, 6):
        for predicted in ((0.968, 0.994), (0.7, 1.4)):
            middle = math.sqrt(predicted[0] * predicted[1])
            for slope in (1.5, 3.0):
                for truth in (middle / 2, middle, middle * 2):
                    for _ in range(DRAWS):
                        fit0 = sweep(BASE, slope, seeds, rng)
                        fit1 = sweep(BASE * truth, slope, seeds, rng)
                        measured = ratio_interval(fit0, fit1)
                        assert measured == script_mover(fit0, fit1)
                        script = middle_equivalence(predicted, measured)
                        if measured != (0.0, math.inf):
                            assert within_factor(*predicted, *measured)[0] is script
                        shifts += 1
                        if fit1["status"] != "none":
                            assert two_sided(BASE, BASE, fit1)[0] is point_equivalence(BASE, fit1)
                            points += 1
    print(f"{shifts} shift draws and {points} point draws: the code gives the scripts' verdicts")


if __name__ == "__main__":
    main()
