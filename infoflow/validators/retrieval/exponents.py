"""A size ladder's NMSE -> the measured cost exponent, with an interval over seeds.

The engine predicts parameters ~ eps^-alpha, eps the sup-norm error. The validator measures
NMSE = MSE / Var(y), a mean squared error: reading eps as the root-mean-square error (a
reconstruction: the papers bound the sup norm, which the RMS error does not exceed), NMSE
~ eps^2, so NMSE ~ P^(-2/alpha) along a ladder of sizes P. The slope of log NMSE against log P
is then -2/alpha, and a measured exponent is alpha = -2/slope (infinite for a slope >= 0:
the error does not fall with size). P is the decoder's parameters (the MLPs), the part the
cost law says grows; the attention layout is the architecture and stays fixed.

Each seed trains the whole ladder, so each seed gives one slope; it is a measured exponent
only when every rung of that seed stopped improving before the cap (a rung still improving
says how far training got, not how the error scales with size: pre-registered in
docs/results/2026-12-05-plateaued-seeds-preregistered.md) and the ladder has an NMSE at each
of its rungs, :data:`MIN_RUNGS` at least (issue 24's ladder: four rungs spanning 8x; a rung
lost, to a diverged member or a witness too narrow for its decoders, left three rungs
spanning as little as 3.4x, and the fit took them). A model's slope is the median over
its measured seeds; its interval is the range of the seeds' slopes (order statistics: with n
seeds the range covers the median of the slope's distribution with probability
1 - 2^(1-n), 75% for three). A comparison of two models pairs their seeds (seed i of both
trained on the same data stream) and takes the range of the paired differences: of the
slopes for an order, of the exponents for an equality (judged on the exponent's own scale);
a seed only one model has, or one that diverged in either (a rung whose NMSE is not finite),
is counted missing, and so is a diverged seed in a model's own interval: nothing is decided
(since the evening of 2026-12-07; a review found a diverged seed dropped like a seed still
improving at the cap, the verdict taken on the other two).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace

from infoflow.validators.claims import fewer_seeds

#: Rungs a ladder needs, each with an NMSE, for a seed's slope to be a measured exponent.
MIN_RUNGS = 4


def fit_slope(sizes: list[float], nmse: list[float | None]) -> float | None:
    """Least-squares slope of log NMSE against log size over the rungs with a positive,
    finite NMSE (None with fewer than three such rungs); the plateau rule fits its loss
    curves with it too."""
    points = [
        (math.log(p), math.log(v))
        for p, v in zip(sizes, nmse, strict=True)
        if v is not None and v > 0 and math.isfinite(v)
    ]
    if len(points) < 3:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    spread = sum((x - mx) ** 2 for x, _ in points)
    if not spread:  # every rung the same size: no slope
        return None
    return sum((x - mx) * (y - my) for x, y in points) / spread


def exponent_of(slope: float | None) -> float | None:
    """alpha = -2 / slope (NMSE ~ eps^2); infinite when the NMSE does not fall with size;
    None for no slope."""
    if slope is None or math.isnan(slope):
        return None
    return -2 / slope if slope < 0 else math.inf


def coverage(seeds: int) -> float:
    """The probability that the range of ``seeds`` draws covers their distribution's median."""
    return 1 - 2 ** (1 - seeds) if seeds > 1 else 0.0


