"""A K sweep group's Markdown, from its record in report.json (:mod:`.judge` builds it): the
setting, a row per member, the thresholds, the reference-to-reference distances; the claims'
table follows it in :mod:`infoflow.validators.icl_markov.report`."""

from __future__ import annotations

from typing import Any

from infoflow.core.text import markdown_code, markdown_text
from infoflow.validators.report import number


def group_markdown(group: dict[str, Any], plotted: bool = True) -> list[str]:
    """One group's heading, setting and a row per member, then its thresholds and the
    distances between the phase references; its plots named where they were drawn."""
    measurement = group["measurement"]
    lines = [
        "",
        f"### {markdown_text(group['name'])}",
        "",
        _setting(group, plotted),
        "",
        _criterion(measurement.get("criterion", {})),
        "",
        "| K | seed | trajectory | first | first G2 | tau_1Mem | previous-token head | final "
        "| predicted final | ID KL | OOD KL | G2 level (OOD) |",
        "|--:|--:|---|---|--:|--:|--:|---|---|--:|--:|--:|",
    ]
    lines += [_member_row(group, member) for member in group["members"]]
    lines += ["", _thresholds(measurement), ""]
    if "references" in measurement.get("criterion", {}):  # a projection criterion
        return lines + _ceiling(measurement["ceiling"])
    return lines + _separation(measurement["separation"])


def _criterion(pre: dict[str, Any]) -> str:
    """The pre-registered criterion, in a sentence."""
    if "references" in pre:  # a projection criterion, which names its references
        refs = ", ".join(f"{p} ({r})" for p, r in pre["references"].items())
        return (
            f"Criterion (pre-registered): {pre['criterion']}, the projection onto {refs}, the "
            f"first {pre['sequences_per_test_set']} sequences of each test set; a kind has "
            f"formed at weight >= {pre['weight']:g}; ceiling {pre['tolerance_nats']:g} nats."
        )
    if pre.get("criterion") == "gap":
        return (
            f"Criterion (pre-registered): gap (memorizing at ID KL <= {pre['gap']:g} x OOD KL, "
            f"phases by margin {pre['margin']:.2g}, clocks halfway)."
        )
    return "Criterion: not recorded (a run from before criteria were pre-registered)."


def _ceiling(table: dict[str, dict[str, Any]]) -> list[str]:
    """Per K, each reference's separability and what the projection can test there."""
    names = list(next(iter(table.values()), {}).get("separability", {}))
    lines = [
        "The ceiling: each reference's separability on the run's test data (KL to the "
        "midpoint with the nearest reference of another kind, nats; mean over the seeds):",
        "",
        "| K | " + " | ".join(names) + " | testable |",
        "|--:|" + "--:|" * len(names) + "---|",
    ]
    for k, entry in table.items():
        cells = [number(entry["separability"][p], ".4f") for p in names]
        verdict = "yes" if entry["detectable"] else "**untestable here**"
        lines.append(f"| {k} | " + " | ".join(cells) + f" | {verdict} |")
    return lines


def _setting(group: dict[str, Any], plotted: bool = True) -> str:
    """The group's setting, seeds and plot files (none with ``--no-plots``), in a sentence."""
    s = group["setting"]
    model, training = s["model"], s["training"]
    plots = (
        f"plots {markdown_code(group['name'] + '-phases.png')}, "
        f"{markdown_code(group['name'] + '-kl.png')}, "
        f"{markdown_code(group['name'] + '-positions.png')}{_weights_plot(group)}"
        if plotted
        else "no plots (--no-plots)"
    )
    return (
        f"C = {s['states']}, context {s['context_len']}, Dirichlet({s['dirichlet_alpha']}), "
        f"{s['mixture']} mixture; {model['layers']} layers, d_model {model['d_model']}, "
        f"{model['heads']} heads, MLP {model['mlp_width']}; {training['steps']:,} steps of "
        f"batch {training['batch_size']}, lr {training['lr']}, weight decay "
        f"{training['weight_decay']}{_rate(training)}; seeds {group['seeds']}; {plots}."
    )


