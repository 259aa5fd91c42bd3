"""Measurements -> verdicts: the rule of each retrieval claim (which claims are made, and
why, is :mod:`~infoflow.validators.retrieval.claims`'s). A claim is confirmed or refuted only
when the interval over seeds (:mod:`~infoflow.validators.retrieval.exponents`) clears its
threshold; otherwise it is inconclusive and says why.
"""

from __future__ import annotations

from infoflow.validators.claims import Claim, fewer_seeds
from infoflow.validators.retrieval.expect import MARGIN, Expectation
from infoflow.validators.retrieval.experiment import Model
from infoflow.validators.retrieval.exponents import (
    Interval,
    equal_within,
    paired_differences,
    paired_exponent_differences,
    undecided_pairs,
)
from infoflow.validators.retrieval.floors import LEARNS_FACTOR
from infoflow.validators.retrieval.plateau import PLATEAU_SLOPE

#: A ladder measures an exponent only where its NMSE falls with size: a slope below -STEEP
#: for every seed (7% per doubling of the decoder, the plateau rule's figure for steps).
STEEP = 0.1
#: How an equality of exponents is judged, for the claims' tolerance.
EQUAL_TEXT = (
    f"|exponent difference| < {MARGIN:g} (the gap the engine needs to predict a separation), "
    "every seed paired with the same seed"
)


