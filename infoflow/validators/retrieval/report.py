"""A retrieval experiment's report: the section's body (the target's floors, every model
with its prediction and its ladder), the header sentence and the Markdown section."""

from __future__ import annotations

from typing import Any

from infoflow.core.text import markdown_code, markdown_text
from infoflow.validators.report import claims_markdown, interval, number
from infoflow.validators.retrieval.experiment import Experiment, Model
from infoflow.validators.retrieval.exponents import Ladder, coverage
from infoflow.validators.retrieval.floors import LEARNS_FACTOR, Floors
from infoflow.validators.retrieval.judge import STEEP
from infoflow.validators.retrieval.pilot import sentence


def body(
    experiment: Experiment,
    ladders: dict[Model, Ladder],
    floors: dict[int, Floors],
    improving: dict[Model, int],
) -> dict[str, Any]:
    """What report.json keeps of a retrieval experiment besides its claims: the design with
    each group's cap and estimated training time (the measured time, tokens per second and
    MFU are in report.json's ``throughput``: wall time is not part of what a run found), the
    floors, and every model with its ladder."""
    models = []
    for model in experiment.models:
        derived = experiment.derived(model)[model.label()]
        ladder = ladders.get(model)
        models.append(
            {
                "label": model.label(),
                "seq_len": model.seq_len,
                "embed_dim": model.embed_dim,
                "heads": list(model.heads),
                "positional_encoding": model.positional_encoding,
                "spec_point": model in experiment.points,
                "rescue": model == experiment.rescue,
                "predicted_efficient": experiment.expected[model].efficient,
                "predicted_exponent": derived["expression"],
                "predicted_alpha": derived["exponent"],
                "alpha_without_floor": derived["without_floor"],
                "bound": derived["bound"],
                "ladder": ladder.to_json() if ladder else None,
                "still_improving_at_cap": None
                if experiment.not_trained
                else improving.get(model, 0),
            }
        )
    return {
        "target": experiment.base.target,
        "design": _design_json(experiment),
        "rungs": list(experiment.scale.rungs),
        "floors": {str(t): f.describe() for t, f in sorted(floors.items())},
        "models": models,
    }


def _design_json(experiment: Experiment) -> dict[str, Any]:
    """The design: its sizes, step time, budget, groups with their caps and estimated
    training times, and what was not trained or built, and the pilot."""
    groups = [
        {
            "name": g.name,
            "seq_len": g.seq_len,
            "members": len(g.members),
            "steps_cap": g.settings.steps,
            "estimated_seconds": experiment.estimates.get(g.name),
        }
        for g in experiment.trained_groups
    ]
    return {
        **experiment.design.describe(),
        "step_time": experiment.step_time,
        "budget_seconds": experiment.scale.budget_seconds,
        "groups": groups,
        "not_trained": experiment.not_trained,
        "construction_estimated_seconds": experiment.construction_seconds,
        "not_built": experiment.not_built,
        "pilot": experiment.pilot.describe() if experiment.pilot else None,
        "left_out": experiment.left_out,
    }


def describe(settings: dict[str, Any]) -> str:
    s = settings["settings"]
    rungs = ", ".join(map(str, settings["rungs"]))
    seeds = settings["seeds"]
    fewer = (  # a claim whose seeds did not all measure covers less (a review)
        f"; {coverage(2):.0%} for a claim two measured seeds decide" if seeds > 2 else ""
    )
    return (
        f"Retrieval: every model a ladder of MLP widths {rungs} (a rescue: the largest "
        f"only), {seeds} seeds, each member "
        f"trained until its loss stops improving (at most {s['steps']} steps), batch "
        f"{s['batch']}, AdamW lr {s['lr']}, weight decay {s['weight_decay']}; intervals are "
        f"the range over seeds ({coverage(seeds):.0%} coverage of the median{fewer}); a model "
        f"learns when its NMSE is {LEARNS_FACTOR:g}x below the pooling shortcut."
    )


