"""The race's plot, from report.json's sections: per K sweep group with a race,
``NAME-race.png`` (the paths' clocks against K, the race's K*_1 and the K sweep's), built by
:func:`race_figure`; :func:`figures` names them."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from infoflow.validators.icl_markov.ksweep.plots import PHASE_COLOURS
from infoflow.validators.plots import finished, subplots

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def figures(section: dict) -> dict[str, Figure]:
    """Per group of an icl_markov section with a race: ``NAME-race.png``, by file name."""
    found = {}
    for group in section["groups"]:
        fig = race_figure(group)
        if fig is not None:
            found[f"{group['name']}-race.png"] = fig
    return found


def race_figure(group: dict) -> Figure | None:
    """The memorising paths' times against K (the median over the clock seeds, their range
    shaded), tau_G across, the race's K*_1 and the interval the K sweep measured; None when
    the group has no race."""
    race = group["measurement"].get("race")
    if race is None:
        return None
    fig, ax = subplots(figsize=(6.4, 4.2))
    tau_low, tau, tau_high = (_finite(v) for v in race["tau_g"])
    formed = [v for v in (tau_low, tau, tau_high) if not math.isnan(v)]
    for path, colour in (("M1", PHASE_COLOURS["M1"]), ("M2", PHASE_COLOURS["M2"])):
        times = race["paths"][path]
        ks = sorted(int(k) for k in times)
        low, middle, high = ([_finite(times[str(k)][i]) for k in ks] for i in range(3))
        ax.plot(ks, middle, "o-", color=colour, label=f"{path} path")
        ax.fill_between(ks, low, high, color=colour, alpha=0.2)
        formed += [v for v in low + middle + high if not math.isnan(v)]
    ax.axhline(tau, color=PHASE_COLOURS["G2"], label="tau_G (G2 path)")
    ax.axhspan(tau_low, tau_high, color=PHASE_COLOURS["G2"], alpha=0.15)
    left, right = ax.get_xlim()
    if race["k1_star"] is not None:
        ax.axvline(race["k1_star"], color="black", linestyle="--", label="race K*_1")
    if race["interval"] is not None:  # open ends (0, infinity, null) run to the frame
        low, high = (_finite(v) for v in race["interval"])
        ax.axvspan(
            low if low > 0 else left,
            right if math.isnan(high) else high,
            color="black",
            alpha=0.08,
            label="race K*_1 (clock seeds)",
        )
    fit = group["measurement"]["k1_fit"]
    if fit["status"] != "none" and (fit["low"] or fit["high"]):
        ax.axvspan(
            fit["low"] or left,
            fit["high"] or right,
            color="green",
            alpha=0.12,
            label="measured K*_1 (K sweep)",
        )
    if not formed:  # a log axis needs a time; say why the panel is empty
        ax.text(0.5, 0.5, "no clock formed within the runs", transform=ax.transAxes)
    ax.set(
        xscale="log",
        yscale="log" if formed else "linear",
        xlabel="K (training chains)",
        ylabel="steps to halfway (clock runs)",
        title=f"{group['name']}: the race",
    )
    ax.legend(fontsize=7)
    return finished(fig)


def _finite(value: float | None) -> float:
    """A number for the plot: NaN for what did not form (infinite, or null in report.json)."""
    return math.nan if value is None or math.isinf(value) else value
