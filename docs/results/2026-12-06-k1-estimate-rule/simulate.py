"""How often each rule for a two-sided K*_1 claim confirms, refutes or leaves it inconclusive,
on outcomes drawn from a logistic with a known K*_1 (docs/results/2026-12-06-k1-estimate-rule.md).

Run from the repository root: ``python docs/results/2026-12-06-k1-estimate-rule/simulate.py``.
The grid is the smoke scale's (K = 1, 2, 4, ..., 1024), three seeds a K; each seed's outcome
is "generalization first" with probability 1 / (1 + (K*_1 / K)^b). The prediction is the
bundled specs' [16, 32]. ``overlap`` is the rule of 2026-12-05 (overlap, the measured
interval at most K1_WIDTH_SLACK times as wide: `claims._two_sided` when this ran,
`k1_rules.overlaps` since);
``estimate`` adds that the measured estimate lies inside the prediction (the fit's
maximum-likelihood K*_1; a separable bracket lies within it), and ``adopted`` the rule
`k1_rules.two_sided` took (the same numbers as ``estimate``: the code is the script's rule).
"""

from __future__ import annotations

import numpy as np

from infoflow.validators.icl_markov.ksweep.k1_rules import overlaps, two_sided
from infoflow.validators.icl_markov.ksweep.logistic import threshold

GRID = [2.0**i for i in range(11)]
SEEDS, DRAWS = 3, 2000
PREDICTED = (16.0, 32.0)


def estimate_rule(low: float, high: float, fit: dict) -> bool | None:
    """The overlap rule, and a confirmation only when the measured estimate is inside."""
    verdict, _ = overlaps(low, high, fit)
    if verdict is not True:
        return verdict
    if fit["status"] == "separable":
        inside = low <= fit["low"] and fit["high"] <= high
    else:
        inside = low <= fit["value"] <= high
    return True if inside else None


def rates(truth: float, slope: float, rng: np.random.Generator) -> dict[str, list[float]]:
    counts = {
        "overlap": [0, 0, 0],
        "estimate": [0, 0, 0],
        "adopted": [0, 0, 0],
    }  # confirmed, refuted, inconclusive
    for _ in range(DRAWS):
        outcomes = []
        for k in GRID:
            p = 1 / (1 + (truth / k) ** slope)
            outcomes += [(k, bool(won)) for won in rng.random(SEEDS) < p]
        fit = threshold(outcomes)
        if fit["status"] == "none":
            verdicts = {"overlap": None, "estimate": None, "adopted": None}
        else:
            verdicts = {
                "overlap": overlaps(*PREDICTED, fit)[0],
                "estimate": estimate_rule(*PREDICTED, fit),
                "adopted": two_sided(*PREDICTED, fit)[0],
            }
        for rule, verdict in verdicts.items():
            counts[rule][{True: 0, False: 1, None: 2}[verdict]] += 1
    return {rule: [n / DRAWS for n in c] for rule, c in counts.items()}


def main() -> None:
    rng = np.random.default_rng(20261206)
    print("true K*_1  slope  rule      confirmed  refuted  inconclusive")
    for slope in (1.5, 3.0):
        for truth in (8.0, 11.3, 16.0, 22.6, 32.0, 45.3, 64.0):
            for rule, (c, r, i) in rates(truth, slope, rng).items():
                print(f"{truth:9.1f}  {slope:5.1f}  {rule:8}  {c:9.1%}  {r:7.1%}  {i:12.1%}")


if __name__ == "__main__":
    main()
