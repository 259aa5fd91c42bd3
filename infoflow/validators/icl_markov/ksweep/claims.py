"""A K sweep group's measurements (:mod:`~infoflow.validators.icl_markov.ksweep.phases`) ->
claims: the phase (or the mechanism that comes first) at each K, K*_1 (the predicted
interval against the logistic fit's), K*_2, tau_2Gen, tau_2Gen flat in K, memorization
slowing with K.

Each claim compares a prediction at the group's own setting with the measurements and is
inconclusive, with a reason, when the measurement cannot decide it.
"""

from __future__ import annotations

import math

import infoflow
from infoflow.validators.claims import Claim, finite_number
from infoflow.validators.icl_markov.criterion import WEIGHT
from infoflow.validators.icl_markov.experiment import IclExperiment
from infoflow.validators.icl_markov.ksweep import times
from infoflow.validators.icl_markov.ksweep.data import IclGroup
from infoflow.validators.icl_markov.ksweep.k1_rules import (
    EQUIVALENCE_FACTOR,
    K1_WIDTH_SLACK,
    one_sided,
    two_sided,
)
from infoflow.validators.icl_markov.ksweep.phases import (
    GAP,
    MARGIN,
    MEMORIZING,
    SPLIT,
    UNDETERMINED,
    memorizing,
)


def claims(experiment: IclExperiment, group: IclGroup, measurement: dict) -> list[Claim]:
    """Every claim the predictions make about ``group``'s measurements; those judged by the
    seeds' majority or seed by seed need two seeds (K*_1's logistic fit weighs every
    outcome, one seed's too)."""
    first = experiment.predictions[(group.name, group.chains[0])]
    limit = measurement["ceiling"]
    gap_rule = measurement.get("criterion", {}).get("criterion", "gap") == "gap"
    phases = [
        _per_k(
            k, experiment.predictions[(group.name, k)], measurement["per_k"][k], limit[k], gap_rule
        )
        for k in group.chains
    ]
    k1 = k1_claim(first["k1_star"], measurement["k1_fit"], measurement["k1_star"])
    rest = [
        _k2_star(first["k2_star"].value, measurement["k2_star"], limit),
        final_boundary(first["final_boundary"], measurement["per_k"], limit),
        times.tau_2gen(first["tau_2gen"].value, measurement),
        times.tau_2gen_flat(measurement),
        times.memorization_slows(measurement),
    ]
    seeds = len(group.seeds)
    return [*(c.over_seeds(seeds) for c in phases), k1, *(c.over_seeds(seeds) for c in rest)]


def _undecided(measured: dict) -> str:
    """Why no outcome was decided at a K: each seed's."""
    seeds = ", ".join(f"seed {s}: {o}" for s, o in measured["outcomes"].items())
    return f"the seeds did not decide which mechanism came first ({seeds})"


def _kind(phase: str) -> str:
    return "memorizing" if phase in MEMORIZING else phase


def _blind(k: int, limit: dict) -> str:
    """Why memorization cannot be seen at ``k`` ("" when it can)."""
    if limit["detectable"]:
        return ""
    return f"untestable here (K={k}): {limit['reason']}"


def _per_k(
    k: int, result: infoflow.Result, measured: dict, limit: dict, gap_rule: bool = True
) -> Claim:
    """The phase at the end of training when the prediction times the phases; otherwise which
    mechanism comes first (the phase sequence). Untestable where the ceiling says the data
    cannot show memorization (``limit``, from :func:`phases.ceiling`), and undecided where K
    lies within the predicted K*_1 range. ``gap_rule``: the spec registered the KL-gap
    criterion (a projection criterion's call is the measurement itself)."""
    shown = {
        "final_phase": measured["final_phase"],
        "final_kind": measured["final_kind"],
        "trajectory": measured["trajectory"],
        "outcome": measured["outcome"],
        "id_kl": measured["id_kl"],
        "ood_kl": measured["ood_kl"],
    }
    low, high = result["k1_star"].interval or (None, None)
    near = low is not None and low <= k <= high
    near_reason = f"K lies within the predicted K*_1 range {low:.3g}..{high:.3g}" if near else ""
    if result["final_phase"].provenance == "uncalibrated":
        return _first(k, result["phase_sequence"].value, measured, limit, shown, near_reason)
    final = result["final_phase"]
    found = _final_phase(k, final.value, measured, limit, shown, near_reason, gap_rule)
    # the phase at a budget is the paper's only where its prediction is (its provenance)
    return found.of_kind("paper" if final.provenance.startswith("paper") else "reconstruction")


