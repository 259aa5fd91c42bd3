"""The pair (s, s) that a condition ``s != t`` leaves out of a max or min over two tokens:
whether it decides the value ([R] ``self_exclusion``, a reconstruction).

Without positional encoding a head cannot tell a token from itself: the head that retrieves
each token's best partner scores the token itself as well, so the plan computes the extremum
with the diagonal. Whether that is the target depends on the score g(a, b) (the max's score,
or minus the min's):

- ``every draw``: g(a, b) <= max(g(a, a), g(b, b)) for all a, b, so the extremum with the
  diagonal is always on it and never the target's (the max of a dot product, by
  Cauchy-Schwarz; the max of a norm of a positive combination, by the triangle inequality;
  the min of a distance, 0 on the diagonal);
- ``never``: g(a, a) <= g(a, b), so the diagonal never wins (the max of a distance);
- ``some draws``: anything else, or a score not recognised here (the min of a dot product,
  whose diagonal |x(s)|^2 is the minimum only when every other pair scores higher).

Recognised scores: one term ``dot`` of two token multiples, or ``norm``/``sqnorm`` of a
combination a x[s] + b x[t] (several ``dot`` terms of the pair add up); the rest is
``some draws``.

An order test between the two indices of a max or min whose score is symmetric in them
reads no position: ``s < t`` is ``s != t`` and ``s <= t`` is every pair, the same function
(:func:`unordered`, ``reconstruction:canonical_form``).
"""

from __future__ import annotations

from dataclasses import replace

from infoflow.retrieval.algebra import EXTREMUM, additive, free_indices, names, rename
from infoflow.retrieval.expression import Apply, Condition, Const, Node, Reduce, Token, Variable

EVERY_DRAW, NEVER, SOME_DRAWS = "every draw", "never", "some draws"
NORMS = ("norm", "sqnorm")
ORDERS = {"<": "!=", ">": "!=", "<=": None, ">=": None}  # what each reads as, unordered
COMMUTATIVE = ("+", "*", "dot", "min", "max")
EVEN = ("norm", "sqnorm", "abs")  # f(a - b) = f(b - a)


def unordered(op: str, conditions: list, own: set[str], is_symmetric) -> list:
    """``conditions`` ((condition, scope)) of a reduction ``op`` over the indices ``own``
    with each order test between two of its token indices that no other condition names,
    over a score symmetric in the two (``is_symmetric(pair)`` of their unique names), read
    unordered: ``s < t`` as ``s != t``, ``s <= t`` dropped."""
    if op not in EXTREMUM:
        return conditions
    out = []
    for c, env in conditions:
        pair = _pair(c, env) if c.op in ORDERS and not c.shift else None
        alone = pair is not None and not any(
            _names(d, e) & set(pair) for d, e in conditions if d is not c
        )
        if not (alone and set(pair) <= own and is_symmetric(pair)):
            out.append((c, env))
        elif ORDERS[c.op]:
            out.append((replace(c, op=ORDERS[c.op]), env))
    return out


def unordered_reduce(node: Reduce) -> Reduce:
    """:func:`unordered` on a reduction as written (both indices bound by ``node``), so that
    the rewrites after it see the pair unordered: ``min(f(s) + f(t) ... if s <= t)`` is
    ``2 min f``."""
    env = {v.name: v for v in node.variables}
    found = unordered(
        node.op,
        [(c, env) for c in node.conditions],
        set(env),
        lambda pair: symmetric(node.body, pair),
    )
    return replace(node, conditions=tuple(c for c, _ in found))


def _pair(c: Condition, env: dict[str, Variable]) -> tuple[str, str] | None:
    """The unique names of the two token indices ``c`` compares (None: not two tokens)."""
    sides = [env.get(s) if isinstance(s, str) else None for s in (c.left, c.right)]
    if not all(v is not None and v.is_token for v in sides):
        return None
    return sides[0].name, sides[1].name


def _names(c: Condition, env: dict[str, Variable]) -> set[str]:
    return {env[s].name for s in (c.left, c.right) if isinstance(s, str) and s in env}


def symmetric(body: Node, pair: tuple[str, str]) -> bool:
    """Whether ``body`` (reading the indices of ``pair`` by those names) is the same function
    after swapping the two, as :func:`unordered` decides it."""
    scope = {name: Variable(name) for name in pair}
    return symmetric_terms([(term, scope, sign) for sign, term in additive(body)], pair)


def symmetric_terms(terms: list, pair: tuple[str, str]) -> bool:
    """Whether the terms that read either index of ``pair`` are the same after swapping the
    two (commutative arguments, and the sign inside an even function, in any order)."""
    a, b = pair
    mine, swapped = [], []
    for term, scope, sign in terms:
        mapping = {u: v.name for u, v in scope.items()}
        if not {mapping.get(u, u) for u in free_indices(term)} & set(pair):
            continue
        if names(term):
            return False  # a nested reduction: not compared here
        named = rename(term, mapping)
        mine.append(repr((sign, _normal(named))))
        swapped.append(repr((sign, _normal(rename(named, {a: b, b: a})))))
    return bool(mine) and sorted(mine) == sorted(swapped)


