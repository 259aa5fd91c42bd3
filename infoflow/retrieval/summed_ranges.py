"""Sums of one function over ranges of one token index, netted, and sums of terms that weigh
the tokens differently, split (rewrites of :mod:`~infoflow.retrieval.expression_rewrite`);
counts written as factors flattened (:func:`counted_product`, for
:mod:`~infoflow.retrieval.expression_to_canonical`). All ``reconstruction:canonical_form``.

The additive terms of an expression that sum one function over ranges bounded by numbers or
T (a value at a fixed position counting as the sum over that position) weigh each position
by the sum of their coefficients. Where those weights are one number c on one range and 0
elsewhere, at every T, the terms are c times the sum over that range: ``sum(f(x[t]) for t
in T if t <= 3) + sum(f(x[s]) for s in T if s >= 4)`` is the sum over every t (one head, no
positional encoding, where the two ranges took two heads with it), ``sum(f(x[t]) for t in
T) - f(x[1])`` the sum over t >= 2, and ``sum(f(x[t]) for t in T) - sum(f(x[s]) for s in T
if s >= 2)`` the value f(x[1]). A range may leave out up to
:data:`~infoflow.retrieval.position_ranges.MAX_GAPS` positions (``t != 2``), as a pointwise
max of fixed positions may. Weights of two signs or levels stay as written (one head's
softmax is one weighting of one sign).
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from infoflow.retrieval.algebra import (
    collected,
    free_indices,
    product_factors,
    ranges_kept,
    reads,
    rebuilt,
    terms,
)
from infoflow.retrieval.expression import Apply, Const, Node, Reduce
from infoflow.retrieval.position_ranges import (
    combined,
    member_where,
    reduction,
    value_where,
    where,
)


def netted(node: Node) -> Node:
    """``node`` with each group of terms that sum one function over ranges (and its values at
    fixed positions) as one term where their weights net to one range and one weight."""
    found = terms(node)
    groups: dict[Node, list[int]] = {}
    for i, (_, term) in enumerate(found):
        if (summed := where(term, "sum")) is not None:
            groups.setdefault(summed[0], []).append(i)
    for function, members in groups.items():
        name = found[members[0]][1].variables[0].name  # a name no enclosing index has
        members += [i for i, (_, t) in enumerate(found) if value_where(function, t)]
        nets = [(found[i][0], member_where("sum", function, found[i][1])) for i in members]
        if len(members) < 2 or (net := combined(nets, cover=False)) is None:
            continue
        for i in members:
            found[i] = (Fraction(0), None)
        if net[0]:
            found.append((net[0], reduction("sum", function, net[1], name)))
    kept = [(c, t) for c, t in found if c]
    return node if len(kept) == len(found) else rebuilt(collected(kept))


def split_terms(node: Reduce) -> Node:
    """A sum of terms that weigh its tokens differently as one sum a kind of term: under a
    condition, terms that read different indices of the sum (``sum(x[s][0] + x[t][1] for s,
    t if s < t)``: weights T - s on one token, t - 1 on the other), and a term that holds a
    sum (whose conditions, flattened, would count its siblings too: ``sum(sum(x[s][0] for t
    in T if t > s) + x[s][1] for s in T)`` is two weightings, a review found it one). Any
    other node as it is; constants stay with the first kind, and each kind keeps the range
    every term's neighbour reads gave the sum's indices (``x[s-1]`` in one term: s >= 2 in
    each; a review found the others summed over s = 1 too). A product one factor of which
    adds a sum to other terms is multiplied out first (``x[s][0] * (sum(1 for t in T if t
    < s) - 3)``: a count and a plain term)."""
    if node.op != "sum":
        return node
    found = [piece for term in terms(node.body) for piece in _multiplied_out(*term)]
    nested = [i for i, (_, t) in enumerate(found) if _holds_sum(t)]
    if not (node.conditions or nested):
        return node
    own = {v.name for v in node.variables}
    kinds: dict = {}
    for i, (c, t) in enumerate(found):
        kind = i if i in nested else frozenset(free_indices(t) & own) if t is not None else None
        kinds.setdefault(kind, []).append((c, t))
    constants = kinds.pop(None, [])
    if len(kinds) < 2:
        return node
    groups = list(kinds.values())
    groups[0] += constants
    pieces = [ranges_kept(node, rebuilt(collected(g))) for g in groups]  # x[s-1] anywhere: s >= 2
    return rebuilt(collected([(1, piece) for piece in pieces]))


def _multiplied_out(coefficient: Fraction, term: Node | None) -> list[tuple]:
    """``coefficient * term`` as terms, a factor of ``term`` that adds a sum to other terms
    multiplied out over them; ``[(coefficient, term)]`` otherwise."""
    scale, factors = product_factors(term) if term is not None else (Fraction(1), [])
    mixed = next((f for f in factors if len(terms(f)) > 1 and _holds_sum(f)), None)
    if mixed is None:
        return [(coefficient, term)]
    others = [f for f in factors if f is not mixed]
    out = []
    for c, piece in terms(mixed):
        parts = [*others, piece] if piece is not None else others
        product = parts[0] if parts else None
        for part in parts[1:]:
            product = Apply("*", (product, part))
        out.append((coefficient * scale * c, product))
    return out


def _holds_sum(term: Node | None) -> bool:
    """Whether ``term`` is a sum, or a product or a sum of terms one of which is."""
    if isinstance(term, Apply) and term.fn in ("*", "+", "-", "neg"):
        return any(_holds_sum(a) for a in term.args)
    return isinstance(term, Reduce) and term.op == "sum"


def counted_product(term: Node) -> Node:
    """``f * sum(g for t ...)`` as ``sum(f * g for t ...)`` where g reads none of the sum's
    tokens: a count as a factor (or several) is counted as the same sum written flat is."""
    scale, factors = product_factors(term)
    counts = [a for a in factors if isinstance(a, Reduce) and a.op == "sum"]
    if not counts or len(counts) == len(factors) or any(_reads_own(c) for c in counts):
        return term  # a sum of tokens, not a count: the product of two sums comes apart
    others = [a for a in factors if not any(a is c for c in counts)]
    body: Node = Const(float(scale)) if scale != 1 else others.pop()
    for factor in [*others, *(c.body for c in counts)]:
        body = Apply("*", (factor, body))
    for count in reversed(counts):  # nested: each flattens into the sum around it
        body = replace(count, body=body)
    return body


def _reads_own(sum_: Reduce) -> bool:
    return any(reads(sum_.body, v.name) for v in sum_.variables)
