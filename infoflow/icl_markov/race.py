"""Clocks -> K*_1: the race between the subcircuits (theory note ``icl_markov.md``,
"Corrections and the mechanistic predictor"; the race itself is [R], after the paper's
"kinetic competition between subcircuits").

Each clock is a formation time measured in isolation on a model where only that mechanism
can form (:mod:`infoflow.validators.icl_markov.clocks`), one value per seed, ``None`` when
it did not form within the run (censored):

- ``g``: the full model at K = infinity, tau_G (the G2 path, previous-token head included);
- ``g_prev``: the minimal model with a hard-wired previous-token head at K = infinity,
  tau_G|prev; so tau_prev = tau_G - tau_G|prev is the time to form that head;
- ``m2_prev[K]``: the minimal model on K chains, G2 ruled out: tau_M2|prev(K);
- ``m1[K]``: a model whose layer-1 attention cannot see the previous token: tau_M1(K);
- ``g_slowed[r]``: tau_G with layer 1's attention learning at r times the rate.

The G2 path takes tau_G; the M2 path tau_prev + tau_M2|prev(K); the M1 path tau_M1(K).
Memorization wins at K when its fastest path beats tau_G, so K*_1 is the K at which the
fastest memorising path ties with tau_G (log-log interpolation between the clocks' K). The
interval spans the seeds: its low end races the slowest memorisation against the fastest G2,
its high end the fastest memorisation against the slowest G2. Slowing layer 1's attention
lengthens tau_prev (measured: ``g_slowed``; else [R] tau_prev / r), which delays G2 and M2
alike but not M1.
"""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import dataclass, field

#: (low, middle, high) of a clock over the seeds; math.inf where it did not form.
Span = tuple[float, float, float]


@dataclass(frozen=True)
class Clocks:
    """Measured clocks (steps) per seed; ``steps`` is the runs' length (censoring)."""

    g: list[float | None]
    g_prev: list[float | None]
    m2_prev: dict[int, list[float | None]]
    m1: dict[int, list[float | None]]
    steps: int
    g_slowed: dict[float, list[float | None]] = field(default_factory=dict)


@dataclass(frozen=True)
class Race:
    """K*_1 from the clocks, with the paths' times behind it."""

    k1_star: float | None
    interval: tuple[float, float] | None
    tau_g: Span
    tau_prev: Span
    paths: dict[str, dict[int, Span]]  # "M1", "M2" -> K -> the path's time
    reason: str  # how K*_1 was placed, or why it could not be

    def to_json(self) -> dict:
        paths = {p: {str(k): v for k, v in t.items()} for p, t in self.paths.items()}
        return {"k1_star": self.k1_star, "interval": self.interval, "tau_g": self.tau_g,
                "tau_prev": self.tau_prev, "paths": paths, "reason": self.reason}  # fmt: skip


def clocks_of(members: list[dict], steps: int) -> Clocks:
    """:class:`Clocks` from member rows ``{"clock", "layer1_attention_lr", "chains" (None:
    infinity), "seed", "time"}``, as report.json and calibration files hold them."""

    def times(clock: str, rate: float = 1.0) -> dict:
        found: dict = {}
        for m in members:
            if m["clock"] == clock and m["layer1_attention_lr"] == rate:
                found.setdefault(m["chains"], []).append(m["time"])
        return found

    slowed = {m["layer1_attention_lr"] for m in members if m["layer1_attention_lr"] != 1}
    return Clocks(
        g=times("G").get(None, []), g_prev=times("G_prev").get(None, []),
        m2_prev=times("M2_prev"), m1=times("M1"), steps=steps,
        g_slowed={r: times("G", r).get(None, []) for r in sorted(slowed)},
    )  # fmt: skip


def span(values: list[float | None]) -> Span:
    """Low, median and high over the seeds; a seed that did not form counts as infinite."""
    found = sorted(math.inf if v is None else float(v) for v in values)
    if not found:
        return (math.inf, math.inf, math.inf)
    return (found[0], statistics.median(found), found[-1])


