"""The rules that judge a measured K*_1 interval against a predicted one: two-sided
(:func:`two_sided`, on :func:`overlaps`; a point by :func:`within_factor`) and one-sided
(:func:`one_sided`), for :func:`~infoflow.validators.icl_markov.ksweep.claims.k1_claim`; and
the ratio of two sweeps' K*_1 (:func:`ratio_interval`), judged by :func:`within_factor`, for
the shift claim (:func:`~infoflow.validators.icl_markov.clocks.judge.shift_claim`)."""

from __future__ import annotations

import math

#: A two-sided K*_1 is confirmed only by a measured interval at most this many times as wide
#: (high/low) as the predicted one: one to two grid steps of the bundled sweeps (K x1.4 to x2)
#: on each side; a wider one overlaps too many predictions to tell them apart.
K1_WIDTH_SLACK = 4.0

#: A point K*_1 or a predicted shift is confirmed only by a measured interval within this
#: factor of the prediction's geometric middle (an equivalence test: a truth this far off is
#: confirmed only when the 95% interval misses it; docs/results/2026-12-06-shift-rule.md).
EQUIVALENCE_FACTOR = 2.0


def two_sided(low: float, high: float, fit: dict) -> tuple[bool | None, str]:
    """A two-sided prediction [low, high] against the fit: :func:`overlaps`, and confirmed
    only when the measured estimate lies inside the prediction (the fit's maximum-likelihood
    K*_1; a separable bracket as a whole), else undecided: an overlap confirmed a prediction
    2x off 77-95% of the time on the full smoke grid, this rule 5-16%, a correct one 53-55%
    (docs/results/2026-12-06-k1-estimate-rule-preregistered.md, and its results). A point
    prediction (low = high), inside which no estimate lies, is confirmed only by an interval
    within ``EQUIVALENCE_FACTOR`` of it (:func:`within_factor`): the overlap rule confirmed
    one 2x off 5.5-10.2% of the time on k2-c5's grid, this rule 1.8-2.6%, a correct one
    65% at slope 3 (docs/results/2026-12-06-shift-rule.md)."""
    verdict, reason = overlaps(low, high, fit)
    placed_both = fit["status"] != "open" and (fit["low"] or 0) > 0 and fit["high"] is not None
    if low == high and verdict is not False and placed_both:
        return within_factor(low, high, fit["low"], fit["high"])  # not overlaps' width reason
    if verdict is not True:
        return verdict, reason
    if fit["status"] == "separable":
        if low <= fit["low"] and fit["high"] <= high:
            return True, ""
        estimate = f"the bracket {fit['low']:.3g} to {fit['high']:.3g}"
    elif low <= fit["value"] <= high:
        return True, ""
    else:
        estimate = f"{fit['value']:.3g} (interval {fit['low']:.3g} to {fit['high']:.3g})"
    return None, (
        f"the measured K*_1, {estimate}, lies outside the predicted {low:.3g} to {high:.3g}, "
        "which its interval only overlaps: neither placed inside nor excluded"
    )


def overlaps(low: float, high: float, fit: dict) -> tuple[bool | None, str]:
    """A two-sided prediction [low, high] against the fit: refuted when disjoint from it;
    True when it overlaps a placed interval at most ``K1_WIDTH_SLACK`` times as wide
    (high/low) as itself (the whole rule until 2026-12-06); undecided (None) when the placed
    interval is wider, or the fit is only a bound (every outcome on one side), which every
    prediction on its side overlaps (docs/results/2026-12-05-seeds-and-widths-preregistered.md)."""
    if fit["low"] is not None and high < fit["low"]:
        return False, f"the measured interval starts at K={fit['low']:.3g}"
    if fit["high"] is not None and low > fit["high"]:
        return False, f"the measured interval ends at K={fit['high']:.3g}"
    if fit["status"] == "open":
        return None, (
            f"{fit['reason']}: the outcomes only bound K*_1, and the predicted interval lies "
            "within that bound, so nothing placed it (an overlap with an open interval "
            "confirms any prediction on its side)"
        )
    if fit["low"] is None or fit["high"] is None or fit["low"] <= 0 or low <= 0:
        return None, (
            "the measured interval is open on one side: too wide to place K*_1 against the "
            "prediction"
        )
    widths = fit["high"] / fit["low"], high / low
    if widths[0] > K1_WIDTH_SLACK * widths[1]:
        return None, (
            f"the measured interval {fit['low']:.3g} to {fit['high']:.3g} (x{widths[0]:.3g}) is "
            f"more than {K1_WIDTH_SLACK:g} times as wide as the predicted one (x{widths[1]:.3g}): "
            "too wide to place K*_1 against the prediction"
        )
    return True, ""


