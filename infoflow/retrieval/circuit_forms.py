"""Reading a target's terms as the forms compile builds: a score linear in one token
(``dot(q, x[t])``, ``x[t][j]``), a bilinear one between two (``dot``, ``bilinear``), the norm
of a sum or difference of two; and the words compile refuses a term with."""

from __future__ import annotations

import operator
from fractions import Fraction

from infoflow.retrieval.algebra import free_indices, product_factors, terms
from infoflow.retrieval.diagonal import norm_coefficients
from infoflow.retrieval.expression import (
    KTH,
    SEQUENCE,
    Apply,
    Condition,
    Const,
    Node,
    Param,
    Reduce,
    Token,
)
from infoflow.retrieval.mechanisms.kth import rank


class Unbuildable(ValueError):
    """A term compile does not build, with the reason."""


def signed_terms(node: Node, sign: int = 1) -> list[tuple[int, Node]]:
    """``node`` as a sum of signed terms: ``a + b - c`` and ``-(a)`` taken apart."""
    if isinstance(node, Apply) and node.fn == "+":
        return [t for arg in node.args for t in signed_terms(arg, sign)]
    if isinstance(node, Apply) and node.fn == "-" and len(node.args) == 2:
        return signed_terms(node.args[0], sign) + signed_terms(node.args[1], -sign)
    if isinstance(node, Apply) and node.fn == "neg":
        return signed_terms(node.args[0], -sign)
    return [(sign, node)]


#: The op a reduction of a score scaled by a negative number becomes.
FLIPPED = {
    "max": "min",
    "min": "max",
    "argmax": "argmin",
    "argmin": "argmax",
    "kth_largest": "kth_smallest",
    "kth_smallest": "kth_largest",
    "sum": "sum",
}


def scaled(node: Node) -> tuple[Fraction, Node]:
    """(c, n) with ``node`` = c * n: constant factors (``2 * f``, ``f / 2``, ``-f``,
    ``dot(2 * x[s], x[t])``) taken out (:func:`~infoflow.retrieval.algebra.terms`); (1, node)
    when ``node`` is not one term. Exact."""
    found = terms(node)
    if len(found) != 1 or found[0][1] is None:
        return Fraction(1), node
    return found[0][0], found[0][1]


def unscaled(node: Node) -> tuple[Fraction, Node]:
    """(c, n) with ``node`` = c * n, a constant factor of a reduction's score taken out of
    it (nested reductions too): max(2 f) is 2 max f, max(-f) is -min f, argmax(-f) is
    argmin f (a position: c stays 1), kth_largest(-f) is -kth_smallest f."""
    c, inner = scaled(node)
    if not isinstance(inner, Reduce) or inner.op not in FLIPPED:
        return c, inner
    k, body = unscaled(inner.body)
    if k == 1 and body == inner.body:
        return c, inner
    op = FLIPPED[inner.op] if k < 0 else inner.op
    found = Reduce(op, inner.variables, body, inner.conditions, inner.k)
    return (c if inner.op.startswith("arg") else c * k), found


def one_offset(term: Node, var: str, offsets: set[int]) -> int:
    """The one offset at which ``term`` reads x[var]; refused naming how it reads it where
    that is at none or at several (the refusal said "at one offset" for both: a review)."""
    if len(offsets) == 1:
        return next(iter(offsets))
    if not offsets:
        raise Unbuildable(f"{text(term)}: {var} indexes no token; compile retrieves one it reads")
    shown = ", ".join(f"{o:+d}" for o in sorted(offsets))
    raise Unbuildable(f"{text(term)}: {var} is read at {len(offsets)} offsets ({shown}), not one")


def linear(node: Node, var: str) -> str:
    """The matrix of a score linear in ``x[var]``: ``dot(q, x[t])``, ``x[t][j]``, ``x[t]``,
    or a combination of scalar ones (``dot(p - q, x[t])``, ``x[t][0] + dot(q, x[t])``:
    :func:`combined`)."""
    found = _atoms(node, lambda atom: [(1, _linear_atom(atom, var))])
    if len(found) > 1 and any(matrix == "I" for _, matrix in found):
        raise Unbuildable(f"{text(node)}: a vector beside a scalar in one score")
    return combined(found)


