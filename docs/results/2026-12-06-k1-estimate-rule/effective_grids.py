"""After the adoption, a review's question: the pre-registered simulation fitted every K of
the smoke grid, but the validator fits only the K its ceiling can see. The same rules on the
K each bundled setting really fits (post hoc, not pre-registered).

Run from the repository root:
``python docs/results/2026-12-06-k1-estimate-rule/effective_grids.py``.
"""

from __future__ import annotations

import numpy as np

from infoflow.validators.icl_markov.ksweep.k1_rules import overlaps, two_sided
from infoflow.validators.icl_markov.ksweep.logistic import threshold

#: The K a fit sees: smoke-c3 under `projection` (blind from 64, `plan`), under `gap` (blind
#: from 128, the 2026-11-30 smoke report), k2-c5's grid (every K testable), and the full grid.
GRIDS = {
    "smoke-c3, projection: K = 1..32": [2.0**i for i in range(6)],
    "smoke-c3, gap: K = 1..64": [2.0**i for i in range(7)],
    "k2-c5: K = 16..128": [16.0, 23.0, 32.0, 45.0, 64.0, 91.0, 128.0],
    "the pre-registered full grid: K = 1..1024": [2.0**i for i in range(11)],
}
SEEDS, DRAWS, PREDICTED = 3, 1000, (16.0, 32.0)


def main() -> None:
    rng = np.random.default_rng(20261207)
    print("grid; true K*_1; slope; confirmed % (overlap -> adopted); refuted %")
    for name, grid in GRIDS.items():
        for slope in (1.5, 3.0):
            for truth in (11.3, 22.6, 45.3):
                confirmed, refuted = [0, 0], 0
                for _ in range(DRAWS):
                    outcomes = []
                    for k in grid:
                        p = 1 / (1 + (truth / k) ** slope)
                        outcomes += [(k, bool(won)) for won in rng.random(SEEDS) < p]
                    fit = threshold(outcomes)
                    if fit["status"] == "none":
                        continue
                    old, new = overlaps(*PREDICTED, fit)[0], two_sided(*PREDICTED, fit)[0]
                    confirmed[0] += old is True
                    confirmed[1] += new is True
                    refuted += new is False
                was, now, lost = (100 * n / DRAWS for n in (*confirmed, refuted))
                print(f"{name}; {truth}; {slope}; {was:.1f} -> {now:.1f}; {lost:.1f}")


if __name__ == "__main__":
    main()
