"""Expression + T -> whether every reduction runs over something.

A reduction's domain is its indices and every enclosing one (token indices in 1..T, range
indices in 0..n-1), cut by the conditions on the way down and by the neighbours it reads
(``x[t-1]`` exists from t = 2 on, as the validator masks it). The conditions are difference
constraints (``s < t + 2``, ``t <= T - 1``): a system of them has an integer solution exactly
when its constraint graph has no negative cycle (Bellman-Ford); ``s != t`` is split into
``s < t`` or ``s > t``. A reduction over nothing (``s != t`` at T = 1; ``s < t and t <= s``)
has no value, so the target is refused rather than planned. So is a value that cannot
exist: a division by 0, a log or a root outside its domain, a coordinate beyond d.
"""

from __future__ import annotations

import math
from itertools import product

from infoflow.retrieval.algebra import reads
from infoflow.retrieval.expression import (
    SEQUENCE,
    Apply,
    Condition,
    Const,
    Node,
    Reduce,
    TargetError,
    Token,
)

ZERO = ""  # the node fixed at 0 in the constraint graph
MAX_SPLITS = 12  # != conditions split into cases; beyond, a domain is taken as non-empty

Edge = tuple[str, str, int]  # a - b <= c


def check_domains(node: Node, seq_len: int) -> None:
    """A TargetError naming the first reduction that runs over nothing at T = seq_len."""
    _walk(node, seq_len, {}, [])


def _walk(node: Node, seq_len: int, bounds: dict, conditions: list) -> None:
    if isinstance(node, Apply):
        for arg in node.args:
            _walk(arg, seq_len, bounds, conditions)
    if not isinstance(node, Reduce):
        return
    bounds = dict(bounds)
    for v in node.variables:
        low, high = (1, seq_len) if v.is_token else (0, v.size - 1)
        for offset in reads(node.body, v.name) if v.is_token else ():
            low, high = max(low, 1 - offset), min(high, seq_len - offset)
        bounds[v.name] = (low, high)
    conditions = conditions + list(node.conditions)
    if not _satisfiable(bounds, conditions, seq_len):
        names = ", ".join(v.name for v in node.variables)
        written = " and ".join(c.text() for c in node.conditions) or "the neighbours it reads"
        raise TargetError(
            f"the {node.op} over {names} runs over nothing at T = {seq_len} ({written}): "
            "an empty reduction has no value"
        )
    _walk(node.body, seq_len, bounds, conditions)


def _satisfiable(bounds: dict, conditions: list[Condition], seq_len: int) -> bool:
    """Whether some assignment of the indices within ``bounds`` meets every condition."""
    edges: list[Edge] = []
    for name, (low, high) in bounds.items():
        edges += [(ZERO, name, -low), (name, ZERO, high)]
    choices: list[list[list[Edge]]] = []
    for c in conditions:
        right, shift = (ZERO, c.shift + _value(c.right, seq_len))
        if isinstance(c.right, str) and c.right != SEQUENCE:
            right, shift = c.right, c.shift
        choices.append(_edges(c.left, c.op, right, shift))
    splits = [options for options in choices if len(options) > 1]
    if len(splits) > MAX_SPLITS:
        return True
    fixed = [e for options in choices if len(options) == 1 for e in options[0]]
    return any(
        _consistent(edges + fixed + [e for case in cases for e in case])
        for cases in product(*splits)
    )


def _value(side: str | int, seq_len: int) -> int:
    return seq_len if side == SEQUENCE else (side if isinstance(side, int) else 0)


def _edges(a: str, op: str, b: str, k: int) -> list[list[Edge]]:
    """``a op b + k`` as alternatives, each a list of constraints x - y <= c."""
    if op == "<":
        return [[(a, b, k - 1)]]
    if op == "<=":
        return [[(a, b, k)]]
    if op == ">":
        return [[(b, a, -k - 1)]]
    if op == ">=":
        return [[(b, a, -k)]]
    if op == "==":
        return [[(a, b, k), (b, a, -k)]]
    return [[(a, b, k - 1)], [(b, a, -k - 1)]]  # !=


def _consistent(edges: list[Edge]) -> bool:
    """Whether x - y <= c for every edge has a solution: no negative cycle."""
    nodes = {n for a, b, _ in edges for n in (a, b)}
    distance = dict.fromkeys(nodes, 0)
    for _ in range(len(nodes)):
        changed = False
        for a, b, c in edges:  # x_a <= x_b + c: relax a from b
            if distance[b] + c < distance[a]:
                distance[a], changed = distance[b] + c, True
        if not changed:
            return True
    return False


def check_coordinates(node: Node, input_dim: int) -> None:
    """A TargetError for a coordinate beyond the token's width: ``x[1][100]`` at d = 4, or
    ``x[t][i]`` over ``range(n)`` with n > d."""
    sizes: dict[str, int] = {}

    def walk(n: Node) -> None:
        if isinstance(n, Reduce):
            sizes.update({v.name: v.size for v in n.variables if v.size is not None})
            walk(n.body)
        elif isinstance(n, Apply):
            for arg in n.args:
                walk(arg)
        elif isinstance(n, Token) and n.component:
            index = n.component[0]
            last = index if isinstance(index, int) else sizes.get(index, 1) - 1
            if last >= input_dim:
                raise TargetError(
                    f"{n.text()}[{index}] reads coordinate {last} of a token of width "
                    f"d = {input_dim} (coordinates count from 0)"
                )

    walk(node)


# ---- values ------------------------------------------------------------------------------

_DOMAIN = {"log": lambda v: v > 0, "sqrt": lambda v: v >= 0}


def check_values(node: Node) -> None:
    """A TargetError for a value that cannot exist: a division by a number that is 0, a log
    of a number <= 0, a root of a negative number (identical terms cancelled first)."""
    if isinstance(node, Reduce):
        check_values(node.body)
    if not isinstance(node, Apply):
        return
    for arg in node.args:
        check_values(arg)
    if node.fn == "/" and constant(node.args[1]) == 0:
        raise TargetError("a division by 0: the target has no value")
    if node.fn == "**" and constant(node.args[0]) == 0 and (constant(node.args[1]) or 0) < 0:
        raise TargetError("0 to a negative power: the target has no value")
    if node.fn in _DOMAIN:
        value = constant(node.args[0])
        if value is not None and not _DOMAIN[node.fn](value):
            raise TargetError(f"{node.fn}({value:g}) has no real value")


def constant(node: Node) -> float | None:
    """The value of an expression of numbers only (None when it reads anything else or has
    no value)."""
    if isinstance(node, Const):
        return float(node.value)
    if not isinstance(node, Apply) or node.fn not in _FOLD:
        return None
    values = [constant(arg) for arg in node.args]
    if any(v is None for v in values):
        return None
    try:
        result = _FOLD[node.fn](*values)
    except (ArithmeticError, ValueError):
        return None
    return result if isinstance(result, float) and math.isfinite(result) else None


_FOLD = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "**": lambda a, b: float(a**b) if not (a < 0 and b != int(b)) else math.nan,
    "neg": lambda a: -a,
    "abs": abs,
    "exp": math.exp,
    "log": math.log,
    "sqrt": math.sqrt,
    "relu": lambda a: max(a, 0.0),
    "tanh": math.tanh,
}
