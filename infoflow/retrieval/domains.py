"""Expression + T -> whether every reduction runs over something.

A reduction's domain is its indices and every enclosing one (token indices in 1..T, range
indices in 0..n-1), cut by the conditions on the way down and by the neighbours it reads
(``x[t-1]`` exists from t = 2 on, as the validator masks it). The conditions are difference
constraints (``s < t + 2``, ``t <= T - 1``): a system of them has an integer solution exactly
when its constraint graph has no negative cycle (Bellman-Ford); ``s != t`` is split into
``s < t`` or ``s > t``. A reduction over nothing (``s != t`` at T = 1; ``s < t and t <= s``)
has no value, so the target is refused rather than planned.
"""

from __future__ import annotations

from itertools import product

from infoflow.retrieval.expression import SEQUENCE, Apply, Condition, Node, Reduce, TargetError
from infoflow.retrieval.expression_rewrite import reads

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