def _first(
    k: int, sequence: list[str] | None, measured: dict, limit: dict, shown: dict, near: str
) -> Claim:
    """Which mechanism comes first at ``k``: memorization when the predicted ``sequence``
    passes through M1, else generalization. ``near``: why K is too near K*_1 to judge, or
    ""."""
    expected = "memorization" if sequence and "M1" in sequence else "generalization"
    path = " -> ".join(sequence or ["?"])
    ident = f"first:K={k}"
    claim = f"K={k} follows {path}: {expected} comes first"
    tolerance = "memorization wins when the model memorizes before G2 appears"
    if near or measured["outcome"] == "undecided" or not sequence or _blind(k, limit):
        unplaced = "no phase sequence is predicted at this K"
        reason = near or _blind(k, limit) or (_undecided(measured) if sequence else unplaced)
        return Claim.undecided(ident, claim, path, shown, tolerance, reason)
    return Claim.judged(ident, claim, path, shown, tolerance, measured["outcome"] == expected)


def _final_phase(
    k: int,
    final: str | None,
    measured: dict,
    limit: dict,
    shown: dict,
    near: str,
    gap_rule: bool = True,
) -> Claim:
    """The kind of phase ``k`` ends in (M1 and M2 both memorizing), against the predicted
    ``final``. ``near``: why K is too near K*_1 to judge, or "". Inconclusive where nothing
    is predicted, where the ceiling hides memorization (whatever was measured), where the
    seeds split or the last checkpoint is undetermined."""
    ident = f"final_phase:K={k}"
    claim = f"K={k} ends in phase {final}"
    tolerance = "same kind of phase at the last checkpoint (M1 and M2 both count as memorizing)"
    reason = _unjudged(k, final, measured, limit, near, gap_rule)
    if reason:
        return Claim.undecided(ident, claim, final, shown, tolerance, reason)
    same = measured["final_kind"] == _kind(final)
    if same and final in MEMORIZING and gap_rule:
        gaps = _seed_gaps(measured)
        if not gaps or None in gaps.values():
            why = "a memorizing seed's final KLs are not finite, or none is recorded: gap open"
            return Claim.undecided(ident, claim, final, shown, tolerance, why)
        if not any(gaps.values()):
            why = (
                f"final phase {measured['final_phase']}, but no memorizing seed's ID KL is "
                f"below {GAP} x its OOD KL"
            )
            return Claim.judged(ident, claim, final, shown, tolerance, False, why)
        if not all(gaps.values()):
            failing = ", ".join(str(s) for s, ok in gaps.items() if not ok)
            why = f"the gap check (ID KL <= {GAP} x OOD KL) fails for seed {failing} only"
            return Claim.undecided(ident, claim, final, shown, tolerance, why)
    return Claim.judged(ident, claim, final, shown, tolerance, same)


def _seed_gaps(measured: dict) -> dict:
    """Whether each seed that ends memorizing passes the gap check on its own final KLs (the
    mean over the seeds when they are not recorded one by one); None where they are not
    finite."""
    finals = measured.get("finals") or {"mean": {"kind": "memorizing", **_mean_kls(measured)}}
    return {
        s: memorizing(row) if all(finite_number(row[k]) for k in TRUTH) else None
        for s, row in finals.items()
        if row["kind"] == "memorizing"
    }


TRUTH = ("id:truth", "ood:truth")


def _mean_kls(measured: dict) -> dict:
    return {"id:truth": measured["id_kl"], "ood:truth": measured["ood_kl"]}


