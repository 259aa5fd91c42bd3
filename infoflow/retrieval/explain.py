"""A derivation a person reads (``infoflow explain``: the comparison tree, the plan layer by
layer, the exponent) and the information-set DAG as text (``infoflow graph``: Graphviz dot or
networkx's node-link JSON)."""

from __future__ import annotations

import json

import networkx as nx
import sympy

from infoflow.retrieval import cost
from infoflow.retrieval.canonical import Comparison
from infoflow.retrieval.flow import information_dag, ordinal, readout_sets, to_dot
from infoflow.retrieval.predict import PLANNER, derive, predict_retrieval
from infoflow.retrieval.schedule import Placement, Plan, fetch_positions
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.retrieval.steps import EVERY, FETCH, Step
from infoflow.retrieval.tree import ComparisonTree, order

CANONICAL = "reconstruction:canonical_form"
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
    lines += ["", f"1. Canonical form and comparison tree  [{CANONICAL}, {PLANNER}]"]
    for c in der.tree.parts:
        lines += _tree(c, der.tree, "   ")
    if der.tree.positions:
        fixed = ", ".join(sorted(der.tree.positions))
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
    lines += _plan_lines(der.plan)
    lines += ["", "3. Cost exponent (parameters ~ eps^-alpha; the largest term wins)"]
    for term in der.terms:
        lines.append(f"   {_show(term.expression):<26} {term.what}  [{term.provenance}]")
    if der.fallback_terms:
        lines.append(
            "   or, where that is smaller, global aggregation in place of the single-head "
            f"k-th retrievals: {_show(cost.exponent(der.fallback_terms))}"
        )
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
    lines += [
        "",
        "4. Minimal architectures (the same, best exponent: "
        f"alpha = {_show(der.minimal_exponent)})",
    ]
    names = ["fewest layers", "narrowest"]
    for name, a in zip(names, der.alternatives, strict=False):
        pe = ", positional encoding" if a.positional_encoding else ""
        lines.append(f"   {name}: {a.layers} layer(s), heads {_heads(list(a.heads))}{pe}")
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


def _tree(c: Comparison, tree: ComparisonTree, indent: str) -> list[str]:
    copies = f", {c.copies} copies" if c.copies > 1 else ""
    factors = ", ".join("{" + ", ".join(sorted(f.scope)) + "}" for f in c.factors) or "none"
    free = f", enclosing indices {sorted(c.free)}" if c.free else ""
    k = f", k = {c.k}" if c.k else ""
    reads = [f"reads {', '.join(sorted(f.fixed))}" for f in c.factors if f.fixed]
    reads += [f"reads x[{v}{o:+d}]" for f in c.factors for v, o in sorted(f.shifts)]
    reads += [f"condition {text}" for f in c.factors for text in f.conditions]
    extra = f"; {'; '.join(reads)}" if reads else ""
    lines = [
        f"{indent}{c.label}{k}: factors {factors}{free}; order {order(c)}{copies}{extra}; "
        f"resolved by {MODES[tree.mode(c)]}"
    ]
    for child in c.children:
        lines += _tree(child, tree, indent + "  └ ")
    return lines


def _plan_lines(p: Plan) -> list[str]:
    steps = _steps(p)
    sets = readout_sets(p)
    lines = []
    for layer in range(1, p.architecture.layers + 1):
        used = p.heads_used()[layer - 1]
        heads = p.architecture.heads[layer - 1]
        lines.append(f"   layer {layer} ({used} of {heads} heads in use)")
        lines += [f"     - {step}" for step in steps.get(layer, [])] or ["     - residual only"]
        readout = ", ".join(sets[layer - 1]) or "nothing yet"
        lines.append(f"     readout holds: {{{readout}}}")
    for q in p.placements:
        if q.mode in ("global", "impossible"):
            lines.append(f"   ! {q.label}: {MODES.get(q.mode, q.mode)}, because {q.reason}")
    return lines


def _steps(p: Plan) -> dict[int, list[str]]:
    """What runs in each layer, part by part (global fallbacks in the last layer)."""
    out: dict[int, list[str]] = {}
    last = p.architecture.layers
    for q in p.placements:
        if q.mode == "global":
            out.setdefault(last, []).append(
                f"global aggregation: the readout averages all T positions for {q.label} "
                "(a fallback; it may share a head) [paper:summary]"
            )
        if q.mode != "scheduled" or not q.fragment:
            continue
        for step, layers in zip(q.fragment.steps, q.layers, strict=True):
            for j, layer in enumerate(layers, 1):
                out.setdefault(layer, []).append(_step_text(step, q, j))
    for key, (step, layer) in sorted(p.shared.items()):
        if key == FETCH:
            fixed = ", ".join(fetch_positions(p))
            text = (
                f"1 head: every token and the readout attend to the fixed positions {fixed} "
                "[paper:summary, specific-position]"
            )
        else:
            text = (
                f"1 head: every token t copies its neighbour x[t{step.offset:+d}] "
                "[reconstruction:relative_position]"
            )
        out.setdefault(layer, []).append(text)
    return out


def _step_text(step: Step, q: Placement, j: int) -> str:
    """One step of a part in words, with its provenance."""
    heads = step.heads
    who = {None: "the readout", EVERY: "every token"}.get(step.holder, f"every token {step.holder}")
    label = q.label
    if step.kind == "pool":
        tag = "reconstruction:separable_sum"
        return f"{heads} head(s): {who} pools {step.variable} for {label} [{tag}]"
    if step.kind == "peel":
        return (
            f"{heads} head(s): {who} learns the {ordinal(j)} largest {step.variable} "
            f"(of {step.rank}) for {label} [reconstruction:kth_layers]"
        )
    if step.kind == "kth":
        tag = (
            "paper:theorem-2"
            if step.comparison and step.rank == step.comparison.k
            else ("reconstruction:kth_symmetry")
        )
        return (
            f"{heads} head(s): {who} retrieves the {ordinal(step.rank)} largest "
            f"{step.variable} with one head for {label} [{tag}]"
        )
    tag = "reconstruction:sequential_schedule" if q.sequential else PLANNER
    return f"{heads} head(s): {who} retrieves the best {step.variable} for {label} [{tag}]"


def _heads(heads: list[int]) -> str:
    if len(heads) <= 16:
        return str(heads)
    return f"[{heads[0]}, {heads[1]}, ..., {heads[-1]}] ({len(heads):,} layers)"


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
