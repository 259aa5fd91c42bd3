"""Rejudge the retrieval claims of every committed report under the verdict rules of the
evening of 2026-12-07 (CHANGELOG: no lower_bound claim under the floor, the floor's equality
judged on the construction's steep ladder, a flat worse ladder below the better orders
nothing, diverged seeds missing), from the ladders each report records. Prints every claim
whose verdict or kind would change, or that would no longer be made; nothing is retrained.
A ladder's capped members are read back from its `measured_seeds` (a seed that measured no
exponent is taken as capped at its smallest rung: the slope's rule is the same).

Usage: python docs/results/2026-12-07-verdict-bounds-rejudge.py [REPORT.json ...]
(default: every report.json under docs/results; its recorded output read the 30 reports of
that evening. It judges "rises with T" without the rescue, as that evening's rules did: the
night's triangle run, confirmed through its rescue, shows as a change.)
"""

import json
import math
import sys
from collections import Counter
from pathlib import Path

from infoflow.validators.retrieval.expect import Expectation, expect
from infoflow.validators.retrieval.experiment import Expected, Model
from infoflow.validators.retrieval.exponents import Ladder
from infoflow.validators.retrieval.floors import Floors
from infoflow.validators.retrieval.judge import Judge
from infoflow.validators.retrieval.judge_untrainable import no_rescue, rises


class Recorded:
    """The part of an Experiment the judge reads: each model's expectation."""

    def __init__(self, expected):
        self.expected = expected

    def derived(self, model):
        return {model.label(): {}}


def number(value):
    return {"inf": math.inf, "-inf": -math.inf}.get(value, value)


def models_of(section):
    found = {}
    for m in section["models"]:
        model = Model(m["seq_len"], m["embed_dim"], tuple(m["heads"]), m["positional_encoding"])
        alpha, raw = m.get("predicted_alpha"), m.get("alpha_without_floor")
        expected = Expected(
            math.inf if alpha is None else alpha,
            math.inf if raw is None else raw,
            m["predicted_efficient"],
            m.get("bound") != "infeasible",
            m.get("provenance") or "",
            "",
        )
        ladder = m["ladder"]
        nmse = [[number(v) for v in row] for row in ladder["nmse"]]
        seeds = ladder.get("measured_seeds")
        capped = (
            [[not s for s in seeds]] + [[False] * len(seeds)] * (len(nmse) - 1) if seeds else []
        )
        found[model.key()] = (model, expected, Ladder(ladder["sizes"], nmse, capped), m)
    return found


def judge_of(section, models):
    """A Judge of the report's section from what it records: each model's expectation and
    ladder, its members still improving at the cap, and the floors."""
    expected = {model: e for model, e, _, _ in models.values()}
    ladders = {model: ladder for model, _, ladder, _ in models.values()}
    improving = {
        model: m["still_improving_at_cap"]
        for model, _, _, m in models.values()
        if m.get("still_improving_at_cap") is not None
    }
    floors = {int(t): Floors(**f) for t, f in section["floors"].items()}
    return Judge(Recorded(expected), ladders, floors, improving)


def rejudge(claim, judge, models):
    head, *keys = claim["id"].split("#")[0].split(":")
    if any(k not in models for k in keys):
        return None
    picked = [models[k][0] for k in keys]
    if head == "learns":
        return judge.learns(picked[0])
    if head == "lower_bound":
        return (
            "no claim"
            if judge.experiment.expected[picked[0]].floor_hides
            else judge.lower_bound(picked[0])
        )
    if head == "no_rescue":
        return no_rescue(judge, picked[0])
    if head == "rises_with_T":
        return rises(judge, *picked)
    if head in ("separation", "equality", "exponent_floor"):
        found = expect(judge.experiment, *picked)
        if isinstance(found, str):
            return f"no claim ({found})"
        if (found.better, found.worse) != tuple(picked):
            found = Expectation(found.outcome, found.kind, *picked, found.why, found.floor)
        return judge.compare(found)
    return None


def main(paths):
    tally = Counter()
    for path in paths:
        report = json.loads(Path(path).read_text())
        for section in report.get("specs", []):
            if section.get("kind") != "retrieval" or "models" not in section:
                continue
            models = models_of(section)
            judge = judge_of(section, models)
            for claim in section["claims"]:
                if "not trained" in claim.get("reason", ""):
                    continue
                new = rejudge(claim, judge, models)
                if new is None:
                    continue
                tally["rejudged"] += 1
                if isinstance(new, str):
                    tally["no longer made"] += 1
                    print(f"{path}: {claim['id']} ({claim['kind']}, {claim['verdict']}) -> {new}")
                elif (new.verdict, new.kind) != (claim["verdict"], claim["kind"]):
                    tally["changed"] += 1
                    print(
                        f"{path}: {claim['id']} {claim['kind']} {claim['verdict']} -> "
                        f"{new.kind} {new.verdict} | {new.reason}"
                    )
    print(dict(tally))


if __name__ == "__main__":
    main(sys.argv[1:] or sorted(map(str, Path("docs/results").glob("**/report.json"))))
