"""Global aggregation: the fallback when nothing cheaper resolves a part (no mechanism can,
or the architecture has too few layers or heads for it): the readout averages all T positions
([R] ``global_aggregation``: a fallback that may share a head), so the state it decodes
couples T positions and Theorem 3's exponent T*d/E - c grows with T. On one layer an order-2
min or max that falls back this way is Theorem 1's depth separation.
"""

from __future__ import annotations

import sympy

from infoflow.retrieval.canonical_to_tree import order
from infoflow.retrieval.laws import T, decode_exponent
from infoflow.retrieval.types import CostOptions, CostTerm, Placement, Schedule

#: Theorem 1 gives Omega(k(T)) with k linear in T; T * d/E - c is the reconstruction's form.
THEOREM1 = "reconstruction:theorem1_coefficient"
#: T0 = T in Theorem 3's cost law: the exponent of every other global-aggregation fallback.
GLOBAL = "reconstruction:global_aggregation"
NAME = "global aggregation"
EDGES = {"global": "global"}
READOUT = "all T positions"  # what the readout holds after it


def term(schedule: Schedule, options: CostOptions) -> CostTerm:
    """Decoding all T positions, for every part that fell back to global aggregation."""
    fallen = [q for q in schedule.placements if q.mode == "global"]
    what = "; ".join(f"global aggregation for {q.label} ({q.reason})" for q in fallen)
    if _depth_separation(schedule, fallen):
        what += " (Theorem 1: linear in T, a lower bound; the coefficient is reconstructed)"
        return CostTerm(decode_exponent(T, options), what, THEOREM1, "lower")
    return CostTerm(decode_exponent(T, options), what, GLOBAL)


def _depth_separation(schedule: Schedule, fallen: list[Placement]) -> bool:
    """Whether an order-2 min or max falls back on one layer: Theorem 1's setting (the
    paper's depth separation), where the exponent is a lower bound."""
    one_layer = schedule.shape.layers == 1
    return one_layer and any(
        q.comparison is not None and q.comparison.kind == "extremum" and order(q.comparison) == 2
        for q in fallen
    )


def sentence(placement: Placement) -> str:
    """The fallback in explain's words (it runs in the last layer)."""
    return (
        f"global aggregation: the readout averages all T positions for {placement.label} "
        "(a fallback; it may share a head) [paper:summary]"
    )


def edge_cost(schedule: Schedule, part: str, layer: int, options: CostOptions) -> sympy.Expr:
    """The readout's state couples all T positions."""
    return decode_exponent(T, options)