def race(clocks: Clocks, layer1_lr: float = 1.0) -> Race:
    """K*_1 where the fastest memorising path ties with G2, at layer-1 attention learning
    rate scale ``layer1_lr`` (1: as measured)."""
    tau_g, tau_prev = _g_clocks(clocks, layer1_lr)
    ks = sorted(set(clocks.m1) | set(clocks.m2_prev))  # a path not timed at K is infinite
    m1 = {k: span(clocks.m1.get(k, [])) for k in ks}
    m2 = {k: _add(tau_prev, span(clocks.m2_prev.get(k, []))) for k in ks}
    fastest = {k: tuple(min(a, b) for a, b in zip(m1[k], m2[k], strict=True)) for k in ks}
    paths = {"M1": m1, "M2": m2}
    if not ks:
        return Race(None, None, tau_g, tau_prev, paths, "no memorising path was timed")
    if math.isinf(tau_g[1]):
        return Race(None, None, tau_g, tau_prev, paths,
                    f"G2 did not form within the clock runs' {clocks.steps:,} steps")  # fmt: skip
    middle = crossing(ks, [fastest[k][1] for k in ks], tau_g[1])
    low = crossing(ks, [fastest[k][2] for k in ks], tau_g[0])
    high = crossing(ks, [fastest[k][0] for k in ks], tau_g[2])
    if middle is None or low is None or high is None:
        side = "below" if fastest[ks[0]][1] > tau_g[1] else "above"
        reason = (f"the clocks do not cross tau_G = {tau_g[1]:.4g} on K = {ks[0]}..{ks[-1]}: "
                  f"K*_1 lies {side} that range")  # fmt: skip
        return Race(None, None, tau_g, tau_prev, paths, reason)
    winner = min(("M1", "M2"), key=lambda p: _at(ks, [paths[p][k][1] for k in ks], middle))
    reason = (f"the {winner} path ties with tau_G = {tau_g[1]:.4g} steps at K = {middle:.3g} "
              f"(seeds: {low:.3g} to {high:.3g})")  # fmt: skip
    return Race(middle, (low, high), tau_g, tau_prev, paths, reason)


def _g_clocks(clocks: Clocks, layer1_lr: float) -> tuple[Span, Span]:
    """tau_G and tau_prev at ``layer1_lr``: measured when ``g_slowed`` has that scale,
    otherwise tau_prev / layer1_lr [R]."""
    g_prev = span(clocks.g_prev)
    measured = clocks.g if layer1_lr == 1 else clocks.g_slowed.get(layer1_lr)
    if measured is not None:
        tau_g = span(measured)
        return tau_g, _clip(_subtract(tau_g, g_prev))
    tau_prev = _clip(_subtract(span(clocks.g), g_prev))
    slowed = tuple(t / layer1_lr for t in tau_prev)
    return _add(g_prev, slowed), slowed


def crossing(ks: list[int], times: list[float], tau: float) -> float | None:
    """The K at which ``times`` (rising with K) first reaches ``tau``, log-log interpolated;
    a time that is infinite (censored) is taken at the next K. None when it never does or
    already does at the smallest K."""
    if not ks or times[0] >= tau:
        return None
    for (k0, t0), (k1, t1) in itertools.pairwise(zip(ks, times, strict=True)):
        if t1 >= tau:
            if math.isinf(t1):
                return float(k1)
            share = (math.log(tau) - math.log(t0)) / (math.log(t1) - math.log(t0))
            return math.exp(math.log(k0) + share * (math.log(k1) - math.log(k0)))
    return None


def _at(ks: list[int], times: list[float], k: float) -> float:
    """``times`` interpolated log-log at ``k``."""
    for (k0, t0), (k1, t1) in itertools.pairwise(zip(ks, times, strict=True)):
        if k0 <= k <= k1:
            if math.isinf(t0) or math.isinf(t1):
                return math.inf
            share = math.log(k / k0) / math.log(k1 / k0)
            return math.exp(math.log(t0) + share * math.log(t1 / t0))
    return math.inf


def _add(a: Span, b: Span) -> Span:
    return tuple(x + y for x, y in zip(a, b, strict=True))


def _subtract(a: Span, b: Span) -> Span:
    """a - b over the seeds' range: the low end is a's low minus b's high."""
    return (a[0] - b[2], a[1] - b[1], a[2] - b[0])


def _clip(s: Span) -> Span:
    return tuple(max(0.0, v) if not math.isnan(v) else math.inf for v in s)
