"""Clocks -> K*_1: the race between the subcircuits (theory note ``icl_markov.md``,
"Corrections and the mechanistic predictor"; the race itself is [R], after the paper's
"kinetic competition between subcircuits").

Each clock is a formation time measured in isolation on a model where only that mechanism
can form (:mod:`infoflow.validators.icl_markov.clocks`), one value per seed, ``None`` when
it did not form within the run (or, for a memorising clock, when the model generalised
first):

- ``g``: the full model at K = infinity, tau_G (the G2 path, previous-token head included);
- ``g_prev``: the minimal model with a hard-wired previous-token head at K = infinity,
  tau_G|prev; so tau_prev = tau_G - tau_G|prev is the time to form that head;
- ``m2_prev[K]``: the minimal model on K chains, G2 ruled out: tau_M2|prev(K);
- ``m1[K]``: a model whose layer-1 attention cannot see the previous token: tau_M1(K);
- ``g_slowed[r]``: tau_G with layer 1's attention learning at r times the rate.

The G2 path takes tau_G; the M2 path tau_prev + tau_M2|prev(K); the M1 path tau_M1(K). The
M2 path beats G2 exactly when tau_M2|prev(K) < tau_G|prev (tau_prev cancels), and M1 beats it
when tau_M1(K) < tau_G. Each path's tie is the K where its clock reaches its opponent's
(log-log interpolation between the clocks' K; a clock that did not form is taken at the run's
length, so a tie next to it is an upper bound); memorization wins below the later tie, so
K*_1 is the larger of the two. The interval spans the seeds: its low end races the slowest
memorisation against the fastest opponent, its high end the fastest against the slowest
(a clock's slowest and fastest: the order statistics covering its median, :func:`span`); an
end off the grid is open, and a median tie off the grid keeps the seeds' end on it. Slowing
layer 1's attention to r lengthens tau_prev (measured: ``g_slowed``; else [R] tau_prev / r):
it delays G2 against M1, while the M2 tie stays put.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

#: (low, middle, high) of a clock over the seeds; math.inf where it did not form.
Span = tuple[float, float, float]
#: A clock's (low, high) is a distribution-free confidence interval for its median over the
#: seeds: the narrowest pair of order statistics that covers the median with at least this
#: probability (with three seeds, the extremes: 75%; more seeds narrow it).
COVERAGE = 0.75


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
    """K*_1 from the clocks, with the paths' times behind it. ``k1_star`` is None when the
    tie lies off the grid; ``interval`` is then one-sided (0 below, math.inf above)."""

    k1_star: float | None
    interval: tuple[float, float] | None
    tau_g: Span
    tau_prev: Span
    paths: dict[str, dict[int, Span]]  # "M1", "M2" -> K -> the path's time
    reason: str  # how K*_1 was placed, or why it could not be

    def to_json(self) -> dict:
        paths = {p: {str(k): v for k, v in t.items()} for p, t in self.paths.items()}
        return {
            "k1_star": self.k1_star,
            "interval": self.interval,
            "tau_g": self.tau_g,
            "tau_prev": self.tau_prev,
            "paths": paths,
            "reason": self.reason,
        }


def clocks_of(members: list[dict], steps: int) -> Clocks:
    """:class:`Clocks` from member rows ``{"clock", "layer1_attention_lr", "chains" (None:
    infinity), "seed", "time", "status"}``, as report.json and calibration files hold them;
    a member whose mechanism could not be timed is left out."""

    def times(clock: str, rate: float = 1.0) -> dict:
        found: dict = {}
        for m in members:
            timed = m.get("status") != "not timed"
            if m["clock"] == clock and m["layer1_attention_lr"] == rate and timed:
                found.setdefault(m["chains"], []).append(m["time"])
        return found

    slowed = {m["layer1_attention_lr"] for m in members if m["layer1_attention_lr"] != 1}
    return Clocks(
        g=times("G").get(None, []),
        g_prev=times("G_prev").get(None, []),
        m2_prev=times("M2_prev"),
        m1=times("M1"),
        steps=steps,
        g_slowed={r: times("G", r).get(None, []) for r in sorted(slowed)},
    )


def span(values: list[float | None]) -> Span:
    """Low, median and high over the seeds; a seed that did not form counts as infinite.
    Low and high are the order statistics j and n + 1 - j for the largest j whose interval
    still covers the median with probability :data:`COVERAGE` (1 - 2 P(Binomial(n, 1/2) <
    j)); the extremes when even they cover less (fewer than three seeds)."""
    found = sorted(math.inf if v is None else float(v) for v in values)
    if not found:
        return (math.inf, math.inf, math.inf)
    n, j = len(found), 1
    while j < n / 2 and median_coverage(n, j + 1) >= COVERAGE:
        j += 1
    return (found[j - 1], statistics.median(found), found[n - j])


def median_coverage(n: int, j: int) -> float:
    """P(X_(j) <= median <= X_(n+1-j)) for n independent draws of a continuous variable."""
    below = sum(math.comb(n, i) for i in range(j)) / 2**n
    return 1 - 2 * below


def race(clocks: Clocks, layer1_lr: float = 1.0) -> Race:
    """K*_1 where memorization stops beating G2 on either path, at layer-1 attention
    learning-rate scale ``layer1_lr`` (1: as measured)."""
    tau_g, tau_prev = g_clocks(clocks, layer1_lr)
    m1 = {k: span(v) for k, v in sorted(clocks.m1.items())}
    m2_prev = {k: span(v) for k, v in sorted(clocks.m2_prev.items())}
    paths = {"M1": m1, "M2": {k: _add(tau_prev, s) for k, s in m2_prev.items()}}
    ks = sorted(set(m1) | set(m2_prev))
    if not ks:
        return Race(None, None, tau_g, tau_prev, paths, "no memorising path was timed")
    ties = {
        "M1": _tie(m1, tau_g, clocks.steps),
        "M2": _tie(m2_prev, span(clocks.g_prev), clocks.steps),
    }
    winner = max(ties, key=lambda p: ties[p][1])
    low, middle, high = (max(t[i] for t in ties.values()) for i in range(3))
    interval = (_end(low, 0.0, ks[-1]), _end(high, ks[0], math.inf))
    opens = f"{_fmt(interval[0])} to {_fmt(interval[1])} over the clock seeds"
    if middle == -math.inf:
        reason = (
            f"memorization loses to G2 at every K on the grid: K*_1 lies below K = {ks[0]} "
            f"({opens})"
        )
        return Race(None, interval, tau_g, tau_prev, paths, reason)
    if middle == math.inf:
        reason = (
            f"memorization beats G2 at every K on the grid: K*_1 lies above K = {ks[-1]} ({opens})"
        )
        if math.isinf(tau_g[1]):
            reason = f"G2 did not form within the clock runs' {clocks.steps:,} steps; " + reason
        return Race(None, interval, tau_g, tau_prev, paths, reason)
    versus = "tau_M2|prev ties with tau_G|prev" if winner == "M2" else "tau_M1 ties with tau_G"
    reason = f"the {winner} path decides: {versus} at K = {middle:.3g} ({opens})"
    return Race(middle, interval, tau_g, tau_prev, paths, reason)


def _end(tie: float, below: float, above: float) -> float:
    """An interval end from a seed end's tie: the tie itself on the grid, else the grid's
    edge it lies beyond (0 and math.inf are open)."""
    if tie == -math.inf:
        return below
    return above if tie == math.inf else max(tie, 0.0)


def _tie(clock: dict[int, Span], opponent: Span, steps: int) -> Span:
    """(low, middle, high) K at which a memorising clock reaches its opponent's time."""
    ks = sorted(clock)
    if not ks:
        return (-math.inf, -math.inf, -math.inf)  # a path never timed never wins
    low = crossing(ks, [clock[k][2] for k in ks], opponent[0], steps)
    middle = crossing(ks, [clock[k][1] for k in ks], opponent[1], steps)
    high = crossing(ks, [clock[k][0] for k in ks], opponent[2], steps)
    return (low, middle, high)


