"""Plan -> the cost exponent alpha (parameters ~ eps^-alpha) as a sympy expression.

The parts of a plan cost side by side, so the total exponent is the largest of:

- decoding the readout's state, which couples T0 positions: alpha_decode(T0) = T0*d/E - c
  (Theorem 3 as summarised; c is the option ``decode_offset``, default 1). After a global
  aggregation T0 = T ([R] ``global_aggregation``), which is why that exponent grows with T;
  on one layer this linear growth is Theorem 1's depth separation;
- each single-head k-th retrieval of rank r >= 2: (T - r - 1)/(n + 1) (Theorem 2, a lower
  bound; option ``kth_cost``: ``theorem2``, or ``summary`` for (r - 1)/n), with n = E/h the
  head width. On layers of different widths n is the widest head the architecture has
  (E / the fewest heads in a layer; [R] ``kth_width``): the term stays a lower bound
  wherever the step runs, and the plan does not depend on which layer that is;
- the floor: alpha never drops below ``exponent_floor`` (default 1, [R]);
- infinity when the architecture cannot represent the target at all.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import sympy

from infoflow.retrieval.flow import ordinal
from infoflow.retrieval.schedule import Placement, Plan, fetch_positions
from infoflow.retrieval.tree import order

T, d, E, n = sympy.symbols("T d E n", positive=True)


@dataclass(frozen=True)
class CostOptions:
    decode_offset: int = 1
    exponent_floor: int = 1
    kth_cost: str = "theorem2"


@dataclass(frozen=True)
class Term:
    """One contribution to the exponent, with what it comes from."""

    expression: sympy.Expr
    what: str
    provenance: str


def decode_exponent(positions: sympy.Expr | int, options: CostOptions) -> sympy.Expr:
    return positions * d / E - options.decode_offset


def kth_exponent(r: int, width: sympy.Symbol, options: CostOptions) -> sympy.Expr:
    """Theorem 2's exponent for a single head retrieving the r-th largest (head width
    ``width``)."""
    if options.kth_cost == "summary":
        return sympy.Integer(r - 1) / width
    return (T - r - 1) / (width + 1)


def head_width(p: Plan) -> sympy.Expr:
    """n = E / h: the widest head of the architecture (its layer with the fewest heads)."""
    return E / min(p.architecture.heads)


def terms(p: Plan, options: CostOptions) -> list[Term]:
    """Every contribution to the exponent of plan ``p``."""
    out = [
        Term(
            sympy.Integer(options.exponent_floor),
            "the floor: the cheapest construction costs eps^-1",
            "reconstruction:exponent_floor",
        )
    ]
    for placement in p.placements:
        if placement.mode == "impossible":
            out.append(Term(sympy.oo, f"{placement.label}: {placement.reason}", "paper:summary"))
        out += _kth_terms(p, placement, options)
    positions = p.decoded_positions
    if positions is None:
        fallen = [q for q in p.placements if q.mode == "global"]
        what = "; ".join(f"global aggregation for {q.label} ({q.reason})" for q in fallen)
        out.append(Term(decode_exponent(T, options), what, _global_provenance(p, fallen)))
    elif positions:
        what = f"decoding the readout's state, which couples {positions} position" + (
            "s" if positions > 1 else ""
        )
        out.append(Term(decode_exponent(positions, options), what, "paper:theorem-3"))
    return out


def _kth_terms(p: Plan, placement: Placement, options: CostOptions) -> list[Term]:
    if placement.mode != "scheduled" or not placement.fragment:
        return []
    out = []
    for step, layers in zip(placement.fragment.steps, placement.layers, strict=True):
        if step.kind != "kth":
            continue
        layer = layers[-1]
        c = step.comparison
        inner = f": {c.label}" if c is not None and c is not placement.comparison else ""
        what = (
            f"{placement.label}{inner} as one head retrieving the "
            f"{ordinal(step.rank)} largest in layer {layer}"
        )
        if options.kth_cost == "summary":
            tag = "reconstruction:kth_cost"
        elif c is not None and step.rank != c.k:
            tag = "reconstruction:kth_symmetry"
            what += f" (k = {c.k}, counted from the other end)"
        else:
            tag = "paper:theorem-2"
        out.append(Term(kth_exponent(step.rank, n, options), what, tag))
    return out


def _global_provenance(p: Plan, fallen: list[Placement]) -> str:
    """Theorem 1 when an order-2 min or max falls back on one layer (the paper's depth
    separation); otherwise the reconstruction T0 = T in Theorem 3's cost law."""
    for q in fallen:
        c = q.comparison
        if p.architecture.layers == 1 and c is not None and c.kind == "extremum" and order(c) == 2:
            return "paper:theorem-1"
    return "reconstruction:global_aggregation"


def exponent(all_terms: list[Term]) -> sympy.Expr:
    return sympy.Max(*(t.expression for t in all_terms))


def annotate_edges(graph: nx.MultiDiGraph, p: Plan, options: CostOptions) -> None:
    """Give every edge of the information DAG the exponent of its propagation mode."""
    by_label: dict[str, Placement] = {q.label: q for q in p.placements}
    for _, target, data in graph.edges(data=True):
        mode = data["mode"]
        if mode in ("residual", "max-position"):
            cost = sympy.Integer(0)
        elif mode == "k-th largest":
            cost = _kth_edge(by_label[data["part"]], int(target.rsplit("@", 1)[1]), p, options)
        elif mode == "specific-position":
            cost = decode_exponent(len(fetch_positions(p)), options)
        elif mode in ("relative-position", "pooled"):
            cost = decode_exponent(1, options)
        else:  # global: the readout's state couples all T positions
            cost = decode_exponent(T, options)
        data["cost"] = str(cost)


def _kth_edge(placement: Placement, layer: int, p: Plan, options: CostOptions) -> sympy.Expr:
    for step, layers in zip(placement.fragment.steps, placement.layers, strict=True):
        if step.kind == "kth" and layer in layers:
            return kth_exponent(step.rank, n, options)
    raise AssertionError("a k-th edge without its step")  # pragma: no cover