@dataclass(frozen=True)
class Interval:
    """A median and the range of the values it is taken over (None: no value)."""

    median: float | None
    low: float | None
    high: float | None
    count: int
    missing: int = 0  # values every seed should have had, missing or not finite

    @classmethod
    def of(
        cls, values: list[float | None], every: bool = False, infinite: bool = False
    ) -> Interval:
        """Over the finite values (``infinite``: infinities too); ``every``: each value is a
        seed's measurement, and one missing or not finite (a diverged seed) is counted, so
        that nothing is decided."""
        found = sorted(v for v in values if v is not None and _counted(v, infinite))
        missing = len(values) - len(found) if every else 0
        if not found:
            return cls(None, None, None, 0, missing)
        median = statistics.median(found)  # the mean of -inf and inf has no value
        median = None if math.isnan(median) else median
        return cls(median, found[0], found[-1], len(found), missing)

    def above(self, threshold: float) -> bool:
        """The whole interval lies above ``threshold`` (two values at least, none missing)."""
        return self.count >= 2 and not self.missing and self.low > threshold

    def below(self, threshold: float) -> bool:
        return self.count >= 2 and not self.missing and self.high < threshold

    def to_json(self) -> dict:
        out = {
            "median": _plain(self.median),
            "low": _plain(self.low),
            "high": _plain(self.high),
            "seeds": self.count,
        }
        return {**out, "missing": self.missing} if self.missing else out


@dataclass(frozen=True)
class Ladder:
    """One architecture at one (T, E): the decoder size of each rung, each rung's NMSE per
    seed (``nmse[rung][seed]``) and whether that member was still improving at the cap
    (``capped[rung][seed]``; empty: none was)."""

    sizes: list[int]
    nmse: list[list[float | None]]
    capped: list[list[bool]] = field(default_factory=list)

    @property
    def seeds(self) -> int:
        return len(self.nmse[0]) if self.nmse else 0

    def slopes(self) -> list[float | None]:
        """Each seed's slope over the ladder, measured or not."""
        return [fit_slope(self.sizes, self._column(s)) for s in range(self.seeds)]

    def measured(self) -> list[bool]:
        """Per seed: the ladder has :data:`MIN_RUNGS` rungs of distinct sizes, each with a
        positive, finite NMSE, and every rung stopped improving before the cap."""
        return [
            len(set(self.sizes)) >= MIN_RUNGS and self._complete(s) and not self._capped(s)
            for s in range(self.seeds)
        ]

    def diverged(self) -> int:
        """Seeds with a rung whose NMSE is not finite (a diverged member): missing from every
        interval over seeds, which then decides nothing (a rung with no NMSE at all, a
        witness too narrow for its decoders, is not a failure: that seed measures nothing)."""
        return sum(self._diverged(s) for s in range(self.seeds))

    def unmeasured(self) -> str:
        """Why the seeds that measure no exponent do not: too few rungs, a rung without an
        NMSE, or a member still improving at the cap ('' when every seed measures one)."""
        if len(set(self.sizes)) < MIN_RUNGS:
            return f"{len(set(self.sizes))} rung(s): a measured exponent needs {MIN_RUNGS}"
        diverged = self.diverged()
        lost = sum(not self._complete(s) for s in range(self.seeds)) - diverged
        capped = sum(self._capped(s) for s in range(self.seeds))
        parts = [f"{diverged} seed(s) diverged (a rung's NMSE not finite)"] if diverged else []
        parts += [f"{lost} seed(s) without an NMSE at every rung"] if lost else []
        parts += [f"{capped} seed(s) with a member still improving at the cap"] if capped else []
        return "; ".join(parts)

    def too_few(self) -> str | None:
        """Why the measured seeds are too few for an interval, and why the others measure
        nothing (None: enough seeds measure an exponent)."""
        text, why = fewer_seeds(self.slope().count), self.unmeasured()
        if text:
            return f"{text} ({why})" if why else text
        diverged = self.diverged()
        return f"{diverged} seed(s) diverged (a rung's NMSE not finite)" if diverged else None

    def _complete(self, seed: int) -> bool:
        """Every rung of ``seed`` has a positive, finite NMSE (the slope's fit takes them all)."""
        return all(v is not None and v > 0 and math.isfinite(v) for v in self._column(seed))

    def _diverged(self, seed: int) -> bool:
        return any(v is not None and not math.isfinite(v) for v in self._column(seed))

    def _capped(self, seed: int) -> bool:
        return any(row[seed] for row in self.capped)

    def _column(self, seed: int) -> list[float | None]:
        return [row[seed] for row in self.nmse]

    def measured_slopes(self) -> list[float | None]:
        """Each seed's slope where it is a measured exponent, else None."""
        return [s if ok else None for s, ok in zip(self.slopes(), self.measured(), strict=True)]

    def slope(self) -> Interval:
        """The median and range of the measured seeds' slopes, the diverged seeds missing."""
        return replace(Interval.of(self.measured_slopes()), missing=self.diverged())

    def largest(self) -> Interval:
        """The NMSE of the largest rung, over seeds (a seed without one counted missing)."""
        return Interval.of(self.nmse[-1], every=True)

    def to_json(self) -> dict:
        slope = self.slope()
        return {
            "sizes": self.sizes,
            "nmse": self.nmse,
            "rungs": [Interval.of(row).to_json() for row in self.nmse],
            "slopes": self.slopes(),
            "measured_seeds": self.measured(),
            "slope": slope.to_json(),
            "exponent": _plain(exponent_of(slope.median)),
        }


