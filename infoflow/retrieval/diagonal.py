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
- ``rarely``: some draws, but the diagonal sits on the extremum's losing side by the form of
  the score: dot products whose diagonal c |x|^2 the extremum runs from (the min of a dot
  product, whose diagonal |x(s)|^2 >= 0 is the minimum only when every other pair scores
  higher), beside linear terms f(s) + f(t) (q.x(s): they only shift the tokens; another
  f, |x(s)|^2 say, brings the diagonal's 2 f(s) back: ``often``), or the max of a norm of
  a x[s] + b x[t] with a b < 0
  (the diagonal |a + b| |x| is shorter than the pairs' typical length). Measured on random
  draws, the share it decides falls fast with T (docs/retrieval.md, "Positions");
- ``often``: anything else, or a score not recognised here (a bilinear form of a parameter,
  whose diagonal takes either sign, the min of a norm of a sum): a share of draws that falls
  about as 1/T.

Recognised scores: ``dot`` terms of two token multiples, beside terms of one index each
that are the same for both (f(s) + f(t), which leave g(a, a) + g(b, b) - 2 g(a, b)
unchanged), or one ``norm``/``sqnorm`` of a x[s] + b x[t]; the rest is ``some draws``.

An order test between the two indices of a max or min whose score is symmetric in them
reads no position: ``s < t`` is ``s != t`` and ``s <= t`` is every pair, the same function
(:func:`unordered`); and the max over s != t of f(s) + f(t) is the largest f plus the second
largest (:func:`separable_pair`). Both are ``reconstruction:canonical_form``.
"""

from __future__ import annotations

from dataclasses import replace

from infoflow.retrieval.algebra import (
    EXTREMUM,
    collected,
    free_indices,
    names,
    normal,
    rebuilt,
    rename,
    terms,
)
from infoflow.retrieval.expression import (
    Apply,
    Condition,
    Const,
    Node,
    Param,
    Reduce,
    Token,
    Variable,
)
from infoflow.retrieval.weighted_pairs import unequal_weights

EVERY_DRAW, NEVER, RARELY, OFTEN = "every draw", "never", "rarely", "often"
#: The classes each reading of the option charges (needs PE for, else global aggregation).
CHARGED = {
    "decisive": (EVERY_DRAW,),
    "often": (EVERY_DRAW, OFTEN),
    "always": (EVERY_DRAW, OFTEN, RARELY),
    "never": (),
}
NORMS = ("norm", "sqnorm")
ORDERS = {"<": "!=", ">": "!=", "<=": None, ">=": None}  # what each reads as, unordered
#: The end each reduction counts from: a k-th largest over t != s of a token's scores is off
#: by one rank wherever the token itself ranks above it, as a max is wherever it is the top.
DIRECTION = {**EXTREMUM, "kth_largest": 1, "kth_smallest": -1}


def unordered(op: str, conditions: list, is_symmetric) -> list:
    """``conditions`` ((condition, scope)) of a max or min over a pair with each order test
    between its two token indices that no other condition names, over a score symmetric in
    the two (``is_symmetric(pair)`` of their names), read unordered: ``s < t`` as
    ``s != t``, ``s <= t`` dropped (an argmax's value is the ordered pair: kept)."""
    if op not in ("max", "min"):
        return conditions
    out = []
    for written, env in conditions:
        c = _unshifted(written)
        pair = _pair(c, env) if c.op in ORDERS and not c.shift else None
        alone = pair is not None and not any(
            _names(d, e) & set(pair) for d, e in conditions if d is not written
        )
        if not (alone and is_symmetric(pair)):
            out.append((c, env))
        elif ORDERS[c.op]:
            out.append((replace(c, op=ORDERS[c.op]), env))
    return out


def unordered_reduce(node: Reduce) -> Reduce:
    """:func:`unordered` on a reduction as written, over both indices of ``node`` or, for
    ``max(max(f for t in T if t > s) for s in T)``, of ``node`` and the one it holds, so
    that the rewrites after it see the pair unordered (``min(f(s) + f(t) ... if s <= t)`` is
    ``2 min f``)."""
    inner = _held(node)
    if inner is not None:
        env = {v.name: v for v in (*node.variables, *inner.variables)}
        found = unordered(
            node.op, [(c, env) for c in inner.conditions], lambda p: _symmetric(inner.body, p)
        )
        return replace(node, body=replace(inner, conditions=tuple(c for c, _ in found)))
    env = {v.name: v for v in node.variables}
    found = unordered(
        node.op, [(c, env) for c in node.conditions], lambda p: _symmetric(node.body, p)
    )
    return replace(node, conditions=tuple(c for c, _ in found))


def unordered_sum(node: Reduce) -> Node:
    """A sum over s < t of a score symmetric in s and t is half the sum over s != t; over
    s <= t, half the sum over every pair plus half the diagonal's (which one token index
    pools). Only the pair's test alone; any other reduction is returned as it is."""
    if node.op != "sum":
        return node
    inner = _held(node)
    if inner is not None:  # sum(sum(f for t in T if t < s) for s in T): one sum over the pair
        variables = (*node.variables, *inner.variables)
        node = replace(node, variables=variables, body=inner.body, conditions=inner.conditions)
    if len(node.variables) != 2 or len(node.conditions) != 1:
        return node
    c = _unshifted(node.conditions[0])
    env = {v.name: v for v in node.variables}
    pair = _pair(c, env) if c.op in ORDERS and not c.shift else None
    if pair is None or not _symmetric(node.body, pair):
        return node
    half = Const(0.5)
    if ORDERS[c.op]:  # s < t
        return Apply("*", (half, replace(node, conditions=(replace(c, op="!="),))))
    s, t = pair
    diagonal = Reduce("sum", (env[s],), rename(node.body, {t: s}))
    every = Apply("*", (half, replace(node, conditions=())))
    return Apply("+", (every, Apply("*", (half, diagonal))))


def separable_pair(node: Reduce) -> Node:
    """``max(f(x[s]) + f(x[t]) for s in T for t in T if s != t)`` as what it is, the largest
    f plus the second largest: ``max f + kth_largest(f, k=2)`` (a min: the smallest and the
    second smallest); with f(s) - f(t), the pair without ``s != t`` (max f - min f, which the
    diagonal's 0 never reaches). Also spelled ``max(max(... for t in T if t != s) for s in
    T)``; any other reduction is returned as it is."""
    inner = _held(node)
    variables = (*node.variables, *inner.variables) if inner else node.variables
    conditions, body = (inner.conditions, inner.body) if inner else (node.conditions, node.body)
    if node.op not in ("max", "min") or len(variables) != 2 or len(conditions) != 1:
        return node
    (test,), (s, t) = conditions, (v.name for v in variables)
    if not all(v.is_token for v in variables) or test.op != "!=" or test.shift:
        return node
    if {test.left, test.right} != {s, t} or names(body):
        return node
    split: dict[str | None, list] = {s: [], t: [], None: []}
    for coefficient, term in terms(body):
        reads = free_indices(term) & {s, t} if term is not None else set()
        if len(reads) > 1:
            return node
        split[reads.pop() if reads else None].append((coefficient, term))
    if split[s] and _antisymmetric(split[s] + split[t], (s, t)):  # max f - min f
        if inner is not None:
            return replace(node, body=replace(inner, conditions=()))
        return replace(node, conditions=())
    if not split[s] or not _same_for_both(split[s] + split[t], (s, t)):
        return unequal_weights(node, split, (s, t))  # f(s) + 2 f(t): 2 max f + the 2nd
    f = rebuilt(collected(split[s]))
    kth = "kth_largest" if node.op == "max" else "kth_smallest"
    one = Variable(s)
    out = Apply("+", (Reduce(node.op, (one,), f), Reduce(kth, (one,), f, (), 2)))
    return Apply("+", (out, rebuilt(collected(split[None])))) if split[None] else out


def _unshifted(c: Condition) -> Condition:
    """An order test with the shift that makes it the other one, without it: s <= t - 1 is
    s < t, s < t + 1 is s <= t."""
    flips = {("<=", -1): "<", ("<", 1): "<=", (">=", 1): ">", (">", -1): ">="}
    op = flips.get((c.op, c.shift))
    return replace(c, op=op, shift=0) if op else c


def _held(node: Reduce) -> Reduce | None:
    """The reduction ``node`` holds as its whole body when the two are one over a pair
    (``max(max(f for t in T if ...) for s in T)``); None otherwise."""
    inner = node.body
    if isinstance(inner, Reduce) and inner.op == node.op and not node.conditions:
        return inner
    return None


def _pair(c: Condition, env: dict[str, Variable]) -> tuple[str, str] | None:
    """The unique names of the two token indices ``c`` compares (None: not two tokens)."""
    sides = [env.get(s) if isinstance(s, str) else None for s in (c.left, c.right)]
    if not all(v is not None and v.is_token for v in sides):
        return None
    return sides[0].name, sides[1].name


def _names(c: Condition, env: dict[str, Variable]) -> set[str]:
    return {env[s].name for s in (c.left, c.right) if isinstance(s, str) and s in env}


def _symmetric(body: Node, pair: tuple[str, str]) -> bool:
    """Whether ``body``, which reads the two indices of ``pair`` and no reduction, is the
    same function after swapping them: its terms with their exact coefficients, commutative
    arguments and the sign inside an even function in any order."""
    if names(body) or not free_indices(body) & set(pair):
        return False
    a, b = pair
    found = [(c, normal(t)) for c, t in terms(body) if t is not None]
    swapped = [(c, normal(rename(t, {a: b, b: a}))) for c, t in terms(body) if t is not None]
    return sorted(map(repr, found)) == sorted(map(repr, swapped))


def excludes(
    option: str,
    op: str,
    c: Condition,
    env: dict[str, Variable],
    terms: list,
    own: set[str],
    binders: dict[str, str],
    far_end: bool = False,
) -> bool:
    """Whether ``c`` is an ``s != t`` whose left-out pair (s, s) decides the extremum (or
    k-th) ``op`` over ``terms`` ((term, its scope, its coefficient)), as ``option`` reads it
    (:data:`CHARGED`): ``decisive`` when it does on every draw, ``often`` unless it never
    does or only rarely, ``always`` unless it never does, ``never`` not at all. ``own`` are
    the reduction's indices, ``binders`` the op of the reduction that binds each index: a
    token's own best partner (s bound outside, ``max(... for t in T if t != s)``) decides
    every draw's value only when every token's counts (s bound by a sum); under another
    reduction the token the diagonal changes may not be the one it keeps (often). A k-th
    counted from its ``far_end`` runs the other way (the k-th largest of n at k = n is the
    min)."""
    direction = DIRECTION.get(op)
    if not CHARGED[option] or direction is None or c.op != "!=" or c.shift:
        return False
    pair = _pair(c, env)
    if pair is None:
        return False
    touching = []
    for term, scope, coefficient in terms:
        mapping = {u: v.name for u, v in scope.items()}
        if {mapping.get(u, u) for u in free_indices(term)} & set(pair):
            touching.append((coefficient, None if names(term) else rename(term, mapping)))
    outside = {binders.get(name) for name in pair if name not in own}
    if not outside and _antisymmetric(touching, pair):
        return NEVER in CHARGED[option]  # max f - min f: the diagonal's 0 lies between
    found = role(-direction if far_end else direction, touching, pair)
    if found == EVERY_DRAW and outside - {"sum"}:
        found = OFTEN
    return found in CHARGED[option]


def role(direction: int, terms: list[tuple[float, Node | None]], pair: tuple[str, str]) -> str:
    """How the diagonal of ``pair`` decides an extremum of ``direction`` (1 max, -1 min) over
    the additive ``terms`` (coefficient, term; None: one not read here) of its score that
    read either index, by those names. Terms of one index each, the same for both, add
    nothing to the verdict of the pair's own terms: g(a, a) + g(b, b) - 2 g(a, b) does not
    change."""
    if any(term is None for _, term in terms):
        return OFTEN
    reads = [len(free_indices(term) & set(pair)) for _, term in terms]
    singles = [t for t, n in zip(terms, reads, strict=True) if n == 1]
    both = [t for t, n in zip(terms, reads, strict=True) if n == 2]
    if singles and not _same_for_both(singles, pair):
        return OFTEN
    dots = [dot_coefficient(term, pair) for _, term in both]
    if all(d is not None for d in dots):
        total = sum(c * d for (c, _), d in zip(both, dots, strict=True))
        if direction * total > 0 or (singles and not total):
            return EVERY_DRAW
        # the extremum runs from the diagonal c |x|^2, and linear f(s) + f(t) only shift the
        # tokens (q.x(s) + q.x(t) + x(s).x(t) = (x(s) + q).(x(t) + q) - |q|^2); another f
        # brings the diagonal's 2 f(s) back (the min of |x(s)|^2 + |x(t)|^2 + 2 x(s).x(t))
        linear = all(_linear(term) for _, term in singles)
        if _distance(singles, total, direction):
            return NEVER  # the max of a |x(s) - x(t)|^2 spelled out: 0 on the diagonal
        return RARELY if direction * total < 0 and linear else OFTEN
    if len(both) != 1 or singles:
        return OFTEN
    coefficient, term = both[0]
    combination = norm_coefficients(term, pair)
    if combination is None:
        return OFTEN
    a, b = combination
    up = direction * coefficient > 0  # the max of the norm
    if a == -b:
        return NEVER if up else EVERY_DRAW
    if a * b > 0:
        return EVERY_DRAW if up else OFTEN
    return RARELY if up else OFTEN


def _distance(singles: list, total: float, direction: int) -> bool:
    """Whether singles a |x(s)|^2 + a |x(t)|^2 beside total x(s).x(t) = -2a x(s).x(t) make
    a |x(s) - x(t)|^2, and the extremum runs up it (a max with a > 0, a min with a < 0)."""
    squares = [c for c, term in singles if _square(term)]
    if len(squares) != 2 or len(singles) != 2 or squares[0] != squares[1]:
        return False
    return total == -2 * squares[0] and direction * squares[0] > 0


def _square(term: Node) -> bool:
    """Whether ``term`` is |x[i]|^2 of one whole token: sqnorm(x[i]) or dot(x[i], x[i])."""
    if not isinstance(term, Apply) or term.fn not in ("sqnorm", "dot"):
        return False
    found = [_multiple(a) for a in term.args]
    if any(f is None or f[1] != 1 for f in found):
        return False
    return term.fn == "sqnorm" or found[0] == found[1]


def _linear(term: Node) -> bool:
    """Whether ``term`` is linear in one whole token: q.x[i] or q^T A x[i] for parameters q
    and A, or x[i][k]."""
    if isinstance(term, Token):
        return term.component != () and _multiple(replace(term, component=())) is not None
    if isinstance(term, Apply) and term.fn in ("dot", "bilinear"):
        tokens = [a for a in term.args if _multiple(a) is not None]
        return len(tokens) == 1 and all(isinstance(a, Param) or a in tokens for a in term.args)
    return False


def _antisymmetric(terms: list[tuple[float, Node | None]], pair: tuple[str, str]) -> bool:
    """Whether the score is f(s) - f(t) for one f: every term reads one index of ``pair``,
    and t's are s's negated. Over the pair (both bound by one max or min) its diagonal, 0,
    lies between its min and its max and decides nothing; a token's own race over t is
    another matter (its diagonal wins where f(s) is the least), so only the pair's."""
    if not terms or any(t is None or len(free_indices(t) & set(pair)) != 1 for _, t in terms):
        return False
    a, _ = pair
    return _same_for_both([(c if a in free_indices(t) else -c, t) for c, t in terms], pair)


def _same_for_both(singles: list, pair: tuple[str, str]) -> bool:
    """Whether the terms of one index each are f(s) + f(t) for one f."""
    a, b = pair
    mine = [repr((c, normal(t))) for c, t in singles if a in free_indices(t)]
    theirs = [repr((c, normal(rename(t, {b: a})))) for c, t in singles if b in free_indices(t)]
    return sorted(mine) == sorted(theirs)


def dot_coefficient(term: Node, pair: tuple[str, str]) -> float | None:
    """c when ``term`` is c x[s].x[t] (either order), else None."""
    if not (isinstance(term, Apply) and term.fn == "dot"):
        return None
    left, right = (_multiple(arg) for arg in term.args)
    if left is None or right is None or {left[0], right[0]} != set(pair):
        return None
    return left[1] * right[1]


def norm_coefficients(term: Node, pair: tuple[str, str]) -> tuple[float, float] | None:
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