def g_clocks(clocks: Clocks, layer1_lr: float) -> tuple[Span, Span]:
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


def crossing(ks: list[int], times: list[float], tau: float, steps: int) -> float:
    """The K at which ``times`` (rising with K) reaches ``tau``, log-log interpolated: -inf
    when it already does at the smallest K, +inf when it never does on the grid (or ``tau``
    is infinite). A time that is infinite (did not form) is taken at ``steps``."""
    if math.isinf(tau):
        return math.inf
    capped = [min(t, float(steps)) if math.isinf(t) else t for t in times]
    if times[0] >= tau:
        return -math.inf
    for i in range(1, len(ks)):
        if times[i] >= tau:
            (k0, t0), (k1, t1) = (ks[i - 1], capped[i - 1]), (ks[i], capped[i])
            if t1 <= t0 or t1 < tau:  # did not form, and the run ended before tau
                return float(k1)
            share = (math.log(tau) - math.log(t0)) / (math.log(t1) - math.log(t0))
            return math.exp(math.log(k0) + share * (math.log(k1) - math.log(k0)))
    return math.inf


def _add(a: Span, b: Span) -> Span:
    return tuple(x + y for x, y in zip(a, b, strict=True))


def _subtract(a: Span, b: Span) -> Span:
    """a - b over the seeds' range: the low end is a's low minus b's high."""
    return (a[0] - b[2], a[1] - b[1], a[2] - b[0])


def _clip(s: Span) -> Span:
    return tuple(max(0.0, v) if not math.isnan(v) else math.inf for v in s)


def _fmt(k: float) -> str:
    return "open" if k in (0.0, math.inf) else f"{k:.3g}"
