"""Every committed shift claim (``k1_shift``) judged again by the adopted rule, from what it
records (the race's predicted ratio, both sweeps' fits); nothing is retrained. A claim the
race left without a prediction stays inconclusive under any rule.

Run from the repository root:
``python docs/results/2026-12-06-shift-rule/rejudge_shift.py docs/results/*/report.json``.
"""

from __future__ import annotations

import json
import math
import sys

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
                verdict = None
                if ratio != (0.0, math.inf):
                    verdict = within_factor(*claim["predicted"], *ratio)[0]
                now = {True: "confirmed", False: "refuted", None: "inconclusive"}[verdict]
                now += f" (ratio {ratio[0]:.3g} to {ratio[1]:.3g})"
            print(f"{path}: {ident}: was {claim['verdict']}, now {now}")


if __name__ == "__main__":
    main(sys.argv[1:])
