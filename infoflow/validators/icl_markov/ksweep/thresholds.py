"""Each member's phase history (:mod:`.phases`) -> the thresholds and timescales across K.

Rules (theory note ``icl_markov.md``):

- per K the seeds vote (outcome, final phase, and its kind: memorizing for M1 and M2, and for
  an undetermined call whose candidates are all memorizing); a tie is "undecided" (outcome)
  or "split" (final phase or kind), never broken by the names; every seed's outcome is kept;
- the grid bracket of K*_1 lies between the largest K where memorization wins and the
  smallest K from which generalization wins at every larger K;
- the fitted K*_1: a logistic fit of P(generalization first | log K) over every seed's
  decided outcome at the K where the ceiling lets memorization be seen
  (:mod:`~infoflow.validators.icl_markov.ksweep.logistic`);
- K*_2 lies above the largest K where G2 was transient (on most seeds); at this budget G2
  persists from the smallest larger K;
- tau_2Gen is the median first G2 checkpoint over every K where generalization won.
"""

from __future__ import annotations

import itertools
import math
import statistics

from infoflow.validators.icl_markov.ksweep import logistic
from infoflow.validators.icl_markov.ksweep.over_seeds import (
    censored_median,
    majority_median,
    median_found,
    mode,
)
from infoflow.validators.icl_markov.ksweep.phases import SPLIT, MemberHistory


def measure(histories: list[MemberHistory], limit: dict | None = None) -> dict:
    """Per K (majority over seeds, and every seed's outcome) and across K: the thresholds and
    timescales. ``limit`` is :func:`ceiling`'s; K where it is blind are left out of the
    logistic fit of K*_1 (memorization cannot be seen there)."""
    per_k = _per_k(histories)
    k1, winners = _k1_bracket(per_k)
    return {
        "per_k": per_k,
        "k1_star": k1,
        "k1_fit": _k1_fit(histories, limit or {}),
        "k2_star": _k2_star(per_k, winners, limit or {}),
        "tau_2gen": _tau_2gen(per_k, histories[0].steps),
        "ceiling": limit or {},
    }


def _per_k(histories: list[MemberHistory]) -> dict[int, dict]:
    """Per K: the seeds' vote on the outcome, the final phase and its kind, the medians of
    their times (:mod:`.over_seeds`: a time never reached counts as infinite; a transient G2
    only when most seeds had one), the means of their final KLs to the truth, and every
    seed's outcome, times and last checkpoint (which the claims judge seed by seed)."""
    by_k: dict[int, list[MemberHistory]] = {}
    for h in histories:
        by_k.setdefault(h.chains, []).append(h)
    return {
        k: {
            "outcome": mode([h.outcome for h in hs]) or "undecided",
            "outcomes": {h.seed: h.outcome for h in hs},
            "trajectory": hs[0].trajectory,
            "final_phase": mode([h.phases[-1] for h in hs]) or SPLIT,
            "final_kind": mode([h.calls[-1].kind for h in hs]) or SPLIT,
            "first_g2": median_found([h.first_g2 for h in hs]),
            "first_g2s": {h.seed: h.first_g2 for h in hs},
            "memorized_at": censored_median([h.memorized_at for h in hs]),
            "memorized_ats": {h.seed: h.memorized_at for h in hs},
            "finals": {h.seed: _final(h) for h in hs},
            "transient_duration": majority_median([h.transient_duration for h in hs]),
            "transient_durations": {h.seed: h.transient_duration for h in hs},
            "previous_head": censored_median([h.previous_head for h in hs]),
            "previous_heads": {h.seed: h.previous_head for h in hs},
            "id_kl": statistics.mean(h.final["id:truth"] for h in hs),
            "ood_kl": statistics.mean(h.final["ood:truth"] for h in hs),
        }
        for k, hs in sorted(by_k.items())
    }


def _final(h: MemberHistory) -> dict:
    """A seed's last checkpoint: its kind of phase and its KLs to the truth."""
    return {"kind": h.calls[-1].kind, **{k: h.final[k] for k in ("id:truth", "ood:truth")}}


def _k1_bracket(per_k: dict[int, dict]) -> tuple[dict, list[int]]:
    """The grid bracket of K*_1, between the largest K where memorization wins and the
    smallest K from which generalization wins at every larger K; and those K (the winners)."""
    decided = [k for k in per_k if per_k[k]["outcome"] != "undecided"]
    won = [per_k[k]["outcome"] == "generalization" for k in decided]
    start = next((i for i in range(len(decided)) if all(won[i:])), len(decided))
    k1 = {
        "low": decided[start - 1] if start > 0 else None,
        "high": decided[start] if start < len(decided) else None,
        "monotone": won == sorted(won),
        "undecided": [k for k in per_k if k not in decided],
    }
    k1["value"] = math.sqrt(k1["low"] * k1["high"]) if k1["low"] and k1["high"] else None
    return k1, decided[start:]


def _k1_fit(histories: list[MemberHistory], limit: dict) -> dict:
    """The logistic fit of K*_1 over every seed's decided outcome, but at the K where the
    ceiling (``limit``) hides memorization."""
    blind = sorted(k for k, v in limit.items() if not v["detectable"])
    fitted = [
        (h.chains, h.outcome == "generalization")
        for h in histories
        if h.outcome != "undecided" and h.chains not in blind
    ]
    return {**logistic.threshold(fitted), "left_out": blind}


def _k2_star(per_k: dict[int, dict], winners: list[int], limit: dict) -> dict:
    """K*_2 lies above the largest K where G2 was transient (on most seeds) and memorization
    is detectable (``limit``: a transient at a blind K is listed, not counted); G2 persists
    (at this budget) from the smallest larger K where generalization won."""
    transient = [k for k in winners if per_k[k]["transient_duration"] is not None]
    low = max((k for k in transient if limit.get(k, {}).get("detectable", True)), default=None)
    persists = [k for k in winners if k > max(transient, default=0)]
    return {"low": low, "transient": transient, "g2_persists_from": min(persists, default=None)}


def _tau_2gen(per_k: dict[int, dict], steps: list[int]) -> dict:
    """tau_2Gen: the median, over every K where generalization won (the K the claims read),
    of the first G2 checkpoint, its range, those K, and the largest ratio between consecutive
    checkpoints (how finely it is measured)."""
    ks = [k for k, row in per_k.items() if row["outcome"] == "generalization"]
    times = [per_k[k]["first_g2"] for k in ks]
    spacing = max((b / a for a, b in itertools.pairwise(steps)), default=1.0)
    return {
        "value": statistics.median(times) if times else None,
        "min": min(times, default=None),
        "max": max(times, default=None),
        "ks": ks,
        "checkpoint_ratio": spacing,
    }
