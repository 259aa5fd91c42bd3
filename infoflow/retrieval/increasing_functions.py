"""Expression -> expression: a max, min or k-th of a nondecreasing function of a score is that
function of the score's max, min or k-th, a rewrite before the canonical form
(:mod:`~infoflow.retrieval.expression_rewrite`; ``reconstruction:canonical_form``).

``max(exp(dot(q, x[t])) for t in T)`` is ``exp(max(dot(q, x[t]) for t in T))``: the same
token wins, so the same retrieval finds it. A norm is the root of the squared norm, so
``max(norm(v) for ...)`` is ``sqrt(max(sqnorm(v) for ...))``: the max of the norm beside the
max of the squared norm is one retrieval (two heads were planned before 2026-12-07, one per
spelling), and a self-exclusion reads the score the function wraps (``min(exp(dot(x[s],
x[t])) for t != s)`` as ``dot``'s).

A reduction that is an additive term of one it flattens into (a max term of a max, a min
subtracted inside a max: :func:`~infoflow.retrieval.algebra.flattens`) keeps its function:
taken out, the canonical form could not join the two, and a spelling nested one level deeper
than another would be planned with a comparison more. The rewrite runs on the rewritten
expression, and the rewrites run again where it changed something (a max over pairs of
exp(dot) is then the diagonal's, :mod:`.diagonal_extrema`).

Nondecreasing functions defined everywhere (:data:`INCREASING`; a norm's root, of a squared
norm) commute with a max, a min and a k-th, ties included, over a range that is never
empty: an empty max is -inf, and exp(-inf) = 0 is not -inf. So the reduction runs over
token indices read at no offset, with no condition or one ``!=`` (empty only at T = 1,
where the target has no value and is refused: :mod:`.domains`). An argmax keeps its
function (tanh saturates: ties the score does not have). ``relu`` stays: a max of it is a
pointwise max with 0, one reduction a branch
(:func:`~infoflow.retrieval.separable.pointwise_pieces`), which compile builds.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from infoflow.retrieval.algebra import flattens, one_norm, reads
from infoflow.retrieval.expression import KTH, Apply, Const, Node, Reduce

#: The nondecreasing functions taken out of a max, min or k-th: defined everywhere (``log``
#: and ``sqrt`` are not: a max of log(f) is nan where one f < 0, and log(max f) may not be).
INCREASING = ("exp", "tanh")
_REDUCTIONS = ("max", "min", *KTH)


def taken_out(node: Node, around: str | None = None, sign: int = 1) -> Node:
    """``node`` with every max, min or k-th of a nondecreasing function taken out (the
    module's docstring); ``around``: the op of the reduction ``node`` is an additive term of
    (with ``sign``), None where it is not one. The node itself where nothing changed."""
    if isinstance(node, Reduce):
        body = taken_out(node.body, node.op)
        node = node if body is node.body else replace(node, body=body)
        return node if around and flattens(around, sign, node) else _outside(node)
    if not isinstance(node, Apply):
        return node
    signs = _signs(node) if around else None
    if signs is None:
        args = tuple(taken_out(a) for a in node.args)
    else:
        args = tuple(taken_out(a, around, sign * s) for a, s in zip(node.args, signs, strict=True))
    return (
        node if all(a is b for a, b in zip(args, node.args, strict=True)) else Apply(node.fn, args)
    )


def _outside(node: Reduce) -> Node:
    """``g(reduction of h)`` for a max, min or k-th whose whole body is ``g(h)``, ``g``
    nondecreasing (``norm(v)`` read as ``sqrt(sqnorm(v))``), over a range never empty;
    else ``node``."""
    body = node.body
    if node.op not in _REDUCTIONS or not isinstance(body, Apply) or not _never_empty(node):
        return node
    if body.fn == "norm":
        return Apply("sqrt", (replace(node, body=Apply("sqnorm", body.args)),))
    if body.fn in INCREASING and len(body.args) == 1:
        return Apply(body.fn, (_outside(replace(node, body=body.args[0])),))
    return node


def put_back(node: Node) -> Node:
    """``node`` with every nondecreasing function of a max, min or k-th over a range never
    empty put back into it (``sqrt(max(sqnorm(v)))`` is ``max(norm(v))``): the reading
    compile builds, whose mechanisms rank tokens by a score and decode it (a norm's root)."""
    if isinstance(node, Reduce):
        return replace(node, body=put_back(node.body))
    if not isinstance(node, Apply):
        return node
    node = Apply(node.fn, tuple(put_back(a) for a in node.args))
    inner = node.args[0] if len(node.args) == 1 else None
    if not isinstance(inner, Reduce) or inner.op not in _REDUCTIONS or not _never_empty(inner):
        return node
    rooted = node.fn == "sqrt" and isinstance(inner.body, Apply) and inner.body.fn == "sqnorm"
    if node.fn not in INCREASING and not rooted:
        return node
    return replace(inner, body=one_norm(Apply(node.fn, (inner.body,))))


def _signs(node: Apply) -> tuple[int, ...] | None:
    """The sign each argument of an additive node carries into the sum (a constant factor's
    sign for a product or quotient by a number); None where the arguments are not terms."""
    args = node.args
    if node.fn == "+":
        return (1, 1)
    if node.fn == "-":
        return (1, -1)
    if node.fn == "neg":
        return (-1,)
    if node.fn in ("*", "/") and isinstance(args[1], Const) and args[1].value:
        return (1 if Fraction(str(args[1].value)) > 0 else -1, 1)
    if node.fn == "*" and isinstance(args[0], Const) and args[0].value:
        return (1, 1 if Fraction(str(args[0].value)) > 0 else -1)
    return None


def _never_empty(node: Reduce) -> bool:
    """Token indices only, each read at no offset, and no condition or one ``!=`` (the
    module's docstring; a neighbour read, ``x[t-1]`` beside ``x[t]``, or a range index
    left the max over t != s empty at some s: a review)."""
    if not all(v.is_token and reads(node.body, v.name) <= {0} for v in node.variables):
        return False
    return not node.conditions or (len(node.conditions) == 1 and node.conditions[0].op == "!=")
