"""A derivation a person reads (``infoflow explain``: the comparison tree, the plan layer by
layer, the exponent) and the information-set DAG as text (``infoflow graph``: Graphviz dot or
networkx's node-link JSON)."""

from __future__ import annotations

import json

import networkx as nx
import sympy

from infoflow.retrieval import cost
from infoflow.retrieval.flow import Placement, information_dag, ordinal, readout_sets, to_dot
from infoflow.retrieval.predict import PLANNER, derive, predict_retrieval
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.retrieval.tree import Comparison

MODES = {
    "max-position": "max-position retrieval",
    "pooled": "pooled by one averaging head (a score of one token)",
    "k-th": "k-th largest retrieval",
    "global": "global aggregation",
}


def explain(spec: RetrievalSpec, source: str | None = None) -> str:
    """The derivation of every retrieval prediction for ``spec``, step by step."""
    der = derive(spec)
    result = predict_retrieval(spec, source)
    arch = spec.architecture
    lines = [f"Target: {spec.target}"]
    if spec.params:
        lines.append("Params: " + ", ".join(f"{k} = {v}" for k, v in spec.params.items()))
    lines += ["", f"1. Comparison tree  [{PLANNER}]"]
    for c in der.tree.comparisons:
        lines += _tree(c, "   ")
    if der.tree.positions:
        fixed = ", ".join(f"x[{p}]" for p in sorted(der.tree.positions))
        lines.append(f"   fixed positions {fixed}: read directly, need positional encoding")
    lines.append(
        f"   order beta' = {der.tree.order}, dimension beta1 = {der.tree.dimension}, "
        f"about {result['num_comparisons'].expression} candidate tuples"
    )
    pe = "with" if arch.positional_encoding else "without"
    lines += [
        "",
        f"2. Plan on {arch.layers} layer(s), heads {arch.heads_per_layer}, "
        f"E = {arch.embed_dim or 'E'}, {pe} positional encoding",
    ]
    steps = _steps(der.plan.placements, arch.layers)
    sets = readout_sets(der.plan)
    for layer in range(1, arch.layers + 1):
        used = der.plan.heads_used()[layer - 1]
        heads = arch.heads_per_layer[layer - 1]
        lines.append(f"   layer {layer} ({used} of {heads} heads in use)")
        lines += [f"     - {step}" for step in steps.get(layer, [])] or ["     - residual only"]
        readout = ", ".join(sets[layer - 1]) or "nothing yet"
        lines.append(f"     readout holds: {{{readout}}}")
    for p in der.plan.placements:
        if p.mode in ("global", "impossible"):
            lines.append(f"   ! {p.label}: {MODES.get(p.mode, p.mode)}, because {p.reason}")
    lines += ["", "3. Cost exponent (parameters ~ eps^-alpha; the largest term wins)"]
    for term in der.terms:
        lines.append(f"   {_show(term.expression):<26} {term.what}  [{term.provenance}]")
    alpha = result["cost_exponent"]
    at = _numbers_text(spec)
    value = f" = {_fmt(alpha.value)} at {at}" if at else ""
    lines.append(f"   alpha = {_show(der.exponent)}{value}")
    verdict = (
        "efficient: alpha does not grow with T"
        if result["efficient"].value
        else ("not efficient: alpha grows with T" if der.plan.feasible else "impossible")
    )
    lines.append(f"   {verdict}; bottleneck: {result['bottleneck'].value}")
    cost_value = _fmt(result["param_cost"].value)
    lines.append(f"   param cost ~ eps^-alpha = {cost_value} at eps = {spec.epsilon}")
    mini = der.minimal
    lines += [
        "",
        f"4. Minimal architecture: {mini.layers} layer(s), heads {list(mini.heads)}"
        + (", positional encoding" if mini.positional_encoding else "")
        + f"; alpha = {_show(der.minimal_exponent)}",
    ]
    return "\n".join(lines) + "\n"


def graph(spec: RetrievalSpec, format: str = "dot") -> str:
    """The information-set DAG of ``spec``'s plan, its edges annotated with their cost
    terms: ``dot`` (Graphviz) or ``json`` (networkx node-link data)."""
    derivation = derive(spec)
    dag = information_dag(derivation.plan)
    cost.annotate_edges(dag, derivation.plan, derivation.options)
    if format == "json":
        return json.dumps(nx.node_link_data(dag, edges="edges"), indent=2) + "\n"
    return to_dot(dag)


def _tree(c: Comparison, indent: str) -> list[str]:
    copies = f", {c.multiplicity} copies" if c.multiplicity > 1 else ""
    factors = ", ".join("{" + ", ".join(sorted(f)) + "}" for f in c.factors if f) or "none"
    free = f", enclosing indices {sorted(c.free)}" if c.free else ""
    k = f", k = {c.k}" if c.k else ""
    lines = [
        f"{indent}{c.label}{k}: factors {factors}{free}; order {c.order}{copies}; "
        f"resolved by {MODES[c.mode]}"
    ]
    for child in c.children:
        lines += _tree(child, indent + "  └ ")
    return lines


def _steps(placements: list[Placement], last_layer: int) -> dict[int, list[str]]:
    """What runs in each layer, part by part (global fallbacks in the last layer)."""
    steps: dict[int, list[str]] = {}
    for p in placements:
        if p.mode == "specific-position":
            steps.setdefault(p.layers[0], []).append(
                f"1 head: the readout attends to {p.label.removeprefix('fixed positions ')} "
                "[paper:summary, specific-position]"
            )
            continue
        c = p.comparison
        if p.mode == "global":
            steps.setdefault(last_layer, []).append(
                f"global aggregation: the readout averages all T positions for {p.label} "
                "(a fallback; it may share a head) [paper:summary]"
            )
            continue
        if c is None:
            continue
        if p.kth_left is not None:
            peels = len(p.heads)
            for j in range(peels):
                layer = p.layers[j]
                rank = ordinal(j + 1) if j < peels - 1 else ordinal(p.kth_left)
                tag = (
                    "[reconstruction:kth_layers]"
                    if j < peels - 1
                    else ("[paper:theorem-2]" if p.kth_left > 1 else "[paper:summary]")
                )
                steps.setdefault(layer, []).append(
                    f"{p.heads[j]} head(s): every token learns the {rank} largest of "
                    f"{c.label} {tag}"
                )
            continue
        for j, rnd in enumerate(c.rounds):
            for m in rnd:
                who = f"every token {m.holder}" if m.holder else "the readout"
                heads = m.count * p.copies // c.multiplicity
                what = "pools" if p.mode == "pooled" else "retrieves the best"
                steps.setdefault(p.layers[j], []).append(
                    f"{heads} head(s): {who} {what} {m.variable} for {p.label} [{PLANNER}]"
                )
    return steps


def _numbers_text(spec: RetrievalSpec) -> str:
    parts = []
    if spec.seq_len is not None:
        parts.append(f"T = {spec.seq_len}")
    if spec.input_dim is not None:
        parts.append(f"d = {spec.input_dim}")
    if spec.architecture.embed_dim is not None:
        parts.append(f"E = {spec.architecture.embed_dim}")
    return ", ".join(parts)


def _show(expr: sympy.Expr) -> str:
    return "infinite" if expr == sympy.oo else str(expr)


def _fmt(value) -> str:
    if value is None:
        return "infinite"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
