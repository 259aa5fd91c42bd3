"""Rejudge the equal-exponent claims of committed validate reports from their recorded
per-seed ladders: the old tolerance (0.5 x the steeper falling median slope, on slope
differences) against the new rule (docs/results/2026-12-05-equal-exponents-preregistered.md:
|exponent difference| < MARGIN, every seed paired). Only the last step of each claim's rule
changes, so a claim whose recorded reason is an earlier gate (does not learn, flat, too few
seeds) keeps its verdict.

Usage: python docs/results/2026-12-05-equal-exponents-rejudge.py REPORT.json ...
"""

import json
import sys
from pathlib import Path

from infoflow.validators.retrieval.expect import MARGIN
from infoflow.validators.retrieval.exponents import (
    Ladder,
    equal_within,
    paired_differences,
    paired_exponent_differences,
)

HEADS = ("equality:", "exponent_floor:", "witness_flat:")


def key(model: dict) -> str:
    pe = "-pe" if model["positional_encoding"] else ""
    heads = ".".join(map(str, model["heads"]))
    return f"T{model['seq_len']}-E{model['embed_dim']}-h{heads}{pe}"


def ladder(record: dict) -> Ladder:
    seeds = len(record["nmse"][0])
    measured = record.get("measured_seeds", [True] * seeds)
    capped = [[not ok for ok in measured] for _ in record["nmse"]]
    return Ladder(record["sizes"], record["nmse"], capped)


def old_rule(a: Ladder, b: Ladder) -> bool | None:
    difference = paired_differences(a, b)
    slopes = [x.slope().median for x in (a, b)]
    bound = 0.5 * max((-s for s in slopes if s is not None and s < 0), default=0.0)
    if difference.count >= 2 and -bound < difference.low and difference.high < bound:
        return True
    if difference.above(bound) or difference.below(-bound):
        return False
    return None


def rejudge(path: str) -> None:
    report = json.loads(Path(path).read_text())
    print(f"== {path}")
    for spec in report["specs"]:
        ladders = {key(m): ladder(m["ladder"]) for m in spec.get("models", []) if m.get("ladder")}
        witnesses = {
            w["key"]: ladder(w["ladder"]) for w in spec.get("witnesses", []) if w.get("ladder")
        }
        for claim in spec["claims"]:
            if not claim["id"].startswith(HEADS):
                continue
            _, first, second = claim["id"].split(":")
            pool = witnesses if claim["id"].startswith("witness_flat:") else ladders
            if first not in pool or second not in pool:
                print(f"{claim['id']}: {claim['verdict']} (no ladders recorded)")
                continue
            a, b = pool[first], pool[second]
            old, new = old_rule(a, b), equal_within(paired_exponent_differences(a, b), MARGIN)
            decided_by_tolerance = claim["verdict"] != "inconclusive" or "straddle" in (
                claim.get("reason") or ""
            )
            verdict = claim["verdict"]
            if decided_by_tolerance:
                verdict = {True: "confirmed", False: "refuted", None: "inconclusive"}[new]
            diff = paired_exponent_differences(a, b).to_json()
            change = "CHANGED" if verdict != claim["verdict"] else "same"
            print(
                f"{spec['name']} {claim['id']}: {claim['verdict']} -> {verdict} [{change}] "
                f"(old rule {old}, new rule {new}, exponent difference {diff})"
            )


for report_path in sys.argv[1:]:
    rejudge(report_path)
