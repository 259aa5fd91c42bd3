"""Sums of one function over ranges of one token index, netted (a rewrite of
:mod:`~infoflow.retrieval.expression_rewrite`; ``reconstruction:canonical_form``).

The additive terms of an expression that sum one function over ranges bounded by numbers or
T (a value at a fixed position counting as the sum over that position) weigh each position
by the sum of their coefficients. Where those weights are one number c on one range and 0
elsewhere, at every T, the terms are c times the sum over that range:
``sum(f(x[t]) for t in T if t <= 3) + sum(f(x[s]) for s in T if s >= 4)`` is the sum over
every t (one head, no positional encoding, where the two ranges took two heads with it),
``sum(f(x[t]) for t in T) - f(x[1])`` the sum over t >= 2, and ``sum(f(x[t]) for t in T) -
sum(f(x[s]) for s in T if s >= 2)`` the value f(x[1]). A range may leave out up to
:data:`~infoflow.retrieval.pointwise.MAX_GAPS` positions (``t != 2``), as a pointwise max of
fixed positions may. Weights of two signs or levels stay as written (one head's softmax is
one weighting of one sign).
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from infoflow.retrieval.algebra import collected, normal, rebuilt, rename, terms
from infoflow.retrieval.expression import SEQUENCE, Condition, Node, Reduce, Variable
from infoflow.retrieval.pointwise import (
    HOLE,
    MAX_GAPS,
    Spot,
    at,
    bounds,
    index_range,
    shifted,
    spots,
)

#: A range of positions, its first and last spot (:data:`~infoflow.retrieval.pointwise.Spot`).
Range = tuple[Spot, Spot]
#: A range less some positions (at most :data:`~infoflow.retrieval.pointwise.MAX_GAPS`).
Net = tuple[Range, frozenset[Spot]]


def netted(node: Node) -> Node:
    """``node`` with each group of terms that sum one function over ranges (and its values at
    fixed positions) as one term where their weights net to one range and one weight."""
    found = terms(node)
    groups: dict[Node, list[int]] = {}
    for i, (_, term) in enumerate(found):
        if (summed := _summed(term)) is not None:
            groups.setdefault(summed[0], []).append(i)
    if not groups:
        return node
    for function, members in groups.items():
        name = found[members[0]][1].variables[0].name  # a name no enclosing index has
        members += [i for i, (_, t) in enumerate(found) if _value_net(function, t)]
        nets = [(found[i][0], _net_of(function, found[i][1])) for i in members]
        if len(members) < 2 or (net := _netted(nets)) is None:
            continue
        for i in members:
            found[i] = (Fraction(0), None)
        if net[0]:
            found.append((net[0], _term(function, net[1], name)))
    kept = [(c, t) for c, t in found if c]
    return node if len(kept) == len(found) else rebuilt(collected(kept))


def _summed(term: Node | None) -> tuple[Node, Net] | None:
    """(the function with a hole for its index, where it is summed) for a sum over one token
    index that reads it at no offset, bounded by numbers or T and left out at some (``t !=
    4``); None for any other term."""
    if not isinstance(term, Reduce) or len(term.variables) != 1:
        return None
    (v,) = term.variables
    gaps = [c for c in term.conditions if c.op == "!=" and c.left == v.name]
    bounded = replace(term, conditions=tuple(c for c in term.conditions if c not in gaps))
    span = index_range(bounded, "sum")
    if span is None or shifted(term.body, v.name):
        return None
    if any(isinstance(c.right, str) and c.right != SEQUENCE for c in gaps):
        return None
    left_out = frozenset(
        (1, c.shift) if c.right == SEQUENCE else (0, c.right + c.shift) for c in gaps
    )
    return normal(rename(term.body, {v.name: HOLE})), (span, left_out)


def _value_net(function: Node, term: Node | None) -> Net | None:
    """The one position of a term that is ``function`` at a fixed position it reads."""
    if term is None or isinstance(term, Reduce):
        return None
    spelled = normal(term)
    found = [s for s in spots(term) if normal(at(function, HOLE, s)) == spelled]
    return ((found[0], found[0]), frozenset()) if found else None


def _net_of(function: Node, term: Node) -> Net:
    """Where a member of ``function``'s group (a sum or a value) weighs the positions."""
    summed = _summed(term)
    return summed[1] if summed is not None else _value_net(function, term)


def _netted(members: list[tuple[Fraction, Net]]) -> tuple[Fraction, Net | None] | None:
    """(c, where) when the coefficients of ``members`` add to c on one range but at most
    :data:`MAX_GAPS` positions of it, and to 0 elsewhere, at every T ((0, None): to 0
    everywhere); None where they do not."""
    pieces = [(c, span) for c, (span, _) in members] + [
        (-c, (g, g)) for c, (span, gaps) in members for g in gaps if span[0] <= g <= span[1]
    ]
    cuts = sorted({low for _, (low, _) in pieces} | {_next(high) for _, (_, high) in pieces})
    weights = [sum((c for c, r in pieces if r[0] <= start <= r[1]), Fraction(0)) for start in cuts]
    held = [i for i, w in enumerate(weights) if w]
    if not held:
        return (Fraction(0), None) if _holds(members, Fraction(0), None) else None
    first, last, weight = held[0], held[-1], weights[held[0]]
    gaps: list[Spot] = []
    for i in range(first, last + 1):
        (side, value), (end_side, end) = cuts[i], cuts[i + 1]
        if weights[i] == weight:
            continue
        if weights[i] or side != end_side or len(gaps) + end - value > MAX_GAPS:
            return None  # another weight, or a gap as long as T
        gaps += [(side, v) for v in range(value, end)]
    high = cuts[last + 1]  # where the weight falls to 0 (past T at the latest)
    net = ((cuts[first], (high[0], high[1] - 1)), frozenset(gaps))
    return (weight, net) if _holds(members, weight, net) else None


def _next(spot: Spot) -> Spot:
    return spot[0], spot[1] + 1


def _holds(members: list[tuple[Fraction, Net]], weight: Fraction, net: Net | None) -> bool:
    """Whether the members' weights are ``weight`` on ``net`` and 0 elsewhere at every T up to
    where the order of their ends stops changing (past every number they name)."""
    named = [abs(v) for _, (span, gaps) in members for _, v in (*span, *gaps)]
    for length in range(1, max(named) + 3):
        for p in range(1, length + 1):
            total = sum((c for c, where in members if _kept(p, where, length)), Fraction(0))
            if total != (weight if net is not None and _kept(p, net, length) else 0):
                return False
    return True


def _position(spot: Spot, length: int) -> int:
    side, value = spot
    return length + value if side else value


def _within(p: int, span: Range, length: int) -> bool:
    return _position(span[0], length) <= p <= _position(span[1], length)


def _kept(p: int, net: Net, length: int) -> bool:
    span, gaps = net
    return _within(p, span, length) and all(p != _position(g, length) for g in gaps)


def _term(function: Node, net: Net, name: str) -> Node:
    """``function`` summed over ``net`` by an index ``name``, or at its one position."""
    (low, high), gaps = net
    if low == high:
        return at(function, HOLE, low)
    tests = [Condition(name, "!=", *((SEQUENCE, v) if side else (v,))) for side, v in sorted(gaps)]
    body = rename(function, {HOLE: name})
    return Reduce("sum", (Variable(name),), body, (*bounds(name, low, high), *tests))
