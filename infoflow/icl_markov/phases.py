"""Thresholds -> phases: where K lies against K*_1 and K*_2, the phase sequence of that
regime (the paper's), and the phase at the end of the training budget (the reconstruction's
timescales). Where the working forms put K*_1 above K*_2 and K between them, no phase is
predicted."""

from __future__ import annotations

import math
import re

from infoflow.core.results import Prediction

FORMS = "reconstruction:working_forms"
CONTRADICTION = (
    "unplaced: K*_1 >= K*_2 and K lies between them, where the race (memorization forms "
    "first) and the capacity (K chains do not fit) disagree"
)


def contradiction(k: int, k1: float | None, k2: float, interval=None) -> bool:
    """K*_1 >= K*_2 and K between them: the race says memorization forms first (K < K*_1),
    the capacity says K chains cannot be stored (K >= K*_2); the module predicts no phase.
    Without a K*_1 value, a K at or below the low end of its one-sided interval (the race's
    tie off its grid: K < K*_1 there too) and at or above K*_2 (a review found it placed)."""
    if k1 is None:
        low = (interval or (0.0, math.inf))[0]
        return k2 <= k <= low
    return k2 <= k < k1


#: The phases each regime passes through (paper).
SEQUENCES = {
    "below K*_1": ["G1", "M1", "M2"],
    "between K*_1 and K*_2": ["G1", "G2", "M2"],
    "above K*_2": ["G1", "G2"],
}


def regime(k: int, k1: float | None, k2: float, interval=None) -> str | None:
    """Where K lies; without a K*_1 value, a one-sided interval (the race's tie off its grid)
    still places a K below its low end or at and above its high end."""
    if k1 is None:
        low, high = interval or (0.0, math.inf)  # the grid's end K is on the bound's side
        if k <= low:
            return "below K*_1"
        if k < high:
            return None
    elif k < k1:
        return "below K*_1"
    return "between K*_1 and K*_2" if k < k2 else "above K*_2"


def placed_by(placed: str | None, k1: Prediction, k2: Prediction) -> str:
    """The phase sequence's provenance: the paper's sequences, placed by the reconstructions
    and mechanisms of the thresholds that place K (K*_1 below it, K*_2 above, both between):
    a K above K*_2 (reconstruction:capacity) or placed by the clock race read paper:summary
    alone (a fresh-user audit, 2026-12-07)."""
    deciding = {"below K*_1": [k1], "above K*_2": [k2]}.get(placed or "", [k1, k2])
    found = (re.findall(r"(?:reconstruction|mechanism):\w+", p.provenance) for p in deciding)
    tags = list(dict.fromkeys(tag for tags in found for tag in tags))
    return f"paper:summary, placed by {', '.join(tags)}" if tags else "paper:summary"


def final_phase(spec, sequence, k1, tau, transient_bound, exponent) -> Prediction:
    """The phase at the end of the budget. ``transient_bound``: (G2's transient, whether it
    is only bounded below): past a lower bound the phase is not predicted."""
    transient, bounded = transient_bound
    steps = spec.training.steps
    if sequence is None:
        return Prediction(None, "", "estimate", "uncalibrated", "None: no K*_1 (see k1_star).")
    if tau is None or (k1 is None and sequence[1] == "M1"):
        why = "no tau_2Gen calibration" if tau is None else "K*_1 is only bounded (see k1_star)"
        return Prediction(  # the sequence's end was given, and judged (an audit, 2026-12-07)
            None,
            "",
            "estimate",
            "uncalibrated",
            f"None: {why} to say whether {steps:,} steps reach the phase sequence's end, "
            f"{sequence[-1]}.",
        )
    if sequence[1] == "M1":
        memorize = tau * (spec.chains / k1) ** exponent  # tau_1Mem(K), equal to tau at K*_1
        phase = "M2" if steps >= memorize else "G1"
        note = (
            f"tau_1Mem(K) = tau_2Gen (K/K*_1)^a = {fmt(memorize)} steps against a budget of "
            f"{steps:,}; the M1 -> M2 step is not timed, M2 is taken as the end state."
        )
    else:
        end = tau + (transient if transient is not None else float("inf"))
        phase = "G1" if steps < tau else ("G2" if steps <= end else "M2")
        if phase == "M2" and bounded:
            return Prediction(
                None,
                "",
                "estimate",
                "uncalibrated",
                f"None: G2 forms at tau_2Gen = {fmt(tau)} steps and lasts at least "
                f"{fmt(transient)} more (a lower bound on the transient), so whether it has "
                f"given way to M2 within {steps:,} steps is not predicted.",
            )
        after = "after at least" if bounded else "after"  # a lower bound said as a time
        note = (
            f"G2 forms at tau_2Gen = {fmt(tau)} steps"
            + (f" and gives way to M2 {after} {fmt(transient)} more" if transient else "")
            + f"; the budget is {steps:,} steps."
        )
    # the step in the unit: a final G2 beside a sequence ending in M2 read as a contradiction
    at = f"at step {steps:,}"
    return Prediction(phase, at, "estimate", "reconstruction:timescales", note)


def fmt(value: float | None) -> str:
    if value is None:
        return "unknown"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
