"""What ``infoflow plan`` says before anything trains about the criterion's ceiling: at each K
of a K sweep, whether the run's data can tell the phases apart at all (the projection's
separability of M1, M2 and G2 from the ideal Bayesians on test data drawn as the run draws
them, :mod:`.criterion`), the testable K range against the predicted K*_1, and, where the
predicted range is not testable, a nearby setting (more states, longer contexts) where it is.
"""

from __future__ import annotations

import math

import torch

from infoflow.icl_markov.spec import IclMarkovSpec
from infoflow.validators.icl_markov.criterion import PROJECTION_SEQUENCES, projected
from infoflow.validators.icl_markov.ksweep.data import IclGroup, MemberData
from infoflow.validators.icl_markov.ksweep.phases import projection_ceiling

#: The settings tried, in order, when the predicted K*_1 range is not testable: (states
#: added, context multiplied). More states separate the memorised chains from the plateau
#: and from each other; longer contexts give the posteriors more evidence.
CANDIDATES = ((0, 2), (0, 4), (1, 1), (2, 1), (1, 2), (2, 2), (4, 1))

#: The seeds plan reads the ceiling on, at most: the mean settles within a few, and each
#: seed draws its own test set (--seeds 1000 planned for more than five minutes).
PLAN_SEEDS = 8


def ceilings(spec: IclMarkovSpec, chains: list[int], seeds: list[int]) -> dict:
    """:func:`~.ksweep.phases.projection_ceiling` at each K of ``chains`` on test sets drawn
    as the run's ``seeds`` draw theirs, but only as many sequences as the projection reads
    (the run draws more from the same stream, so its own table, on its first sequences,
    differs from this one in the third digit)."""
    group = IclGroup("ceiling", spec, sorted(chains), seeds, [1], PROJECTION_SEQUENCES)
    data = MemberData(group, torch.device("cpu"))
    tolerance = spec.options.criterion_tolerance
    return projection_ceiling(data.separability(), group.members, tolerance)


def plan_lines(
    spec: IclMarkovSpec,
    chains: list[int],
    seeds: list[int],
    k1_interval,
    k2: float | None = None,
    max_context: int | None = None,
    own_context: int | None = None,
) -> list[str]:
    """The ceiling's lines of ``infoflow plan`` for one K sweep setting and its seeds: the
    separabilities per K, whether the predicted K*_1 range (and K*_2, when it lies within the
    grid) can be tested, and a nearby setting where it can when it cannot (within the
    scale's ``max_context`` first; ``own_context``: the spec's before the cap)."""
    if spec.options.criterion == "gap":
        return ["  criterion: gap (the ceiling is computed after the run, from a perfect M2)"]
    over = "the seeds" if len(seeds) <= PLAN_SEEDS else f"the first {PLAN_SEEDS} seeds"
    seeds = seeds[:PLAN_SEEDS]
    limit = ceilings(spec, chains, seeds)
    lines = [
        f"  criterion: {spec.options.criterion} (the projection onto "
        f"{', '.join(projected(spec.options.criterion))}; a kind has formed at weight >= 1/2); "
        f"ceiling: each reference >= {spec.options.criterion_tolerance:g} nats from every other "
        "kind",
        f"    K: separability of M1 / M2 / G2 (nats, mean over {over}) -> testable",
    ]
    for k, entry in limit.items():
        sep = entry["separability"]
        verdict = "testable" if entry["detectable"] else "untestable here"
        numbers = " / ".join(f"{sep[p]:.4f}" for p in ("M1", "M2", "G2"))
        lines.append(f"    K = {k}: {numbers} -> {verdict}")
    lines.append("  " + _range_line(limit, k1_interval))
    failing = k1_interval if k1_interval and not _covers(limit, k1_interval) else None
    if k2 is not None and min(chains) <= k2 <= max(chains):
        covered = _covers(limit, (k2, k2))
        around = ", ".join(map(str, _around(sorted(limit), (k2, k2))))
        where = "testable" if covered else "NOT testable here"
        lines.append(f"  the predicted K*_2 {k2:.3g} (K = {around} around it) is {where}")
        failing = failing or (None if covered else (k2, k2))
    if failing and not _reached(sorted(limit), failing):  # no setting helps: the grid does
        low, high = failing
        lines.append(f"  proposed: a K sweep that reaches {low:.3g} to {high:.3g} on both sides")
    elif failing:
        lines.append("  " + propose(spec, chains, seeds, failing, max_context, own_context))
    return lines


