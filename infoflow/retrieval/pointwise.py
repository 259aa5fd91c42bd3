"""Pointwise maxima (minima) in one spelling, for :mod:`~infoflow.retrieval.expression_rewrite`
(``reconstruction:canonical_form``): a pointwise max inside another is one; a value at a fixed
position beside the max of the same function over every token is one of its values; maxima of
one function whose ranges join are one (:func:`joined`); and the pieces that make
``max(f(x[1]), f(x[2]), f(x[3]))`` a max over a masked token index (the function with a hole
where the positions differ, and the mask of those positions).
"""

from __future__ import annotations

import itertools
from dataclasses import replace

from infoflow.retrieval.algebra import normal, normal_condition, rename
from infoflow.retrieval.expression import SEQUENCE, Apply, Condition, Const, Node, Reduce, Token

HOLE = "_hole"  # the position that differs between the arguments of a pointwise max
MAX_GAPS = 16  # positions left out between fixed positions that a mask spells one by one


def flat(node: Apply) -> Apply:
    """max(max(a, b), c) as max(a, b, c)."""
    args = []
    for arg in node.args:
        nested = isinstance(arg, Apply) and arg.fn == node.fn and len(arg.args) > 1
        args += list(flat(arg).args) if nested else [arg]
    return Apply(node.fn, tuple(args))


def absorbed(fn: str, args: list[Node]) -> list[Node]:
    """The arguments of a pointwise max (min) without those that are a value of another:
    f(x[3]) beside max(f(x[t]) for t in T) is one of its values."""
    whole = [a for a in args if _whole_sequence(a, fn)]
    return [a for a in args if not any(r is not a and _value_of(r, a) for r in whole)]


def _whole_sequence(node: Node, fn: str) -> bool:
    """Whether ``node`` is an ``fn`` over one token index and every position."""
    if not (isinstance(node, Reduce) and node.op == fn and len(node.variables) == 1):
        return False
    return node.variables[0].is_token and not node.conditions


def _value_of(whole: Reduce, node: Node) -> bool:
    """Whether ``node`` is ``whole``'s body at a fixed position ``node`` reads (commutative
    arguments in any order: ``dot(x[1], q)`` beside ``max(dot(q, x[t]) for t in T)``)."""
    (v,) = whole.variables
    spelled = normal(node)
    return any(normal(rename(whole.body, {v.name: p})) == spelled for p in _positions(node))


def _positions(node: Node) -> set:
    """The fixed positions ``node`` reads unshifted (3 for x[3], T for x[T])."""
    if isinstance(node, Token):
        return {node.index} if node.is_fixed and not node.offset else set()
    if isinstance(node, Apply):
        return set().union(*(_positions(a) for a in node.args))
    return set()


def match(first: Node, other: Node) -> tuple[Node, tuple, tuple] | None:
    """(f with a hole, p, q) when ``first`` is f(x[p]) and ``other`` is f(x[q]), p != q."""
    holes: list[tuple] = []
    skeleton = _holes(first, other, holes)
    if skeleton is None or len(set(holes)) != 1:
        return None
    ((p, q),) = set(holes)
    return skeleton, p, q


def _holes(a: Node, b: Node, out: list) -> Node | None:
    """``a`` with a hole where it reads a fixed position ``b`` reads another one; None when
    they differ otherwise."""
    if isinstance(a, Token) and isinstance(b, Token):
        if a == b:
            return a
        if a.is_fixed and b.is_fixed and a.component == b.component:
            out.append((_spot(a), _spot(b)))
            return Token(HOLE, a.component)
        return None
    if isinstance(a, Apply) and isinstance(b, Apply) and (a.fn, len(a.args)) == (b.fn, len(b.args)):
        args = [_holes(x, y, out) for x, y in zip(a.args, b.args, strict=True)]
        return None if any(x is None for x in args) else Apply(a.fn, tuple(args))
    if isinstance(a, Reduce) and isinstance(b, Reduce):
        if replace(a, body=Const(0)) != replace(b, body=Const(0)):
            return None
        body = _holes(a.body, b.body, out)
        return None if body is None else replace(a, body=body)
    return a if a == b else None


def _spot(token: Token) -> tuple[str, int]:
    """("start", 3) for x[3], ("end", -1) for x[T-1]."""
    return ("end", token.offset) if token.index == SEQUENCE else ("start", token.index)


def fill(node: Node, spot: tuple[str, int]) -> Node:
    """The skeleton with its hole at ``spot``."""
    if isinstance(node, Token) and node.index == HOLE:
        side, value = spot
        if side == "start":
            return Token(value, node.component)
        return Token(SEQUENCE, node.component, value)
    if isinstance(node, Apply):
        return Apply(node.fn, tuple(fill(a, spot) for a in node.args))
    if isinstance(node, Reduce):
        return replace(node, body=fill(node.body, spot))
    return node


