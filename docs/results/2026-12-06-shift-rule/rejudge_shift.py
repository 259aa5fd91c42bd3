"""Every committed shift claim (``k1_shift``) judged again by the adopted rule, from what it
records (both races' K*_1 and intervals, from which the predicted ratio is derived again, and
both sweeps' fits); nothing is retrained. A claim the
race left without a prediction stays inconclusive under any rule.

Run from the repository root:
``python docs/results/2026-12-06-shift-rule/rejudge_shift.py docs/results/*/report.json``.
"""

from __future__ import annotations

import json
import math
import sys

from infoflow.icl_markov.race import Race
from infoflow.validators.icl_markov.clocks.judge import predicted_ratio
from infoflow.validators.icl_markov.ksweep.k1_rules import ratio_interval, within_factor


def shift_claims(node, found: dict) -> None:
    if isinstance(node, list):
        for item in node:
            shift_claims(item, found)
    elif isinstance(node, dict):
        if "k1_shift" in str(node.get("id", "")) and "verdict" in node:
            found[node["id"]] = node
        for value in node.values():
            shift_claims(value, found)


def _races(derived: dict) -> tuple[dict, dict]:
    return derived["race"], derived["race_slowed"]


def _race(recorded: dict) -> Race:
    """The race's K*_1, interval and grid as report.json holds them (an open end as null)."""
    low, high = recorded["interval"]
    interval = (0.0 if low is None else low, math.inf if high is None else high)
    paths = {p: {int(k): v for k, v in t.items()} for p, t in recorded["paths"].items()}
    return Race(recorded["k1_star"], interval, (0, 0, 0), (0, 0, 0), paths, "")


def main(paths: list[str]) -> None:
    for path in paths:
        found: dict = {}
        with open(path) as file:
            shift_claims(json.load(file), found)
        for ident, claim in sorted(found.items()):
            now = "inconclusive (no prediction)"
            if claim["predicted"] is not None:
                fits = claim["measured"]["k1_fit"], claim["measured"]["k1_fit_slowed"]
                ratio = ratio_interval(*fits)
                predicted = predicted_ratio(*map(_race, _races(claim["derived_from"])))
                verdict = None
                if ratio != (0.0, math.inf) and predicted[0] > 0 and predicted[1] < math.inf:
                    verdict = within_factor(*predicted, *ratio)[0]
                elif ratio[1] < predicted[0] or ratio[0] > predicted[1]:
                    verdict = False
                now = {True: "confirmed", False: "refuted", None: "inconclusive"}[verdict]
                now += f" (predicted {predicted[0]:.3g} to {predicted[1]:.3g}, recorded "
                recorded = [open_end(v) for v in claim["predicted"]]  # null: an open end
                now += f"{recorded[0]} to {recorded[1]}; "
                now += f"measured {ratio[0]:.3g} to {ratio[1]:.3g})"
            print(f"{path}: {ident}: was {claim['verdict']}, now {now}")


def open_end(value) -> str:
    """A recorded end of a ratio interval: null (JSON has no infinity) is an open end."""
    return "open" if value is None else f"{value:.3g}"


if __name__ == "__main__":
    main(sys.argv[1:])
