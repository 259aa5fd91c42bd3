"""Schedule -> the cost exponent alpha (parameters ~ eps^-alpha) as a sympy expression.

The parts of a schedule cost side by side, so the total exponent is the largest of its
terms:

- decoding the readout's state, which couples T0 positions: alpha_decode(T0) = T0*d/E - c
  (Theorem 3 as summarised; :mod:`~infoflow.retrieval.laws`). After a global aggregation
  T0 = T (:mod:`~infoflow.retrieval.mechanisms.global_aggregation`), which is why that
  exponent grows with T; on one layer this linear growth is Theorem 1's depth separation;
- the terms a mechanism prices itself: each single-head k-th retrieval of rank r >= 2
  (Theorem 2, :mod:`~infoflow.retrieval.mechanisms.kth`);
- the floor: alpha never drops below ``exponent_floor`` (default 1, [R]);
- infinity when the architecture cannot represent the target at all.

:func:`bottleneck` says which term sets the exponent, at one point or at many (the sweep).
"""

from __future__ import annotations

from collections.abc import Callable

import networkx as nx
import numpy as np
import sympy

from infoflow.retrieval import mechanisms
from infoflow.retrieval.canonical_to_tree import positions_provenance
from infoflow.retrieval.laws import T, decode_exponent
from infoflow.retrieval.mechanisms import global_aggregation
from infoflow.retrieval.types import (
    Comparison,
    CostOptions,
    CostTerm,
    Derivation,
    Schedule,
)

#: An exponent's values at the points asked for, or None where they are not numbers.
Values = Callable[[sympy.Expr], np.ndarray | None]


def terms(schedule: Schedule, options: CostOptions) -> list[CostTerm]:
    """Every contribution to the exponent of ``schedule``."""
    out = [
        CostTerm(
            sympy.Integer(options.exponent_floor),
            "the floor: the cheapest construction costs eps^-1",
            "reconstruction:exponent_floor",
        )
    ]
    for placement in schedule.placements:
        if placement.mode == "impossible":
            what = f"{placement.label}: {placement.reason}"
            tag = positions_provenance(placement.comparison)
            out.append(CostTerm(sympy.oo, what, tag, "exact"))
        for mechanism in mechanisms.PRICED:
            out += mechanism.terms(placement, options)
    positions = decoded_positions(schedule)
    if positions is None:
        out.append(global_aggregation.term(schedule, options))
    elif positions:
        what = f"decoding the readout's state, which couples {positions} position" + (
            "s" if positions > 1 else ""
        )
        out.append(CostTerm(decode_exponent(positions, options), what, "paper:theorem-3"))
    return out


def decoded_positions(schedule: Schedule) -> int | None:
    """Positions the readout's state couples (None: all T of them, after a global
    aggregation)."""
    if schedule.uses_global:
        return None
    held = sum(
        held_positions(p.comparison) * p.copies
        for p in schedule.placements
        if p.comparison and p.mode == "scheduled"
    )
    return held + sum(m.decoded(schedule) for m in mechanisms.SHARED)


def held_positions(c: Comparison) -> int:
    """Token positions the result of one copy of ``c`` couples: its own indices, the
    neighbours its scores read, and what is nested in it."""
    own = len(c.variables) + sum(len(f.shifts) for f in c.factors)
    return own + sum(held_positions(child) * child.copies for child in c.children)


def exponent(all_terms: list[CostTerm]) -> sympy.Expr:
    """The largest of the terms."""
    return sympy.Max(*(t.expression for t in all_terms))


def bottleneck(derivation: Derivation, values: Values) -> np.ndarray:
    """The term that sets the exponent at each point ``values`` evaluates at (an array of
    CostTerm, one per point, or one for all): an infinite term first, then the largest of
    those that grow with T (of all, when none does), taken from the all-global alternative to
    single-head k-th retrievals where that is smaller; where the candidates are not numbers,
    the last candidate. ``predict`` evaluates at one point, from the exact values rounded to
    float64 (two exponents closer than float64 can tell apart would count as equal);
    ``sweep`` at many, in float64."""
    chosen = _largest(derivation.terms, values)
    if derivation.fallback_terms:
        mine = values(derivation.terms_exponent)
        other = values(derivation.fallback_exponent)
        if mine is not None and other is not None:
            chosen = np.where(other < mine, _largest(derivation.fallback_terms, values), chosen)
    return chosen


def _largest(all_terms: list[CostTerm], values: Values) -> np.ndarray:
    infinite = [t for t in all_terms if t.expression == sympy.oo]
    candidates = infinite[:1] or [t for t in all_terms if t.expression.has(T)] or all_terms
    found = [values(t.expression) for t in candidates]
    chosen = np.empty(len(candidates), dtype=object)
    chosen[:] = candidates
    if infinite or any(v is None for v in found):
        return chosen[-1:]
    return chosen[np.argmax(np.stack(found), axis=0)]


def annotate_edges(graph: nx.MultiDiGraph, schedule: Schedule, options: CostOptions) -> None:
    """Give every edge of the information DAG the exponent of its propagation mode."""
    for _, target, data in graph.edges(data=True):
        mode = data["mode"]
        if mode == "residual":
            cost = sympy.Integer(0)
        else:
            layer = int(target.rsplit("@", 1)[1])
            cost = mechanisms.BY_EDGE[mode].edge_cost(schedule, data["part"], layer, options)
        data["cost"] = str(cost)
