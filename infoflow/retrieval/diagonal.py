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
"""

from __future__ import annotations

from infoflow.retrieval.algebra import EXTREMUM, free_indices, names, rename
from infoflow.retrieval.expression import Apply, Condition, Const, Node, Token, Variable

EVERY_DRAW, NEVER, SOME_DRAWS = "every draw", "never", "some draws"
NORMS = ("norm", "sqnorm")


def excludes(option: str, op: str, c: Condition, env: dict[str, Variable], terms: list) -> bool:
    """Whether ``c`` is an ``s != t`` whose left-out pair (s, s) decides the extremum ``op``
    over ``terms`` ((term, its scope, its sign)), as ``option`` reads it: ``decisive`` when
    it does on every draw, ``always`` unless it never does, ``never`` not at all."""
    if option == "never" or op not in EXTREMUM or c.op != "!=" or c.shift:
        return False
    sides = [env.get(s) if isinstance(s, str) else None for s in (c.left, c.right)]
    if not all(v is not None and v.is_token for v in sides):
        return False
    pair = (sides[0].name, sides[1].name)
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
