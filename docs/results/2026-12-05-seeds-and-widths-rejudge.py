"""Rejudge the K*_1 claims of committed icl_markov reports under rule 3 of
docs/results/2026-12-05-seeds-and-widths-preregistered.md (a two-sided prediction is
confirmed only by a measured interval at most K1_WIDTH_SLACK times as wide), from what each
claim records (the prediction's interval and the fit). Prints every claim whose verdict
would change; nothing is retrained.

Usage: python docs/results/2026-12-05-seeds-and-widths-rejudge.py REPORT.json ...
"""

import json
import math
import sys
from pathlib import Path

from infoflow.core.results import Prediction
from infoflow.validators.icl_markov.ksweep.claims import k1_claim


def claims_of(report: dict):
    """Every K*_1 claim once (a report lists a group's claims under the group and again
    under its spec)."""
    seen, stack = set(), [report]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            ident = str(node.get("id", ""))
            if "verdict" in node and ident.split("/")[-1] in ("k1_star", "k1_star_race"):
                key = json.dumps([ident, node["measured"]], sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    yield node
            else:
                stack.extend(node.values())


def rejudged(claim: dict) -> tuple[str, str]:
    shown = claim["measured"] or {}
    if "fit" not in shown or "predicted_interval" not in shown:
        return claim["verdict"], "records no interval"
    low, high = shown["predicted_interval"]
    interval = (float(low), math.inf if high in ("inf", None) else float(high))
    predicted = Prediction(claim["predicted"], "chains", "estimate", "", "", None, interval)
    found = k1_claim(predicted, shown["fit"], shown.get("grid", {}))
    return found.verdict, found.reason


def main(paths: list[str]) -> None:
    for path in paths:
        report = json.loads(Path(path).read_text())
        for claim in claims_of(report):
            new, why = rejudged(claim)
            change = f"-> {new} ({why})" if new != claim["verdict"] else "unchanged"
            print(f"{path}: {claim['id']}: {claim['verdict']} {change}")


if __name__ == "__main__":
    main(sys.argv[1:])
