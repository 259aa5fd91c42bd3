"""Expression -> what each value is, a number or a vector: a stage of the spec's checks.

A token ``x[t]`` is a vector, its coordinate ``x[t][0]`` a number, which has no coordinate of
its own (``x[t][0][0]`` is refused); ``dot``, ``bilinear``, ``norm`` and ``sqnorm`` take
vectors and give numbers (the middle of ``bilinear`` is a matrix: parameters); arithmetic
and the pointwise functions keep the shape (a number beside a vector is added to each
coordinate, as compile builds ``x[1] + x[2] + 1``); a sum keeps its body's shape. A max,
min, k-th, argmax or argmin ranks numbers: over vectors it has no meaning, so it is refused
(until 2026-12-05 ``max(x[t] for t in T)`` was planned as one head). A parameter's shape is
what its use makes it.
"""

from __future__ import annotations

from infoflow.retrieval.algebra import EXTREMUM
from infoflow.retrieval.expression import (
    KTH,
    Apply,
    Const,
    Node,
    Param,
    Reduce,
    TargetError,
    Token,
)
from infoflow.retrieval.text_to_expression import VECTORS  # functions of vectors: numbers

NUMBER, VECTOR, ANY = "a number", "a vector", "any"
#: Reductions that rank their values.
RANKING = (*EXTREMUM, *KTH)


def check_shapes(node: Node) -> None:
    """A TargetError for a value used as what it is not (see the module's docstring)."""
    shape(node)


def shape(node: Node) -> str:
    """NUMBER, VECTOR or ANY (a parameter, whose use decides)."""
    if isinstance(node, Const):
        return NUMBER
    if isinstance(node, Param):
        return ANY
    if isinstance(node, Token):
        if len(node.component) > 1:
            raise TargetError(
                f"{node.text()}[{node.component[0]}] is a number: it has no coordinate "
                f"[{node.component[1]}]"
            )
        return NUMBER if node.component else VECTOR
    if isinstance(node, Reduce):
        body = shape(node.body)
        if node.op in RANKING and body == VECTOR:
            raise TargetError(
                f"{node.op}() ranks numbers and its body is a vector: write a score of the "
                "token (x[t][0], dot(q, x[t]), norm(x[t]))"
            )
        return body
    assert isinstance(node, Apply)
    shapes = [shape(a) for a in node.args]
    if node.fn in VECTORS:
        for i in VECTORS[node.fn]:
            if shapes[i] == NUMBER:
                raise TargetError(f"{node.fn}() takes vectors; its argument {i + 1} is a number")
        if node.fn == "bilinear" and shapes[1] != ANY:  # a matrix: a parameter, or A - B
            raise TargetError(f"bilinear() takes a matrix in the middle; it has {shapes[1]}")
        return NUMBER
    return VECTOR if VECTOR in shapes else ANY if ANY in shapes else NUMBER