def _atoms(node: Node, read) -> list[tuple[Fraction, str]]:
    """``node``'s additive terms (:func:`~infoflow.retrieval.algebra.terms`), each read by
    ``read`` as a weighted sum of matrices: (exact coefficient, matrix) pairs; a constant
    term is refused."""
    found = terms(node)
    if any(term is None for _, term in found):
        raise Unbuildable(f"{text(node)}: a constant inside a score (take it out of the reduction)")
    return [(c * k, matrix) for c, term in found for k, matrix in read(term)]


def combined(found: list[tuple[Fraction, str]]) -> str:
    """One matrix name for a weighted sum of matrices: the matrix itself when it is one with
    coefficient 1, else ``"c*M + c*M"`` (the matrices sorted, equal ones merged exactly),
    which the weights read as that sum."""
    merged: dict[str, Fraction] = {}
    for c, matrix in found:
        merged[matrix] = merged.get(matrix, Fraction(0)) + c
    kept = sorted((m, c) for m, c in merged.items() if c)
    if not kept:
        raise Unbuildable("the score's terms cancel: it is 0 on every draw")
    if len(kept) == 1 and kept[0][1] == 1:
        return kept[0][0]
    return " + ".join(f"{float(c)!r}*{m}" for m, c in kept)


def _linear_atom(node: Node, var: str) -> str:
    if isinstance(node, Token) and node.index == var and not node.offset:
        if not node.component:
            return "I"
        if len(node.component) == 1 and isinstance(node.component[0], int):
            return f"e:{node.component[0]}"
    if isinstance(node, Apply) and node.fn == "dot" and len(node.args) == 2:
        a, b = node.args
        param, token = (a, b) if isinstance(a, Param) else (b, a)
        if isinstance(param, Param) and isinstance(token, Token) and _plain(token, var):
            return _reference(param)
        reads = [isinstance(arg, Token) and _plain(arg, var) for arg in node.args]
        if all(isinstance(arg, Token) for arg in node.args) and sum(reads) == 1:  # (a fuzz)
            raise Unbuildable(
                f"{text(node)}: a score against another token is not built as a linear score "
                f"of x[{var}]: its query must be a parameter (dot(q, x[{var}]))"
            )
    raise Unbuildable(f"{text(node)} is not a linear score of x[{var}] (dot(q, x[{var}]))")


def kth_form(term: Reduce, seq_len: int) -> tuple[str, int, int]:
    """(matrix, direction, rank) of a k-th over one token of a linear score M x(t), as the
    peel runs it: the rank from the nearer end, and the direction +1 or -1 its rounds
    maximise (direction * M x(t)): +1 from the largest end."""
    matrix = linear(term.body, term.variables[0].name)
    if matrix == "I":
        raise Unbuildable(f"{text(term)}: the k-th of a vector")
    r = rank(term.k, seq_len)
    largest = (term.op == "kth_largest") == (r == term.k)
    return matrix, 1 if largest else -1, r


def peel_firsts(terms: list[tuple[int, Node]], seq_len: int) -> dict[int, tuple[int, float]]:
    """The max or min terms over one token of a linear score that another term's peel (a
    k-th of the same score from rank 2) takes in its first round, as the engine plans them
    (:mod:`~infoflow.retrieval.peel_firsts`): index -> (the k-th's index, the term's value
    per unit of the round's channel, which holds direction * M x(t) of the best t)."""
    peels: dict[tuple[str, int], int] = {}
    for j, (_, term) in enumerate(terms):
        if isinstance(term, Reduce) and term.op in KTH and _single(term):
            matrix, direction, r = kth_form(term, seq_len)
            if r > 1:
                peels.setdefault((matrix, direction), j)
    out = {}
    for i, (_, term) in enumerate(terms):
        if isinstance(term, Reduce) and term.op in ("max", "min") and _single(term):
            matrix, direction = linear(term.body, term.variables[0].name), sign(term.op)
            if (matrix, direction) in peels:
                out[i] = (peels[matrix, direction], float(direction))
    return out


