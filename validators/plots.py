"""Plots: for retrieval, NMSE against T per architecture and NMSE per architecture (head
configuration); for icl_markov, the phase diagram and the KL curves per reference."""

from __future__ import annotations

from pathlib import Path


def plot_experiments(out: Path, results) -> list[Path]:
    """Write ``nmse_vs_T.png`` and ``nmse_by_architecture.png`` when there is data for them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    by_T, by_arch = [], []
    for experiment, nmse, _ in results:
        lengths = {m.seq_len for m in experiment.points}
        (by_T if len(lengths) > 1 else by_arch).append((experiment, nmse))
    for name, panels, draw in (
        ("nmse_vs_T.png", by_T, _draw_vs_T),
        ("nmse_by_architecture.png", by_arch, _draw_by_arch),
    ):
        if not panels:
            continue
        cols = min(3, len(panels))
        rows = -(-len(panels) // cols)
        fig, axes = plt.subplots(rows, cols, figsize=(4.8 * cols, 3.8 * rows), squeeze=False)
        for ax, (experiment, nmse) in zip(axes.flat, panels, strict=False):
            draw(ax, experiment, nmse)
        for ax in axes.flat[len(panels) :]:
            ax.axis("off")
        written.append(_save(fig, out / name))
    return written


def _draw_vs_T(ax, experiment, nmse) -> None:
    series: dict = {}
    for model in experiment.points:
        key = (model.heads, model.embed_dim, model.positional_encoding)
        series.setdefault(key, []).append((model.seq_len, min(nmse[model])))
    for (heads, embed_dim, pe), points in sorted(series.items()):
        points.sort()
        first = next(m for m in experiment.points if (m.heads, m.embed_dim) == (heads, embed_dim))
        efficient = experiment.models[first]["efficient"].value
        ax.plot([t for t, _ in points], [v for _, v in points], marker="o",
                linestyle="-" if efficient else "--",
                label=f"heads {list(heads)}, E={embed_dim}" + (" PE" if pe else ""))  # fmt: skip
    ax.set(xscale="log", yscale="log", xlabel="T", ylabel="best NMSE", title=experiment.name)
    ax.legend(fontsize=7, title="dashed: predicted inefficient", title_fontsize=7)


def _draw_by_arch(ax, experiment, nmse) -> None:
    models = sorted(experiment.models, key=lambda m: (m.heads, m.positional_encoding))
    labels = [f"{list(m.heads)}" + (" PE" if m.positional_encoding else "") for m in models]
    values = [min(nmse[m]) for m in models]
    colors = ["tab:green" if experiment.models[m]["efficient"].value else "tab:red" for m in models]
    ax.bar(range(len(models)), values, color=colors)
    ax.set_xticks(range(len(models)), labels, rotation=30, fontsize=7)
    ax.set(yscale="log", ylabel="best NMSE", title=experiment.name)
    ax.set_xlabel("heads per layer (green: predicted efficient)", fontsize=8)


PHASE_COLOURS = {"G1": "#bdbdbd", "G2": "#2b8cbe", "M1": "#fdae6b", "M2": "#d94801"}


def plot_icl(out: Path, section: dict) -> list[Path]:
    """Per group of an icl_markov spec: ``NAME-phases.png`` (phase diagram: K across, step
    up, colour = nearest reference; beside it, final ID and OOD KL to the truth against K)
    and ``NAME-kl.png`` (KL to each reference over training, a line per K)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    written = []
    for group in section["groups"]:
        members = [m for m in group["members"] if m["seed"] == group["seeds"][0]]
        members.sort(key=lambda m: m["chains"])
        chains = [m["chains"] for m in members]
        steps = members[0]["steps"]
        names = list(PHASE_COLOURS)
        grid = [[names.index(p) for p in m["phases"]] for m in members]  # [K, checkpoint]

        fig, (ax, side) = plt.subplots(1, 2, figsize=(11, 4.2), width_ratios=[1.4, 1])
        ax.pcolormesh(range(len(chains) + 1), range(len(steps) + 1), list(zip(*grid, strict=True)),
                      cmap=ListedColormap(list(PHASE_COLOURS.values())), vmin=-0.5,
                      vmax=len(names) - 0.5)  # fmt: skip
        ax.set_xticks([i + 0.5 for i in range(len(chains))], [str(k) for k in chains], fontsize=7)
        ticks = range(0, len(steps), max(1, len(steps) // 8))
        ax.set_yticks([i + 0.5 for i in ticks], [f"{steps[i]:,}" for i in ticks], fontsize=7)
        ax.set(xlabel="K (training chains)", ylabel="training step (log-spaced checkpoints)",
               title=f"{section['name']}: nearest reference")  # fmt: skip
        k1 = group["predictions"][str(chains[0])]["k1_star"]["value"]
        if k1:
            position = _grid_position(chains, k1)
            ax.axvline(position, color="black", linestyle="--", linewidth=1)
            ax.text(position, len(steps) * 0.97, " predicted K*_1", fontsize=7, va="top")
        ax.legend(handles=[Patch(color=c, label=p) for p, c in PHASE_COLOURS.items()],
                  fontsize=7, loc="lower right")  # fmt: skip

        side.plot(chains, [m["final"]["ood:truth"] for m in members], "o-", label="OOD")
        side.plot(chains, [m["final"]["id:truth"] for m in members], "s-", label="ID")
        g2 = sum(m["levels"]["ood"]["G2"] for m in members) / len(members)
        side.axhline(g2, color=PHASE_COLOURS["G2"], linestyle=":", label="in-context bigram (G2)")
        side.set(xscale="log", yscale="log", xlabel="K", ylabel="final KL(truth || model)",
                 title="end of training")  # fmt: skip
        side.legend(fontsize=7)
        written.append(_save(fig, out / f"{group['name']}-phases.png"))

        fig, axes = plt.subplots(1, 4, figsize=(15, 3.6), sharey=True)
        for ax, name in zip(axes, names, strict=True):
            _line_per_k(ax, members, lambda m, name=name: (m["steps"], m["kl"][name]))
            ax.set(xscale="log", yscale="log", xlabel="step", title=f"KL({name} || model)")
        axes[0].set_ylabel("mean of ID and OOD")
        axes[-1].legend(fontsize=6, ncol=2)
        written.append(_save(fig, out / f"{group['name']}-kl.png"))
    return written


def _line_per_k(ax, members: list[dict], curve) -> None:
    """One line per member, coloured by its place in the K sweep; ``curve(member)`` gives
    the line's (x, y)."""
    import matplotlib.pyplot as plt

    colours = plt.cm.viridis([i / max(1, len(members) - 1) for i in range(len(members))])
    for member, colour in zip(members, colours, strict=True):
        ax.plot(*curve(member), color=colour, label=f"K={member['chains']}")


def _save(fig, path: Path) -> Path:
    """Lay out, write at 110 dpi and close ``fig``."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _grid_position(chains: list[int], value: float) -> float:
    """Where ``value`` falls on the categorical K axis (cell i spans i..i+1, centred at K_i),
    interpolating in log K."""
    import math

    if value <= chains[0]:
        return 0.5
    for i in range(len(chains) - 1):
        if chains[i] <= value <= chains[i + 1]:
            span = math.log(chains[i + 1] / chains[i])
            return i + 0.5 + math.log(value / chains[i]) / span
    return len(chains) - 0.5


def plot_positions(out: Path, section: dict) -> list[Path]:
    """Per group: ``NAME-positions.png``, the final model's KL to the truth (ID, OOD) and to
    each reference against the position in the context, a line per K."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    panels = ["id:truth", "ood:truth", *PHASE_COLOURS]
    for group in section["groups"]:
        members = sorted((m for m in group["members"] if m["seed"] == group["seeds"][0]),
                         key=lambda m: m["chains"])  # fmt: skip
        fig, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels), 3.4), sharey=True)
        for ax, name in zip(axes, panels, strict=True):
            positions = lambda m, name=name: (range(1, len(m["positions"][name]) + 1),  # noqa: E731
                                              m["positions"][name])  # fmt: skip
            _line_per_k(ax, members, positions)
            split = name.split(":")[0].upper()
            title = f"KL(truth || model), {split}" if ":" in name else f"KL({name} || model)"
            ax.set(yscale="log", xlabel="position t", title=title)
        axes[0].set_ylabel("final model, mean over sequences")
        axes[-1].legend(fontsize=6, ncol=2)
        written.append(_save(fig, out / f"{group['name']}-positions.png"))
    return written


