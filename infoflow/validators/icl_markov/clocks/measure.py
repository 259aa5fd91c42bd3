"""A clock run's evaluations -> each member's clock: the step at which the mechanism formed,
or why it has none (:data:`STATUSES`).

The criterion is the spec's, shared with the K sweep (:mod:`..criterion`). With
``projection`` (:class:`Projected`), a clock is the first step, interpolated in log step
between evaluations, at which its mechanism's kind carries WEIGHT of the mixture fitted to
the model on every test set together; a memorising clock whose generalizing weight got there
no later "generalised first", and one whose references the data cannot separate (the
ceiling) is "not timed".

With ``gap``, one criterion for every clock (:data:`HALFWAY`): the first step at which the model's
KL(truth || model) on the clock's test set (fresh chains for G, the member's own chains for
M1 and M2) is halfway from the unigram plateau (the Bayes unigram G1_bayes) to the
mechanism's exact Bayes level (G2, M2 or M1), interpolated in log step between evaluations.
A memorising clock is also read on fresh chains, to see whether the model generalised
instead of memorising. :func:`settled` says when a member's clock is final, so that a clock
group can stop training early.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from infoflow.validators.icl_markov.criterion import (
    HALFWAY,
    WEIGHT,
    distinguishable,
    kind_weights,
    named,
    rising_crossing,
)

#: A mechanism is timed only where its level is at least this share of the plateau below
#: the plateau (otherwise noise crosses the halfway line).
MIN_DROP = 0.1


#: What a clock run found: its mechanism formed (at ``time``), did not form within the run,
#: generalised first (a memorising clock whose fresh-chain KL crossed G2's halfway line no
#: later than its own: not memorisation in isolation), or cannot be timed (gap: its level is
#: not MIN_DROP below the plateau; projection: the data cannot separate its references).
STATUSES = ("formed", "not formed", "generalised first", "not timed")


@dataclass(frozen=True)
class Projected:
    """The projection criterion for a clock whose mechanism is of ``kind`` (generalizing or
    memorizing), with the spec's ceiling ``tolerance`` (nats)."""

    kind: str
    tolerance: float

    def time(self, rows: dict[int, dict[str, float]]) -> tuple[float | None, str]:
        """(time, status) of one member from its evaluations (see :data:`STATUSES`)."""
        first = rows[min(rows)]
        if not distinguishable(named(first, "sep:"), self.kind, self.tolerance):
            return None, "not timed"
        own = weight_crossing(rows, self.kind)
        if self.kind == "memorizing":
            other = weight_crossing(rows, "generalizing")
            if other is not None and (own is None or other <= own):
                return None, "generalised first"
        return (own, "formed") if own is not None else (None, "not formed")

    def settled(self, row: dict[str, float]) -> bool:
        """Whether the member's clock is final at ``row``: untimed, or a kind it reads has
        formed (its first crossing is then known)."""
        weights = kind_weights(named(row, "w:"))
        untimed = not distinguishable(named(row, "sep:"), self.kind, self.tolerance)
        return untimed or max(weights["memorizing"], weights["generalizing"]) >= WEIGHT


def weight_crossing(rows: dict[int, dict[str, float]], kind: str) -> float | None:
    """The step at which ``kind``'s weight first reaches WEIGHT, log-interpolated between the
    evaluations around it; None when it never does."""
    points = [(s, kind_weights(named(rows[s], "w:"))[kind]) for s in sorted(rows)]
    return rising_crossing(points, WEIGHT)


def clock_time(
    rows: dict[int, dict[str, float]], rule: Projected | None = None
) -> tuple[float | None, str]:
    """(time, status) of one member from its evaluations (see :data:`STATUSES`), by the
    projection ``rule`` or, without one, the halfway criterion."""
    if rule is not None:
        return rule.time(rows)
    own = crossing_step(rows, "own")
    if own == "not timed":
        return None, "not timed"
    fresh = crossing_step(rows, "fresh") if "fresh:kl" in rows[min(rows)] else None
    if isinstance(fresh, float) and (own is None or fresh <= own):
        return None, "generalised first"
    return (own, "formed") if own is not None else (None, "not formed")


def settled(row: dict[str, float], rule: Projected | None = None) -> bool:
    """Whether a member's clock is final at the evaluation ``row`` (by ``rule`` when given):
    it cannot be timed, or its own KL is on or below the halfway line. Its time and status
    then depend only on the evaluations so far (the first crossing of each test set), so
    training it on changes nothing the race reads."""
    if rule is not None:
        return rule.settled(row)
    line = halfway_line(row, "own")
    return line is None or row["own:kl"] <= line


def halfway_line(row: dict[str, float], split: str) -> float | None:
    """The KL halfway from ``split``'s plateau to the mechanism's level; None when the level
    is not MIN_DROP below the plateau (the mechanism cannot be timed)."""
    plateau, level = row[f"{split}:plateau"], row[f"{split}:mechanism"]
    if plateau - level < MIN_DROP * plateau:
        return None
    return plateau - HALFWAY * (plateau - level)


def crossing_step(rows: dict[int, dict[str, float]], split: str) -> float | str | None:
    """The step at which ``split``'s KL crosses the halfway line from the plateau to the
    mechanism's level, log-interpolated between the evaluations around it; None when it
    never does; "not timed" when the level is not MIN_DROP below the plateau."""
    steps = sorted(rows)
    line = halfway_line(rows[steps[0]], split)
    if line is None:
        return "not timed"
    previous = None
    for step in steps:
        kl = rows[step][f"{split}:kl"]
        if kl <= line:
            if previous is None:
                return float(step)
            (s0, kl0) = previous
            share = (kl0 - line) / (kl0 - kl)
            return math.exp(math.log(s0) + share * (math.log(step) - math.log(s0)))
        previous = (step, kl)
    return None
