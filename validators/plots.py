"""Plots: NMSE against T per architecture, and NMSE per architecture (head configuration)."""

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
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        written.append(out / name)
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
