"""Measurements -> the verdicts of the claims about a target no architecture makes efficient
(a stage of :mod:`~infoflow.validators.retrieval.judge`; the paper's triangle): at its
largest decoder each architecture ends higher at the longer of two lengths, and the longest
length with twice the width and twice the steps still does not learn.

The longer length's ladder may still be improving at its cap, where more steps could close
the gap; the rescue at that length, of the same heads (twice the width and twice the steps,
:mod:`~infoflow.validators.retrieval.experiment`), is the run that asks whether they do: if
it stopped at its plateau above every seed of the shorter length, the gap stays
(docs/results/2026-12-07-triangle-rescue-rule-preregistered.md)."""

from __future__ import annotations

from infoflow.validators.claims import Claim, fewer_seeds
from infoflow.validators.retrieval.experiment import Model
from infoflow.validators.retrieval.exponents import Interval
from infoflow.validators.retrieval.judge import Judge, judged, name_of, shared_context, undecided


def rises(judge: Judge, shorter: Model, longer: Model, rescue: Model | None = None) -> Claim:
    """``rescue``: the rescue model at ``longer``'s length with its heads, if trained."""
    ident = f"rises_with_T:{shorter.key()}:{longer.key()}"
    statement = (
        f"at its largest decoder, {name_of(longer, shorter)} ends above "
        f"{name_of(shorter, longer)}{shared_context(shorter, longer)}, as the paper's figure has "
        "the NMSE rise towards 1 with T (no architecture is efficient)"
    )
    short, long = judge.learned(shorter), judge.learned(longer)
    measured = {
        "largest_rung_nmse": {shorter.label(): short.to_json(), longer.label(): long.to_json()},
        "still_improving_at_cap": {m.label(): judge.improving_at_cap(m) for m in (shorter, longer)},
    }
    tolerance = (
        f"every seed at T={longer.seq_len} above every seed at T={shorter.seq_len}, the model "
        "that ends higher stopped (no member still improving at the cap)"
    )
    if rescue is not None:
        measured["rescue"] = {
            rescue.label(): judge.learned(rescue).to_json(),
            "still_improving_at_cap": judge.improving_at_cap(rescue),
        }
        tolerance += (
            f", or, where T={longer.seq_len} was still improving, its rescue (twice the width "
            f"and the steps) stopped with every seed above every seed at T={shorter.seq_len}"
        )
    claim = (ident, statement, "NMSE rises with T (the paper's figure)", measured, tolerance)
    derived = judge.derived(shorter, longer)
    if short.count < 2 or long.count < 2:
        return undecided(*claim, "fewer than two seeds at a length", derived, "reproduction")
    if short.missing or long.missing:  # a diverged seed decides nothing (a review)
        reason = f"{short.missing + long.missing} seed(s) with no finite NMSE (diverged)"
        return undecided(*claim, reason, derived, "reproduction")
    if long.low > short.high and not judge.improving.get(longer):
        return judged(*claim, True, derived, kind="reproduction")
    if long.high < short.low and not judge.improving.get(shorter):
        reason = f"every seed at T={longer.seq_len} below every seed at T={shorter.seq_len}"
        return judged(*claim, False, derived, reason, "reproduction")
    unsettled = _unsettled_by(judge, rescue, short, shorter.seq_len)
    if long.low > short.high and not unsettled:
        return judged(*claim, True, derived, kind="reproduction")
    if long.low > short.high or long.high < short.low:
        reason = (
            "the model that ends higher was still improving at the cap: more steps could "
            "close the gap"
        )
        if rescue is not None and long.low > short.high:
            reason += f" (its rescue does not say they do not: {unsettled})"
        return undecided(*claim, reason, derived, "reproduction")
    reason = "the seeds at the two lengths overlap"
    return undecided(*claim, reason, derived, "reproduction")


def _unsettled_by(judge: Judge, rescue: Model | None, short: Interval, length: int) -> str:
    """Why the rescue does not settle that the gap stays, or "" where it does: it stopped
    (no member still improving at its cap), with two seeds or more, none missing, every one
    above every seed of ``short`` (the shorter ``length``'s)."""
    if rescue is None:
        return "no rescue"
    count, largest = judge.improving.get(rescue), judge.learned(rescue)
    if count is None:
        return "its members' plateaus were not recorded"
    if count:
        return f"{count} of its members were still improving at its cap"
    if largest.missing:
        return f"{largest.missing} of its seeds with no finite NMSE (diverged)"
    if largest.count < 2:
        return f"{largest.count} seed(s): an interval over seeds needs 2 at least"
    if not largest.low > short.high:
        return f"a seed at or below T={length}'s highest ({largest.low:.3g} <= {short.high:.3g})"
    return ""


def no_rescue(judge: Judge, model: Model) -> Claim:
    ident = f"no_rescue:{model.key()}"
    statement = (
        f"{model.label()}, twice the width and twice the steps, still does not learn the "
        "target (no architecture is efficient for it)"
    )
    largest, threshold = judge.learned(model), judge.threshold(model)
    measured = {
        "largest_rung_nmse": largest.to_json(),
        "still_improving_at_cap": judge.improving_at_cap(model),
    }
    tolerance = f"every seed above {threshold:.3g} (the learning threshold)"
    claim = (ident, statement, "not efficient at any size", measured, tolerance)
    derived = judge.derived(model)
    if largest.above(threshold) and not judge.improving.get(model):
        return judged(*claim, True, derived, kind="paper")
    if largest.below(threshold):
        return judged(*claim, False, derived, "every seed learned it", "paper")
    reason = "the seeds straddle the threshold, or a seed is missing"
    if largest.above(threshold):
        reason = "every seed above the threshold, but members were still improving at the cap"
    reason = fewer_seeds(largest.count) or reason
    return undecided(*claim, reason, derived, "paper")
