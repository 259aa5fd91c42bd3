"""The K sweep's plots, from report.json's sections, per group: ``NAME-phases.png`` (the phase
diagram: K across, step up, colour = the phase call, white where undetermined; beside it,
final ID and OOD KL to the truth against K), ``NAME-kl.png`` (KL to each reference over
training, a line per K), ``NAME-positions.png`` (the final model's KL against the
position in the context) and ``NAME-weights.png`` (the projection's weights over training,
a panel per K, a line per seed: what the pre-registered criterion reads). Each picture has
its builder, which returns a Figure (:func:`phases_figure`, :func:`kl_figure`,
:func:`positions_figure`, :func:`weights_figure`); :func:`figures` names them all."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from infoflow.validators.icl_markov.criterion import WEIGHT, rule
from infoflow.validators.icl_markov.ksweep.phases import PHASES, UNDETERMINED
from infoflow.validators.plots import colormap, finished, subplots

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PHASE_COLOURS = {
    "G1": "#bdbdbd",
    "B": "#9e9ac8",  # the training mixture's bigram (projection_global's plateau)
    "G2": "#2b8cbe",
    "M1": "#fdae6b",
    "M2": "#d94801",
    UNDETERMINED: "#ffffff",
}


def figures(section: dict) -> dict[str, Figure]:
    """The K sweep's pictures of an icl_markov section, by file name: per group
    ``NAME-phases.png`` and ``NAME-kl.png``, then per group ``NAME-positions.png``, then per
    group judged by the projection ``NAME-weights.png``."""
    groups = section["groups"]
    found = {}
    for group in groups:
        found[f"{group['name']}-phases.png"] = phases_figure(section["name"], group)
        found[f"{group['name']}-kl.png"] = kl_figure(group)
    for group in groups:
        found[f"{group['name']}-positions.png"] = positions_figure(group)
    for group in groups:
        fig = weights_figure(section["name"], group)
        if fig is not None:
            found[f"{group['name']}-weights.png"] = fig
    return found


def phases_figure(title: str, group: dict) -> Figure:
    """The phase diagram of ``group`` (a section's group; its first seed): K across, step
    up, colour = the phase call, white where undetermined; beside it, final ID and OOD KL to
    the truth against K. ``title``: the spec's name."""
    members = _first_seed(group)
    fig, (ax, side) = subplots(1, 2, figsize=(11, 4.2), width_ratios=[1.4, 1])
    _phase_diagram(ax, title, group, members)
    _final_kl(side, group, members)
    return finished(fig)


def kl_figure(group: dict) -> Figure:
    """The KL to each reference over training (first seed), a panel per reference, a line
    per K."""
    members = _first_seed(group)
    fig, axes = subplots(1, len(PHASES), figsize=(15, 3.6), sharey=True)
    for ax, name in zip(axes, PHASES, strict=True):
        _line_per_k(ax, members, lambda m, name=name: (m["steps"], m["kl"][name]))
        ax.set(xscale="log", yscale="log", xlabel="step", title=_kl(group, name))
    axes[0].set_ylabel("mean of ID and OOD")
    axes[-1].legend(fontsize=6, ncol=2)
    fig.suptitle(f"{group['name']}: {_seed_shown(group)}", fontsize=9)
    return finished(fig)


def _criterion(group: dict) -> str:
    """The criterion the group was judged by (a report before the option: the gap rule)."""
    return group["setting"].get("options", {}).get("criterion", "gap")


def weights_figure(title: str, group: dict) -> Figure | None:
    """A panel per K with the memorizing and generalizing weights of every seed over
    training and the line at which a kind has formed; None when the group was not judged by
    the projection. ``title``: the spec's name."""
    members = [m for m in group["members"] if m.get("weights")]
    if not members:
        return None
    ks = sorted({m["chains"] for m in members})
    fig, axes = subplots(1, len(ks), figsize=(2.6 * len(ks), 3.2), sharey=True)
    panels = list(getattr(axes, "flat", [axes]))
    for ax, k in zip(panels, ks, strict=True):
        for m in (m for m in members if m["chains"] == k):
            for kind, colour in (("memorizing", "#d94801"), ("generalizing", "#2b8cbe")):
                ax.plot(m["steps"], m["weights"][kind], color=colour, lw=0.9, alpha=0.8)
        ax.axhline(WEIGHT, color="black", ls="--", lw=0.7)
        ax.set(xscale="log", xlabel="step", title=f"K = {k}", ylim=(0, 1))
    panels[0].set_ylabel("weight: memorizing (orange), G2 (blue)")
    rate = group["setting"]["training"].get("layer1_attention_lr", 1)
    where = f", layer 1 at {rate:g} x the rate" if rate != 1 else ""
    fig.suptitle(f"{title}{where}: the projection's weights, a line per seed", fontsize=9)
    return finished(fig)


def _first_seed(group: dict) -> list[dict]:
    """The group's members of its first seed, in increasing K."""
    members = [m for m in group["members"] if m["seed"] == group["seeds"][0]]
    return sorted(members, key=lambda m: m["chains"])


def _seed_shown(group: dict) -> str:
    """Which seed a one-seed figure shows (it did not say: the verdicts read every seed)."""
    seeds = group["seeds"]
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    return f"seed {seeds[0]} of {len(seeds)} (the verdicts read every seed)"


def _phase_diagram(ax, title: str, group: dict, members: list[dict]) -> None:
    """K across, checkpoint up, each cell coloured by its phase call; the predicted K*_1 as
    a dashed line."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    chains = [m["chains"] for m in members]
    steps = members[0]["steps"]
    names = list(PHASE_COLOURS)
    grid = [[names.index(p) for p in m["phases"]] for m in members]  # [K, checkpoint]
    ax.pcolormesh(
        range(len(chains) + 1),
        range(len(steps) + 1),
        list(zip(*grid, strict=True)),
        cmap=ListedColormap(list(PHASE_COLOURS.values())),
        vmin=-0.5,
        vmax=len(names) - 0.5,
    )
    ax.set_xticks([i + 0.5 for i in range(len(chains))], [str(k) for k in chains], fontsize=7)
    ticks = range(0, len(steps), max(1, len(steps) // 8))
    ax.set_yticks([i + 0.5 for i in ticks], [f"{steps[i]:,}" for i in ticks], fontsize=7)
    ax.set(
        xlabel="K (training chains)",
        ylabel="training step (log-spaced checkpoints)",
        title=f"{title}: phase ({rule(_criterion(group))}), {_seed_shown(group)}",
    )
    k1 = group["predictions"][str(chains[0])]["k1_star"]["value"]
    if k1:
        position = _grid_position(chains, k1)
        ax.axvline(position, color="black", linestyle="--", linewidth=1)
        ax.text(position, len(steps) * 0.97, " predicted K*_1", fontsize=7, va="top")
    ax.legend(
        handles=[
            Patch(facecolor=c, edgecolor="#636363", label=p) for p, c in PHASE_COLOURS.items()
        ],
        fontsize=7,
        loc="lower right",
    )


def _final_kl(ax, group: dict, members: list[dict]) -> None:
    """The final ID and OOD KL to the truth against K, with G2's level."""
    chains = [m["chains"] for m in members]
    ax.plot(chains, [m["final"]["ood:truth"] for m in members], "o-", label="OOD")
    ax.plot(chains, [m["final"]["id:truth"] for m in members], "s-", label="ID")
    g2 = sum(m["levels"]["ood"]["G2"] for m in members) / len(members)
    ax.axhline(g2, color=PHASE_COLOURS["G2"], linestyle=":", label="in-context bigram (G2)")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="K",
        ylabel=f"final {_kl(group, 'truth')}",
        title="end of training",
    )
    ax.legend(fontsize=7)