CODEC_STYLES = {"lla": "o-", "lla_distilled": "o--", "lla_2d": "s-", "head_axis": "^--",
                "quantize": "v:", "final_loop": "X"}  # fmt: skip


def plot_codec(out: Path, section: dict) -> list[Path]:
    """A looped_kv section: ``NAME-codec.png`` (attention-output error and next-token KL to
    the teacher against rho, a line per method) and ``NAME-spectra.png`` (energy captured
    against rho when the loop, head or layer axis is folded into the vector)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measured, name = section["measured"], section["name"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, metric in zip(axes, ("attention_error", "kl"), strict=True):
        for method, rows in measured["methods"].items():
            rhos = [float(r) for r in rows]
            values = [max(row[metric], 1e-9) for row in rows.values()]
            ax.plot(rhos, values, CODEC_STYLES[method], label=method)
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="rho (full bytes / compressed bytes)",
            ylabel=metric.replace("_", " "),
            title=f"{name}: {metric.replace('_', ' ')}",
        )
        grid = [float(r) for r in measured["methods"]["lla"]]
        ax.set_xticks(grid, [f"{r:.3g}" for r in grid])
        ax.minorticks_off()
        ax.legend(fontsize=7)
    codec = _save(fig, out / f"{name}-codec.png")

    dims = measured["dims"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, which in zip(axes, ("K", "V"), strict=True):
        for how, energy in measured["spectra"][which].items():
            ax.plot([dims[how] / r for r in range(1, len(energy) + 1)], energy, label=f"{how} axis")
        ax.set(
            xscale="log",
            xlabel="rho = dim / rank",
            ylabel="energy captured",
            title=f"{which}: the {which} vectors with one axis folded in",
        )
        ax.legend(fontsize=7)
    return [codec, _save(fig, out / f"{name}-spectra.png")]