class Judge:
    """The measurements a claim reads, and the rules that turn them into verdicts."""

    def __init__(self, experiment, ladders, floors, improving):
        self.experiment, self.ladders, self.floors = experiment, ladders, floors
        self.improving = improving

    def threshold(self, model: Model) -> float:
        return self.floors[model.seq_len].learns_below

    def learned(self, model: Model) -> Interval:
        """The largest rung's NMSE over seeds."""
        return self.ladders[model].largest()

    def learns_text(self, model: Model) -> str:
        floor = self.floors[model.seq_len]
        return (
            f"NMSE < {floor.learns_below:.3g} (the pooling shortcut {floor.shortcut:.3g} / "
            f"{LEARNS_FACTOR:g})"
        )

    def beats(self, better: Model, worse: Model) -> tuple[float, str]:
        """What ``better`` must be below to show it computes more than ``worse`` can: the
        learning threshold, or ``worse``'s held shortcut / LEARNS_FACTOR when that is lower
        (``worse`` resolves some parts of the target itself), with its text."""
        own = self.threshold(better)
        held = self.floors[worse.seq_len].held_below(worse.architecture())
        if held is None or held >= own:
            return own, self.learns_text(better)
        shortcut = self.floors[worse.seq_len].held[worse.architecture()]["shortcut"]
        return held, (
            f"NMSE < {held:.3g} (the shortcut held by {worse.architecture()}, "
            f"{shortcut:.3g}, / {LEARNS_FACTOR:g})"
        )

    def derived(self, *models: Model) -> dict:
        out = {}
        for model in models:
            out.update(self.experiment.derived(model))
        out["floors"] = {m.label(): self.floors[m.seq_len].describe() for m in models}
        return out

    def steep(self, model: Model) -> bool:
        """The ladder's NMSE falls with size for every seed (slope below -STEEP)."""
        return self.ladders[model].slope().below(-STEEP)

    def flat(self, model: Model) -> bool:
        """Every seed measured (two at least, none diverged), and the ladder not steep."""
        slope = self.ladders[model].slope()
        return slope.count >= 2 and not slope.missing and not slope.below(-STEEP)

    def flat_text(self, model: Model, other: Model | None = None) -> str:
        """Why ``model``'s ladder measures no exponent: flat, or no seed measured at all."""
        slope = self.ladders[model].slope()
        name = name_of(model, other) if other else model.label()
        if slope.missing:
            return (
                f"the ladder of {name}: {slope.missing} seed(s) diverged (a rung's NMSE not "
                "finite), so no interval covers every seed"
            )
        if slope.count < 2:  # a seed still improving at the cap, or lacking a rung, measures none
            return f"the ladder of {name} measures no exponent: {self.ladders[model].too_few()}"
        shown = f"{slope.low:.3g} to {slope.high:.3g}"
        return (
            f"the ladder of {name} is flat (slopes {shown}, not all below -{STEEP:g}): its "
            "NMSE is limited by training, not by size, so it measures no exponent"
        )

    def no_exponent(self, model: Model, other: Model | None = None) -> str | None:
        """Why ``model``'s ladder measures no exponent when fewer than two seeds measure one
        (a member still improving at the cap, a rung without an NMSE), or a seed diverged;
        None otherwise."""
        slope = self.ladders[model].slope()
        return self.flat_text(model, other) if slope.count < 2 or slope.missing else None

    def improving_at_cap(self, model: Model) -> int | None:
        """How many of the model's members were still improving at the cap; None when it was
        not trained (not 0: nothing was measured; a trained model always has a count)."""
        return self.improving.get(model)

    def learns(self, model: Model) -> Claim:
        ident = f"learns:{model.key()}"
        statement = f"{model.label()} learns the target at its largest decoder"
        largest, threshold = self.learned(model), self.threshold(model)
        measured = {
            "largest_rung_nmse": largest.to_json(),
            "still_improving_at_cap": self.improving_at_cap(model),
        }
        tolerance = f"every seed at {self.learns_text(model)}"
        derived = self.derived(model)
        if largest.below(threshold):
            return judged(ident, statement, "efficient", measured, tolerance, True, derived)
        if largest.above(threshold) and not self.improving.get(model):
            reason = (
                "every seed above the threshold, and none still improving at the cap (each "
                f"reached a plateau, or its log-loss slope was above -{PLATEAU_SLOPE:g} there)"
            )
            return judged(
                ident, statement, "efficient", measured, tolerance, False, derived, reason
            )
        reason = "the seeds straddle the threshold, or some were still improving at the cap"
        reason = fewer_seeds(largest.count + largest.missing) or reason
        if largest.missing:
            reason = f"{largest.missing} seed(s) with no finite NMSE at the largest rung (diverged)"
        return undecided(ident, statement, "efficient", measured, tolerance, reason, derived)

    def compare(self, e: Expectation) -> Claim:
        better, worse = e.better, e.worse
        ladders = (self.ladders[better], self.ladders[worse])
        measured = {
            "slope": {m.label(): self.ladders[m].slope().to_json() for m in (better, worse)},
            "exponent": {m.label(): self.ladders[m].to_json()["exponent"] for m in (better, worse)},
            "largest_rung_nmse": {m.label(): self.learned(m).to_json() for m in (better, worse)},
        }
        derived = {**self.derived(better, worse), "why": e.why}
        if e.outcome == "separation":
            return self._separation(e, ladders, measured, derived)
        return self._equality(e, ladders, measured, derived)

    def _separation(self, e: Expectation, ladders, measured, derived) -> Claim:
        better, worse = e.better, e.worse
        ident = f"separation:{better.key()}:{worse.key()}"
        statement = (
            f"{name_of(better, worse)} has the smaller exponent: its NMSE falls faster with the "
            f"decoder's size than that of {name_of(worse, better)}{shared_context(better, worse)}"
        )
        difference = paired_differences(ladders[1], ladders[0])
        measured = {**measured, "slope_difference": difference.to_json()}
        tolerance = f"slope(worse) - slope(better) > 0 for every seed, slope(better) < -{STEEP:g}"
        threshold, text = self.beats(better, worse)
        tolerance = f"{tolerance}, every seed of the better at {text}"
        claim = (ident, statement, f"separation ({e.why})", measured, tolerance)
        if not self.learned(better).below(threshold):
            reason = f"{name_of(better, worse)} does not learn: not every seed at {text}"
            reason = fewer_seeds(self.learned(better).count) or reason
            return undecided(*claim, reason, derived, e.kind)
        if not self.steep(better):
            reason = self.flat_text(better, worse)
            return undecided(*claim, reason, derived, e.kind)
        if self.flat(worse) and not self.learned(worse).above(self.learned(better).high):
            reason = (
                f"the ladder of {name_of(worse, better)} is flat but does not end above that of "
                f"{name_of(better, worse)} on every seed: a floor the better one has not reached "
                "yet, not a limit of size, so it orders no exponent"
            )
            return undecided(*claim, reason, derived, e.kind)
        if difference.above(0):
            return judged(*claim, True, derived, kind=e.kind)
        if difference.below(0) and self.beats_own_bound(worse):
            reason = (
                "the predicted-worse model's NMSE falls faster for every seed, and faster than "
                "its lower bound allows"
            )
            return judged(*claim, False, derived, reason, e.kind)
        if difference.below(0):
            reason = (
                "the predicted-worse model's NMSE falls faster for every seed, but not faster "
                "than its lower bound allows: the better one is above its construction's "
                "exponent (an upper bound), which says nothing"
            )
            return undecided(*claim, reason, derived, e.kind)
        reason = self.no_exponent(worse, better) or undecided_pairs(
            difference, "the seeds' differences straddle 0"
        )
        return undecided(*claim, reason, derived, e.kind)

    def beats_own_bound(self, model: Model) -> bool:
        """Whether ``model``'s ladder falls faster than its lower bound allows on every
        measured seed (slope below -2 / raw)."""
        raw = self.experiment.expected[model].raw
        return raw is not None and raw > 0 and self.ladders[model].slope().below(-2 / raw)

    def _equality(self, e: Expectation, ladders, measured, derived) -> Claim:
        a, b = e.better, e.worse
        head = "exponent_floor" if e.floor else "equality"
        ident = f"{head}:{a.key()}:{b.key()}"
        statement = (
            f"{name_of(a, b)} and {name_of(b, a)} have equal exponents: their NMSE falls alike "
            f"with the decoder's size{shared_context(a, b)}"
        )
        slopes = paired_differences(ladders[0], ladders[1])
        difference = paired_exponent_differences(ladders[0], ladders[1])
        measured = {
            **measured,
            "slope_difference": slopes.to_json(),
            "exponent_difference": difference.to_json(),
        }
        measured_by = (
            "the efficient model learns, and its slope"
            if e.floor
            else "both learn, and both models' slopes"
        )
        tolerance = f"{EQUAL_TEXT}; {measured_by} < -{STEEP:g}"
        claim = (ident, statement, f"equality ({e.why})", measured, tolerance)
        learners = [m for m in (a, b) if self.learned(m).below(self.threshold(m))]
        if not learners:
            reason = "neither model learns the target, so equal slopes would mean nothing"
            reason = fewer_seeds(min(self.learned(m).count for m in (a, b))) or reason
            return undecided(*claim, reason, derived, e.kind)
        if e.floor:
            unmeasured = self.construction_unmeasured(a, b)
        else:
            unmeasured = self.unmeasured(a, b, learners)
        if unmeasured:
            return undecided(*claim, unmeasured, derived, e.kind)
        if not any(self.steep(m) for m in learners):
            reason = f"both ladders are flat (not every seed's slope below -{STEEP:g}): no exponent"
            unmeasured = [why for why in map(self.no_exponent, learners) if why]
            if unmeasured:  # a ladder that measures nothing is not flat
                reason = unmeasured[0]
            elif len(learners) == 1:
                reason = self.flat_text(*learners)
            return undecided(*claim, reason, derived, e.kind)
        equal = equal_within(difference, MARGIN)
        if equal is not None:
            reason = f"every seed's exponents differ by {MARGIN:g} or more, the same way"
            return judged(*claim, equal, derived, "" if equal else reason, e.kind)
        reason = self.no_exponent(a, b) or self.no_exponent(b, a)
        reason = reason or undecided_pairs(
            difference, f"the seeds' differences straddle {MARGIN:g}"
        )
        return undecided(*claim, reason, derived, e.kind)

    def construction_unmeasured(self, efficient: Model, other: Model) -> str | None:
        """Why the floor's equality cannot be judged: the model predicted efficient does not
        learn, or its ladder measures no exponent. Its exponent measured above its
        construction's (an upper bound) says nothing, so only its steep ladder beside the
        other's can refute the floor (a review found the reverse, the inefficient model steep
        beside a failed efficient one, refuting it; since the evening of 2026-12-07). None:
        it learns with a steep ladder."""
        if not self.learned(efficient).below(self.threshold(efficient)):
            return (
                f"{name_of(efficient, other)}, predicted efficient, does not learn (not every seed "
                f"at {self.learns_text(efficient)}): a construction's exponent measured above "
                "its bound says nothing"
            )
        return None if self.steep(efficient) else self.flat_text(efficient, other)

    def unmeasured(self, a: Model, b: Model, learners: list[Model]) -> str | None:
        """Why an equality of two models predicted efficient cannot be judged: one of them
        does not learn, or its ladder is flat, so it measures no exponent (None: both do).
        docs/results/2026-12-05-equality-both-measured-preregistered.md."""
        for model, other in ((a, b), (b, a)):
            if model not in learners:
                return (
                    f"{name_of(model, other)} does not learn (not every seed at "
                    f"{self.learns_text(model)}), so it measures no exponent; an equality of "
                    "two models predicted efficient needs both"
                )
        flat = [m for m in (a, b) if not self.steep(m)]
        if len(flat) == 1:
            other = b if flat[0] == a else a
            return self.flat_text(flat[0], other)
        return None

    def lower_bound(self, model: Model) -> Claim:
        bound = self.experiment.expected[model].raw
        ident = f"lower_bound:{model.key()}"
        statement = (
            f"{model.label()} does not beat its lower bound: measured exponent >= {bound:.3g}"
        )
        limit = -2 / bound
        slope = self.ladders[model].slope()
        measured = {"slope": slope.to_json(), "exponent": self.ladders[model].to_json()["exponent"]}
        tolerance = (
            f"slope >= {limit:.3g} (= -2 / {bound:.3g}) for every seed; judged where a model "
            "predicted efficient at this T learns and falls faster than that on every seed"
        )
        claim = (ident, statement, f"alpha >= {bound:.3g} (lower bound)", measured, tolerance)
        derived = self.derived(model)
        learners = self.efficient_learners(model.seq_len)
        if not any(self.ladders[m].slope().below(limit) for m in learners):
            reason = (
                f"no model predicted efficient at T={model.seq_len} learns with a ladder that "
                f"falls faster than {limit:.3g} on every seed: this training budget has not "
                "shown it can reveal a ladder steeper than the bound"
            )
            reason += "".join(f"; {why}" for why in map(self.no_exponent, learners) if why)
            return undecided(*claim, reason, derived, "paper")
        if slope.count >= 2 and not slope.missing and slope.low >= limit:
            return judged(*claim, True, derived, kind="paper")
        if slope.below(limit):
            return judged(*claim, False, derived, "every seed's ladder falls faster", "paper")
        reason = self.ladders[model].too_few() or self.no_exponent(model)
        reason = reason or "the seeds straddle the limit"
        return undecided(*claim, reason, derived, "paper")

    def efficient_learners(self, seq_len: int) -> list[Model]:
        """The models predicted efficient at ``seq_len`` that learn the target: a lower bound
        is judged where one's ladder falls faster than the bound on every seed (the budget
        can show a steep one)."""
        return [
            m
            for m in self.ladders
            if m.seq_len == seq_len
            and self.experiment.expected[m].efficient
            and self.learned(m).below(self.threshold(m))
        ]


def judged(
    ident, statement, predicted, measured, tolerance, holds, derived, reason="", kind="engineering"
) -> Claim:
    claim = Claim.judged(ident, statement, predicted, measured, tolerance, holds, reason, derived)
    return claim.of_kind(kind)


def undecided(
    ident, statement, predicted, measured, tolerance, reason, derived, kind="engineering"
) -> Claim:
    claim = Claim.undecided(ident, statement, predicted, measured, tolerance, reason, derived)
    return claim.of_kind(kind)


def name_of(model: Model, other: Model) -> str:
    """What tells ``model`` apart from ``other``: its heads, its length or its width."""
    if model.seq_len != other.seq_len:
        return f"T={model.seq_len}"
    if model.embed_dim != other.embed_dim:
        return f"E={model.embed_dim}"
    pe = " with PE" if model.positional_encoding else " without PE"
    return f"heads {list(model.heads)}" + (
        pe if model.positional_encoding != other.positional_encoding else ""
    )


def shared_context(a: Model, b: Model) -> str:
    """What the two models share, for the claim's statement."""
    if a.seq_len != b.seq_len:
        return f" (heads {list(a.heads)}, E={a.embed_dim})"
    return f" (T={a.seq_len}, E={a.embed_dim})"
