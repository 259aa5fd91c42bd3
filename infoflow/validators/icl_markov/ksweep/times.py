"""A K sweep's timescales -> the claims about them, judged seed by seed: tau_2Gen against its
prediction, tau_2Gen flat in K, tau_1Mem rising with K.

Each is confirmed when every seed agrees, refuted when every seed disagrees the same way,
and inconclusive otherwise; a time a seed never reached within the budget counts as
infinite (docs/results/2026-12-05-icl-seed-rules-preregistered.md).
"""

from __future__ import annotations

import math
import statistics

from infoflow.icl_markov.fit import regression
from infoflow.icl_markov.report_fields import memorizing_testable
from infoflow.validators.claims import Claim

TIME_TOLERANCE = 2.0  # a predicted time is confirmed within this factor


def _censored(value: float | None) -> float:
    """A time, infinite when never reached (a step before the first, 0 or less, is not one:
    the checkpoints start later)."""
    return math.inf if value is None or value <= 0 else value


def _won_by(per_k: dict, outcome: str) -> list[int]:
    return [k for k, v in per_k.items() if v["outcome"] == outcome]


def _seed_times(per_k: dict, ks: list[int], field: str) -> dict[int, dict[int, float]]:
    """Each seed's time (``field``: "first_g2s" or "memorized_ats") at each of ``ks``,
    infinite where it never came."""
    seeds = sorted({s for k in ks for s in per_k[k][field]})
    return {s: {k: _censored(per_k[k][field].get(s)) for k in ks} for s in seeds}


def _every(ident, claim, predicted, shown, tolerance, agrees: dict, disagrees: dict) -> Claim:
    """Confirmed when every seed ``agrees``, refuted when every seed ``disagrees``, else
    inconclusive, naming the seeds that did not go with the others (and with no seed)."""
    if not agrees:
        why = "no seed's times are recorded"
        return Claim.undecided(ident, claim, predicted, shown, tolerance, why)
    if all(agrees.values()):
        return Claim.judged(ident, claim, predicted, shown, tolerance, True)
    if all(disagrees.values()):
        why = f"every seed disagrees ({', '.join(f'seed {s}' for s in disagrees)})"
        return Claim.judged(ident, claim, predicted, shown, tolerance, False, why)
    split = ", ".join(
        f"seed {s}: {'agrees' if agrees[s] else 'disagrees' if disagrees[s] else 'neither'}"
        for s in agrees
    )
    if not any(agrees.values()) and not any(disagrees.values()):
        why = f"no seed agrees and none disagrees ({split})"
        return Claim.undecided(ident, claim, predicted, shown, tolerance, why)
    return Claim.undecided(ident, claim, predicted, shown, tolerance, f"the seeds split ({split})")


def tau_2gen(predicted: float | None, measurement: dict) -> Claim:
    """Each seed's tau_2Gen (its median first-G2 step over the K where generalization won)
    within ``TIME_TOLERANCE`` of the prediction."""
    ident = "tau_2gen"
    claim = "tau_2Gen, the steps until the G2 phase first appears"
    tolerance = f"every seed's median first-G2 step within a factor {TIME_TOLERANCE}"
    per_k = measurement["per_k"]
    winners = _won_by(per_k, "generalization")
    seeds = {
        s: statistics.median(times.values())
        for s, times in _seed_times(per_k, winners, "first_g2s").items()
    }
    spacing = measurement["tau_2gen"]["checkpoint_ratio"]
    shown = {"ks": sorted(winners), "seeds": _shown(seeds), "checkpoint_ratio": spacing}
    if predicted is None or not seeds:
        why = "no calibrated prediction" if predicted is None else "no K reached G2"
        return Claim.undecided(ident, claim, predicted, shown, tolerance, why)
    low, high = predicted / TIME_TOLERANCE, predicted * TIME_TOLERANCE
    agrees = {s: low <= t <= high for s, t in seeds.items()}
    above = {s: t > high for s, t in seeds.items()}
    below = {s: t < low for s, t in seeds.items()}
    return _every(
        ident, claim, predicted, shown, tolerance, agrees, above if any(above.values()) else below
    )