def _normal(node: Node) -> Node:
    """``node`` with commutative arguments sorted and even functions of a difference
    oriented, so that equal spellings of these kinds compare equal."""
    if not isinstance(node, Apply):
        return node
    args = tuple(_normal(a) for a in node.args)
    if node.fn in COMMUTATIVE:
        args = tuple(sorted(args, key=repr))
    inner = args[0] if len(args) == 1 else None
    if node.fn in EVEN and isinstance(inner, Apply) and inner.fn == "-":
        args = (Apply("-", tuple(sorted(inner.args, key=repr))),)
    return Apply(node.fn, args)


def excludes(option: str, op: str, c: Condition, env: dict[str, Variable], terms: list) -> bool:
    """Whether ``c`` is an ``s != t`` whose left-out pair (s, s) decides the extremum ``op``
    over ``terms`` ((term, its scope, its sign)), as ``option`` reads it: ``decisive`` when
    it does on every draw, ``always`` unless it never does, ``never`` not at all."""
    if option == "never" or op not in EXTREMUM or c.op != "!=" or c.shift:
        return False
    pair = _pair(c, env)
    if pair is None:
        return False
    touching = []
    for term, scope, sign in terms:
        mapping = {u: v.name for u, v in scope.items()}
        if {mapping.get(u, u) for u in free_indices(term)} & set(pair):
            touching.append((sign, term if names(term) else rename(term, mapping)))
    found = role(EXTREMUM[op], touching, pair)
    return found == EVERY_DRAW or (found == SOME_DRAWS and option == "always")


def role(direction: int, terms: list[tuple[int, Node]], pair: tuple[str, str]) -> str:
    """How the diagonal of ``pair`` (its two index names as the terms read them) decides an
    extremum of ``direction`` (1 max, -1 min) over the signed additive ``terms`` of its
    score that read either index."""
    dots = [_dot(term, pair) for _, term in terms]
    if all(c is not None for c in dots):
        total = sum(sign * c for (sign, _), c in zip(terms, dots, strict=True))
        return EVERY_DRAW if direction * total > 0 else SOME_DRAWS
    if len(terms) != 1:
        return SOME_DRAWS
    sign, term = terms[0]
    combination = _norm(term, pair)
    if combination is None:
        return SOME_DRAWS
    a, b = combination
    up = direction * sign > 0  # the max of the norm
    if a == -b:
        return NEVER if up else EVERY_DRAW
    return EVERY_DRAW if up and a * b > 0 else SOME_DRAWS


def _dot(term: Node, pair: tuple[str, str]) -> float | None:
    """c when ``term`` is c x[s].x[t] (either order), else None."""
    if not (isinstance(term, Apply) and term.fn == "dot"):
        return None
    left, right = (_multiple(arg) for arg in term.args)
    if left is None or right is None or {left[0], right[0]} != set(pair):
        return None
    return left[1] * right[1]


def _norm(term: Node, pair: tuple[str, str]) -> tuple[float, float] | None:
    """(a, b) when ``term`` is the norm (or squared norm) of a x[s] + b x[t], else None."""
    if not (isinstance(term, Apply) and term.fn in NORMS):
        return None
    found = _combination(term.args[0])
    if found is None or set(found) != set(pair):
        return None
    return found[pair[0]], found[pair[1]]


def _combination(node: Node) -> dict[str, float] | None:
    """{index: coefficient} when ``node`` is a sum of multiples of whole tokens x[i]."""
    if isinstance(node, Apply) and node.fn in ("+", "-"):
        left, right = (_combination(arg) for arg in node.args)
        if left is None or right is None:
            return None
        sign = 1 if node.fn == "+" else -1
        for index, c in right.items():
            left[index] = left.get(index, 0) + sign * c
        return {index: c for index, c in left.items() if c}
    found = _multiple(node)
    return None if found is None else {found[0]: found[1]}


def _multiple(node: Node) -> tuple[str, float] | None:
    """(i, c) when ``node`` is c x[i] (a whole token at its own index), else None."""
    if isinstance(node, Token):
        whole = isinstance(node.index, str) and not node.component and not node.offset
        return (node.index, 1.0) if whole and not node.is_fixed else None
    if isinstance(node, Apply) and node.fn == "neg":
        found = _multiple(node.args[0])
        return None if found is None else (found[0], -found[1])
    if isinstance(node, Apply) and node.fn in ("*", "/"):
        left, right = node.args
        if node.fn == "*" and isinstance(left, Const):
            left, right = right, left
        if isinstance(right, Const) and right.value:
            found = _multiple(left)
            scale = right.value if node.fn == "*" else 1 / right.value
            return None if found is None else (found[0], found[1] * scale)
    return None