def markdown(spec: dict[str, Any]) -> list[str]:
    floors = "; ".join(
        f"T={t}: pooling shortcut {number(f['shortcut'])}, learns below {number(f['learns_below'])}"
        + "".join(
            f", held by {markdown_text(name)} ({held['resolved']} parts) "
            f"{number(held['shortcut'])}: a separation from it needs NMSE below "
            f"{number(held['learns_below'])}"
            for name, held in (f.get("held") or {}).items()
            if held.get("shortcut") is not None
        )
        for t, f in spec["floors"].items()
    )
    lines = [
        "",
        f"## {markdown_text(spec['name'])}",
        "",
        f"Target: {markdown_code(spec['target'])}",
        "",
        _design(spec.get("design")),
        "",
        f"Floors (trivial predictor: NMSE 1): {floors}.",
        "",
        "| model | predicted | alpha (bound) | without floor | slope [range] | measured alpha "
        "| largest rung NMSE [range] | still improving at cap |",
        "|---|---|--:|--:|---|--:|---|--:|",
    ]
    for m in spec["models"]:
        predicted = "efficient" if m["predicted_efficient"] else "inefficient"
        if m.get("rescue"):
            predicted += ", rescue"
        ladder = m.get("ladder") or {}
        largest = interval((ladder.get("rungs") or [{}])[-1])
        lines.append(
            f"| {markdown_text(m['label'])} | {predicted} | {number(m['predicted_alpha'])} "
            f"({markdown_text(m['bound'])}) | {number(m['alpha_without_floor'])} | "
            f"{_slope(ladder)} | {_alpha(ladder)} | {largest} | "
            f"{'-' if m['still_improving_at_cap'] is None else m['still_improving_at_cap']} |"
        )
    lines += _witnesses(spec.get("witnesses") or [])
    lines += claims_markdown(spec["claims"])
    untested = spec.get("untested") or []
    if untested:
        lines += ["", *(f"- not tested: {markdown_text(line)}" for line in untested)]
    return lines


def _not_compiled(record: dict) -> str:
    """A model compile refused, and why."""
    return f"- not compiled: {markdown_text(record['model'])}: {markdown_text(record['refused'])}"


def _witnesses(records: list[dict]) -> list[str]:
    """The compiled witnesses and the deficient models trained from them."""
    built = [r for r in records if "nmse" in r]
    refused = [r for r in records if "refused" in r]  # a list after a blank line, not rows
    lines = ["", *(_not_compiled(r) for r in refused)] if refused else []
    if built:
        lines = [
            "",
            "Compiled witnesses (infoflow compile; NMSE on fresh data, float64):",
            "",
            "| model | channels | NMSE (width 2048, beta 100) "
            "| coarser: width 512 and beta 10, or beta 10 | largest trained width "
            "| width ladder 128-1024: slope [range] | measured alpha |",
            "|---|--:|--:|--:|--:|---|--:|",
            *(
                f"| {markdown_text(r['model'])} | {r['channels']} | {number(r['nmse'])} | "
                f"{number(r['nmse_coarse'])} ({r['knob']}) | {number(r['nmse_trained_width'])} | "
                f"{interval((r.get('ladder') or {}).get('slope') or {})} | "
                f"{_alpha(r.get('ladder') or {})} |"
                for r in built
            ),
            *([""] if any(r.get("nmse_trained_width_why") for r in built) else []),
            *(
                f"- {markdown_text(r['model'])} at the largest trained width: "
                f"{markdown_text(r['nmse_trained_width_why'])}"
                for r in built
                if r.get("nmse_trained_width_why")
            ),
            *([""] if any("nmse_without_self_penalty" in r for r in built) else []),
            *(
                f"- {markdown_text(r['model'])} without its positional self-penalty (each "
                f"token scores itself again): NMSE {number(r['nmse_without_self_penalty'])}"
                for r in built
                if "nmse_without_self_penalty" in r
            ),
            *lines,
        ]
    ablated = [a for r in built for a in r.get("ablated", [])]
    if ablated:
        lines += [
            "",
            "Trained from the witness with a part removed (float32, or float64 for a witness "
            "that reads |x|^2 from LayerNorm; width 512; the control is the witness trained "
            "alike):",
            "",
            "| model | removed | NMSE at start | best | control's best | steps |",
            "|---|---|--:|--:|--:|--:|",
            *(
                f"| {markdown_text(a['model'])} | {a['removed']} | {number(a['ablated_start'])} | "
                f"{number(a['ablated_best'])} | {number(a['control_best'])} | {a['steps']} |"
                for a in ablated
            ),
        ]
    return lines


