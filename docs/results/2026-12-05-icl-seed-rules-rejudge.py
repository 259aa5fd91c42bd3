"""Rejudge committed icl_markov reports under the seed-by-seed rules pre-registered in
docs/results/2026-12-05-icl-seed-rules-preregistered.md, from what each report records (every
member's first G2, tau_1Mem, last phase, final KLs and previous-token step; the clock seeds'
times). Prints every claim with an id that a rule covers, its verdict then and now, and
why; nothing is retrained. "Then" is the committed verdict, except for a final phase, where
it is the gap check on the seeds' mean KLs under today's other rules (a final phase's other
changes are the morning's, in 2026-12-05-icl-looped-verdicts.md). Reports before 2026-12-02
(claims without ids) are skipped.

It calls today's judging functions: since the night of 2026-12-07 `tau_2gen_flat` is judged
on each seed's fitted rise (docs/results/2026-12-07-tau2gen-flat-rule-preregistered.md).

Usage: python docs/results/2026-12-05-icl-seed-rules-rejudge.py REPORT.json ...
"""

import json
import sys
from pathlib import Path
from types import SimpleNamespace

from infoflow.icl_markov.race import clocks_of
from infoflow.validators.icl_markov.clocks.judge import coupling_claim, slowing_claims
from infoflow.validators.icl_markov.ksweep import claims as ksweep
from infoflow.validators.icl_markov.ksweep import times
from infoflow.validators.icl_markov.ksweep.phases import MEMORIZING


def kind(label: str) -> str:
    """The kind of a member's last call from its trajectory label ("M1/M2?" for a call
    undetermined between M1 and M2: memorizing, as the live code's ``Call.kind`` says)."""
    among = label.removesuffix("?").split("/")
    if all(phase in MEMORIZING for phase in among):
        return "memorizing"
    return "undetermined" if label.endswith("?") else label


def per_k(group: dict) -> dict:
    """The group's per-K measurement with each seed's values, from its members."""
    out = {}
    for k, row in group["measurement"]["per_k"].items():
        members = [m for m in group["members"] if str(m["chains"]) == k]
        out[int(k)] = {
            **row,
            "first_g2s": {m["seed"]: m["first_g2"] for m in members},
            "memorized_ats": {m["seed"]: m["memorized_at"] for m in members},
            "previous_heads": {m["seed"]: m.get("previous_head") for m in members},
            "finals": {
                m["seed"]: {"kind": kind(m["trajectory"][-1]), **{f: m["final"][f] for f in TRUTH}}
                for m in members
            },
        }
    return out


TRUTH = ("id:truth", "ood:truth")


def group_changes(group: dict, ceiling: dict) -> list[tuple[str, str, str, str]]:
    """(id, old, new, why) for the group's claims the rules cover."""
    rows = per_k(group)
    measurement = {**group["measurement"], "per_k": rows}
    gap_rule = measurement.get("criterion", {}).get("criterion", "gap") == "gap"
    out = []
    for claim in (c for c in group["claims"] if "id" in c):
        ident, old = claim["id"], claim["verdict"]
        head = ident.split("/")[-1]
        if head == "tau_2gen":
            found = times.tau_2gen(claim["predicted"], measurement)
        elif head == "tau_2gen_flat":
            found = times.tau_2gen_flat(measurement)
        elif head == "memorization_slows":
            found = times.memorization_slows(measurement)
        elif head.startswith("final_phase:") and old != "inconclusive":
            k, limit = int(head.split("=")[1]), ceiling.get(int(head.split("=")[1]), SEEN)
            mean = {key: v for key, v in rows[k].items() if key != "finals"}  # the gap on means
            old = ksweep._final_phase(k, claim["predicted"], mean, limit, {}, "", gap_rule).verdict
            found = ksweep._final_phase(k, claim["predicted"], rows[k], limit, {}, "", gap_rule)
        else:
            continue
        out.append((ident, old, found.verdict, found.reason))
    return out


SEEN = {"detectable": True, "reason": ""}


def clock_changes(spec: dict) -> list[tuple[str, str, str, str]]:
    """g2_delay and prev_head, from the clock seeds and the K sweeps' members."""
    out = []
    entries = {  # clock members before 2026-12-05 recorded no previous-token step
        str(n): {
            "clocks": clocks_of(e["members"], e["steps"]),
            "members": [{"previous_head": None, **m} for m in e["members"]],
        }
        for n, e in enumerate(spec.get("clocks") or [])
    }
    old = {c["id"]: c for c in spec["claims"] if "id" in c}
    for claim in slowing_claims(entries):
        if claim.id in old:
            out.append((claim.id, old[claim.id]["verdict"], claim.verdict, claim.reason))
    for group in spec["groups"]:
        rate = group["setting"]["training"].get("layer1_attention_lr", 1.0)
        sweep = SimpleNamespace(
            group=SimpleNamespace(
                spec=SimpleNamespace(training=SimpleNamespace(layer1_attention_lr=rate))
            ),
            measurement={"per_k": per_k(group)},
        )
        for entry in entries.values():
            claim = coupling_claim(sweep, entry)
            ident = f"{group['name']}/{claim.id}" if claim else None
            if claim and ident in old:
                out.append((ident, old[ident]["verdict"], claim.verdict, claim.reason))
    return out


def main(paths: list[str]) -> None:
    for path in paths:
        report = json.loads(Path(path).read_text())
        for spec in (s for s in report["specs"] if s.get("kind") == "icl_markov"):
            found = []
            for group in spec.get("groups", []):
                ceiling = {int(k): v for k, v in group["measurement"].get("ceiling", {}).items()}
                found += group_changes(group, ceiling)
            found += clock_changes(spec)
            for ident, old, new, why in found:
                change = f"{old} -> {new} ({why})" if new != old else f"{old}, unchanged"
                print(f"{Path(path).parent.name}: {ident}: {change}")


if __name__ == "__main__":
    main(sys.argv[1:])
