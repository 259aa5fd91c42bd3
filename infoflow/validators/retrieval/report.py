"""A retrieval experiment's report: the section's body (every model with its prediction and
NMSE per seed), the header sentence and the Markdown section."""

from __future__ import annotations

from typing import Any

from infoflow.core.text import markdown_code, markdown_text
from infoflow.validators.report import claims_markdown, number
from infoflow.validators.retrieval.experiment import Experiment, Model


def body(experiment: Experiment, nmse: dict[Model, list[float]]) -> dict[str, Any]:
    """What report.json keeps of a retrieval experiment besides its claims: the design with
    each group's estimated training time (the measured one is in report.json's
    ``throughput``: wall time is not part of what a run found), and every model."""
    groups = [
        {
            "name": g.name,
            "seq_len": g.seq_len,
            "members": len(g.members),
            "estimated_seconds": experiment.estimates.get(g.name),
        }
        for g in experiment.groups
    ]
    design = {**experiment.design.describe(), "step_time": experiment.step_time, "groups": groups}
    models = []
    for model, prediction in experiment.models.items():
        values = nmse.get(model, [])
        models.append(
            {
                "label": model.label(),
                "seq_len": model.seq_len,
                "embed_dim": model.embed_dim,
                "heads": list(model.heads),
                "positional_encoding": model.positional_encoding,
                "spec_point": model in experiment.points,
                "predicted_efficient": prediction["efficient"].value,
                "predicted_exponent": str(prediction["cost_exponent"].expression),
                "predicted_alpha": experiment.derived(model)[model.label()]["exponent"],
                "nmse_per_seed": values,
                "best_nmse": min(values) if values else None,
            }
        )
    return {"target": experiment.base.target, "design": design, "models": models}


def describe(settings: dict[str, Any]) -> str:
    s = settings["settings"]
    return (
        f"Retrieval: {s['steps']} steps, batch {s['batch']}, {settings['seeds']} seeds, AdamW "
        f"lr {s['lr']}, weight decay {s['weight_decay']}, cosine schedule."
    )


def markdown(spec: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"## {markdown_text(spec['name'])}",
        "",
        f"Target: {markdown_code(spec['target'])}",
        "",
        _design(spec.get("design")),
        "",
        "| model | predicted | alpha | exponent | best NMSE | NMSE per seed |",
        "|---|---|--:|---|--:|---|",
    ]
    for m in spec["models"]:
        predicted = "efficient" if m["predicted_efficient"] else "inefficient"
        seeds = ", ".join(number(v) for v in m["nmse_per_seed"])
        lines.append(
            f"| {markdown_text(m['label'])} | {predicted} | "
            f"{number(m.get('predicted_alpha'))} | "
            f"{markdown_code(m['predicted_exponent'])} | {number(m['best_nmse'])} | "
            f"{seeds} |"
        )
    lines += claims_markdown(spec["claims"])
    untested = spec.get("untested") or []
    if untested:
        lines += ["", *(f"- not tested: {markdown_text(line)}" for line in untested)]
    return lines


def _design(design: dict[str, Any] | None) -> str:
    """The design in a sentence: sizes, and each group's estimated and measured time."""
    if not design:
        return "Design: the spec's own sizes."
    lengths = design["seq_lens"]
    sizes = [
        f"T = {', '.join(map(str, lengths))}" if lengths else "the spec's T",
        f"E = {design['embed_dim']}" if design["embed_dim"] else "the spec's E",
    ]
    times = "; ".join(
        f"T={g['seq_len']}: {g['members']} members, estimated {number(g['estimated_seconds'])} s"
        for g in design["groups"]
    )
    return (
        f"Design: {', '.join(sizes)} ({markdown_text(design['step_time'] or 'no estimate')})."
        f" {times}."
    )
