"""An icl_markov experiment's report: each group's record (enough to redraw its plots and to
refit the calibration from report.json alone), the header sentence and the Markdown
section (per group: the setting, a row per K, the thresholds, the claims)."""

from __future__ import annotations

import json
from typing import Any

from infoflow.core.text import markdown_code, markdown_text
from infoflow.validators.claims import Claim
from infoflow.validators.icl_markov.data import TARGETS
from infoflow.validators.icl_markov.phases import PHASES
from infoflow.validators.report import claims_markdown, number


def group_section(
    experiment, group, histories, measurement, levels, metrics, positions, claims: list[Claim]
) -> dict:
    """The report's record of one group."""
    members = []
    for i, h in enumerate(histories):
        rows = metrics[i]
        kl = {
            p: [(rows[s][f"id:{p}"] + rows[s][f"ood:{p}"]) / 2 for s in h.steps]
            for p in (*PHASES, "G1_park")
        }
        members.append(
            {
                "chains": h.chains,
                "seed": h.seed,
                "steps": h.steps,
                "phases": h.phases,
                "trajectory": h.trajectory,
                "outcome": h.outcome,
                "first_g2": h.first_g2,
                "memorized_at": h.memorized_at,
                "transient_duration": h.transient_duration,
                "final": h.final,
                "kl": kl,
                "id_truth": [rows[s]["id:truth"] for s in h.steps],
                "ood_truth": [rows[s]["ood:truth"] for s in h.steps],
                "levels": {split: levels[split][i] for split in levels},
                "positions": _positions(positions, i),
            }
        )
    predictions = {
        k: {
            name: {"value": p.value, "provenance": p.provenance, "interval": p.interval}
            for name, p in experiment.predictions[(group.name, k)].predictions.items()
        }
        for k in group.chains
    }
    section = {
        "name": group.name,
        **group.describe(),
        "predictions": predictions,
        "members": members,
        "measurement": measurement,
        "claims": [c.to_json() for c in claims],
    }
    return json.loads(json.dumps(section))  # as report.json will hold it: string keys


def _positions(positions: dict, member: int) -> dict[str, list[float]]:
    """The final model's KL per position: to the truth on each split, and to each reference
    as the mean of the two splits (as the phase rule weighs them)."""
    out = {f"{split}:truth": positions[split][member, 0].tolist() for split in positions}
    for i, target in enumerate(TARGETS[1:], start=1):
        both = (positions["id"][member, i] + positions["ood"][member, i]) / 2
        out[target] = both.tolist()
    return out


def describe(settings: dict[str, Any]) -> str:
    return (
        "In-context learning: each group's own settings, below (AdamW betas (0.9, 0.95), "
        "warmup then a constant rate)."
    )


def markdown(spec: dict[str, Any]) -> list[str]:
    """One icl_markov spec: per group, the setting, a row per K, the thresholds, the claims."""
    lines = ["", f"## {markdown_text(spec['name'])}"]
    if spec["capped"]:
        lines += ["", "Capped for this scale: " + "; ".join(spec["capped"]) + "."]
    for group in spec["groups"]:
        s = group["setting"]
        model, training = s["model"], s["training"]
        lines += [
            "",
            f"### {markdown_text(group['name'])}",
            "",
            f"C = {s['states']}, context {s['context_len']}, Dirichlet({s['dirichlet_alpha']}), "
            f"{s['mixture']} mixture; {model['layers']} layers, d_model {model['d_model']}, "
            f"{model['heads']} heads, MLP {model['mlp_width']}; {training['steps']:,} steps of "
            f"batch {training['batch_size']}, lr {training['lr']}, weight decay "
            f"{training['weight_decay']}{_rate(training)}; seeds {group['seeds']}; plots "
            f"{markdown_code(group['name'] + '-phases.png')}, "
            f"{markdown_code(group['name'] + '-kl.png')}, "
            f"{markdown_code(group['name'] + '-positions.png')}.",
            "",
            "| K | seed | trajectory | first | first G2 | tau_1Mem | final | predicted final | "
            "ID KL | OOD KL | G2 level (OOD) |",
            "|--:|--:|---|---|--:|--:|---|---|--:|--:|--:|",
        ]
        for member in group["members"]:
            k = member["chains"]
            predicted = group["predictions"][str(k)]["final_phase"]["value"]
            final = (
                member["final"]["id:truth"],
                member["final"]["ood:truth"],
                member["levels"]["ood"]["G2"],
            )
            cells = [
                str(k),
                str(member["seed"]),
                " -> ".join(member["trajectory"]),
                member["outcome"],
                _maybe(member["first_g2"]),
                _maybe(member["memorized_at"]),
                member["phases"][-1],
                str(predicted),
            ]
            cells += [number(v, ".3f") for v in final]
            lines.append("| " + " | ".join(cells) + " |")
        lines += ["", _thresholds(group["measurement"]), ""]
        lines += _separation(group["measurement"]["separation"])
        if "race" in group["measurement"]:
            lines += ["", _race(group["measurement"]["race"])]
        lines += claims_markdown(group["claims"])
    if spec.get("clocks"):
        lines += _clocks(spec["clocks"])
        lines += claims_markdown(spec["race_claims"]) if spec.get("race_claims") else []
    for decoder in spec.get("decoders", []):
        lines += _decoder(decoder)
    return lines


