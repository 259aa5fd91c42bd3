"""Expression -> the candidates each k-th ranks: how many tokens its conditions t != s leave
out, the k-ths the engine refuses because a condition or a neighbour read restricts them
otherwise, and the k-ths that are the other end's extremum at the spec's T.

A k-th's rank is counted among T - left_out candidates
(:func:`~infoflow.retrieval.mechanisms.kth.rank`); at a given T it is taken from the nearer
end, so the k-th largest of T - 1 partners at k = T - 1 is their minimum. Whether the pair
(s, s) that t != s leaves out decides it is that end's question (:mod:`.diagonal`).
"""

from __future__ import annotations

from dataclasses import replace

from infoflow.retrieval.algebra import reads
from infoflow.retrieval.expression import KTH, Apply, Condition, Node, Reduce, TargetError, Variable

Env = dict[str, Variable]  # user name -> the bound variable


def left_out(conditions: list[tuple[Condition, Env]]) -> int:
    """How many distinct tokens a k-th's conditions ((condition, its scope)) t != s leave out:
    one for each pair of distinct token indices an unshifted ``!=`` compares."""
    pairs = set()
    for c, env in conditions:
        names = _tokens(c, env)
        if c.op == "!=" and not c.shift and len(names) == 2:
            pairs.add(names)
    return len(pairs)


def whole_sequence(node: Reduce, conditions: list[tuple[Condition, Env]], name: str) -> None:
    """A TargetError unless the k-th ``node`` (its index bound as ``name``) runs over every
    token but those t != s leaves out: a condition like t <= 3, t < s or t != 1, or a
    neighbour read x[t-1], changes its candidates, and so its rank, in a way not counted."""
    (written,) = node.variables
    for c, env in conditions:
        if name in _names(c, env) and not (c.op == "!=" and len(_tokens(c, env)) == 2):
            raise TargetError(
                f"{node.op} over {written.name} with the condition {c.text()}: a k-th is "
                f"planned over the whole sequence, less the tokens a condition "
                f"{written.name} != s leaves out; over a set another condition restricts, "
                "its candidates and so its rank are not counted"
            )
    if reads(node.body, written.name) - {0}:
        raise TargetError(
            f"{node.op} over {written.name} reads a neighbour of x[{written.name}]: a k-th is "
            "planned over the whole sequence, and a neighbour exists for fewer positions, so "
            "its candidates and so its rank are not counted"
        )


def far_extrema(node: Node, far_end: dict, env: Env | None = None) -> Node:
    """``node`` with each k-th over t != s that ``far_end`` ({(k, left_out): rank}, the k-ths
    counted from their far end) says is rank 1 written as that end's extremum, so that a max
    over it flattens as a max of a max does."""
    if isinstance(node, Apply):
        return replace(node, args=tuple(far_extrema(a, far_end, env) for a in node.args))
    if not isinstance(node, Reduce):
        return node
    inner = {**(env or {}), **{v.name: v for v in node.variables}}
    node = replace(node, body=far_extrema(node.body, far_end, inner))
    key = (node.k, left_out([(c, inner) for c in node.conditions]))
    if node.op in KTH and far_end.get(key) == 1:
        return replace(node, op="min" if node.op == "kth_largest" else "max", k=None)
    return node


def _names(c: Condition, env: Env) -> set[str]:
    """The bound names of the indices ``c`` compares."""
    return {env[s].name for s in (c.left, c.right) if isinstance(s, str) and s in env}


def _tokens(c: Condition, env: Env) -> frozenset[str]:
    """The bound names of the token indices ``c`` compares."""
    sides = [env.get(s) if isinstance(s, str) else None for s in (c.left, c.right)]
    return frozenset(v.name for v in sides if v is not None and v.is_token)
