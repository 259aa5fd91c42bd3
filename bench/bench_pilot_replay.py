"""Would a short pilot have told which models learn? Replayed on a finished retrieval run.

The design's pilot (``infoflow/validators/retrieval/pilot.py``, the same extrapolation)
trains a candidate's members for 600 steps before the run; this replays that rule on a run
that trained them to the end, to test it. Training is warmup then a constant rate, and
every member of an ensemble trains on its own, so the first ``--pilot`` steps of a finished
member are what a pilot of that member would have seen, given the run's cap and plateau
rule (a member that plateaus early cools down before the pilot ends), up to float rounding
(trained alone, one member's extrapolation moved from 0.102 to 0.106 in 600 steps). For the
largest rung of every model predicted efficient, this prints the NMSE at the pilot's end,
the NMSE it extrapolates to at the cap (a power law in steps fitted between half the pilot
and its end), and what the member reached; then whether the pilot's call ("learns":
extrapolated below the learning threshold) matches the run's.

Run from the repository root:
``python bench/bench_pilot_replay.py RUN_FOLDER [RUN_FOLDER ...] [--pilot 400]`` (folders of
``infoflow validate`` runs: their report.json and metrics.csv). Besides each member's call it
counts each model's (every seed learns, or not) and each design's (every seed of every model
predicted efficient learns, or not: what a design would decide on).
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

from infoflow.validators.retrieval.pilot import extrapolated


def curves(metrics: Path) -> dict[tuple[str, str], dict[int, float]]:
    """(group, member label) -> {step: held-out NMSE}."""
    out: dict[tuple[str, str], dict[int, float]] = {}
    with metrics.open() as handle:
        for row in csv.DictReader(handle):
            if row["metric"] == "eval:nmse" and row["value"]:  # empty: not finite
                out.setdefault((row["group"], row["member"]), {})[int(row["step"])] = float(
                    row["value"]
                )
    return out


def replay(run: Path, pilot: int) -> tuple[list[bool], dict[str, list[tuple[bool, bool]]]]:
    """Print one run's table; each member's agreement, and each model's calls by seed."""
    report = json.loads((run / "report.json").read_text())
    found = curves(run / "metrics.csv")
    agreed, models = [], {}
    for section in report["specs"]:
        rung = max(section["rungs"])
        caps = {g["name"]: g["steps_cap"] for g in section["design"]["groups"]}
        for model in (m for m in section["models"] if m["predicted_efficient"]):
            threshold = section["floors"][str(model["seq_len"])]["learns_below"]
            prefix = f"{model['label']}, MLP {rung}, seed "
            for (group, member), curve in sorted(found.items()):
                if not member.startswith(prefix) or group not in caps:
                    continue
                guess = extrapolated(curve, pilot, caps[group])
                if guess is None:
                    continue
                at_pilot = curve[max(s for s in curve if s <= pilot)]
                reached = curve[max(curve)]  # the last evaluation, what the run judges
                calls = (guess < threshold, reached < threshold)
                agreed.append(calls[0] == calls[1])
                models.setdefault(f"{run} {section['name']}: {model['label']}", []).append(calls)
                said = "learns" if calls[0] else "does not"
                did = "learns" if calls[1] else "does not"
                print(
                    f"| {member} | {at_pilot:.3g} | {guess:.3g} | {reached:.3g} | "
                    f"{threshold:.3g} | pilot: {said}; run: {did} |"
                )
    return agreed, models


def designs(models: dict[str, list[tuple[bool, bool]]]) -> dict[str, tuple[bool, bool]]:
    """Run and spec -> (the pilot calls every efficient member learnable, the run found so)."""
    out: dict[str, tuple[bool, bool]] = {}
    for label, calls in models.items():
        design = label.split(": ", 1)[0]
        said, did = out.get(design, (True, True))
        out[design] = (said and all(p for p, _ in calls), did and all(r for _, r in calls))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--pilot", type=int, default=400, help="steps of the pilot")
    args = parser.parse_args()
    print(f"pilot {args.pilot} steps; largest rung of every model predicted efficient")
    print("| member | NMSE at pilot | extrapolated to cap | reached | threshold | calls |")
    print("|---|--:|--:|--:|--:|---|")
    agreed, models = [], {}
    for run in args.runs:
        more, called = replay(run, args.pilot)
        agreed += more
        models.update(called)
    print(f"\nthe pilot's call matches the run's for {sum(agreed)} of {len(agreed)} members")
    # a model learns when every seed does: what a design would decide on
    same = sum(all(p for p, _ in c) == all(r for _, r in c) for c in models.values())
    print(f"and for {same} of {len(models)} models (every seed learns, or not)")
    called = designs(models)
    for design, (said, did) in called.items():
        said_word, did_word = ("learns" if c else "does not" for c in (said, did))
        print(f"design {design}: pilot {said_word}; run {did_word}")
    same = sum(said == did for said, did in called.values())
    print(f"and for {same} of {len(called)} designs (every efficient member learns, or not)")


if __name__ == "__main__":
    main()