def _weights_plot(group: dict[str, Any]) -> str:
    """The projection's weights plot, where the group was judged by the projection."""
    if not any(member.get("weights") for member in group["members"]):
        return ""
    return ", " + markdown_code(group["name"] + "-weights.png")


def _member_row(group: dict[str, Any], member: dict[str, Any]) -> str:
    """A member's row: its phases over training, what came first, the final KLs."""
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
        maybe(member["first_g2"]),
        maybe(member["memorized_at"]),
        maybe(member.get("previous_head")),
        member["phases"][-1],
        str(predicted),
    ]
    cells += [number(v, ".3g") for v in final]  # 3 digits, as the claims show (0.039: 2)
    return "| " + " | ".join(cells) + " |"


def _rate(training: dict) -> str:
    """The recipe where it is not the default (the setting leaves defaults out), and layer
    1's rate where it is slowed."""
    recipe = ["every parameter decayed"] if training.get("decay", "matrices") == "all" else []
    warmup = training.get("warmup_fraction", 0.02)
    recipe.append(f"warmup {100 * warmup:g}% of the steps" if warmup else "no warmup")
    if training.get("grad_clip") is not None:
        recipe.append(f"the gradient clipped to norm {training['grad_clip']:g}")
    rate = training.get("layer1_attention_lr", 1)
    if rate != 1:
        recipe.append(f"layer 1's attention at {rate:g} x the rate")
    return "".join(f", {part}" for part in recipe)


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
    persists = k2["g2_persists_from"]
    persists = (  # "from K = -." where no G2 was seen (a review)
        f"G2 persists at this budget from K = {persists}" if persists else "G2 persists at no K"
    )
    timed = (
        f"tau_2Gen {maybe(tau['value'])} steps (median first G2 over the K that generalize"
        f"{_listed(tau)}; checkpoints {tau['checkpoint_ratio']:.2f}x apart)"
        if tau["value"]
        else "tau_2Gen not measured (generalization won at no K)"
    )
    return (
        f"Measured K*_1 (majority per K) {where}{'' if k1['monotone'] else ' (not monotone in K)'}"
        f"{undecided}. {_fitted(m['k1_fit'])} K*_2 {k2_text}; {persists}. {timed}."
    )


def _listed(tau: dict[str, Any]) -> str:
    """The K tau_2Gen was measured over, where the measurement names them (since 2026-12-05)."""
    return f", K = {tau['ks']}" if tau.get("ks") else ""


def _fitted(fit: dict[str, Any]) -> str:
    """The logistic fit of K*_1 over every seed's outcome, in a sentence."""
    used = f"{fit['outcomes']} seed outcomes"
    if fit["left_out"]:
        used += f"; K = {fit['left_out']} left out, where the ceiling hides memorization"
    bounds = " to ".join("open" if v is None else f"{v:.3g}" for v in (fit["low"], fit["high"]))
    if fit["status"] == "fit":
        return f"Logistic fit: K*_1 = {fit['value']:.3g}, 95% interval {bounds} ({used})."
    if fit["status"] == "separable":
        return f"Logistic fit: separable, {_between(fit)}, no finite fit ({used})."
    if fit["status"] == "open":
        return f"Logistic fit: none, {fit['reason']}: {_between(fit)} ({used})."
    return f"Logistic fit: none, {fit['reason']} ({used})."


def _between(fit: dict[str, Any]) -> str:
    """Where K*_1 lies, one side open or both given (it read "between 16 to open")."""
    low, high = fit["low"], fit["high"]
    if low is None and high is None:
        return "K*_1 not bounded"
    if low is None or high is None:
        return f"K*_1 above {low:.3g}" if high is None else f"K*_1 below {high:.3g}"
    return f"K*_1 between {low:.3g} and {high:.3g}"


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


def maybe(value) -> str:
    """A number that may be missing ("-"): a count with thousands separated, anything else to
    four significant digits."""
    return number(value, "," if isinstance(value, int) else ".4g")
