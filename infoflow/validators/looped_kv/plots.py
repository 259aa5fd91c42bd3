"""looped_kv plots, from a report.json section: ``NAME-codec.png`` (error against rho, a line
per method) and ``NAME-spectra.png`` (energy captured against rho per folded axis)."""

from __future__ import annotations

from pathlib import Path

from infoflow.validators.plots import save, subplots

CODEC_STYLES = {
    "cache": "k*",
    "lla": "o-",
    "lla_distilled": "o--",
    "lla_2d": "s-",
    "head_axis": "^--",
    "quantize": "v:",
    "final_loop": "X",
}


def plot(out: Path, section: dict) -> list[Path]:
    """A looped_kv section: ``NAME-codec.png`` (attention-output error and next-token KL to
    the teacher against rho, a line per method) and ``NAME-spectra.png`` (energy captured
    against rho when the loop, head or layer axis is folded into the vector)."""
    measured, name = section["measured"], section["name"]
    fig, axes = subplots(1, 2, figsize=(10, 3.8))
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
    codec = save(fig, out / f"{name}-codec.png")

    dims = measured["dims"]
    fig, axes = subplots(1, 2, figsize=(10, 3.8), sharey=True)
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
    return [codec, save(fig, out / f"{name}-spectra.png")]