def _single(term: Reduce) -> bool:
    """One token index, no condition, a linear score (compile's order-1 retrievals)."""
    if len(term.variables) != 1 or not term.variables[0].is_token or term.conditions:
        return False
    try:
        linear(term.body, term.variables[0].name)
    except Unbuildable:
        return False
    return True


def bilinear(node: Node, s: str, t: str) -> str:
    """The matrix M of a score ``x(s)^T M x(t)``: ``dot`` or ``bilinear``, or a combination
    (``dot(x[s], x[t]) - bilinear(x[t], A + B, x[s])``: :func:`combined`)."""
    return combined(_atoms(node, lambda atom: _bilinear_atom(atom, s, t)))


def _bilinear_atom(node: Node, s: str, t: str) -> list[tuple[float, str]]:
    outer = _outer(node, s, t)
    if outer is not None:
        return outer
    if isinstance(node, Apply) and node.fn == "dot" and len(node.args) == 2:
        a, b = node.args
        if _plain(a, _index(a)) and _plain(b, _index(b)) and {_index(a), _index(b)} == {s, t}:
            return [(1, "I")]  # x[s] . x[t], no offset (x[t-1] is another token: refused)
    if isinstance(node, Apply) and node.fn == "bilinear":
        a, m, b = node.args
        if _plain(a, _index(a)) and _plain(b, _index(b)) and {_index(a), _index(b)} == {s, t}:
            transposed = "^T" if _index(a) == t else ""
            return _atoms(m, lambda param: [(1, _parameter(param) + transposed)])
    if norm_pair(node, s, t) is not None:  # it is one: said it was not (a review)
        raise Unbuildable(
            f"{text(node)}: a norm pair is built as the whole score of a max or min over a "
            "pair, not beside other terms, in a partner peel or a sum"
        )
    raise Unbuildable(
        f"{text(node)} is not x[{s}]^T M x[{t}] (dot, bilinear, a product of linear scores) "
        f"or the norm of x[{s}] + x[{t}] or x[{s}] - x[{t}], each read at no offset"
    )


def _outer(node: Node, s: str, t: str) -> list[tuple[Fraction, str]] | None:
    """A product of a linear score of x[s] and one of x[t] (``x[s][0] * x[t][1]``,
    ``dot(q, x[s]) * dot(w, x[t])``: a bilinear form of rank one, a review found it
    refused) as ``outer(a,b)`` matrices, a^T b, with their coefficients; None otherwise."""
    if not isinstance(node, Apply) or node.fn != "*":
        return None
    split = factor_pair(node, s, t)
    if split is None:
        return None
    scale, first, second = split
    rows, columns = _parts(linear(first, s)), _parts(linear(second, t))
    if "I" in {m for _, m in rows + columns}:
        return None  # a vector times a number is no score
    return [(scale * a * b, f"outer({m},{n})") for a, m in rows for b, n in columns]


def factor_pair(node: Node, s: str, t: str) -> tuple[Fraction, Node, Node] | None:
    """(c, f, g) with ``node`` = c f g, f reading x[s] alone and g x[t] alone; None when it
    is no such product of two factors."""
    scale, factors = product_factors(node)
    reads_of = [free_indices(f) for f in factors]
    if len(factors) != 2 or sorted(map(sorted, reads_of)) != sorted([[s], [t]]):
        return None
    first, second = factors if reads_of[0] == {s} else factors[::-1]
    return scale, first, second


def _parts(matrix: str) -> list[tuple[Fraction, str]]:
    """A matrix name as (coefficient, matrix) pairs: a combination (:func:`combined`) term
    by term, anything else with coefficient 1."""
    if " + " not in matrix and "*" not in matrix:
        return [(Fraction(1), matrix)]
    return [(Fraction(c), m) for c, m in (part.split("*", 1) for part in matrix.split(" + "))]