def _unjudged(
    k: int, final: str | None, measured: dict, limit: dict, near: str, gap_rule: bool = True
) -> str:
    """Why the final phase at ``k`` decides nothing ("" when it can be judged)."""
    if final is None:
        return "no final phase is predicted at this K"
    if near:
        return near
    if measured["final_kind"] == SPLIT:
        return "the seeds end in different kinds of phase, none the majority"
    if measured["final_kind"] == UNDETERMINED and gap_rule:
        return (
            "the last checkpoint is undetermined: no reference is nearer than the others by "
            f"the margin {MARGIN:.2g}"
        )
    if measured["final_kind"] == UNDETERMINED:
        return f"the last checkpoint is undetermined: no kind carries {WEIGHT:g} of the mixture"
    return _blind(k, limit)


def k1_claim(prediction, fit: dict, grid: dict) -> Claim:
    """The predicted K*_1 interval (its value when it has none) against the 95% interval of
    the logistic fit; with separable outcomes, against their bracket. Two-sided: confirmed
    when they overlap, the measured one is at most ``K1_WIDTH_SLACK`` times as wide and its
    estimate lies inside the prediction (:func:`~.k1_rules.two_sided`; a point: the measured
    interval within a factor 2 of it). One-sided (from 0 or to infinity: the race's tie, or a
    seed end, off its grid): :func:`~.k1_rules.one_sided`, confirmed only when the measured
    interval lies on its side by its own width at least."""
    ident = "k1_star"
    claim = "K*_1: below it memorization wins, above it G2 forms first"
    shown = {"fit": fit, "grid": grid}
    predicted, interval = prediction.value, prediction.interval
    open_side = interval is not None and (interval[0] <= 0 or math.isinf(interval[1]))
    tolerance = _k1_tolerance(fit, interval, open_side)
    if interval is not None and interval[0] <= 0 and math.isinf(interval[1]):  # a review
        why = "the predicted interval is open on both sides (0 to infinity): it places no K*_1"
        return Claim.undecided(ident, claim, predicted, shown, tolerance, why)
    if predicted is None and interval is not None:  # one-sided: the bound it names
        predicted = interval[1] if interval[0] <= 0 else interval[0]
    if predicted is None:
        return Claim.undecided(ident, claim, None, shown, tolerance, "no prediction")
    low, high = interval or (predicted, predicted)
    shown["predicted_interval"] = [low, high]
    if fit["status"] == "none":
        return Claim.undecided(ident, claim, predicted, shown, tolerance, fit["reason"])
    if fit["low"] is None and fit["high"] is None:
        reason = "the interval is open on both sides: the outcomes do not place K*_1"
        return Claim.undecided(ident, claim, predicted, shown, tolerance, reason)
    if open_side:
        above = interval[0] > 0
        verdict, reason = one_sided(
            interval[0] if above else interval[1], above, fit["low"], fit["high"]
        )
        if verdict is None:
            return Claim.undecided(ident, claim, predicted, shown, tolerance, reason)
        return Claim.judged(
            ident, claim, predicted, shown, tolerance, verdict, "" if verdict else reason
        )
    verdict, reason = two_sided(low, high, fit)
    if verdict is None:
        return Claim.undecided(ident, claim, predicted, shown, tolerance, reason)
    return Claim.judged(ident, claim, predicted, shown, tolerance, verdict, reason)


def _k1_tolerance(fit: dict, interval: tuple | None, open_side: bool) -> str:
    """What a K*_1 claim's measurement is and the rule that judges it, for its tolerance."""
    measured = (
        "the 95% profile-likelihood interval of a logistic fit of P(G2 first | log K) over "
        "every seed's outcome"
    )
    if fit["status"] == "separable":
        measured = "the bracket of the separable outcomes (no finite logistic fit)"
    elif fit["status"] == "open":
        measured = "the one-sided bound of outcomes that all fall on one side (the grid's end)"
    if open_side:
        return (
            f"one-sided: {measured} lies beyond the predicted bound by at least its own "
            "width in log K"
        )
    if interval is None or interval[0] == interval[1]:
        return f"a point: {measured} holds it and lies within a factor {EQUIVALENCE_FACTOR:g} of it"
    return (
        f"the predicted interval overlaps {measured}, which is at most "
        f"{K1_WIDTH_SLACK:g} times as wide (high/low) as the predicted one, and holds the "
        "measured estimate (the fitted K*_1, or the whole bracket)"
    )


