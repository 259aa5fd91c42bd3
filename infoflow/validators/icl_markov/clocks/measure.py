"""A clock run's evaluations -> each member's clock: the step at which the mechanism formed,
or why it has none (:data:`STATUSES`).

One criterion for every clock (:data:`HALFWAY`): the first step at which the model's
KL(truth || model) on the clock's test set (fresh chains for G, the member's own chains for
M1 and M2) is halfway from the unigram plateau (the Bayes unigram G1_bayes) to the
mechanism's exact Bayes level (G2, M2 or M1), interpolated in log step between evaluations.
A memorising clock is also read on fresh chains, to see whether the model generalised
instead of memorising. :func:`settled` says when a member's clock is final, so that a clock
group can stop training early.
"""

from __future__ import annotations

import math

HALFWAY = 0.5  # the clock stops this far from the plateau to the mechanism's level
#: A mechanism is timed only where its level is at least this share of the plateau below
#: the plateau (otherwise noise crosses the halfway line).
MIN_DROP = 0.1


#: What a clock run found: its mechanism formed (at ``time``), did not form within the run,
#: generalised first (a memorising clock whose fresh-chain KL crossed G2's halfway line no
#: later than its own: not memorisation in isolation), or cannot be timed (its level is not
#: MIN_DROP below the plateau).
STATUSES = ("formed", "not formed", "generalised first", "not timed")


def clock_time(rows: dict[int, dict[str, float]]) -> tuple[float | None, str]:
    """(time, status) of one member from its evaluations (see :data:`STATUSES`)."""
    own = crossing_step(rows, "own")
    if own == "not timed":
        return None, "not timed"
    fresh = crossing_step(rows, "fresh") if "fresh:kl" in rows[min(rows)] else None
    if isinstance(fresh, float) and (own is None or fresh <= own):
        return None, "generalised first"
    return (own, "formed") if own is not None else (None, "not formed")


def settled(row: dict[str, float]) -> bool:
    """Whether a member's clock is final at the evaluation ``row``: it cannot be timed, or its
    own KL is on or below the halfway line. Its time and status then depend only on the
    evaluations so far (the first crossing of each test set), so training it on changes
    nothing the race reads."""
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
