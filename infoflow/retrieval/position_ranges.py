"""Where a reduction over one token index runs, as a range of positions bounded by numbers or
T less a few positions (``t >= 2 and t != 5``), and where several such reductions of one
function (and its values at fixed positions) run together: what
:mod:`~infoflow.retrieval.pointwise` joins for maxima (the positions any of them covers) and
:mod:`~infoflow.retrieval.summed_ranges` nets for sums (each position's total coefficient).
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from infoflow.retrieval.algebra import normal, normal_condition, rename
from infoflow.retrieval.expression import SEQUENCE, Apply, Condition, Node, Reduce, Token, Variable

#: A position from the start (0, p) or from the end (1, k: T + k), ordered as they are at
#: every T past the numbers named.
Spot = tuple[int, int]
#: A range of positions less some of them: (first, last), left out.
Net = tuple[tuple[Spot, Spot], frozenset[Spot]]
#: Positions a range may leave out between its ends (as a mask spells them one by one).
MAX_GAPS = 16
HOLE = "_hole"  # the index of a function read at a position not yet fixed


def where(node: Node, op: str) -> tuple[Node, Net] | None:
    """(the function with a hole for its index, where it runs) for an ``op`` over one token
    index whose tests bound it by numbers or T or leave out such a position, and which reads
    its index at no offset; None for anything else."""
    if not (isinstance(node, Reduce) and node.op == op and len(node.variables) == 1):
        return None
    (v,) = node.variables
    if not v.is_token or _shifted(node.body, v.name):
        return None
    lows, highs, gaps = [(0, 1)], [(1, 0)], set()
    for c in map(normal_condition, node.conditions):
        numbered = isinstance(c.right, int) or c.right == SEQUENCE
        if c.left != v.name or not numbered or c.op not in ("<=", ">=", "!="):
            return None
        spot = (1, c.shift) if c.right == SEQUENCE else (0, c.right + c.shift)
        {"!=": gaps.add, ">=": lows.append, "<=": highs.append}[c.op](spot)
    if len({side for side, _ in lows[1:]}) > 1 or len({side for side, _ in highs[1:]}) > 1:
        return None  # t <= 4 and t <= T - 2: which binds depends on T (a review)
    return normal(rename(node.body, {v.name: HOLE})), ((max(lows), min(highs)), frozenset(gaps))


def value_where(function: Node, term: Node | None) -> Net | None:
    """The one position of a term that is ``function`` at a fixed position it reads."""
    if term is None or isinstance(term, Reduce):
        return None
    spelled = normal(term)
    found = [s for s in _spots(term) if normal(at(function, s)) == spelled]
    return ((found[0], found[0]), frozenset()) if found else None


def member_where(op: str, function: Node, node: Node) -> Net | None:
    """Where ``node``, an ``op`` of ``function`` (:func:`where`) or its value at a fixed
    position, runs."""
    found = where(node, op)
    return found[1] if found is not None else value_where(function, node)


def combined(
    members: list[tuple[Fraction, Net]], cover: bool
) -> tuple[Fraction, Net | None] | None:
    """(c, where) when the members' coefficients add to c on one range less at most
    :data:`MAX_GAPS` positions and to 0 elsewhere at every T ((0, None): 0 everywhere); with
    ``cover``, c = 1 on the positions any member covers. None where they do not."""
    pieces = [(c, span) for c, (span, _) in members] + [
        (-c, (g, g)) for c, (span, gaps) in members for g in gaps if span[0] <= g <= span[1]
    ]
    cuts = sorted({low for _, (low, _) in pieces} | {_next(high) for _, (_, high) in pieces})
    weights = [sum((c for c, r in pieces if r[0] <= start <= r[1]), Fraction(0)) for start in cuts]
    weights = [Fraction(int(w > 0)) for w in weights] if cover else weights
    held = [i for i, w in enumerate(weights) if w]
    if not held:
        return (Fraction(0), None) if _holds(members, cover, Fraction(0), None) else None
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
    return (weight, net) if _holds(members, cover, weight, net) else None


def reduction(op: str, function: Node, net: Net, name: str) -> Node:
    """``function`` reduced by ``op`` over ``net`` by an index ``name``, or at its one
    position."""
    (low, high), gaps = net
    if low == high:
        return at(function, low)
    tests = [Condition(name, "!=", *((SEQUENCE, v) if side else (v,))) for side, v in sorted(gaps)]
    body = rename(function, {HOLE: name})
    return Reduce(op, (Variable(name),), body, (*bounds(name, low, high), *tests))


def bounds(name: str, low: Spot, high: Spot) -> tuple[Condition, ...]:
    """The tests that bound ``name`` to the range from ``low`` to ``high``."""
    out = []
    for op, spot, default in ((">=", low, (0, 1)), ("<=", high, (1, 0))):
        if spot != default:
            side, value = spot
            out.append(Condition(name, op, SEQUENCE, value) if side else Condition(name, op, value))
    return tuple(out)


def at(function: Node, spot: Spot) -> Node:
    """``function`` (its index a :data:`HOLE`) at the fixed position ``spot``."""
    if isinstance(function, Token) and function.index == HOLE:
        side, value = spot
        return (
            Token(SEQUENCE, function.component, value) if side else Token(value, function.component)
        )
    if isinstance(function, Apply):
        return Apply(function.fn, tuple(at(a, spot) for a in function.args))
    if isinstance(function, Reduce):
        return replace(function, body=at(function.body, spot))
    return function


def _next(spot: Spot) -> Spot:
    return spot[0], spot[1] + 1


def _holds(members, cover: bool, weight: Fraction, net: Net | None) -> bool:
    """Whether the members' weights (with ``cover``: 1 where any covers) are ``weight`` on
    ``net`` and 0 elsewhere at every T up to where the order of their ends stops changing
    (past the largest position from the start plus the largest from the end)."""
    named = [spot for _, (span, gaps) in members for spot in (*span, *gaps)]
    starts = max((v for side, v in named if not side), default=0)
    ends = max((-v for side, v in named if side), default=0)
    for length in range(1, starts + ends + 4):  # a + 1 and T - k + 1 change order by then
        for p in range(1, length + 1):
            total = sum((c for c, where in members if _kept(p, where, length)), Fraction(0))
            total = Fraction(int(total > 0)) if cover else total
            if total != (weight if net is not None and _kept(p, net, length) else 0):
                return False
    return True


def _position(spot: Spot, length: int) -> int:
    side, value = spot
    return length + value if side else value


def _kept(p: int, net: Net, length: int) -> bool:
    (low, high), gaps = net
    inside = _position(low, length) <= p <= _position(high, length)
    return inside and all(p != _position(g, length) for g in gaps)


def _spots(node: Node) -> set[Spot]:
    """The fixed positions ``node`` reads (x[3]: (0, 3), x[T - 1]: (1, -1))."""
    if isinstance(node, Token) and node.is_fixed:
        return {(1, node.offset) if node.index == SEQUENCE else (0, node.index + node.offset)}
    if isinstance(node, Apply):
        return set().union(*(_spots(a) for a in node.args))
    return set()


def _shifted(node: Node, name: str) -> bool:
    """Whether ``node`` reads the index ``name`` at an offset (x[t + 1])."""
    if isinstance(node, Token):
        return node.index == name and node.offset != 0
    if isinstance(node, Apply):
        return any(_shifted(a, name) for a in node.args)
    if isinstance(node, Reduce):
        return _shifted(node.body, name)
    return False
