"""The rules that judge a measured K*_1 interval against a predicted one: two-sided
(:func:`two_sided`, on :func:`overlaps`) and one-sided (:func:`one_sided`), for
:func:`~infoflow.validators.icl_markov.ksweep.claims.k1_claim`."""

from __future__ import annotations

import math

#: A two-sided K*_1 is confirmed only by a measured interval at most this many times as wide
#: (high/low) as the predicted one: one to two grid steps of the bundled sweeps (K x1.4 to x2)
#: on each side; a wider one overlaps too many predictions to tell them apart.
K1_WIDTH_SLACK = 4.0


def two_sided(low: float, high: float, fit: dict) -> tuple[bool | None, str]:
    """A two-sided prediction [low, high] against the fit: :func:`overlaps`, and confirmed
    only when the measured estimate lies inside the prediction (the fit's maximum-likelihood
    K*_1; a separable bracket as a whole), else undecided: an overlap confirmed a prediction
    2x off 77-95% of the time on the full smoke grid, this rule 5-16%, a correct one 53-55%
    (docs/results/2026-12-06-k1-estimate-rule-preregistered.md, and its results). A point
    prediction (low = high) keeps the overlap rule: no estimate lies inside a point, and
    the point lying inside an interval at most ``K1_WIDTH_SLACK`` wide is its test."""
    verdict, reason = overlaps(low, high, fit)
    if verdict is not True or low == high:
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
