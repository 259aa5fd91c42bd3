"""Pointwise maxima (minima) in one spelling, for :mod:`~infoflow.retrieval.expression_rewrite`
(``reconstruction:canonical_form``): a pointwise max inside another is one; a value at a fixed
position beside the max of the same function over every token is one of its values; maxima of
one function whose ranges join are one (:func:`joined`); a sum of maxima over tokens is one
max over all their indices where it joins another (:func:`gathered`); and the pieces that make
``max(f(x[1]), f(x[2]), f(x[3]))`` a max over a masked token index (the function with a hole
where the positions differ, and the mask of those positions).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction

from infoflow.retrieval.algebra import (
    OTHER_EXTREMUM,
    collected,
    normal,
    reads,
    rebuilt,
    rename,
    terms,
)
from infoflow.retrieval.expression import SEQUENCE, Apply, Condition, Const, Node, Reduce, Token
from infoflow.retrieval.position_ranges import (
    HOLE,
    MAX_GAPS,
    combined,
    member_where,
    reduction,
    value_where,
    where,
)


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


def unnegated(node: Node) -> Node:
    """``-min(-f)`` as ``max(f)`` and ``-max(-f)`` as ``min(f)`` (so that a pointwise max
    meets the max it is; ``-(-1 * max f)``, as a factored min(-f) reads, too); any other
    node as it is."""
    found = terms(node)
    if len(found) == 1 and found[0][0] == 1 and isinstance(found[0][1], Reduce):
        return found[0][1]
    inner = node.args[0] if isinstance(node, Apply) and node.fn == "neg" else None
    if not (isinstance(inner, Reduce) and inner.op in ("max", "min")):
        return node
    found = terms(inner.body)
    if not found or any(c >= 0 for c, _ in found):
        return node
    other = "max" if inner.op == "min" else "min"
    return replace(inner, op=other, body=rebuilt(collected([(-c, t) for c, t in found])))


def joined(fn: str, args: list[Node]) -> list[Node]:
    """The arguments of a pointwise max (min) with the maxima (minima) of one function over
    one token index whose ranges join into one range (less at most :data:`MAX_GAPS`
    positions; ranges bounded by numbers or T: ``t <= 3`` and ``t >= 4``, ``t <= T - 1`` and
    x[T]) as one over it, a value at a fixed position counting as the function's max over
    that position: ``max(f(x[1]), max(f(x[t]) for t in T if t >= 2))`` is the max over
    every t."""
    groups: dict[Node, list[int]] = {}
    for i, arg in enumerate(args):
        if (found := where(arg, fn)) is not None:
            groups.setdefault(found[0], []).append(i)
    out: dict[int, Node] = dict(enumerate(args))
    for function, members in groups.items():
        members += [i for i in out if i not in members and value_where(function, out[i])]
        spans = [(Fraction(1), member_where(fn, function, out[i])) for i in members]
        union = combined(spans, cover=True) if len(members) > 1 else None
        if union is None or union[1] is None:
            continue
        name = args[members[0]].variables[0].name  # a name no enclosing index has
        for i in members:
            del out[i]
        out[members[0]] = reduction(fn, function, union[1], name)
    return [out[i] for i in sorted(out)]


def gathered(fn: str, arg: Node, fresh: Callable[[str], str]) -> Reduce | None:
    """A sum of two or more ``fn`` reductions (a min subtracted counting as a max) over
    unconditioned token indices, each read at no offset, as one reduction over all their
    indices (renamed by ``fresh``): max f - min g is the max over s, t of f(s) - g(t). None
    for anything else (a condition or an offset would move into the other terms' range)."""
    found = terms(arg)
    if sum(t is not None for _, t in found) < 2:
        return None
    variables, body = [], []
    for coefficient, term in found:
        if term is None:
            body.append((coefficient, None))
            continue
        like = fn if coefficient > 0 else OTHER_EXTREMUM[fn]
        if not isinstance(term, Reduce) or term.op != like or term.conditions:
            return None
        if any(not v.is_token or reads(term.body, v.name) - {0} for v in term.variables):
            return None
        term = rename(term, {v.name: fresh(v.name) for v in term.variables}, bound=True)
        variables += term.variables
        body.append((coefficient, term.body))
    return Reduce(fn, tuple(variables), rebuilt(collected(body)))