def _decoder(decoder: dict) -> list[str]:
    """The decoder alone: its capacity grid and the D_phi sweep, then its claims."""
    m = decoder["measurement"]
    capacity = m["capacity"]
    lines = [
        "",
        f"### The decoder alone ({markdown_text(decoder['name'])})",
        "",
        f"The second MLP (d_model {decoder['setting']['model']['d_model']}, MLP "
        f"{decoder['setting']['model']['mlp_width']}) by itself; G2's level at this context: "
        f"{number(m['g2_level'], '.4f')}. Capacity: fits up to K = "
        f"{_maybe(capacity['low'])}, fails from {_maybe(capacity['high'])} (predicted "
        f"K*_2 {_maybe(decoder['k2_star'])}).",
        "",
        "| test | K or D_phi | KL on its chains | KL on fresh chains | below G2's level |",
        "|---|--:|--:|--:|---|",
    ]
    for k, kl in capacity["train_kl"].items():
        fits = "yes" if kl < m["g2_level"] else "no"
        lines.append(f"| capacity | {k} | {number(kl, '.4f')} | - | {fits} |")
    for dim, found in m["task_dims"].items():
        lines.append(
            f"| D_phi | {dim} | {number(found['train_kl'], '.4f')} | "
            f"{number(found['fresh_kl'], '.4f')} | "
            f"{'yes' if found['generalizes'] else 'no'} |"
        )
    return lines + claims_markdown(decoder["claims"])


def _rate(training: dict) -> str:
    rate = training.get("layer1_attention_lr", 1)
    return f", layer 1's attention at {rate:g} x the rate" if rate != 1 else ""


def _race(race: dict) -> str:
    """The race's K*_1 at a group's setting, with the clocks behind it, in a sentence."""
    tau_g, tau_prev = race["tau_g"], race["tau_prev"]
    interval = race["interval"]
    ends = [("open" if v in (None, 0) else f"{v:.3g}") for v in interval or ()]
    k1 = (
        f"K*_1 = {race['k1_star']:.3g} ({ends[0]} to {ends[1]} over the clock seeds)"
        if race["k1_star"] is not None
        else "no K*_1"
    )
    return (
        f"The race of this run's clocks: {k1}; {race['reason']}. tau_G {_maybe(tau_g[1])} "
        f"steps (seeds {_maybe(tau_g[0])} to {_maybe(tau_g[2])}), tau_prev "
        f"{_maybe(tau_prev[1])}."
    )


def _clocks(entries: list[dict]) -> list[str]:
    """The clock runs: per setting, a row per clock, layer-1 rate and K with each seed's
    time (steps to halfway; - where it did not form)."""
    lines = [
        "",
        "### The clock runs",
        "",
        "Steps until each mechanism is halfway from the unigram plateau to its Bayes level, "
        'on models where only it can form (docs/icl_markov.md, "The race"); one value '
        "per seed, - where it did not form within the run.",
    ]
    for entry in entries:
        s = entry["setting"]
        lines += [
            "",
            f"C = {s['states']}, context {s['context_len']}, d_model "
            f"{s['model']['d_model']}, {entry['steps']:,} steps:",
            "",
            "| clock | layer-1 rate | K | times (per seed) |",
            "|---|--:|--:|---|",
        ]
        rows: dict[tuple, list] = {}
        for m in entry["members"]:
            key = (m["clock"], m["layer1_attention_lr"], m["chains"])
            rows.setdefault(key, []).append(m["time"])
        for (clock, rate, k), times in rows.items():
            cells = [
                clock,
                f"{rate:g}",
                "inf" if k is None else str(k),
                ", ".join("-" if t is None else f"{t:.0f}" for t in times),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def _thresholds(m: dict[str, Any]) -> str:
    """The measured K*_1 (grid bracket and logistic fit), K*_2 and tau_2Gen, in sentences."""
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
    k2_text = (
        f"above K = {k2['low']} (G2 gave way to M2 there)"
        if k2["low"]
        else "not placed (no transient G2 observed)"
    )
    return (
        f"Measured K*_1 (majority per K) {where}{'' if k1['monotone'] else ' (not monotone in K)'}"
        f"{undecided}. {_fitted(m['k1_fit'])} K*_2 {k2_text}; G2 persists at this budget from "
        f"K = {_maybe(k2['g2_persists_from'])}. tau_2Gen {_maybe(tau['value'])} steps "
        f"(checkpoints {tau['checkpoint_ratio']:.2f}x apart)."
    )


def _fitted(fit: dict[str, Any]) -> str:
    """The logistic fit of K*_1 over every seed's outcome, in a sentence."""
    used = f"{fit['outcomes']} seed outcomes"
    if fit["left_out"]:
        used += f"; K = {fit['left_out']} left out, where the ceiling hides memorization"
    bounds = " to ".join("open" if v is None else f"{v:.3g}" for v in (fit["low"], fit["high"]))
    if fit["status"] == "fit":
        return f"Logistic fit: K*_1 = {fit['value']:.3g}, 95% interval {bounds} ({used})."
    if fit["status"] == "separable":
        return f"Logistic fit: separable, K*_1 between {bounds}, no finite fit ({used})."
    return f"Logistic fit: none, {fit['reason']} ({used})."


def _separation(table: dict[str, dict[str, float]]) -> list[str]:
    """Per K, how far apart the phase references are (symmetrised, mean of ID and OOD)."""
    pairs = list(next(iter(table.values()), {}))
    lines = [
        "Reference-to-reference distances (the mean of the two directed scores, ID and "
        "OOD averaged; a phase call needs a margin relative to these):",
        "",
        "| K | " + " | ".join(pairs) + " |",
        "|--:|" + "--:|" * len(pairs),
    ]
    for k, row in table.items():
        lines.append(f"| {k} | " + " | ".join(number(row[p], ".3g") for p in pairs) + " |")
    return lines


def _maybe(value) -> str:
    return number(value, "," if isinstance(value, int) else ".4g")
