"""Per-seed outcomes (K, did generalization come first) -> the empirical K*_1: a logistic fit
of P(generalization first | log K) by Newton's method (numpy only), its midpoint and a
profile-likelihood confidence interval.

The model is logit P = b (log K - m), b >= 0: m is log K*_1, where either mechanism is as
likely to come first. The interval is {m : 2 (l_max - l_profile(m)) <= CHI2_95}, the profile
maximising over the slope b >= 0 at each m; a side that the deviance never reaches within
``REACH`` grid spans of the data stays open (None). When the outcomes are separable (every
memorization at a smaller K than every generalization, or all mixed outcomes at one K) the
maximum-likelihood slope is infinite and m is not identified within the gap: the result is
then the bracket of K with unanimous outcomes either side of the gap, not an interval
pretending to be a confidence interval.
"""

from __future__ import annotations

import math

import numpy as np

CHI2_95 = 3.841458820694124  # chi-square with one degree of freedom, 95th percentile
MAX_SLOPE = 1e4  # per unit log K: a cap for the profile slope where the data separate at m
REACH = 10.0  # how far (in grid spans) beyond the data a confidence bound is searched for


def threshold(outcomes: list[tuple[float, bool]]) -> dict:
    """The fitted K*_1 from (K, generalization first) pairs: ``status`` "fit" (``value``,
    the 95% interval ``low``..``high``, None where open, and ``slope`` per unit log K),
    "separable" (``low``..``high`` the bracket, no value), "open" (every outcome on one side:
    ``low`` the largest K when memorization always came first, ``high`` the smallest when
    generalization did, the other end open) or "none" (``reason`` says why); ``outcomes``
    counts the pairs used."""
    x = np.log(np.array([k for k, _ in outcomes], dtype=float))
    y = np.array([won for _, won in outcomes], dtype=float)
    out = {
        "status": "none",
        "value": None,
        "low": None,
        "high": None,
        "slope": None,
        "outcomes": len(outcomes),
        "reason": "",
    }
    if not outcomes:
        out["reason"] = "no decided outcome"
        return out
    if y.all() or not y.any():  # one side of K*_1 only: a bound at the grid's last K
        won = "generalization" if y.all() else "memorization"
        ks = [k for k, _ in outcomes]
        edge = min(ks) if y.all() else max(ks)
        out["reason"] = f"{won} came first in every outcome: the transition is off the grid"
        side = {"high": edge} if y.all() else {"low": edge}
        return {**out, "status": "open", **side}
    if x[y == 1].max() <= x[y == 0].min():
        out["reason"] = "generalization came first only at smaller K than memorization"
        return out
    if x[y == 0].max() <= x[y == 1].min():
        return {**out, "status": "separable", **_bracket(x, y)}
    b0, b1 = _newton(x, y)
    if b1 <= 0:
        out["reason"] = f"the fitted slope ({b1:.3g}) is not positive"
        return out
    m = -b0 / b1
    span = max(float(np.ptp(x)), math.log(2))
    if not x.min() - REACH * span <= m <= x.max() + REACH * span:  # exp(m) overflowed: a review
        out["reason"] = f"the fitted slope ({b1:.3g}) is too shallow to place K*_1 near the grid"
        return out
    best = _loglik(x, y, b0, b1)
    low = _bound(x, y, m, best, m - REACH * span)
    high = _bound(x, y, m, best, m + REACH * span)
    return {
        **out,
        "status": "fit",
        "value": math.exp(m),
        "slope": b1,
        "low": None if low is None else math.exp(low),
        "high": None if high is None else math.exp(high),
    }


def _bracket(x: np.ndarray, y: np.ndarray) -> dict:
    """Separable outcomes: the largest K with only memorization and the smallest K with only
    generalization (None when no K is unanimous on that side)."""
    found = {v: set(y[x == v].tolist()) for v in set(x.tolist())}
    low = [v for v, seen in found.items() if seen == {0.0}]
    high = [v for v, seen in found.items() if seen == {1.0}]
    return {
        "low": _k(max(low)) if low else None,
        "high": _k(min(high)) if high else None,
        "reason": "separable outcomes: the maximum-likelihood slope is infinite",
    }


def _k(log_k: float) -> float:
    """K from log K, an integer K exactly."""
    k = math.exp(log_k)
    return float(round(k)) if abs(k - round(k)) < 1e-9 * k else k


def _sigmoid(eta: np.ndarray) -> np.ndarray:
    return 0.5 * (1 + np.tanh(eta / 2))


def _loglik(x: np.ndarray, y: np.ndarray, b0: float, b1: float) -> float:
    eta = b0 + b1 * x
    return float(np.sum(y * eta - np.logaddexp(0.0, eta)))


def _newton(x: np.ndarray, y: np.ndarray, steps: int = 100) -> tuple[float, float]:
    """The maximum-likelihood (intercept, slope) of logit P = b0 + b1 x (Newton with step
    halving; the outcomes must not be separable)."""
    mean = min(max(y.mean(), 1e-6), 1 - 1e-6)
    beta = np.array([math.log(mean / (1 - mean)), 0.0])
    X = np.stack([np.ones_like(x), x], axis=1)
    current = _loglik(x, y, *beta)
    for _ in range(steps):
        p = _sigmoid(X @ beta)
        gradient = X.T @ (y - p)
        hessian = (X * (p * (1 - p))[:, None]).T @ X
        step = np.linalg.solve(hessian, gradient)
        scale = 1.0
        while _loglik(x, y, *(beta + scale * step)) < current - 1e-12 and scale > 1e-8:
            scale /= 2
        beta = beta + scale * step
        previous, current = current, _loglik(x, y, *beta)
        if abs(current - previous) < 1e-12 and np.abs(scale * step).max() < 1e-10:
            break
    return float(beta[0]), float(beta[1])


def _profile(x: np.ndarray, y: np.ndarray, m: float) -> float:
    """max over 0 <= b <= MAX_SLOPE of the log-likelihood of logit P = b (x - m): concave in
    b, so projected Newton with step halving."""
    z = x - m
    b, current = 1.0, _loglik(x, y, -m, 1.0)
    for _ in range(100):
        p = _sigmoid(b * z)
        gradient, curvature = float(np.sum((y - p) * z)), float(np.sum(p * (1 - p) * z * z))
        target = b + gradient / max(curvature, 1e-300)
        target = min(max(target, 0.0), MAX_SLOPE)
        scale = 1.0
        while True:
            trial = b + scale * (target - b)
            found = _loglik(x, y, -trial * m, trial)
            if found >= current - 1e-12 or scale < 1e-8:
                break
            scale /= 2
        if abs(trial - b) < 1e-10 * max(1.0, b):
            return max(found, current)
        b, current = trial, found
    return current


def _bound(x: np.ndarray, y: np.ndarray, m: float, best: float, far: float) -> float | None:
    """Where, between the midpoint ``m`` and ``far``, the profile deviance reaches CHI2_95
    (bisection); None when it stays below it up to ``far``."""
    deviance = lambda at: 2 * (best - _profile(x, y, at))  # noqa: E731
    if deviance(far) < CHI2_95:
        return None
    inside, outside = m, far
    for _ in range(60):
        middle = (inside + outside) / 2
        if deviance(middle) < CHI2_95:
            inside = middle
        else:
            outside = middle
        if abs(outside - inside) < 1e-6:
            break
    return (inside + outside) / 2
