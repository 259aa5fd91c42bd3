"""Results -> ``report.json`` (for tools) and ``report.md`` (for people)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from infoflow.validators.icl_markov import PHASES
from infoflow.validators.icl_train import TARGETS

import infoflow


def write_reports(
    out: Path, results, skipped, scale, device, started, finished, sections=()
) -> dict:
    """Write both reports; return the JSON one. ``results`` are the retrieval experiments;
    ``sections`` the icl_markov and looped_kv ones, already in their report form."""
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
        specs.append({"kind": "retrieval", "name": experiment.name,
                      "target": experiment.base.target, "models": models,
                      "claims": claims})  # fmt: skip
    specs += sections
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
    kinds = {spec["kind"] for spec in report["specs"]}
    lines = [
        "# infoflow validate",
        "",
        f"Scale `{report['scale']}` on `{report['device']}`, {report['started']} to "
        f"{report['finished']}."
        + (
            f" Retrieval: {s['steps']} steps, batch {s['batch']}, {s['seeds']} seeds, AdamW lr "
            f"{s['lr']}, weight decay {s['weight_decay']}, cosine schedule."
            if "retrieval" in kinds
            else ""
        )
        + (
            " In-context learning: each group's own settings, below (AdamW betas (0.9, 0.95), "
            "warmup then a constant rate)."
            if "icl_markov" in kinds
            else ""
        )
        + (
            " Looped KV: the spec's own model, trained on a Markov-mixture corpus (AdamW, "
            "one-cycle schedule)."
            if "looped_kv" in kinds
            else ""
        ),
        "",
        "Verdicts: "
        + ", ".join(f"{n} {verdict}" for verdict, n in report["summary"].items())
        + ".",
    ]
    for spec in report["specs"]:
        if spec["kind"] == "icl_markov":
            lines += _icl_markdown(spec)
            continue
        if spec["kind"] == "looped_kv":
            lines += _looped_markdown(spec)
            continue
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
        lines += _claims_markdown(spec["claims"])
    if report["skipped"]:
        lines += ["", "## Not validated", ""]
        lines += [f"- {s['spec']}: {s['reason']}" for s in report["skipped"]]
    return "\n".join(lines) + "\n"


def _claims_markdown(claims: list[dict]) -> list[str]:
    lines = ["", "| claim | verdict | measured | tolerance | why |", "|---|---|---|---|---|"]
    for c in claims:
        measured = json.dumps(c["measured"], default=str)
        cells = [c["claim"], f"**{c['verdict']}**", f"`{measured}`", c["tolerance"], c["reason"]]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _icl_markdown(spec: dict) -> list[str]:
    """One icl_markov spec: per group, the setting, a row per K, the thresholds, the claims."""
    lines = ["", f"## {spec['name']}"]
    if spec["capped"]:
        lines += ["", "Capped for this scale: " + "; ".join(spec["capped"]) + "."]
    for group in spec["groups"]:
        s = group["setting"]
        model, training = s["model"], s["training"]
        lines += [
            "", f"### {group['name']}", "",
            f"C = {s['states']}, context {s['context_len']}, Dirichlet({s['dirichlet_alpha']}), "
            f"{s['mixture']} mixture; {model['layers']} layers, d_model {model['d_model']}, "
            f"{model['heads']} heads, MLP {model['mlp_width']}; {training['steps']:,} steps of "
            f"batch {training['batch_size']}, lr {training['lr']}, weight decay "
            f"{training['weight_decay']}; seeds {group['seeds']}; plots "
            f"`{group['name']}-phases.png`, `{group['name']}-kl.png`, "
            f"`{group['name']}-positions.png`.",
            "",
            "| K | trajectory | first | first G2 | tau_1Mem | final | predicted final | ID KL | "
            "OOD KL | G2 level (OOD) |",
            "|--:|---|---|--:|--:|---|---|--:|--:|--:|",
        ]  # fmt: skip
        for member in group["members"]:
            k = member["chains"]
            predicted = group["predictions"][str(k)]["final_phase"]["value"]
            lines.append(
                f"| {k} | {' -> '.join(member['trajectory'])} | {member['outcome']} | "
                f"{_maybe(member['first_g2'])} | {_maybe(member['memorized_at'])} | "
                f"{member['phases'][-1]} | {predicted} | {member['final']['id:truth']:.3f} | "
                f"{member['final']['ood:truth']:.3f} | {member['levels']['ood']['G2']:.3f} |"
            )
        m = group["measurement"]
        k1, k2, tau = m["k1_star"], m["k2_star"], m["tau_2gen"]
        if k1["low"] and k1["high"]:
            where = f"between K = {k1['low']} and {k1['high']}"
        elif k1["low"]:
            where = f"above K = {k1['low']}: generalization never came first on this grid"
        elif k1["high"]:
            where = f"at or below K = {k1['high']}: generalization came first at every K"
        else:
            where = "not measured: no K decided"
        undecided = f"; undecided at K = {k1['undecided']}" if k1["undecided"] else ""
        k2_text = (f"above K = {k2['low']} (G2 gave way to M2 there)" if k2["low"]
                   else "not placed (no transient G2 observed)")  # fmt: skip
        lines += [
            "",
            f"Measured K*_1 {where}{'' if k1['monotone'] else ' (not monotone in K)'}"
            f"{undecided}. K*_2 {k2_text}; G2 persists at this budget from K = "
            f"{_maybe(k2['g2_persists_from'])}. tau_2Gen {_maybe(tau['value'])} steps "
            f"(checkpoints {tau['checkpoint_ratio']:.2f}x apart).",
        ]
        lines += _claims_markdown(group["claims"])
    return lines


def _looped_markdown(spec: dict) -> list[str]:
    """One looped_kv spec: the model, the error of every method against rho, the stores."""
    m, name = spec["measured"], spec["name"]
    c = m["config"]
    rhos = list(m["methods"]["lla"])
    lines = [
        "", f"## {name}", "",
        f"Prelude {c['prelude']}, core {c['core']} layers x {c['loops']} loops, coda {c['coda']}; "
        f"d_model {c['d_model']}, {c['heads']} heads; teacher loss {m['teacher_loss']:.3f} nats "
        f"(uniform: ln {c['vocab']} = {math.log(c['vocab']):.3f}); {m['seconds']:.0f} s. Plots "
        f"`{name}-codec.png`, `{name}-spectra.png`.", "",
        "Attention-output error (relative, mean over core slots) / next-token KL to the teacher:",
        "", "| method | " + " | ".join(f"rho {r}" for r in rhos) + " |",
        "|---|" + "--:|" * len(rhos),
    ]  # fmt: skip
    for method, rows in m["methods"].items():
        cells = [f"{rows[r]['attention_error']:.3g} / {rows[r]['kl']:.3g}" if r in rows else "-"
                 for r in rhos]  # fmt: skip
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    lines += ["", "| store | r_k, r_v | tokens | measured bytes | calculator bytes |",
              "|---|---|--:|--:|--:|"]  # fmt: skip
    for s in m["stores"]:
        ranks = f"{s['r_k']}, {s['r_v']}" if "r_k" in s else "-"
        lines.append(f"| {s['variant']} | {ranks} | {s['tokens']} | {s['measured_bytes']:,} | "
                     f"{s['predicted_bytes']:,} |")  # fmt: skip
    return lines + _claims_markdown(spec["claims"])


def _maybe(value) -> str:
    return "-" if value is None else (f"{value:,}" if isinstance(value, int) else f"{value:.4g}")


def icl_group_section(
    experiment, group, histories, measurement, levels, metrics, positions, claims
) -> dict:
    """The report's record of one group: enough to redraw its plots and to refit the
    calibration from ``report.json`` alone."""
    members = []
    for i, h in enumerate(histories):
        rows = metrics[i]
        kl = {p: [(rows[s][f"id:{p}"] + rows[s][f"ood:{p}"]) / 2 for s in h.steps]
              for p in (*PHASES, "G1_park")}  # fmt: skip
        members.append({
            "chains": h.chains, "seed": h.seed, "steps": h.steps, "phases": h.phases,
            "trajectory": h.trajectory, "outcome": h.outcome, "first_g2": h.first_g2,
            "memorized_at": h.memorized_at, "transient_duration": h.transient_duration,
            "final": h.final, "kl": kl,
            "id_truth": [rows[s]["id:truth"] for s in h.steps],
            "ood_truth": [rows[s]["ood:truth"] for s in h.steps],
            "levels": {split: levels[split][i] for split in levels},
            "positions": _positions(positions, i),
        })  # fmt: skip
    predictions = {
        k: {name: {"value": p.value, "provenance": p.provenance, "interval": p.interval}
            for name, p in experiment.predictions[(group.name, k)].predictions.items()}
        for k in group.chains
    }  # fmt: skip
    section = {"name": group.name, **group.describe(), "predictions": predictions,
               "members": members, "measurement": measurement, "claims": claims}  # fmt: skip
    return json.loads(json.dumps(section))  # as report.json will hold it: string keys


def _positions(positions: dict, member: int) -> dict[str, list[float]]:
    """The final model's KL per position: to the truth on each split, and to each reference
    as the mean of the two splits (as the phase rule weighs them)."""
    out = {f"{split}:truth": positions[split][member, 0].tolist() for split in positions}
    for i, target in enumerate(TARGETS[1:], start=1):
        both = (positions["id"][member, i] + positions["ood"][member, i]) / 2
        out[target] = both.tolist()
    return out