def one_sided(
    bound: float, above: bool, low: float | None, high: float | None
) -> tuple[bool | None, str]:
    """A one-sided prediction (K*_1 above ``bound`` when ``above``, else below it) against a
    measured interval [low, high] (None: open): (True, "") when the interval lies on the
    predicted side by at least its width in log K; (False, why) when it lies wholly on the
    other side; (None, why) otherwise."""
    side = "above" if above else "below"
    if above and high is not None and high < bound:
        return False, f"the measured interval ends at K={high:.3g}, below the bound {bound:.3g}"
    if not above and low is not None and low > bound:
        return False, f"the measured interval starts at K={low:.3g}, above the bound {bound:.3g}"
    if low is None or high is None:
        return None, f"the measured interval is open, so its width cannot put it {side} {bound:.3g}"
    width = math.log(high / low)
    beyond = math.log(low / bound) if above else math.log(bound / high)
    if beyond >= width:
        return True, ""
    return None, (
        f"the measured interval {low:.3g} to {high:.3g} lies {side} {bound:.3g} by a factor "
        f"{math.exp(max(beyond, 0)):.3g}, less than its own width (x{math.exp(width):.3g})"
    )


def within_factor(
    low: float, high: float, measured_low: float, measured_high: float
) -> tuple[bool | None, str]:
    """An equivalence test of a prediction [low, high] against a measured interval (0 and inf
    where open, on either side): refuted when disjoint; confirmed when the measured interval
    lies within ``EQUIVALENCE_FACTOR`` of the prediction's geometric middle (all four ends
    finite); else undecided (None, why)."""
    if measured_high < low:
        return False, f"the measured interval ends at {measured_high:.3g}"
    if measured_low > high:
        return False, f"the measured interval starts at {measured_low:.3g}"
    if low <= 0 or math.isinf(high):
        return None, "the predicted interval is open on one side: it can be refuted, not confirmed"
    if measured_low <= 0 or math.isinf(measured_high):
        return None, "the measured interval is open on one side: an overlap places nothing"
    middle, factor = math.sqrt(low * high), EQUIVALENCE_FACTOR
    if middle / factor <= measured_low and measured_high <= middle * factor:
        return True, ""
    named = f"{middle:.3g}" + ("" if low == high else f", the middle of {low:.3g} to {high:.3g}")
    return None, (
        f"the measured interval {measured_low:.3g} to {measured_high:.3g} reaches beyond a "
        f"factor {factor:g} of the predicted {named} ({middle / factor:.3g} to "
        f"{middle * factor:.3g}): it cannot tell the prediction from one {factor:g}x off"
    )


def placed(fit: dict) -> tuple[float | None, float | None, float | None]:
    """A sweep's K*_1 as (low, estimate, high), None where it places none: the logistic fit's
    interval and maximum-likelihood K*_1, or a separable bracket and its geometric middle."""
    if fit["status"] == "fit":
        return fit["low"], fit["value"], fit["high"]
    if fit["status"] == "separable" and fit["low"] and fit["high"]:
        return fit["low"], math.sqrt(fit["low"] * fit["high"]), fit["high"]
    if fit["status"] in ("separable", "open"):
        return fit["low"], None, fit["high"]
    return None, None, None


def ratio_interval(fit0: dict, fit1: dict) -> tuple[float, float]:
    """The interval of K*_1(fit1) / K*_1(fit0), 0 and inf where open: MOVER in log K (Zou and
    Donner, Stat Med 27:1693, 2008) from each sweep's estimate and 95% interval; where a sweep
    has no estimate (a bound), the ratio of opposite ends, which still bounds it."""
    (low0, e0, high0), (low1, e1, high1) = placed(fit0), placed(fit1)
    if e0 is None or e1 is None:
        return (
            low1 / high0 if low1 and high0 else 0.0,
            high1 / low0 if high1 and low0 else math.inf,
        )
    log_ratio, low, high = math.log(e1 / e0), 0.0, math.inf
    if low1 and high0:
        low = math.exp(log_ratio - math.hypot(math.log(e1 / low1), math.log(high0 / e0)))
    if high1 and low0:
        high = math.exp(log_ratio + math.hypot(math.log(high1 / e1), math.log(e0 / low0)))
    return low, high