def membership(name: str, spots: list[tuple[str, int]]) -> tuple[Condition, ...] | None:
    """Conditions that hold exactly at the positions ``spots`` (all from the start, or all
    from the end); None when more than MAX_GAPS positions between them are left out."""
    values = sorted(v for _, v in spots)
    low, high = values[0], values[-1]
    if high - low + 1 - len(values) > MAX_GAPS:
        return None
    gaps = [v for v in range(low, high + 1) if v not in values]
    if spots[0][0] == "start":
        bounds = [Condition(name, ">=", low)] if low > 1 else []
        bounds.append(Condition(name, "<=", high))
        return (*bounds, *(Condition(name, "!=", v) for v in gaps))
    bounds = [Condition(name, ">=", SEQUENCE, low)]
    bounds += [Condition(name, "<=", SEQUENCE, high)] if high < 0 else []
    return (*bounds, *(Condition(name, "!=", SEQUENCE, v) for v in gaps))


def joined(fn: str, args: list[Node]) -> list[Node]:
    """The arguments of a pointwise max (min) with each two maxima (minima) of one function
    over one token index whose ranges join into one range (by the numbers their bounds name:
    ``t <= 3`` and ``t >= 4``, ``t <= T - 1`` and x[T]) as one over it; a value at a fixed
    position counts as the function's max over that position alone:
    ``max(f(x[1]), max(f(x[t]) for t in T if t >= 2))`` is the max over every t."""
    out, merged = list(args), True
    while merged:
        merged = False
        for i, j in itertools.permutations(range(len(out)), 2):
            union = _union(fn, out[i], out[j])
            if union is not None:
                out[i] = union
                del out[j]
                merged = True
                break
    return out


#: A position from the start (0, p) or from the end (1, k: T + k), ordered as they are at
#: every T past the numbers named; a range is its first and last position.
Spot = tuple[int, int]


def _union(fn: str, whole: Node, other: Node) -> Reduce | None:
    """``whole`` over the union of its range and ``other``'s where ``whole`` is an ``fn`` over
    one token index whose tests bound it by numbers, ``other`` the same function over such a
    range or at a fixed position, and the two ranges join into one; None otherwise."""
    mine = index_range(whole, fn)
    if mine is None:
        return None
    (v,) = whole.variables
    if isinstance(other, Reduce):
        theirs = index_range(other, fn)
        same = theirs and normal(rename(other.body, {other.variables[0].name: v.name}))
        if theirs is None or same != normal(whole.body):
            return None
    else:
        found = [s for s in spots(other) if normal(at(whole.body, v.name, s)) == normal(other)]
        if not found or shifted(whole.body, v.name):
            return None
        theirs = (found[0], found[0])
    (low, high), (later_low, later_high) = sorted([mine, theirs])
    if later_low > (high[0], high[1] + 1):
        return None  # a gap between them
    return replace(whole, conditions=bounds(v.name, low, max(high, later_high)))


def index_range(node: Node, fn: str) -> tuple[Spot, Spot] | None:
    """The first and last position of an ``fn`` over one token index whose tests each bound
    it by a number or T; None for anything else."""
    if not (isinstance(node, Reduce) and node.op == fn and len(node.variables) == 1):
        return None
    (v,) = node.variables
    if not v.is_token:
        return None
    low, high = (0, 1), (1, 0)
    for c in map(normal_condition, node.conditions):
        if c.left != v.name or c.op not in ("<=", ">=") or not isinstance(c.right, int | str):
            return None
        if isinstance(c.right, str) and c.right != SEQUENCE:
            return None
        spot = (1, c.shift) if c.right == SEQUENCE else (0, c.right + c.shift)
        low, high = (max(low, spot), high) if c.op == ">=" else (low, min(high, spot))
    return low, high


def bounds(name: str, low: Spot, high: Spot) -> tuple[Condition, ...]:
    """The tests that bound ``name`` to the range from ``low`` to ``high``."""
    out = []
    for op, spot, default in ((">=", low, (0, 1)), ("<=", high, (1, 0))):
        if spot != default:
            side, value = spot
            out.append(Condition(name, op, SEQUENCE, value) if side else Condition(name, op, value))
    return tuple(out)


def spots(node: Node) -> set[Spot]:
    """The fixed positions ``node`` reads (x[3]: (0, 3), x[T - 1]: (1, -1))."""
    if isinstance(node, Token) and node.is_fixed:
        return {(1, node.offset) if node.index == SEQUENCE else (0, node.index + node.offset)}
    if isinstance(node, Apply):
        return set().union(*(spots(a) for a in node.args))
    return set()


def at(body: Node, name: str, spot: Spot) -> Node:
    """``body`` with the index ``name`` at the fixed position ``spot``."""
    return fill(rename(body, {name: HOLE}), ("end" if spot[0] else "start", spot[1]))


def shifted(node: Node, name: str) -> bool:
    """Whether ``node`` reads the index ``name`` at an offset (x[t + 1])."""
    if isinstance(node, Token):
        return node.index == name and node.offset != 0
    if isinstance(node, Apply):
        return any(shifted(a, name) for a in node.args)
    if isinstance(node, Reduce):
        return shifted(node.body, name)
    return False