def paired_differences(a: Ladder, b: Ladder) -> Interval:
    """slope(a) - slope(b), seed by seed, over the seeds both measured; a seed one ladder
    has and the other lacks is counted ``missing`` (it pairs with nothing)."""
    pairs, unpaired = _paired(a, b)
    values = [x - y if x is not None and y is not None else None for x, y in pairs]
    return replace(Interval.of(values), missing=unpaired)


def paired_exponent_differences(a: Ladder, b: Ladder) -> Interval:
    """alpha(a) - alpha(b), seed by seed, over the seeds both measured: infinite where one
    ladder does not fall, no value where neither does; unpaired seeds counted ``missing``."""
    pairs, unpaired = _paired(a, b)
    values = []
    for x, y in pairs:
        alphas = (exponent_of(x), exponent_of(y))
        measured = None not in alphas and not all(map(math.isinf, alphas))
        values.append(alphas[0] - alphas[1] if measured else None)
    return replace(Interval.of(values, infinite=True), missing=unpaired)


def equal_within(difference: Interval, margin: float) -> bool | None:
    """Whether seed-paired differences show two equal quantities: True when every seed's
    lies within ``margin``, False when every seed's is ``margin`` or more the same way, None
    otherwise (fewer than two seeds, an unpaired seed, or a straddle)."""
    if difference.count < 2 or difference.missing:
        return None
    if difference.low > -margin and difference.high < margin:
        return True
    if difference.low >= margin or difference.high <= -margin:
        return False
    return None


def undecided_pairs(difference: Interval, straddle: str) -> str:
    """Why seed-paired differences decide nothing: too few seeds, seeds that do not pair,
    or ``straddle``."""
    if difference.missing:
        return (
            f"{difference.missing} seed(s) pair with nothing (trained for one model only, or "
            "diverged: a rung's NMSE not finite)"
        )
    return fewer_seeds(difference.count) or straddle


def _paired(a: Ladder, b: Ladder) -> tuple[list[tuple], int]:
    """The two ladders' measured slopes paired seed by seed (seed i of both trained on the
    same data stream), and how many seeds pair with nothing: one ladder has them beyond the
    other, or one of the pair diverged."""
    first, second = a.measured_slopes(), b.measured_slopes()
    pairs = list(zip(first, second, strict=False))
    diverged = sum(a._diverged(s) or b._diverged(s) for s in range(len(pairs)))
    return pairs, abs(len(first) - len(second)) + diverged


def _counted(value: float, infinite: bool) -> bool:
    return not math.isnan(value) and (infinite or math.isfinite(value))


def _plain(value: float | None) -> float | str | None:
    """JSON has no infinity: an infinite value is written ``"inf"`` (or ``"-inf"``)."""
    if value is not None and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value