def _kl(group: dict, target: str) -> str:
    """The KL the group's metrics use, between ``target`` and the model."""
    if group["setting"]["options"].get("kl_direction") == "model_reference":
        return f"KL(model || {target})"
    return f"KL({target} || model)"


def _line_per_k(ax, members: list[dict], curve) -> None:
    """One line per member, coloured by its place in the K sweep; ``curve(member)`` gives
    the line's (x, y)."""
    colours = colormap("viridis")([i / max(1, len(members) - 1) for i in range(len(members))])
    for member, colour in zip(members, colours, strict=True):
        ax.plot(*curve(member), color=colour, label=f"K={member['chains']}")


def _grid_position(chains: list[int], value: float) -> float:
    """Where ``value`` falls on the categorical K axis (cell i spans i..i+1, centred at K_i),
    interpolating in log K."""
    if value <= chains[0]:
        return 0.5
    for i in range(len(chains) - 1):
        if chains[i] <= value <= chains[i + 1]:
            span = math.log(chains[i + 1] / chains[i])
            return i + 0.5 + math.log(value / chains[i]) / span
    return len(chains) - 0.5


def positions_figure(group: dict) -> Figure:
    """The final model's KL to the truth (ID, OOD) and to each reference against the position
    in the context (first seed), a line per K."""
    panels = ["id:truth", "ood:truth", *PHASES]
    members = _first_seed(group)
    fig, axes = subplots(1, len(panels), figsize=(3.4 * len(panels), 3.4), sharey=True)
    for ax, name in zip(axes, panels, strict=True):

        def positions(m, name=name):
            return range(1, len(m["positions"][name]) + 1), m["positions"][name]

        _line_per_k(ax, members, positions)
        split = name.split(":")[0].upper()
        title = f"{_kl(group, 'truth')}, {split}" if ":" in name else _kl(group, name)
        ax.set(yscale="log", xlabel="position t", title=title)
    axes[0].set_ylabel("final model, mean over sequences")
    axes[-1].legend(fontsize=6, ncol=2)
    fig.suptitle(f"{group['name']}: {_seed_shown(group)}", fontsize=9)
    return finished(fig)
