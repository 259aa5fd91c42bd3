"""Index conditions that say nothing, or name one index twice, folded before planning
(:mod:`~infoflow.retrieval.expression_rewrite` applies this; ``reconstruction:canonical_form``):

- a condition every value of its indices meets, at every T, is dropped: ``t >= 1``,
  ``t <= T``, ``t != 0``, ``t < T + 1``, ``i <= 9`` over ``range(10)``; it reads no position
  (until 2026-12-05 each made the target a position read, impossible without positional
  encoding). A condition that holds only at the spec's T (``t <= 8`` at T = 8) is kept: the
  plan is the same at every T;
- ``t == s`` (no shift, two indices of one kind, t the reduction's own) makes t the index s:
  ``max(g(x[s], x[t]) for s in T for t in T if t == s)`` is
  ``max(g(x[s], x[s]) for s in T)`` (it was silently planned as the pair). Under a k-th, an
  argmax or an argmin, where one value changes what the reduction means, it is refused. It
  is left as written where the body reads t at an offset (``x[t+1]`` at t = s = T: the
  reduction is empty there, a sum's 0 or a max's -inf, which a function around it may make
  finite, while ``x[s+1]`` would drop s) and where a test of t would be left naming s alone
  (found by two reviews' fuzz, 2026-12-06). Two conditions that pin the same pair's
  difference to 0 are that equality (since 2026-12-06): ``s <= t and s >= t``,
  ``abs(s - t) < 1`` (positions are integers), ``t - s <= 0 and s < t + 1``; they were
  planned as a pair read through positions, an overcharge.

A window ``abs(s - t) <= w`` is read as two conditions, ``s <= t + w`` and ``t <= s + w``;
where the engine plans them (the canonical form), such a pair is named as one
(:func:`windows`), so that what reads positions is named as written.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

from infoflow.retrieval.algebra import names, reads, rename
from infoflow.retrieval.expression import (
    KTH,
    SEQUENCE,
    Condition,
    Node,
    Reduce,
    TargetError,
    Variable,
    Window,
)

Affine = tuple[int, int]  # a + b T


def fold_conditions(
    node: Reduce, outer: dict[str, Variable], around: tuple[Condition, ...] = ()
) -> Node:
    """``node`` without the conditions its indices always meet or the others imply, two that
    pin a pair's difference to 0 read as ``t == s``, and each ``t == s`` folded where that is
    the written function (not where t is read at an offset or a test of t would be left
    naming s alone); ``outer``: the indices bound around it, ``around``: the conditions of
    the reductions around it (which hold wherever it is evaluated). ``node`` itself when
    nothing folds."""
    own = {v.name: v for v in node.variables}
    written = tuple(c for c in node.conditions if not _always(c, own))
    kept = _without_implied(written, {**outer, **own}, around)
    kept, spelled = _pinned(kept, own)
    if kept != node.conditions:
        node = replace(node, conditions=kept)
    for c in node.conditions:
        found = _equal(c, own, {**outer, **own})
        if found is None:
            continue
        gone, stays = found
        quoted = f"the conditions {spelled[c]}" if c in spelled else f"the condition {c.text()}"
        if node.op in KTH or node.op in ("argmax", "argmin"):
            raise TargetError(
                f"{quoted} leave{'' if c in spelled else 's'} the {node.op} over {gone} one "
                f"value: write {stays} for {gone}"
            )
        if stays in names(node.body):
            raise TargetError(f"{quoted}: {stays} is bound again inside")
        if reads(node.body, gone) - {0}:
            continue  # x[t+1] at t = s = T: empty there (a sum's 0, a max's -inf), as written
        mapping = {gone: stays}
        rest = tuple(
            replace(o, left=mapping.get(o.left, o.left), right=mapping.get(o.right, o.right))
            for o in node.conditions
            if o is not c
        )
        variables = tuple(v for v in node.variables if v.name != gone)
        left = {v.name for v in variables}
        if any(not {o.left, o.right} & left for o in rest):
            continue  # a test left on enclosing indices only, or one value: as written
        body = rename(node.body, mapping)
        if not variables:  # a reduction over one value is that value
            return body
        return replace(node, variables=variables, body=body, conditions=rest)
    return node


def _without_implied(
    conditions: tuple[Condition, ...], indices: dict[str, Variable], around: tuple = ()
) -> tuple[Condition, ...]:
    """``conditions`` less each that the others, those ``around`` and the ``indices``'
    ranges imply at every T (``s < T`` beside ``s < t``, t a token index; ``t <= s`` beside
    ``t < s``; ``t < s`` beside ``t < 5`` inside a reduction over s >= 6), one at a time from
    the last written, so that of two that imply each other the first stays: difference
    constraints, summed along paths (Floyd-Warshall). Where they contradict each other (a
    negative cycle), all are kept as written."""
    kept = list(conditions)
    for c in reversed(conditions):
        others = [o for o in kept if o is not c] + list(around)
        if any(_same_inequality(c, o) for o in others):  # t != s beside s != t (a fuzz)
            kept = [o for o in kept if o is not c]
            continue
        distance = _shortest(others, indices)
        if distance is not None and _implied(c, distance):
            kept = [o for o in kept if o is not c]  # not those around (a fuzz: they piled up)
    return tuple(kept)


def implied_by(
    conditions: tuple[Condition, ...], indices: dict[str, Variable], c: Condition
) -> bool:
    """Whether ``conditions`` and the ``indices``' ranges imply ``c`` at every T (not where
    they contradict each other); ``s <= s + 2`` follows from nothing."""
    distance = _shortest(list(conditions), indices)
    return distance is not None and _implied(c, distance)


def renamed(c: Condition, mapping: dict[str, str]) -> Condition:
    """``c`` with its indices renamed as ``mapping`` says."""
    return replace(c, left=mapping.get(c.left, c.left), right=mapping.get(c.right, c.right))


def _node(side: str | int) -> tuple[str, int]:
    """A side of a condition as (node, offset): a number k is ``0 + k``."""
    return ("", side) if isinstance(side, int) else (side, 0)


def _bounds(c: Condition) -> list[tuple[str, str, int]]:
    """``c`` as difference constraints ``a - b <= w``, each (b, a, w); none for ``!=``."""
    (left, lo), (right, ro) = _node(c.left), _node(c.right)
    upper = c.shift + ro - lo  # left - right <= upper
    edges = {
        "<=": [(right, left, upper)],
        "<": [(right, left, upper - 1)],
        ">=": [(left, right, -upper)],
        ">": [(left, right, -upper - 1)],
        "==": [(right, left, upper), (left, right, -upper)],
    }
    return edges.get(c.op, [])


def _shortest(
    conditions: list[Condition], indices: dict[str, Variable]
) -> dict[tuple[str, str], int] | None:
    """The tightest bound on ``a - b`` the conditions and ranges give, keyed (b, a); None
    where they contradict each other."""
    edges = [e for c in conditions if type(c) is Condition for e in _bounds(c)]
    edges.append((SEQUENCE, "", -1))  # 0 - T <= -1
    for name, v in indices.items():
        if v.is_token:
            edges += [(name, "", -1), (SEQUENCE, name, 0)]  # 1 <= t <= T
        else:
            edges += [(name, "", 0), ("", name, v.size - 1)]  # 0 <= i < size
    nodes = {n for e in edges for n in e[:2]}
    distance: dict[tuple[str, str], int] = {}
    for b, a, w in edges:
        distance[b, a] = min(w, distance.get((b, a), w))
    for k, i, j in itertools.product(nodes, repeat=3):
        if (i, k) in distance and (k, j) in distance:
            through = distance[i, k] + distance[k, j]
            if through < distance.get((i, j), through + 1):
                distance[i, j] = through
    if any(distance.get((n, n), 0) < 0 for n in nodes):
        return None
    return distance


def _same_inequality(c: Condition, other: Condition) -> bool:
    """``c`` and ``other`` are one ``!=`` (``s != t + 1`` and ``t != s - 1``): difference
    constraints cannot say so, a ``!=`` having none."""
    if type(c) is not Condition or type(other) is not Condition or {c.op, other.op} != {"!="}:
        return False
    mirrored = isinstance(other.right, str) and (other.right, other.left, -other.shift)
    return (c.left, c.right, c.shift) in ((other.left, other.right, other.shift), mirrored)


def _implied(c: Condition, distance: dict[tuple[str, str], int]) -> bool:
    """Whether the bounds in ``distance`` imply ``c``."""
    if type(c) is not Condition:
        return False
    if c.op == "!=":
        return any(
            all(_holds(e, distance) for e in _bounds(replace(c, op=op))) for op in ("<", ">")
        )
    return bool(_bounds(c)) and all(_holds(e, distance) for e in _bounds(c))


def _holds(edge: tuple[str, str, int], distance: dict[tuple[str, str], int]) -> bool:
    b, a, w = edge
    return (0 if a == b else distance.get((b, a), w + 1)) <= w


def _pinned(
    conditions: tuple[Condition, ...], own: dict[str, Variable]
) -> tuple[tuple[Condition, ...], dict[Condition, str]]:
    """``conditions`` with each two that bound the difference of the same two indices (one
    of them ``own``, the reduction's) by 0 from both sides (``a <= b``, ``b < a + 1``)
    replaced by ``a == b`` in the first's place (dropped where ``a == b`` is there already);
    and each such ``a == b`` with the text of the two it replaces."""
    out, spelled = list(conditions), {}
    for first, second in itertools.combinations(conditions, 2):
        pair = {first.left, first.right}
        if first not in out or second not in out or {second.left, second.right} != pair:
            continue
        if len(pair) != 2 or not all(isinstance(i, str) and i != SEQUENCE for i in pair):
            continue
        if not pair & own.keys():
            continue
        bounds = {_difference_bound(c, first.left) for c in (first, second)}
        if bounds != {("low", 0), ("high", 0)}:  # one bound each side, both at 0
            continue
        equal = Condition(first.left, "==", first.right)
        if equal in out or Condition(first.right, "==", first.left) in out:
            out.remove(first)
        else:
            out[out.index(first)] = equal
            spelled[equal] = f"{first.text()} and {second.text()}"
        out.remove(second)
    return tuple(out), spelled


def _difference_bound(c: Condition, a: str) -> tuple[str, int] | None:
    """The one integer bound ``c`` puts on ``a - b`` (b its other index): ("low", v) for
    ``a - b >= v``, ("high", v) for ``a - b <= v``; None for ``==``, ``!=`` or a window."""
    if type(c) is not Condition or c.op not in ("<", "<=", ">", ">="):
        return None
    high = c.op in ("<", "<=")  # left - right op shift
    value = c.shift - (c.op == "<") + (c.op == ">")
    if c.left != a:  # b - a op shift: a - b the other way
        high, value = not high, -value
    return ("high" if high else "low"), value


def windows(conditions: tuple[Condition, ...]) -> list[Condition]:
    """``conditions`` with each pair ``s op t + w``, ``t op s + w`` (op ``<`` or ``<=``, s and t
    indices), what ``abs(s - t) op w`` is read as, one :class:`Window` in the place of the
    first (``t - s <= w and s - t <= w`` is the window too)."""
    out = list(conditions)
    for c in conditions:
        other = Condition(c.right, c.op, c.left, c.shift)
        indices = {c.left, c.right}
        if (
            c.op in ("<", "<=")
            and c in out
            and other in out
            and len(indices) == 2
            and all(isinstance(i, str) and i != SEQUENCE for i in indices)
        ):
            out[out.index(c)] = Window(c.left, c.op, c.right, c.shift)
            out.remove(other)
    return out


def _equal(c: Condition, own: dict, bound: dict) -> tuple[str, str] | None:
    """(the index that goes, the one that stays) for ``t == s`` between two indices of one
    kind, t this reduction's own; None otherwise."""
    if c.op != "==" or c.shift or not all(isinstance(s, str) for s in (c.left, c.right)):
        return None
    if c.left == c.right or SEQUENCE in (c.left, c.right):
        return None
    gone = c.left if c.left in own else c.right if c.right in own else None
    stays = c.right if gone == c.left else c.left
    if gone is None or stays not in bound or bound[stays].size != own[gone].size:
        return None
    return gone, stays


def _always(c: Condition, own: dict[str, Variable]) -> bool:
    """Whether every value of the reduction's own indices meets ``c``, at every T >= 1."""
    if c.left == c.right:  # left - left - shift
        low = high = (-c.shift, 0)
    else:
        left, right = _span(c.left, own), _span(c.right, own)
        if left is None or right is None:
            return False
        # D = left - right - shift: its lowest and highest value, affine in T
        low = _minus(_minus(left[0], right[1]), (c.shift, 0))
        high = _minus(_minus(left[1], right[0]), (c.shift, 0))
    return {
        "<=": _never_above(high, 0),
        "<": _never_above(high, -1),
        ">=": _never_below(low, 0),
        ">": _never_below(low, 1),
        "!=": _never_below(low, 1) or _never_above(high, -1),
        "==": _never_below(low, 0) and _never_above(high, 0),
    }[c.op]


def _span(side: str | int, own: dict[str, Variable]) -> tuple[Affine, Affine] | None:
    """The lowest and highest value of one side of a condition, affine in T; None for an
    index bound outside the reduction (its range is not known here)."""
    if isinstance(side, int):
        return (side, 0), (side, 0)
    if side == SEQUENCE:
        return (0, 1), (0, 1)
    v = own.get(side)
    if v is None:
        return None
    return ((1, 0), (0, 1)) if v.is_token else ((0, 0), (v.size - 1, 0))


def _minus(a: Affine, b: Affine) -> Affine:
    return a[0] - b[0], a[1] - b[1]


def _never_above(f: Affine, limit: int) -> bool:
    """a + b T <= limit for every T >= 1."""
    return f[1] <= 0 and f[0] + f[1] <= limit


def _never_below(f: Affine, limit: int) -> bool:
    """a + b T >= limit for every T >= 1."""
    return f[1] >= 0 and f[0] + f[1] >= limit
