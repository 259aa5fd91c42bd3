"""Separable extrema, the last rewrite before the canonical form
(:mod:`~infoflow.retrieval.expression_rewrite` applies it; ``reconstruction:canonical_form``):

- a max or min over indices whose terms fall apart into groups is the sum of one reduction
  per group, the terms that touch none of its indices outside: max over a, b of
  f(a) + g(b) + c is max f + max g + c (so that max f + max f is met as 2 max f);
- terms of one connected max (min) that are one function once each is maximised over the
  indices only it reads are one term: max over a, b, c of f(a, b) + f(a, c) is the max over
  a of 2 max over b of f(a, b) (a chain's or a star's equal leaves share one head), and
  the diagonal's value where it holds the shared pair (:mod:`.diagonal_extrema`);
- a max of a pointwise max (``abs(e)`` is ``max(e, -e)``) is the max of its branches'
  reductions (:func:`pointwise_pieces`), one reduction where they are one function (the
  rewrite decides: ``max(abs(f(s) - f(t)) for s, t)`` is max f - min f).
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from infoflow.retrieval.algebra import (
    UnionFind,
    collect,
    collected,
    factored,
    free_indices,
    key,
    normal,
    ranges_kept,
    rebuilt,
    terms,
)
from infoflow.retrieval.diagonal_extrema import on_diagonal
from infoflow.retrieval.expression import SEQUENCE, Apply, Const, Node, Reduce
from infoflow.retrieval.product_extrema import pushed

EXTREMA = ("max", "min")
#: Nondecreasing functions: the max (min) of g(h) is g of the max (min) of h.
MONOTONE = ("exp", "relu", "tanh")
ADDITIVE = ("+", "-", "neg", "*", "/")


def separate(node: Node) -> Node:
    """Every separable max or min split, and identical terms collected again."""
    if isinstance(node, Reduce):
        node = replace(node, body=separate(node.body))
        factored = pushed(node)  # a product's factors: each index into the factor reading it
        return _split(node) if factored is node else separate(factored)
    if isinstance(node, Apply):
        node = Apply(node.fn, tuple(separate(a) for a in node.args))
        return collect(node) if node.fn in ADDITIVE else node
    return node


def _split(node: Reduce) -> Node:
    """A max or min over indices whose terms fall apart into groups is the sum of one
    reduction per group, the terms that touch none of its indices outside: max over a, b of
    f(a) + g(b) + c is max f + max g + c (so that max f + max f is met as 2 max f)."""
    if node.op not in EXTREMA:
        return node
    own = [v.name for v in node.variables]
    found = terms(node.body)
    groups = UnionFind(own)
    for _, term in found:
        groups.join(free_indices(term) & set(own) if term is not None else set())
    for c in node.conditions:
        groups.join({c.left, c.right} & set(own))
    roots = groups.roots()
    outside = [(c, t) for c, t in found if t is None or not free_indices(t) & set(own)]
    if len(roots) < 2 and not outside:
        shared = _share_leaves(node)
        diagonal = on_diagonal(shared)  # max over a of 2 max over b of x(a).x(b): 2 max |x|^2
        return shared if diagonal is shared else separate(diagonal)
    if any(not {c.left, c.right} & set(own) for c in node.conditions):
        return node  # a guard on enclosing indices only: the pieces would each drop it
    if any(_guards(node, groups.members(root), found) for root in roots):
        return node
    pieces = list(outside)
    for root in roots:
        members = groups.members(root)
        mine = [(c, t) for c, t in found if t is not None and free_indices(t) & members]
        if not mine:
            continue  # an index nothing reads only narrows the domain of a max
        body = rebuilt(collected(mine))
        conditions = tuple(c for c in node.conditions if {c.left, c.right} & members)
        variables = tuple(v for v in node.variables if v.name in members)
        piece = replace(node, variables=variables, body=body, conditions=conditions)
        pieces.append(factored(_share_leaves(piece)))  # max(-x) as -min(x), one retrieval
    return collect(rebuilt(collected(pieces)))


def _guards(node: Reduce, members: set[str], found: list) -> bool:
    """Whether ``members`` are indices nothing reads with a test on an enclosing index: their
    range is empty for some of its values (``for b in T if b > u`` at u = T), where the max
    is -inf, so they stay (a fuzz found them dropped, the night of 2026-12-05)."""
    if any(t is not None and free_indices(t) & members for _, t in found):
        return False
    own = {v.name for v in node.variables}
    named = {
        side for c in node.conditions if {c.left, c.right} & members for side in (c.left, c.right)
    }
    return any(isinstance(side, str) and side != SEQUENCE and side not in own for side in named)


def _share_leaves(node: Reduce) -> Reduce:
    """Terms of one connected max (min) that are equal up to the names of the indices only
    they read are one term: max over a, b, c of f(a, b) + f(a, c) is max over a of
    2 max over b of f(a, b) (each term's own max is the same function of a; commutative
    arguments in any order). So are leaves equal under a nondecreasing function
    (:data:`MONOTONE`, whose max is the function of the max: f(a, b) + exp(f(a, c)) is the max
    over a of m + exp(m), m the max over b of f(a, b); since 2026-12-07, a head more before).
    A term's own indices are those no other term and no condition outside it reads; terms
    that share with no other are left as written."""
    found = [(c, t) for c, t in terms(node.body) if t is not None]
    own = {v.name for v in node.variables}
    pushed = [_own_reduction(node, i, found, own) for i in range(len(found))]
    keys = [None if inner is None else _leaf_key(inner[0]) for inner in pushed]
    shared = {k for k in keys if k is not None and keys.count(k) > 1}
    if not shared:
        return node
    body, firsts, gone, moved = [], {}, set(), set()
    for (coefficient, term), inner, name in zip(found, pushed, keys, strict=True):
        if name not in shared:
            body.append((coefficient, term))
            continue
        reduction, wrappers = inner
        body.append((coefficient, _wrapped(firsts.setdefault(name, reduction), wrappers)))
        gone |= {v.name for v in reduction.variables}
        moved |= set(reduction.conditions)
    constant = [(c, t) for c, t in terms(node.body) if t is None]
    return replace(
        node,
        variables=tuple(v for v in node.variables if v.name not in gone),
        body=rebuilt(collected(body + constant)),
        conditions=tuple(c for c in node.conditions if c not in moved),
    )


def _own_reduction(
    node: Reduce, i: int, found: list, own: set[str]
) -> tuple[Reduce, tuple[str, ...]] | None:
    """The max (min, with a negative coefficient: max of -f is -min f) of term ``i`` of
    ``found`` over the indices only it reads, with the conditions on them, of the term
    inside the nondecreasing functions around it, and those functions (outermost first);
    None when it has none."""
    coefficient, term = found[i]
    others = set().union(*(free_indices(t) for j, (_, t) in enumerate(found) if j != i))
    reads = free_indices(term)
    mine = (reads & own) - others
    conditions = tuple(c for c in node.conditions if {c.left, c.right} & mine)
    if not mine or any(not ({c.left, c.right} & own) <= reads for c in conditions):
        return None  # none, or a condition ties one of them to another term's index
    op = node.op if coefficient > 0 else next(o for o in EXTREMA if o != node.op)
    variables = tuple(v for v in node.variables if v.name in mine)
    wrappers = []  # g(max f) is max g(f) where the max runs over something (no condition)
    while not conditions and isinstance(term, Apply) and term.fn in MONOTONE:
        wrappers.append(term.fn)
        term = term.args[0]
    return Reduce(op, variables, term, conditions), tuple(wrappers)


def _wrapped(node: Node, wrappers: tuple[str, ...]) -> Node:
    for fn in reversed(wrappers):
        node = Apply(fn, (node,))
    return node


def _leaf_key(inner: Reduce) -> str:
    """Equal for two leaf reductions that are one function of the indices they share: bound
    indices named by order of binding, commutative arguments sorted."""
    return repr(normal(key(inner)))


def pointwise_pieces(node: Reduce) -> list[Reduce] | None:
    """A max (min) over D of R + c max(A, B) (c > 0; ``abs(e)`` is max(e, -e); a pointwise
    min where c < 0) as the reductions over D of R + c A and R + c B, whose max (min) it is;
    None for any other reduction. A max that holds a max as its whole body is read as one
    reduction over both's indices (``max(max(g for t in T) for s in T)``)."""
    if node.op not in EXTREMA:
        return None
    inner = node.body
    if isinstance(inner, Reduce) and inner.op == node.op and not node.conditions:
        node = replace(inner, variables=node.variables + inner.variables)
    found = terms(node.body)
    spreading = [i for i, (c, t) in enumerate(found) if _branches(t, c, node.op)]
    if len(spreading) != 1:
        return None
    (i,) = spreading
    coefficient, term = found[i]
    rest = found[:i] + found[i + 1 :]
    return [  # each keeps the range every branch's offsets gave the indices (a review)
        ranges_kept(node, rebuilt(collected([*rest, (coefficient, branch)])))
        for branch in _branches(term, coefficient, node.op)
    ]


def _branches(term: Node | None, coefficient: Fraction, op: str) -> tuple[Node, ...] | None:
    """The arguments of ``term`` when ``coefficient * term`` is a pointwise ``op`` of them
    (``abs(e)`` being max(e, -e), ``relu(e)`` max(e, 0)); None otherwise."""
    if isinstance(term, Apply) and term.fn == "abs":
        fn, args = "max", (term.args[0], Apply("neg", term.args))
    elif isinstance(term, Apply) and term.fn == "relu":
        fn, args = "max", (term.args[0], Const(0))
    elif isinstance(term, Apply) and term.fn in EXTREMA and len(term.args) > 1:
        fn, args = term.fn, term.args
    else:
        return None
    if coefficient < 0:
        fn = next(o for o in EXTREMA if o != fn)
    return args if fn == op else None
