"""Expression -> expression: a min over s of a max whose range only grows with s is that max
at the smallest s, a rewrite before the canonical form (``reconstruction:canonical_form``).

A prefix max only grows: ``min(max(f(x[t]) for t in T if t <= s) for s in T)`` is the max
over t <= 1, f(x[1]), one head reading position 1 (it was planned as a pair: two layers).
The same holds for a max over s of a min (a prefix min only falls), and with the tests the
other way round (a suffix, ``t >= s``: the value at the largest s). s must be read by
nothing but the inner reduction's own order tests, all of one direction (each ``s >= u + c``
or ``s > u + c``: a range that grows with s; each ``<=`` or ``<``: one that shrinks); the
end is a number for the smallest s (its lower bounds, at least 1) and ``T`` less a number
for the largest (its upper bounds, at most T), so that it is one for every T. A ``!=`` or
``==`` on s, a bound of the other kind, or a test of s against a position that fails at the
end leaves s as written. A reduction the end leaves empty (``t < s`` at s = 1) is not
rewritten: the target is infinite there (:mod:`.infinite_values` refuses it).
A max over s of a max is :mod:`.unread_indices`'s.
"""

from __future__ import annotations

from dataclasses import replace

from infoflow.retrieval.algebra import free_indices
from infoflow.retrieval.expression import SEQUENCE, Condition, Node, Reduce

_OPPOSITE = {"max": "min", "min": "max"}
_FLIPPED = {"<=": ">=", "<": ">", ">=": "<=", ">": "<"}
_GROWS = {">=": True, ">": True, "<=": False, "<": False}  # s op u: true at s, true at s + 1?
#: An end of s: (None, a number) or (T, the number added to it).
End = tuple[str | None, int]


def at_extreme(node: Reduce) -> Node:
    """``node`` with its index s replaced by its end where the module's docstring allows;
    else ``node``."""
    inner = node.body
    if not isinstance(inner, Reduce) or inner.op != _OPPOSITE.get(node.op):
        return node
    for v in node.variables:
        if not v.is_token or v.name in free_indices(inner.body):
            continue
        tests = [_facing(c, v.name) for c in inner.conditions if v.name in (c.left, c.right)]
        if not tests or any(op not in _GROWS for op, _, _ in tests):
            continue
        directions = {_GROWS[op] for op, _, _ in tests}
        end = _end(v.name, node.conditions, smallest=True in directions)
        if len(directions) != 1 or end is None:
            continue
        conditions = _at_end(v.name, inner.conditions, end)
        tokens = {u.name for u in inner.variables if u.is_token}
        if conditions is None or any(_empty(c, tokens) for c in conditions):
            continue
        rest = tuple(u for u in node.variables if u != v)
        kept = tuple(c for c in node.conditions if v.name not in (c.left, c.right))
        if any(not {c.left, c.right} & {u.name for u in rest} for c in kept):
            continue  # a guard on an enclosing index stays with s
        body = replace(inner, conditions=conditions)
        return replace(node, variables=rest, body=body, conditions=kept) if rest else body
    return node


def _facing(c: Condition, s: str) -> tuple[str, str | int, int]:
    """``c`` read as ``s op side + shift``."""
    if c.left == s:
        return c.op, c.right, c.shift
    return _FLIPPED.get(c.op, c.op), c.left, -c.shift


def _end(s: str, conditions: tuple[Condition, ...], smallest: bool) -> End | None:
    """The smallest (largest) s its own tests allow; None where it moves with T or with
    another index."""
    ends: list[int] = []
    for c in conditions:
        if s not in (c.left, c.right):
            continue
        op, side, shift = _facing(c, s)
        if c.left == c.right or op not in _GROWS or (isinstance(side, str) and side != SEQUENCE):
            return None
        if (op in (">=", ">")) != smallest:
            continue  # a bound on the other end
        if (side == SEQUENCE) == smallest:
            return None  # s >= T - 2 at small T, s <= 5 at T < 5: the end moves with T
        move = {">": 1, "<": -1}.get(op, 0)
        ends.append(shift + move + (side if isinstance(side, int) else 0))
    return (None, max([1, *ends])) if smallest else (SEQUENCE, min([0, *ends]))


def _at_end(s: str, conditions: tuple[Condition, ...], end: End) -> tuple | None:
    """``conditions`` with s at its end; None where a test of s against a number or T
    fails there (the range is empty)."""
    out = []
    for c in conditions:
        if s not in (c.left, c.right):
            out.append(c)
            continue
        op, side, shift = _facing(c, s)
        if isinstance(side, str) and side != SEQUENCE:  # s op u + shift: u flipped op s - shift
            at, number = end
            right, moved = (SEQUENCE, number - shift) if at == SEQUENCE else (number - shift, 0)
            out.append(Condition(side, _FLIPPED[op], right, moved))
        elif not _holds(op, end, side, shift):
            return None
    return tuple(out)


def _empty(c: Condition, tokens: set[str]) -> bool:
    """Whether ``c`` leaves a token index of ``tokens`` no position at any T: ``t < 1``,
    ``t > T``."""
    if c.left not in tokens:
        return False
    if isinstance(c.right, int):
        return c.op in ("<", "<=") and c.right + c.shift < (2 if c.op == "<" else 1)
    return c.right == SEQUENCE and c.op in (">", ">=") and c.shift >= (0 if c.op == ">" else 1)


def _holds(op: str, end: End, side: str | int, shift: int) -> bool:
    """Whether ``end op side + shift`` holds at every T (both sides numbers, or both T
    plus a number)."""
    at, number = end
    if (at == SEQUENCE) != (side == SEQUENCE):
        return False
    right = shift + (0 if side == SEQUENCE else side)
    return {"<=": number <= right, "<": number < right, ">=": number >= right, ">": number > right}[
        op
    ]
