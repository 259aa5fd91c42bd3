"""Expression -> expression: a token index of a max or min that nothing reads but its order
tests leaves the reduction, its tests replaced by what they say of the other indices, a
rewrite before the canonical form (``reconstruction:canonical_form``).

The max over s and t <= s of f(t) is the max of f over every t (s = T allows each t); over
t < s, the max over t <= T - 1. The tests are difference constraints (``t <= s + 2``, ``s <
T``, ``s >= 3``), and eliminating s from them is exact: s exists, with 1 <= s <= T, exactly
when each of its lower bounds is at most each of its upper bounds (Fourier-Motzkin, exact on
difference constraints over the integers). A test between numbers and T is dropped: where
it fails (``3 <= T`` from ``s >= 3`` and ``t <= s``, at T = 2) the reduction runs over
nothing at every value of the indices around it, and the spec refuses the target at that T
(:mod:`.domains`; until the night of 2026-12-05 such an s stayed as written, and a later
rewrite dropped it with its tests on enclosing indices: a fuzz found it). A ``!=`` on s
(:func:`~.expression_rewrite` drops a lone one), an ``==``, or a projected test on enclosing
indices only (``u <= T - 1`` from ``s > u``: a guard, which a later rewrite that pulls terms
out of the reduction would drop) leave s as written. Also spelled ``max(max(f(t) for t in T if
t <= s) for s in T)``. Until 2026-12-05 such a target was planned as a position read:
impossible without positional encoding, though one head computes it (a review found it).
"""

from __future__ import annotations

from dataclasses import replace

from infoflow.retrieval.algebra import free_indices
from infoflow.retrieval.expression import SEQUENCE, Condition, Node, Reduce

#: A bound on s: (an index, T, or None for a number; the number added).
Bound = tuple[str | None, int]
#: s op side + k as (lower or upper, the number added to the side: strict tests move it).
_SIDES = {"<=": ("upper", 0), "<": ("upper", -1), ">=": ("lower", 0), ">": ("lower", 1)}
_FLIPPED = {"<=": ">=", "<": ">", ">=": "<=", ">": "<"}


def project(node: Reduce) -> Node:
    """``node`` with each token index that nothing but its order tests reads eliminated
    (see the module's docstring); ``node`` itself when none is."""
    if node.op not in ("max", "min"):
        return node
    variables, conditions, body = node.variables, node.conditions, node.body
    if isinstance(body, Reduce) and body.op == node.op:  # max over s of max over t
        variables, conditions = (*variables, *body.variables), (*conditions, *body.conditions)
        body = body.body
    if len(variables) < 2:
        return node
    for v in variables:
        if not v.is_token or v.name in free_indices(body):
            continue
        projected = eliminated(v.name, conditions)
        rest = tuple(u for u in variables if u != v)
        own = {u.name for u in rest}
        if projected is not None and all({c.left, c.right} & own for c in projected):
            return replace(node, variables=rest, body=body, conditions=projected)
    return node


def eliminated(s: str, conditions: tuple[Condition, ...]) -> tuple[Condition, ...] | None:
    """``conditions`` with s eliminated; None when a test on s is not an order test."""
    lower: list[Bound] = [(None, 1)]
    upper: list[Bound] = [(SEQUENCE, 0)]
    kept = []
    for c in conditions:
        if s not in (c.left, c.right):
            kept.append(c)
            continue
        if c.left == c.right or c.op not in _SIDES:
            return None
        op, other, shift = (
            (c.op, c.right, c.shift) if c.left == s else (_FLIPPED[c.op], c.left, -c.shift)
        )
        side, move = _SIDES[op]
        found = (None, other + shift + move) if isinstance(other, int) else (other, shift + move)
        (lower if side == "lower" else upper).append(found)
    for low in lower:
        for high in upper:
            test = _at_most(low, high)
            if isinstance(test, Condition):
                kept.append(test)  # a test between numbers and T is dropped (the docstring)
    return tuple(dict.fromkeys(kept))


def _at_most(low: Bound, high: Bound) -> Condition | None:
    """The test low <= high as a condition on an index; None between numbers and T."""
    (a, x), (b, y) = low, high
    if a is not None and a != SEQUENCE:
        return Condition(a, "<=", b if b is not None else y - x, y - x if b is not None else 0)
    if b is not None and b != SEQUENCE:
        return Condition(b, ">=", a if a is not None else x - y, x - y if a is not None else 0)
    return None
