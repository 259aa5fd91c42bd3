"""Rejudge committed icl_markov and looped_kv reports under the gates pre-registered in
docs/results/2026-12-05-icl-looped-verdicts-preregistered.md, from what each report records
(every member's times, the ceiling, the criterion, the claims' predictions and measurements).
Prints every claim whose verdict or kind would change, and why; nothing is retrained.

Usage: python docs/results/2026-12-05-icl-looped-rejudge.py REPORT.json ...
"""

import json
import math
import sys
from pathlib import Path

from infoflow.validators.icl_markov.kinds import CLAIM_KINDS
from infoflow.validators.icl_markov.ksweep import claims as ksweep
from infoflow.validators.icl_markov.ksweep.over_seeds import censored_median, majority_median
from infoflow.validators.looped_kv.validator import CLAIM_KINDS as LOOPED_KINDS


def per_k(group: dict) -> dict:
    """The group's per-K measurement with the new medians, from its members."""
    out = {}
    for k, row in group["measurement"]["per_k"].items():
        members = [m for m in group["members"] if str(m["chains"]) == k]
        out[int(k)] = {
            **row,
            "memorized_at": censored_median([m["memorized_at"] for m in members]),
            "transient_duration": majority_median([m["transient_duration"] for m in members]),
            "previous_head": censored_median([m.get("previous_head") for m in members]),
        }
    return out


def ksweep_changes(group: dict) -> list[str]:
    m = group["measurement"]
    rows = per_k(group)
    limit = {k: {"detectable": True, "reason": ""} for k in rows}  # before the ceiling (11-30)
    limit.update({int(k): v for k, v in m.get("ceiling", {}).items()})
    winners = [k for k in sorted(rows) if rows[k]["outcome"] == "generalization"]
    transient = [k for k in winners if rows[k]["transient_duration"] is not None]
    out = []
    for claim in (c for c in group["claims"] if "id" in c):  # 11-29 claims had no id
        ident, old = claim["id"], claim["verdict"]
        new, why = old, ""
        if ident == "k2_star" and claim["predicted"] is not None:
            measured = {"low": max(transient, default=None), "transient": transient}
            found = ksweep._k2_star(claim["predicted"], measured, limit)
            new, why = found.verdict, found.reason
        elif ident == "memorization_slows" and "checkpoint_ratio" in m["tau_2gen"]:
            measurement = {"per_k": rows, "tau_2gen": m["tau_2gen"]}
            found = ksweep._memorization_slows(measurement)
            new, why = found.verdict, found.reason
        elif ident.startswith("final_phase:"):
            k = int(ident.split("=")[1])
            gap_rule = m.get("criterion", {}).get("criterion", "gap") == "gap"
            if claim["predicted"] is None:
                new, why = "inconclusive", "no final phase is predicted at this K"
            elif not limit[k]["detectable"]:
                new, why = "inconclusive", "blind K"
            elif old == "refuted" and "ID KL is not below" in (claim["reason"] or ""):
                new = "inconclusive" if not gap_rule else old  # the projection's call stands
                why = "the gap check applies only under the gap criterion"
        elif ident == "final_boundary" and claim["measured"]:
            low = claim["measured"]["bracket"][0]
            blind = [k for k in limit if not limit[k]["detectable"] and low is not None and k > low]
            if blind and old != "inconclusive":
                new, why = "inconclusive", f"blind K {blind} above the bracket's low end"
        if new != old:
            out.append(f"{ident}: {old} -> {new} ({why})")
    return out


def kind_changes(claims: list[dict], kinds: dict) -> list[str]:
    out = []
    for claim in (c for c in claims if "id" in c):
        head = claim["id"].split(":")[0]
        if head in kinds and claim.get("kind") and claim["kind"] != kinds[head]:
            out.append(f"{claim['id']}: kind {claim['kind']} -> {kinds[head]} ({claim['verdict']})")
    return out


def not_finite(value) -> bool:
    """A number in a looped measurement that is not finite, anywhere inside it."""
    if isinstance(value, dict):
        return any(not_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(not_finite(v) for v in value)
    return isinstance(value, float) and not math.isfinite(value)


def rejudge(path: str) -> None:
    report = json.loads(Path(path).read_text())
    for spec in report["specs"]:
        if spec.get("kind") not in ("icl_markov", "looped_kv"):
            continue
        lines = []
        if spec["kind"] == "icl_markov":
            for group in spec.get("groups", []):
                if group.get("measurement") and group.get("members"):
                    lines += ksweep_changes(group)
            every = [c for g in spec.get("groups", []) for c in g.get("claims", [])]
            every += [c for d in spec.get("decoders", []) for c in d.get("claims", [])]
            lines += kind_changes(every + spec.get("race_claims", []), CLAIM_KINDS)
        else:
            if not_finite(spec.get("measured")) or not_finite(spec.get("structure")):
                lines.append("a measured value is not finite: rules 8 and 9 apply")
            lines += kind_changes(spec["claims"], LOOPED_KINDS)
        print(f"== {path} {spec['name']}: {len(lines)} change(s)")
        for line in lines:
            print("   ", line)


for report_path in sys.argv[1:]:
    rejudge(report_path)