def tau_2gen_flat(measurement: dict) -> Claim:
    """Each seed's least-squares rise of its first-G2 step across the K where generalization
    won (as :func:`memorization_slows` measures tau_1Mem's): confirmed within one checkpoint
    spacing either way, refuted beyond ``TIME_TOLERANCE`` spacings on one side
    (docs/results/2026-12-07-tau2gen-flat-rule-preregistered.md; largest over smallest
    within 2 spacings confirmed before)."""
    ident = "tau_2gen_flat"
    claim = "tau_2Gen does not depend on K (the K that generalize)"
    per_k = measurement["per_k"]
    winners = _won_by(per_k, "generalization")
    spacing = measurement["tau_2gen"]["checkpoint_ratio"]
    beyond = TIME_TOLERANCE * spacing
    tolerance = (
        "every seed's least-squares rise of its first-G2 step across the K that generalize "
        f"(log against log K) within x{spacing:.3g} either way (one checkpoint spacing); "
        f"refuted when every seed's is above {beyond:.3g}, or every seed's below 1/{beyond:.3g}"
    )
    times = _seed_times(per_k, winners, "first_g2s")
    shown: dict = {"first_g2": {s: _shown(t) for s, t in times.items()}}
    if len(winners) < 2:
        return Claim.undecided(
            ident, claim, "flat", shown, tolerance, "fewer than two K generalize"
        )
    rises = {s: _censored_rise(t) for s, t in times.items()}
    shown["rises"] = {s: None if r is None or math.isinf(r) else r for s, r in rises.items()}
    within = spacing * (1 + 1e-9)  # inclusive: a move of exactly one checkpoint, rounded
    agrees = {s: r is not None and 1 / within <= r <= within for s, r in rises.items()}
    up = {s: r is not None and r > beyond for s, r in rises.items()}
    down = {s: r is not None and r < 1 / beyond for s, r in rises.items()}
    return _every(ident, claim, "flat", shown, tolerance, agrees, up if any(up.values()) else down)


def _censored_rise(times: dict[int, float]) -> float | None:
    """:func:`_rise` of a seed's times; infinite when some but not all are (a K where the seed
    never reached G2: it rises), None when all are (nothing to compare)."""
    if all(math.isinf(t) for t in times.values()):
        return None
    if any(math.isinf(t) for t in times.values()):
        return math.inf
    return _rise(times)


def memorization_slows(measurement: dict) -> Claim:
    """Each seed's least-squares rise of tau_1Mem across the K where memorization won, it
    memorized and the criterion's ceiling can tell memorizing apart (as calibrate's fit of a
    reads them), against the checkpoint spacing."""
    ident = "memorization_slows"
    claim = "memorization slows as K grows (tau_1Mem rises with K)"
    per_k = measurement["per_k"]
    spacing = measurement["tau_2gen"]["checkpoint_ratio"]
    tolerance = (
        "every seed's least-squares rise of tau_1Mem across the K that memorize where the "
        f"ceiling can show it (log against log K) above the checkpoint spacing x{spacing:.3g}; "
        f"refuted when every seed's is below 1/{spacing:.3g}"
    )
    won = _won_by(per_k, "memorization")
    blind = [k for k in won if not memorizing_testable(measurement.get("ceiling", {}).get(k))]
    won = [k for k in won if k not in blind]
    times = {
        s: {k: t for k, t in row.items() if math.isfinite(t)}
        for s, row in _seed_times(per_k, won, "memorized_ats").items()
    }
    shown: dict = {"tau_1mem": {s: _shown(t) for s, t in times.items()}}
    if blind:  # a K the ceiling hides (it counted, 2026-12-07: an audit)
        shown["left_out"] = sorted(blind)
    short = [s for s, t in times.items() if len(t) < 3]
    if len(won) < 3 or short:
        why = "fewer than three K memorize" + (" where the ceiling can show it" if blind else "")
        if len(won) >= 3:
            why = f"seed {', '.join(map(str, short))} memorized at fewer than three of the K"
        return Claim.undecided(ident, claim, "rises", shown, tolerance, why)
    rises = {s: _rise(t) for s, t in times.items()}
    shown["rises"] = _shown(rises)
    agrees = {s: r > spacing for s, r in rises.items()}
    falls = {s: r < 1 / spacing for s, r in rises.items()}
    return _every(ident, claim, "rises", shown, tolerance, agrees, falls)


def _rise(times: dict[int, float]) -> float:
    """The least-squares rise of the times across their K (log against log K)."""
    slope, _ = regression([math.log(k) for k in times], [math.log(t) for t in times.values()])
    return math.exp(slope * math.log(max(times) / min(times)))


def _shown(values: dict) -> dict:
    """``values`` for report.json: infinite as None (never reached)."""
    return {
        key: (_shown(v) if isinstance(v, dict) else None if math.isinf(v) else v)
        for key, v in values.items()
    }