def final_boundary(prediction, per_k: dict, limit: dict) -> Claim:
    """A published final-time boundary (the K above which the model ends in G2 rather than
    memorizing, at the anchor's budget) against the run's: between the largest K whose seeds
    end memorizing and the smallest K from which every larger K ends in G2, over the K where
    memorization is detectable; inconclusive when a K where it is not (the ceiling) lies
    above that largest memorizing K. Only where the prediction exists (this setting and
    budget are the anchor's)."""
    ident = "final_boundary"
    claim = "the final phase changes from memorizing to G2 at the predicted K (end of training)"
    tolerance = (
        "the predicted range overlaps the bracket of the final phases on the grid's K where "
        "memorization is detectable"
    )
    if prediction.value is None:  # the note says why ("None: ..."): a reason without the None
        why = prediction.note.removeprefix("None: ")
        return Claim.undecided(ident, claim, None, None, tolerance, why)
    blind = [k for k in sorted(per_k) if not limit[k]["detectable"]]
    ks = [k for k in sorted(per_k) if k not in blind]
    kinds = {k: per_k[k]["final_kind"] for k in sorted(per_k)}
    memorizing = [k for k in ks if kinds[k] == "memorizing"]
    low = max(memorizing, default=None)
    high = next((k for k in ks if all(kinds[j] == "G2" for j in ks if j >= k)), None)
    shown = {"final_kinds": kinds, "bracket": [low, high], "blind": blind}
    if low is None or high is None or high < low:
        why = "the final phases do not change once from memorizing to G2 on this grid"
        if blind:
            why += f" (untestable here at K = {blind})"
        return Claim.undecided(ident, claim, prediction.value, shown, tolerance, why)
    above = [k for k in blind if k > low]
    if above:
        why = (
            f"memorization cannot be seen at K = {above}, above the last K that memorizes: "
            "the final phases there do not show G2"
        )
        return Claim.undecided(ident, claim, prediction.value, shown, tolerance, why)
    predicted_low, predicted_high = prediction.interval or (prediction.value,) * 2
    holds = predicted_low <= high and predicted_high >= low
    why = "" if holds else f"the final phases change between K = {low} and {high}"
    return Claim.judged(ident, claim, prediction.value, shown, tolerance, holds, why)


def _k2_star(predicted: float | None, measured: dict, limit: dict) -> Claim:
    """No K above the prediction where most seeds' G2 gave way to M2, among the K where
    memorization is detectable (at a blind K a transient is not seen as one)."""
    ident = "k2_star"
    claim = "K*_2: below it G2 gives way to M2, above it G2 persists"
    tolerance = (
        "no transient G2 (on most seeds) at a K above the prediction where memorization is "
        "detectable"
    )
    if predicted is None:
        return Claim.undecided(ident, claim, None, measured, tolerance, "no prediction")
    above = [k for k in limit if k >= predicted]
    blind = [k for k in above if not limit[k]["detectable"]]
    transient = measured["transient"]
    seen = [k for k in transient if k >= predicted and limit[k]["detectable"]]
    if seen:
        why = f"G2 gave way to M2 at K={max(seen)}"
        return Claim.judged(ident, claim, predicted, measured, tolerance, False, why)
    if above and blind == above:
        reason = _blind(blind[0], limit[blind[0]]) + "; and at every larger K"
        return Claim.undecided(ident, claim, predicted, measured, tolerance, reason)
    reason = (
        "consistent, but a persisting G2 within the budget does not place K*_2: it may give "
        "way later"
    )
    return Claim.undecided(ident, claim, predicted, measured, tolerance, reason)
