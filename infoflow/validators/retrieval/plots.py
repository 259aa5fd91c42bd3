"""Retrieval plots, from report.json's sections: ``ladders.png``, one panel per spec: each
model's NMSE against its decoder's size (the median over seeds, the bar spanning the seeds),
dashed where predicted inefficient, each compiled witness's width ladder in black (what the
architecture represents, against what training reached), with the pooling shortcut and the
learning threshold as horizontal lines (one pair per T, each named by its T: the longest T's
alone were drawn, unnamed, beside models of a shorter T with lower thresholds, an audit,
2026-12-07). :func:`ladders_figure`
builds it, :func:`figures` names it, :func:`plot` writes it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from infoflow.validators.plots import Floors, finished, save_all, subplots

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plot(out: Path, sections: list[dict[str, Any]]) -> list[Path]:
    """Write the figures of :func:`figures` into ``out``; their paths."""
    return save_all(out, figures(sections))


def figures(sections: list[dict[str, Any]]) -> dict[str, Figure]:
    """``{"ladders.png": ladders_figure(sections)}`` when there is data for it, else ``{}``."""
    fig = ladders_figure(sections)
    return {"ladders.png": fig} if fig is not None else {}


def ladders_figure(sections: list[dict[str, Any]]) -> Figure | None:
    """One panel per section (report.json's retrieval parts) with a measured or a witness's
    ladder: its models' NMSE against their decoder's size, its witnesses' ladders and its
    floors; None when no section has one."""
    panels = [
        s
        for s in sections
        if any(map(_measured, s["models"]))
        or any(w.get("ladder") for w in s.get("witnesses") or [])
    ]
    if not panels:
        return None
    cols = min(3, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = subplots(rows, cols, figsize=(5.2 * cols, 4.0 * rows), squeeze=False)
    for ax, section in zip(axes.flat, panels, strict=False):
        _draw(ax, section)
    for ax in axes.flat[len(panels) :]:
        ax.axis("off")
    return finished(fig)


def _draw(ax, section: dict[str, Any]) -> None:
    for m in filter(_measured, section["models"]):
        ladder = m["ladder"]
        rungs = [
            (n, r) for n, r in zip(ladder["sizes"], ladder["rungs"], strict=True) if r["seeds"]
        ]
        sizes = [n for n, _ in rungs]
        medians = [r["median"] for _, r in rungs]
        spread = [
            [r["median"] - r["low"] for _, r in rungs],
            [r["high"] - r["median"] for _, r in rungs],
        ]
        label = m["label"] + _slope_text(ladder)
        style = "-" if m["predicted_efficient"] else "--"
        ax.errorbar(sizes, medians, yerr=spread, marker="o", linestyle=style, label=label)
    witnessed = [w for w in section.get("witnesses") or [] if w.get("ladder")]
    for w, marker in zip(witnessed, "s^vD<>" * len(witnessed), strict=False):
        ladder = w["ladder"]
        medians = [r["median"] for r in ladder["rungs"]]
        label = f"witness {w['model']}" + _slope_text(ladder)
        ax.plot(ladder["sizes"], medians, "k:", marker=marker, markersize=3, label=label)
    by_t = sorted((section.get("floors") or {}).items(), key=lambda item: int(item[0]))
    for (t, floor), shade in zip(by_t, ("0.6", "0.35", "0.1", "0.8") * len(by_t), strict=False):
        named = f" (T={t})" if len(by_t) > 1 else ""
        ax.axhline(floor["shortcut"], color=shade, linewidth=0.8, label=f"pooling shortcut{named}")
        ax.axhline(floor["learns_below"], color=shade, linestyle=":", label=f"learns below{named}")
    ax.set(xscale="log", yscale="log", xlabel="decoder parameters", ylabel="held-out NMSE")
    untrained = " (not trained here)" if (section.get("design") or {}).get("not_trained") else ""
    ax.set_title(section["name"] + untrained, fontsize=9)
    ax.legend(fontsize=6, title="dashed: predicted inefficient", title_fontsize=6)


def _measured(model: dict[str, Any]) -> bool:
    """The model has a ladder with a measured rung (a spec not trained here has none)."""
    return any(r["seeds"] for r in (model.get("ladder") or {}).get("rungs", []))


def floors(section: dict[str, Any]) -> dict[str, Floors]:
    """Each group's NMSE thresholds, for its learning curves: the pooling shortcut, the
    threshold the claims say a model learns below, and the shortcuts held by architectures
    that resolve part of the target, at the group's T."""
    at = {str(t): floor for t, floor in (section.get("floors") or {}).items()}
    out = {}
    for group in section.get("design", {}).get("groups", []):
        floor = at.get(str(group["seq_len"]))
        if floor:
            shortcut, below = floor["shortcut"], floor["learns_below"]
            lines = [(shortcut, "pooling shortcut"), (below, "learns below")]
            lines += [
                (held["shortcut"], f"held by {name}")
                for name, held in (floor.get("held") or {}).items()
                if held.get("shortcut") is not None
            ]
            out[group["name"]] = {"eval:nmse": lines}
    return out


def _slope_text(ladder: dict) -> str:
    """ " (slope -0.52)" for a ladder that measures one, else nothing (a ladder short of a rung
    measures none: its None stopped the whole figure, a review)."""
    slope = (ladder.get("slope") or {}).get("median")
    return f" (slope {slope:.2f})" if slope is not None else ""
