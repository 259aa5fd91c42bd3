"""Sums over tokens -> what compile builds for them: a stage of
:mod:`~infoflow.retrieval.schedule_to_circuit` (and of :mod:`.circuit_terms`, which counts).

A sum's indices that nothing in its body reads are counted, as the engine plans them
(:mod:`.pooled_sums`; a sum nested in a sum, or a factor of its score, flattened first).
Tested against numbers, T and each other only, they are a constant factor
(:func:`counted_sums`: ``sum(f(x[s]) for t in T if t < 3)`` is 2 f(x[s])). Tested against
the index the body reads, s, they weigh s's positions (:func:`pooled_term`:
``sum(f(x[s]) for s in T for t in T if s < t)`` weighs position s by T - s): one averaging
head whose logit at position p is log w(p), from a channel the positional encoding sets
(:meth:`~.circuit.Circuit.logit`; a position of weight 0 gets :data:`~.circuit.LEFT_OUT`),
the readout scaling the weighted mean by the weights' sum. Until 2026-12-06 compile refused
both, and left positions out of a one-index sum by a flag's logit -beta SELF_PENALTY, whose
rounding in float32 cost NMSE 5e-3 at beta 100 and 0.3 at beta 1000 (T = 16).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

from infoflow.retrieval import circuit_forms as forms
from infoflow.retrieval.algebra import free_indices, names, product_factors, reads, rename
from infoflow.retrieval.circuit import (
    CONST,
    MIRROR,
    SQNORM,
    TOKENS,
    Circuit,
    Copy,
    Head,
    head_reads,
)
from infoflow.retrieval.circuit_forms import Unbuildable
from infoflow.retrieval.expression import SEQUENCE, Apply, Condition, Const, Node, Reduce
from infoflow.retrieval.infinite_values import MAX_CELLS, counts, tuples
from infoflow.retrieval.mechanisms import pooling
from infoflow.retrieval.shifted_indices import unshift
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.retrieval.summed_ranges import counted_product


def counted_sums(node: Node, seq_len: int) -> Node:
    """``node`` with each sum's token indices that its body does not read, tested against
    numbers, T and each other only, taken out as the count of their tuples at T =
    ``seq_len`` (a constant factor; :func:`~.infinite_values.tuples`)."""
    if isinstance(node, Apply):
        return Apply(node.fn, tuple(counted_sums(a, seq_len) for a in node.args))
    if not isinstance(node, Reduce):
        return node
    node = replace(node, body=counted_sums(node.body, seq_len))
    if node.op != "sum":
        return node
    node = _flat(node)
    read = free_indices(node.body)
    free = {v.name for v in node.variables if v.is_token and v.name not in read}
    while tied := {
        name
        for c in node.conditions
        if _names(c) & free and not _names(c) <= free
        for name in _names(c) & free
    }:
        free -= tied  # tested against an index that stays: a weight, not a constant
    if not free:
        return node
    mine = tuple(c for c in node.conditions if _names(c) <= free)
    variables = tuple(v for v in node.variables if v.name in free)
    count = tuples(Reduce("sum", variables, Const(1), mine), seq_len)
    if not count:  # too large to count, or over nothing: left as written
        return node
    rest = tuple(v for v in node.variables if v.name not in free)
    conditions = tuple(c for c in node.conditions if c not in mine)
    body = replace(node, variables=rest, conditions=conditions) if rest else node.body
    if isinstance(body, Const):  # sum(1 for t in T if t < 3) is 2
        return Const(count * body.value)
    return Apply("*", (Const(count), body))


def _flat(node: Reduce) -> Reduce:
    """A sum over s of ``c * f * sum(g for t ...)`` (or of a sum) as one sum over s and t of
    ``c * f * g``, as the engine flattens it (t renamed where its name is taken);
    constant factors and divisors anywhere in the product (``x[s][0] * (2 * sum(...)) / 2``,
    as a count taken out leaves it) are gathered into c, and several counts nested."""
    scale, factors = product_factors(node.body)
    summed = [a for a in factors if isinstance(a, Reduce) and a.op == "sum"]
    if len(summed) != 1 or len(factors) > 2:
        nested = counted_product(node.body)  # several counts: one inside the other
        return node if nested is node.body else _flat(replace(node, body=nested))
    (inner,) = summed
    others = [a for a in factors if a is not inner]
    taken = {v.name for v in node.variables}.union(*(free_indices(a) for a in others))
    if clash := taken & {v.name for v in inner.variables}:  # t twice: the inner one renamed
        used = taken | names(inner) | free_indices(inner)
        fresh = {
            n: next(f"{n}{i}" for i in itertools.count(2) if f"{n}{i}" not in used) for n in clash
        }
        inner = rename(inner, fresh, bound=True)
    body = Apply("*", (others[0], inner.body)) if others else inner.body
    body = body if scale == 1 else Apply("*", (Const(float(scale)), body))
    variables = (*node.variables, *inner.variables)
    conditions = (*node.conditions, *inner.conditions)
    return _flat(replace(node, variables=variables, body=body, conditions=conditions))


def _names(condition: Condition) -> set[str]:
    """The indices a condition names (not numbers, not T)."""
    sides = (condition.left, condition.right)
    return {side for side in sides if isinstance(side, str) and side != SEQUENCE}


def pooled_term(circuit: Circuit, term: Reduce, tag: str, spec: RetrievalSpec) -> tuple[list, list]:
    """A sum over tokens of a linear score of one of them, s: the readout averages the score
    over the positions s reads, each weighted by how many tuples of the sum's other indices
    go with it (:func:`~.infinite_values.counts`: one each over one index), and scales the
    mean by the weights' sum. s read at one offset is pooled where it reads; unequal weights,
    and weights 0 (the positions the offset or the tests leave out), are logits (PE)."""
    own = [v.name for v in term.variables]
    read = [name for name in own if name in free_indices(term.body)] or own[:1]
    if len(read) != 1:
        raise Unbuildable(
            f"{forms.text(term)}: a sum is built over the index its score reads, the others "
            f"counted ({len(read)} read)"
        )
    (var,) = read
    offset = forms.one_offset(term, var, reads(term.body, var) or {0})
    source, matrix, factor = _pooled_score(unshift(term.body, var, offset), var)
    if math.prod(v.size or spec.seq_len for v in term.variables) > MAX_CELLS:
        raise Unbuildable(
            f"{forms.text(term)}: its tuples are counted on a grid of T^{len(own)} cells, more "
            f"than {MAX_CELLS:,}"
        )
    weights = counts(term, spec.seq_len, var)
    if weights is None or not any(weights):
        raise Unbuildable(
            f"{forms.text(term)}: built for indices tested against numbers, T and each other "
            "(not against an index bound around the sum)"
        )
    at = [0] * spec.seq_len  # the weight of the position read, s + offset
    for position, weight in enumerate(weights, 1):
        if weight:  # 0 wherever s + offset is out of range
            at[position + offset - 1] += weight
    if source == SQNORM:  # LayerNorm's scale carries it beside the tokens' mirror
        circuit.add(MIRROR, circuit.channels[TOKENS])
        circuit.add(CONST, 1)
    vector = source == TOKENS and matrix == "I"
    out = circuit.add(f"{tag}.out", circuit.channels[TOKENS] if vector else 1)
    copy = Copy(source, out, matrix, factor * sum(at))
    if len(set(at)) == 1:  # every position, each once (or n times: a constant factor)
        return [pooling.circuit_head(copy, f"the readout sums the score into {out}")], []
    if not circuit.positional_encoding:
        raise Unbuildable(
            f"{forms.text(term)}: its range leaves positions out or weighs them (no PE)"
        )
    logits = circuit.logit(f"{tag}.weight", tuple(at))
    weighed = "weighs each position" if len(set(at) - {0}) > 1 else "leaves positions out"
    does = f"the readout sums the score into {out} ({logits} {weighed}: log w, PE)"
    return [pooling.circuit_head(copy, does, weights=logits)], []


def _pooled_score(body: Node, var: str) -> tuple[str, str, float]:
    """(what a head copies, its matrix, a factor) for a sum's score: a linear score of the
    token (its matrix), or its squared norm c |x|^2, read from LayerNorm's scale
    (:data:`~.circuit.SQNORM`; so the diagonal of a pair score, summed, since 2026-12-07)."""
    try:
        return TOKENS, forms.linear(body, var), 1.0
    except Unbuildable:
        scale, inner = forms.scaled(body)  # 2 * sqnorm(x[t]), -dot(x[t], x[t]) (a review)
        norm = forms.own_norm(inner, var)
        if norm is None or not norm[0]:
            raise
        return SQNORM, "I", float(scale) * norm[1]


def shared_pools(parts: list) -> list:
    """Terms built from averaging heads (and the MLPs that multiply what they pool:
    :mod:`.circuit_products`) that weigh the positions alike (the same score: none, or the
    same logit channel) as one part, each weighing one head copying every such term's value,
    in the earliest layer any of them had it, as the engine plans them
    (:func:`~.pooled_sums.merge_pools`): ``sum x[t][0] + sum x[t][1]`` is one head (until
    2026-12-06, one each), and so is ``sum x[t][0] * sum x[t][1] + sum x[t][2]``, on [1]
    and, a product's sums a layer apart, on [1, 1] (2026-12-07). The shared head runs where
    :func:`one_head` puts it, and each MLP after the heads it reads; the part moves as a
    whole."""
    pooled = [i for i, part in enumerate(parts) if _pooled_part(part)]
    groups: list[tuple[list[int], set]] = []
    for i in pooled:
        scores = {h.score for h in parts[i][0]}
        joined = [g for g in groups if g[1] & scores]
        members = sorted([i, *(m for g in joined for m in g[0])])
        scores = scores.union(*(g[1] for g in joined))
        groups = [g for g in groups if not any(g is j for j in joined)] + [(members, scores)]
    out = list(parts)
    for members, _ in groups:
        if len(members) == 1:
            continue
        alike: dict[tuple, list[tuple[Head, bool]]] = {}
        for i in members:
            for head in parts[i][0]:
                alike.setdefault(head.score, []).append((head, bool(parts[i][1])))
        heads = [one_head(found) for found in alike.values()]
        written = {c.dest: h.layer for h in heads for c in h.values}
        mlps = [  # after the heads they read
            replace(m, layer=max(m.layer, *(written.get(g, 1) for g in m.inputs)))
            for i in members
            for m in parts[i][1]
        ]
        out[members[0]] = (heads, mlps, parts[members[0]][2])
        for i in members[1:]:
            out[i] = None
    return [part for part in out if part is not None]


def one_head(found: list[tuple[Head, bool]]) -> Head:
    """Heads weighing alike (each with whether an MLP reads its part) as one copying every
    value: in layer 1 where one copies |x|^2 (only the first LayerNorm carries it), else in
    the latest layer of those an MLP reads (the MLPs follow it), else the earliest."""
    heads = [head for head, _ in found]
    read = [head.layer for head, product in found if product]
    if any(SQNORM in head_reads(head) for head in heads):
        layer = 1
    else:
        layer = max(read) if read else min(head.layer for head in heads)
    values = tuple(v for head in heads for v in head.values)
    does = "; ".join(head.does for head in heads)
    return replace(heads[0], values=values, does=does, layer=layer)


def _pooled_part(part) -> bool:
    """Whether a term is averaging heads and products of what they pool."""
    heads, mlps, _ = part
    return (
        bool(heads)
        and all(h.mechanism == "pooling" for h in heads)
        and all(m.function == "product" for m in mlps)
    )