def _covers(limit: dict, interval) -> bool:
    """Whether the grid reaches the predicted interval on both sides (a K at or below its
    low end and one at or above its high end: a grid on one side called it testable, a
    review) and every K of the grid inside it, and the two around it, is testable."""
    ks = sorted(limit)
    inside = _around(ks, interval)
    return _reached(ks, interval) and all(limit[k]["detectable"] for k in inside)


def _reached(ks: list[int], interval) -> bool:
    """Whether the grid ``ks`` has a K at or below the interval's low end and one at or
    above its high end; an open end (0 below, infinite above: a race's one-sided K*_1)
    needs none (it was called out of reach of any grid: an audit, 2026-12-07)."""
    low, high = interval
    return (low <= 0 or ks[0] <= low) and (math.isinf(high) or ks[-1] >= high)


def _around(ks: list[int], interval) -> list[int]:
    low, high = interval
    inside = [k for k in ks if low <= k <= high]
    below = [k for k in ks if k < low]
    above = [k for k in ks if k > high]
    return sorted(set(inside + below[-1:] + above[:1]))


def _range_line(limit: dict, interval) -> str:
    testable = [k for k, v in limit.items() if v["detectable"]]
    shown = ", ".join(map(str, testable)) or "none"
    if not interval:
        return f"testable K: {shown} (no predicted K*_1 range to compare)"
    low, high = interval
    ks = sorted(limit)
    if not _reached(ks, interval):
        where = f"is NOT testable here: the grid ({ks[0]} to {ks[-1]}) does not reach it"
    else:
        where = "testable" if _covers(limit, interval) else "NOT testable here"
        around = ", ".join(map(str, _around(ks, interval)))  # the K it needs (a review)
        where = f"(K = {around} in and around it) is {where}"
    ends = "open" if low <= 0 else f"{low:.3g}", "open" if math.isinf(high) else f"{high:.3g}"
    return f"testable K: {shown}; the predicted K*_1 range {ends[0]} to {ends[1]} {where}"


def propose(
    spec: IclMarkovSpec,
    chains: list[int],
    seeds: list[int],
    interval,
    max_context: int | None = None,
    own_context: int | None = None,
) -> str:
    """The first of :data:`CANDIDATES` whose ceiling covers a predicted range that this
    setting cannot test (K*_1's, else K*_2's), as the overrides that select it: those the
    scale's ``max_context`` allows first, then, naming ``--scale paper``, the spec's own
    context (``own_context``, where the cap cut it) and the candidates from it (the smoke
    scale capped a proposed context back to what could not be tested, a review)."""
    ks = _around(sorted(chains), interval) or sorted(chains)
    own = own_context or spec.context_len
    tried = [(more, spec.context_len * longer, False) for more, longer in CANDIDATES]
    tried = [t for t in tried if not max_context or t[1] <= max_context]
    if max_context:  # then without the cap
        tried += [(more, own * longer, True) for more, longer in ((0, 1), *CANDIDATES)]
    for more_states, context, paper in tried:
        if paper and context <= max_context:
            continue  # tried within the cap
        if not (paper or more_states) and context == spec.context_len:
            continue  # the setting itself
        states = spec.states + more_states
        candidate = spec.model_copy(update={"states": states, "context_len": context})
        limit = ceilings(candidate, ks, seeds)
        if all(v["detectable"] for v in limit.values()):
            sep = min(v["separability"][p] for v in limit.values() for p in ("M1", "M2", "G2"))
            sets = [f"--set states={states}"] if more_states else []
            sets += [f"--set context_len={context}"] if context != own else []
            anew = "; the thresholds there are predicted anew" if sets else ""
            if paper:
                sets.append(f"--scale paper (this scale caps context_len at {max_context})")
            return (
                f"proposed: {' '.join(sets)} makes K = {', '.join(map(str, ks))} testable "
                f"(smallest separability {sep:.4f} nats){anew}"
            )
    return "proposed: none of the nearby settings tried makes the predicted range testable"
