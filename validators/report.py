"""Results -> ``report.json`` (for tools) and ``report.md`` (for people)."""

from __future__ import annotations

import json
from pathlib import Path

import infoflow


def write_reports(out: Path, results, skipped, scale, device, started, finished) -> dict:
    """Write both reports; return the JSON one."""
    specs = []
    for experiment, nmse, claims in results:
        models = []
        for model, prediction in experiment.models.items():
            values = nmse.get(model, [])
            models.append({
                "label": model.label(), "seq_len": model.seq_len, "embed_dim": model.embed_dim,
                "heads": list(model.heads), "positional_encoding": model.positional_encoding,
                "spec_point": model in experiment.points,
                "predicted_efficient": prediction["efficient"].value,
                "predicted_exponent": str(prediction["cost_exponent"].expression),
                "nmse_per_seed": values, "best_nmse": min(values) if values else None,
            })  # fmt: skip
        specs.append({"name": experiment.name, "target": experiment.base.target,
                      "models": models, "claims": claims})  # fmt: skip
    verdicts = [c["verdict"] for spec in specs for c in spec["claims"]]
    report = {
        "infoflow_version": infoflow.__version__,
        "scale": scale.name,
        "settings": {"steps": scale.settings.steps, "batch": scale.settings.batch,
                     "seeds": scale.seeds, "lr": scale.settings.lr,
                     "weight_decay": scale.settings.weight_decay,
                     "converged": scale.converged, "worse": scale.worse, "rise": scale.rise},
        "device": str(device), "started": started, "finished": finished,
        "summary": {v: verdicts.count(v) for v in ("confirmed", "refuted", "inconclusive")},
        "specs": specs, "skipped": skipped,
    }  # fmt: skip
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "report.md").write_text(_markdown(report))
    return report


def _markdown(report: dict) -> str:
    s = report["settings"]
    lines = [
        "# infoflow validate",
        "",
        f"Scale `{report['scale']}` on `{report['device']}`, {report['started']} to "
        f"{report['finished']}: {s['steps']} steps, batch {s['batch']}, {s['seeds']} seeds, "
        f"AdamW lr {s['lr']}, weight decay {s['weight_decay']}, cosine schedule.",
        "",
        "Verdicts: "
        + ", ".join(f"{n} {verdict}" for verdict, n in report["summary"].items())
        + ".",
    ]
    for spec in report["specs"]:
        lines += ["", f"## {spec['name']}", "", f"Target: `{spec['target']}`", "",
                  "| model | predicted | exponent | best NMSE | NMSE per seed |",
                  "|---|---|---|--:|---|"]  # fmt: skip
        for m in spec["models"]:
            predicted = "efficient" if m["predicted_efficient"] else "inefficient"
            seeds = ", ".join(f"{v:.3g}" for v in m["nmse_per_seed"])
            best = f"{m['best_nmse']:.3g}" if m["best_nmse"] is not None else "-"
            lines.append(
                f"| {m['label']} | {predicted} | `{m['predicted_exponent']}` | {best} | {seeds} |"
            )
        lines += ["", "| claim | verdict | measured | tolerance | why |", "|---|---|---|---|---|"]
        for c in spec["claims"]:
            measured = json.dumps(c["measured"], default=str)
            cells = [
                c["claim"],
                f"**{c['verdict']}**",
                f"`{measured}`",
                c["tolerance"],
                c["reason"],
            ]
            lines.append("| " + " | ".join(cells) + " |")
    if report["skipped"]:
        lines += ["", "## Not validated", ""]
        lines += [f"- {s['spec']}: {s['reason']}" for s in report["skipped"]]
    return "\n".join(lines) + "\n"
