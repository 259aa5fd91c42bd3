"""Retrieval plots, from report.json's sections: ``nmse_vs_T.png`` (best NMSE against T per
architecture, dashed where predicted inefficient) for specs with several T, and
``nmse_by_architecture.png`` (best NMSE per head configuration, green where predicted
efficient) for the others; one panel per spec."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infoflow.validators.plots import pyplot, save


def plot(out: Path, sections: list[dict[str, Any]]) -> list[Path]:
    """Write the two figures when there is data for them."""
    by_T, by_arch = [], []
    for section in sections:
        lengths = {m["seq_len"] for m in section["models"] if m["spec_point"]}
        (by_T if len(lengths) > 1 else by_arch).append(section)
    written = []
    for name, panels, draw in (
        ("nmse_vs_T.png", by_T, _draw_vs_T),
        ("nmse_by_architecture.png", by_arch, _draw_by_arch),
    ):
        if not panels:
            continue
        plt = pyplot()
        cols = min(3, len(panels))
        rows = -(-len(panels) // cols)
        fig, axes = plt.subplots(rows, cols, figsize=(4.8 * cols, 3.8 * rows), squeeze=False)
        for ax, section in zip(axes.flat, panels, strict=False):
            draw(ax, section)
        for ax in axes.flat[len(panels) :]:
            ax.axis("off")
        written.append(save(fig, out / name))
    return written


def _draw_vs_T(ax, section: dict[str, Any]) -> None:
    points = [m for m in section["models"] if m["spec_point"]]
    series: dict = {}
    for m in points:
        key = (tuple(m["heads"]), m["embed_dim"], m["positional_encoding"])
        series.setdefault(key, []).append((m["seq_len"], m["best_nmse"]))
    for (heads, embed_dim, pe), values in sorted(series.items()):
        values.sort()
        first = next(m for m in points if (tuple(m["heads"]), m["embed_dim"]) == (heads, embed_dim))
        ax.plot(
            [t for t, _ in values],
            [v for _, v in values],
            marker="o",
            linestyle="-" if first["predicted_efficient"] else "--",
            label=f"heads {list(heads)}, E={embed_dim}" + (" PE" if pe else ""),
        )
    ax.set(xscale="log", yscale="log", xlabel="T", ylabel="best NMSE", title=section["name"])
    ax.legend(fontsize=7, title="dashed: predicted inefficient", title_fontsize=7)


def _draw_by_arch(ax, section: dict[str, Any]) -> None:
    models = sorted(section["models"], key=lambda m: (m["heads"], m["positional_encoding"]))
    labels = [f"{m['heads']}" + (" PE" if m["positional_encoding"] else "") for m in models]
    colors = ["tab:green" if m["predicted_efficient"] else "tab:red" for m in models]
    ax.bar(range(len(models)), [m["best_nmse"] for m in models], color=colors)
    ax.set_xticks(range(len(models)), labels, rotation=30, fontsize=7)
    ax.set(yscale="log", ylabel="best NMSE", title=section["name"])
    ax.set_xlabel("heads per layer (green: predicted efficient)", fontsize=8)
