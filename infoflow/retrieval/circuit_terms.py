"""A target -> the sum of terms compile builds, each with its coefficient and the op its
reduction is written with: a stage of :mod:`~infoflow.retrieval.schedule_to_circuit`.

Constant factors come out of reductions (:func:`~.circuit_forms.unscaled`: max(-2 f) is
-2 min f), and so does a constant added to a score (max(f + c) is max f + c; an argmax does
not move; a sum over n tuples adds n c); a separable pair becomes its parts as the engine
plans it; a sum over a range index is one term per value; equal terms are one, with the sum
of their coefficients. The op the engine plans is kept beside each term, and
:mod:`.circuit_layout` pairs the terms with the engine's comparisons by it: a k-th as written
(kth_largest(-f) is a kth_largest there), a max or min of one scaled term factored as the
engine's rewrite factors it (max(-f) is -min f there too, since 2026-12-06).
"""

from __future__ import annotations

import functools
from dataclasses import replace
from fractions import Fraction

from infoflow.retrieval import circuit_forms as forms
from infoflow.retrieval.algebra import factored, key, normal, product_factors, terms
from infoflow.retrieval.circuit_forms import Unbuildable
from infoflow.retrieval.circuit_sums import counted_sums
from infoflow.retrieval.diagonal import separable_pair, unordered_reduce
from infoflow.retrieval.expression import KTH, Apply, Const, Node, Param, Reduce
from infoflow.retrieval.infinite_values import tuples

EXTREMA = ("max", "min")
ARGS = ("argmax", "argmin")

#: A term: its exact coefficient, the term, and the op its reduction is written with ("" if
#: none).
Term = tuple[Fraction, Node, str]


def terms_of(tree: Node, seq_len: int) -> list[Term]:
    """The target's terms at T = ``seq_len`` (a sum over the tokens of f + c is the sum of f
    plus T c; a sum's indices it does not read counted: :func:`~.circuit_sums.counted_sums`),
    equal ones merged (:func:`merged`)."""
    return merged(_terms(counted_sums(tree, seq_len), seq_len))


def merged(terms: list[Term]) -> list[Term]:
    """Equal terms (up to the names of their indices and the order of commutative
    arguments: :func:`~.algebra.key`, :func:`~.algebra.normal`) as one, with the sum of their
    coefficients, as the engine plans them; terms that cancel are dropped."""
    found: dict[Node, list] = {}
    for coefficient, term, written in terms:
        same = found.setdefault(normal(key(term)), [Fraction(0), term, written])
        same[0] += coefficient
    kept = [(c, term, written) for c, term, written in found.values() if c]
    if not kept:
        raise Unbuildable("the target's terms cancel: it is 0 on every draw")
    return kept


def _terms(node: Node, seq_len: int, sign: Fraction = Fraction(1), written: str = "") -> list[Term]:
    """``node`` as a sum of terms (coefficient, term, the op the engine plans) at T =
    ``seq_len``."""
    pieces = forms.signed_terms(node, sign)
    if pieces != [(sign, node)]:
        return [t for s, piece in pieces for t in _terms(piece, seq_len, Fraction(s))]
    factor, inner = product_factors(node)
    if len(inner) == 1 and factor != 1 and len(forms.signed_terms(inner[0])) > 1:
        return _terms(inner[0], seq_len, sign * factor)  # c (a - b): the engine's s < t halves
    value = _constant(node)
    if value is not None:  # 1, 2 * 3, 1 / 2
        return [(sign * value, Const(1), "")]
    scale, inner = forms.unscaled(node)
    if (scale, inner) != (1, node):
        as_written = forms.scaled(node)[1]
        if isinstance(as_written, Reduce):  # max(-f) is -min f there too, a k-th as written
            as_written = factored(as_written)[1]
        op = written or (as_written.op if isinstance(as_written, Reduce) else "")
        return _terms(inner, seq_len, sign * scale, op) if scale else []
    shift, inner = _shifted(node, seq_len)
    if inner is not node:  # max(f + c) is max f + c; an argmax does not move
        moved = [] if node.op in ARGS or not shift else [(sign * shift, Const(1), "")]
        return moved + _terms(inner, seq_len, sign, written)
    if isinstance(node, Reduce) and node.op in EXTREMA:
        pair = separable_pair(unordered_reduce(node))  # max f + the 2nd largest, as planned
        if pair is not node and not isinstance(pair, Reduce):
            return _terms(pair, seq_len, sign)
    if (
        isinstance(node, Reduce)
        and node.op == "sum"
        and not any(v.is_token for v in node.variables)
    ):
        if len(node.variables) != 1 or node.conditions:
            raise Unbuildable("a sum over range indices is built for one index without conditions")
        var = node.variables[0]
        bound = [_bind(node.body, var.name, i) for i in range(var.size)]
        return [t for body in bound for t in _terms(body, seq_len, sign)]
    return [(sign, node, written or (node.op if isinstance(node, Reduce) else ""))]


def _shifted(node: Node, seq_len: int) -> tuple[Fraction, Node]:
    """(c, the reduction without its constants) for a max, min, k-th, argmax or argmin whose
    score adds constants summing to c (as the engine's canonical form takes them out), or for
    a sum over n tuples of a score adding b, c = n b (n counted at T = ``seq_len``, the
    tuples its conditions and neighbour reads leave: :func:`~.infinite_values.tuples`; not
    where they depend on an enclosing index); (0, node) when it adds none."""
    if not isinstance(node, Reduce) or node.op not in (*EXTREMA, *ARGS, *KTH, "sum"):
        return Fraction(0), node
    count = 1 if node.op != "sum" else tuples(node, seq_len)
    if count is None:  # not one number: it depends on an enclosing index (or not counted)
        return Fraction(0), node
    shift, body = _shifted(node.body, seq_len)  # max over s of (the 2nd over t of f + c)
    if body is not node.body:  # ... is ... + c; an argmax does not move
        return (Fraction(0) if node.op in ARGS else count * shift), replace(node, body=body)
    pieces = [(s, p, _constant(p)) for s, p in forms.signed_terms(node.body)]
    rest = [p if s > 0 else Apply("neg", (p,)) for s, p, value in pieces if value is None]
    if len(rest) == len(pieces):  # a factor over a score and a constant: max(2 * (f + 1))
        found = terms(node.body)
        scores = [(c, term) for c, term in found if term is not None]
        if len(scores) != 1 or len(found) == 1:
            return Fraction(0), node
        (c, term), shift = scores[0], sum((c for c, t in found if t is None), Fraction(0))
        return count * shift, replace(node, body=Apply("*", (Const(float(c)), term)))
    if not rest:
        return Fraction(0), node
    shift = sum((s * value for s, _, value in pieces if value is not None), Fraction(0))
    body = functools.reduce(lambda a, b: Apply("+", (a, b)), rest)
    return count * shift, replace(node, body=body)


def _constant(node: Node) -> Fraction | None:
    """The value of ``node`` when it is a number (``1``, ``2 * 3``, ``1 / 2``); else None."""
    found = terms(node)
    if not found or any(term is not None for _, term in found):
        return None
    return sum((c for c, _ in found), Fraction(0))


def _bind(node: Node, name: str, value: int) -> Node:
    """``node`` with the range index ``name`` fixed to ``value`` in parameter indices."""
    if isinstance(node, Param):
        return Param(node.name, tuple(value if i == name else i for i in node.index))
    if isinstance(node, Apply):
        return Apply(node.fn, tuple(_bind(a, name, value) for a in node.args))
    if isinstance(node, Reduce):
        return replace(node, body=_bind(node.body, name, value))
    return node