def _slope(ladder: dict) -> str:
    """The measured seeds' slope, and how many of the seeds were measured when not all (a
    seed with a rung still improving at the cap, or without an NMSE at every rung, measures
    no exponent)."""
    shown = interval(ladder.get("slope"))
    measured = ladder.get("measured_seeds")
    trained = any(v is not None for row in ladder.get("nmse") or [] for v in row)
    if measured and not all(measured) and trained:  # a model not trained here measures none
        shown += f" ({sum(measured)} of {len(measured)} seeds measured)"
    return shown


def _alpha(ladder: dict) -> str:
    """A ladder's measured exponent; "flat" where its median slope is not steep (-2 / slope
    is then above 2 / STEEP and says only that the error does not fall: 3.2e+04 was shown
    for a model that learned nothing, a review)."""
    value, slope = ladder.get("exponent"), ladder.get("slope") or {}
    median, high = slope.get("median"), slope.get("high")
    if isinstance(median, int | float) and median > -STEEP:
        return f"flat (> {2 / STEEP:g})"
    shown = value if isinstance(value, str) else number(value)
    if isinstance(high, int | float) and high > -STEEP:  # the judge needs every seed steep
        return f"{shown} (a seed flat)"
    return shown


def _design(design: dict[str, Any] | None) -> str:
    """The design in a sentence: sizes, each group's cap and estimated time, and the
    construction claims' estimated time."""
    if not design:
        return "Design: the spec's own sizes."
    constructions = design.get("construction_estimated_seconds")
    built = f" Construction claims: estimated {number(constructions)} s." if constructions else ""
    if design.get("not_built"):
        text = markdown_text(design["not_built"]).rstrip(".")
        built = f" {text[0].upper()}{text[1:]}."
    if design.get("not_trained"):
        return f"Design: **{markdown_text(design['not_trained'])}**{built}"
    lengths = design["seq_lens"]
    sizes = [
        f"T = {', '.join(map(str, lengths))}" if lengths else "the spec's T",
        f"E = {design['embed_dim']}" if design["embed_dim"] else "the spec's E",
    ]
    times = "; ".join(
        f"{g['name']}: {g['members']} members, at most {g.get('steps_cap', '?')} steps, "
        f"estimated {number(g['estimated_seconds'])} s"
        for g in design["groups"]
    )
    piloted = f" The {markdown_text(sentence(design['pilot']))}." if design.get("pilot") else ""
    left = f" Left out: {markdown_text(design['left_out'])}." if design.get("left_out") else ""
    return (
        f"Design: {', '.join(sizes)} ({markdown_text(design['step_time'] or 'no estimate')})."
        f" {markdown_text(times)}.{_over_budget(design)}{left}{piloted}{built}"
    )


def _over_budget(design: dict[str, Any]) -> str:
    """Where the design's estimate exceeds the budget, a sentence saying so (plan said it,
    report.md did not: an audit, 2026-12-07)."""
    budget = design.get("budget_seconds")
    estimated = sum(g["estimated_seconds"] or 0 for g in design["groups"])
    if budget is None or estimated <= budget:
        return ""
    return f" **Over the budget of {number(budget)} s: no design fits, this is the cheapest.**"
