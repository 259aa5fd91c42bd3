"""looped_kv plots, from a report.json section: ``NAME-codec.png`` (error against rho, a line
per method, :func:`codec_figure`) and ``NAME-spectra.png`` (energy captured against rho per
folded axis, :func:`spectra_figure`); :func:`figures` names them, :func:`plot` writes them."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from infoflow.validators.claims import finite_number
from infoflow.validators.plots import finished, save_all, subplots

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CODEC_STYLES = {
    "cache": "k*",
    "lla": "o-",
    "lla_distilled": "o--",
    "lla_2d": "s-",
    "head_axis": "^--",
    "quantize": "v:",
    "final_loop": "X",
}


def plot(out: Path, sections: list[dict]) -> list[Path]:
    """Write the figures of :func:`figures` into ``out``; their paths."""
    return save_all(out, figures(sections))


def figures(sections: list[dict]) -> dict[str, Figure]:
    """Per looped_kv section: ``NAME-codec.png`` and ``NAME-spectra.png``, by file name."""
    found = {}
    for section in sections:
        found[f"{section['name']}-codec.png"] = codec_figure(section)
        found[f"{section['name']}-spectra.png"] = spectra_figure(section)
    return found


def codec_figure(section: dict) -> Figure:
    """Attention-output error and next-token KL to the teacher against rho, a line per
    method (the seed-0 model), shaded over the seeds' range where several were measured."""
    measured, name = section["measured"], section["name"]
    spread = section.get("over_seeds", {})
    fig, axes = subplots(1, 2, figsize=(10, 3.8))
    for ax, metric in zip(axes, ("attention_error", "kl"), strict=True):
        for method, rows in measured["methods"].items():
            rhos = [float(r) for r in rows]
            values = [_floored(row[metric]) for row in rows.values()]
            (line,) = ax.plot(rhos, values, CODEC_STYLES[method], label=method)
            ranges = [spread.get(method, {}).get(r, {}).get(metric) for r in rows]
            if len(rhos) > 1 and all(c and c["low"] is not None for c in ranges):
                low, high = ([_floored(c[end]) for c in ranges] for end in ("low", "high"))
                ax.fill_between(rhos, low, high, color=line.get_color(), alpha=0.15, lw=0)
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
    return finished(fig)


def _floored(value: float | None) -> float:
    """A value drawn on a log axis: an exact 0 at 1e-9, one that is not finite (None in
    report.json) left out (NaN)."""
    return max(value, 1e-9) if finite_number(value) else math.nan


def spectra_figure(section: dict) -> Figure:
    """Energy captured against rho when the loop, head or layer axis is folded into the K
    and V vectors."""
    measured = section["measured"]
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
    return finished(fig)