def fixed_query(node: Node, var: str, seq_len: int) -> tuple[str, int] | None:
    """(matrix, position) of a score ``x(p)^T M x(var)`` against a fixed position p
    (``dot(x[var], x[T])``, ``bilinear(x[3], A, x[var])``, either order; a sign is taken out
    before); None when no argument is a fixed position."""
    if not isinstance(node, Apply) or node.fn not in ("dot", "bilinear"):
        return None
    a, b = node.args[0], node.args[-1]
    fixed = [arg for arg in (a, b) if isinstance(arg, Token) and arg.is_fixed]
    if len(fixed) != 1 or fixed[0].component or not (_plain(a, var) or _plain(b, var)):
        return None
    (token,) = fixed
    position = token.index if isinstance(token.index, int) else seq_len + token.offset
    if node.fn == "dot":
        return "I", position
    if not isinstance(node.args[1], Param):
        return None
    matrix = _reference(node.args[1])
    return (matrix if a is token else matrix + "^T"), position


def norm_pair(node: Node, s: str, t: str) -> tuple[int, bool] | None:
    """(plus, squared) of ``norm(x[s] + plus * x[t])`` or ``sqnorm(...)``, plus = +1 or -1
    (either token negated, in either order); None for anything else."""
    found = norm_coefficients(node, (s, t))
    if found is None or {abs(c) for c in found} != {1}:
        return None
    return round(found[0] * found[1]), node.fn == "sqnorm"


def _plain(node: Node, var: str | None) -> bool:
    return isinstance(node, Token) and node.index == var and not node.offset and not node.component


def _index(node: Node) -> str | None:
    return node.index if isinstance(node, Token) and isinstance(node.index, str) else None


def _parameter(node: Node) -> str:
    if not isinstance(node, Param):
        raise Unbuildable(f"{text(node)}: a bilinear score's matrix is a parameter")
    return _reference(node)


def _reference(param: Param) -> str:
    """``A[0]`` for the parameter A at index 0 (the validator draws its numbers)."""
    if any(not isinstance(i, int) for i in param.index):
        raise Unbuildable(f"the parameter {param.name} is indexed by a token")
    return param.name + "".join(f"[{i}]" for i in param.index)


#: A condition's test, ``left op right + shift``.
TESTS = {
    "!=": operator.ne,
    "==": operator.eq,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def holds(condition: Condition, at: dict[str, int]) -> bool:
    """Whether ``condition`` holds with its indices at the positions ``at`` (1-based; a
    number stands for itself, ``T`` is ``at``'s where given)."""
    left = at[condition.left]
    right = condition.right if isinstance(condition.right, int) else at[condition.right]
    return TESTS[condition.op](left, right + condition.shift)


def own_norm(node: Node, var: str) -> tuple[bool, float] | None:
    """(squared, c) when ``node`` is ``sqnorm(a x[var])`` or ``dot(x[var], x[var])`` (True,
    c = a^2: c |x|^2) or ``norm(a x[var])`` (False, c = a^2: the root of c |x|^2); None when
    it is none of these (the diagonal's values of pairs, as the engine reads them)."""
    if isinstance(node, Apply) and node.fn == "dot" and all(_plain(a, var) for a in node.args):
        return True, 1.0
    if not isinstance(node, Apply) or node.fn not in ("norm", "sqnorm"):
        return None
    found = norm_coefficients(node, (var, var))
    if found is None or found[0] == 0:
        return None
    return node.fn == "sqnorm", float(found[0]) ** 2


def left_out(conditions, var: str, offset: int, seq_len: int) -> tuple[int, ...]:
    """The positions u = t + offset that no t in 1..seq_len meeting ``conditions`` (each of
    t against a number or T) reads."""
    seq = range(1, seq_len + 1)

    def side(value: str | int, t: int) -> int:
        return t if value == var else (seq_len if value == SEQUENCE else value)

    def meets(t: int) -> bool:
        return all(TESTS[c.op](side(c.left, t), side(c.right, t) + c.shift) for c in conditions)

    return tuple(u for u in seq if u - offset not in seq or not meets(u - offset))


def sign(op: str) -> int:
    return 1 if op == "max" else -1


def text(node: Node) -> str:
    if isinstance(node, Reduce):
        return f"{node.op}(... over {', '.join(v.name for v in node.variables)})"
    if isinstance(node, Apply):
        return f"{node.fn}(...)"
    if isinstance(node, Const):
        return str(node.value)
    if isinstance(node, Token):  # x[t-1][0]
        return node.text() + "".join(f"[{c}]" for c in node.component)
    return node.name + "".join(f"[{i}]" for i in node.index)  # a parameter: q, A[i]
