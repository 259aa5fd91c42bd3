"""Plan -> the cost exponent alpha (parameters ~ eps^-alpha) as a sympy expression.

The parts of a plan cost side by side, so the total exponent is the largest of:

- decoding the readout's state, which couples T0 positions: alpha_decode(T0) = T0*d/E - c
  (Theorem 3 as summarised; c is the option ``decode_offset``, default 1); T0 = T after a
  global aggregation, which is why that exponent grows with T;
- single-head k-th largest retrieval, k' >= 2: (T - k' - 1)/(n + 1) (Theorem 2, a lower bound;
  option ``kth_cost``: ``theorem2``, or ``summary`` for (k' - 1)/n);
- the floor: alpha never drops below ``exponent_floor`` (default 1, [R]);
- infinity when the architecture cannot represent the target at all.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import sympy

from infoflow.retrieval.flow import Placement, Plan, ordinal

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


def kth_exponent(k_left: int, options: CostOptions) -> sympy.Expr:
    if options.kth_cost == "summary":
        return sympy.Integer(k_left - 1) / n
    return (T - k_left - 1) / (n + 1)


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
        elif placement.mode == "k-th" and placement.kth_left and placement.kth_left > 1:
            layer = placement.last_layer
            what = (
                f"{placement.label}: single-head retrieval of the "
                f"{ordinal(placement.kth_left)} largest in layer {layer}"
            )
            tag = "paper:theorem-2" if options.kth_cost == "theorem2" else "reconstruction:kth_cost"
            out.append(Term(kth_exponent(placement.kth_left, options), what, tag))
    positions = p.decoded_positions
    if positions is None:
        fallen = [q for q in p.placements if q.mode == "global"]
        what = "; ".join(f"global aggregation for {q.label} ({q.reason})" for q in fallen)
        out.append(Term(decode_exponent(T, options), what, "paper:theorem-3"))
    elif positions:
        what = f"decoding the readout's state, which couples {positions} positions"
        out.append(Term(decode_exponent(positions, options), what, "paper:theorem-3"))
    return out


def exponent(all_terms: list[Term]) -> sympy.Expr:
    return sympy.Max(*(t.expression for t in all_terms))


def n_value(p: Plan) -> sympy.Expr:
    """n = E / heads in the layer of the first k-th retrieval (or of the last layer)."""
    kth = [q for q in p.placements if q.mode == "k-th"]
    layer = kth[0].last_layer if kth else p.architecture.layers
    return E / p.architecture.heads[max(layer, 1) - 1]


def annotate_edges(graph: nx.MultiDiGraph, p: Plan, options: CostOptions) -> None:
    """Give every edge of the information DAG the exponent of its propagation mode."""
    by_label: dict[str, Placement] = {q.label: q for q in p.placements}
    for _, _, data in graph.edges(data=True):
        mode = data["mode"]
        if mode in ("residual", "max-position"):
            cost = sympy.Integer(0)
        elif mode == "k-th largest":
            cost = kth_exponent(by_label[data["part"]].kth_left or 2, options)
        elif mode == "specific-position":
            cost = decode_exponent(by_label[data["part"]].positions, options)
        else:  # global: a pooled feature decodes one position, anything else all T
            pooled = by_label[data["part"]].mode == "pooled"
            cost = decode_exponent(1 if pooled else T, options)
        data["cost"] = str(cost)
