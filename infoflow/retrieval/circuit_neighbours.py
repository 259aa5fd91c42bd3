"""A max or min over one token read at two offsets -> the same max over pairs of tokens a
fixed gap apart, which compile builds as a pair under conditions on its positions: a stage of
:mod:`~infoflow.retrieval.schedule_to_circuit`.

``max(dot(x[t-1], x[t+1]) for t in T)`` is the max over s and u of ``dot(x[s], x[u])`` with
u - s = 2 (both in range, as the written t reads them): every token s retrieves the one
partner its positional mask leaves it, u = s + 2, an MLP decodes the pair's score and the
readout retrieves the best s (:func:`~.circuit_pairs.pair_term`; the engine's [1, 1]); a
sum pools each token's pair score instead (:func:`~.circuit_pairs.pair_sum_term`). The
conditions on t move onto s = t + o1; where the first offset is positive, s starts at
1 + o1, and where the second is negative, u ends at T + o2 (t itself stays in range). Until
2026-12-07 compile refused these ("read at 2 offsets").
"""

from __future__ import annotations

from dataclasses import replace

from infoflow.retrieval.algebra import reads
from infoflow.retrieval.expression import (
    SEQUENCE,
    Apply,
    Condition,
    Node,
    Reduce,
    Token,
    Variable,
    Window,
)

#: The reductions read as pairs: a max or min (a window pair), a sum (one partner each).
EXTREMA = ("max", "min", "sum")


def neighbour_pair(term: Reduce) -> Reduce | None:
    """``term`` as a max, min or sum over two tokens a fixed gap apart, or None where it is
    not one over one token, read at exactly two offsets, with no reduction inside and
    conditions on that token against numbers and T only."""
    if term.op not in EXTREMA or len(term.variables) != 1 or not term.variables[0].is_token:
        return None
    t = term.variables[0].name
    offsets = sorted(reads(term.body, t))
    if len(offsets) != 2 or not _flat(term.body):
        return None
    first, second = offsets
    s, u = (f"{t}{o:+d}" if o else t for o in offsets)  # named as read: a refusal says x[t+2]
    moved = [_moved(c, t, s, first) for c in term.conditions]
    if any(c is None for c in moved):
        return None
    gap = second - first
    conditions = [*moved, Condition(u, ">=", s, gap), Condition(u, "<=", s, gap)]
    if first > 0:  # s = t + first with t >= 1
        conditions.append(Condition(s, ">=", 1 + first))
    if second < 0:  # u = t + second with t <= T
        conditions.append(Condition(u, "<=", SEQUENCE, second))
    body = _paired(term.body, t, {first: s, second: u})
    return Reduce(term.op, (Variable(s), Variable(u)), body, tuple(conditions))


def _flat(node: Node) -> bool:
    """Whether ``node`` holds no reduction."""
    if isinstance(node, Reduce):
        return False
    return not isinstance(node, Apply) or all(_flat(a) for a in node.args)


def _moved(condition: Condition, t: str, s: str, offset: int) -> Condition | None:
    """A condition on t as the same condition on s = t + offset; None where it names
    another index (or is a window)."""
    if isinstance(condition, Window) or condition.left != t:
        return None
    if isinstance(condition.right, int):
        return Condition(s, condition.op, condition.right + condition.shift + offset)
    if condition.right != SEQUENCE:
        return None
    return Condition(s, condition.op, SEQUENCE, condition.shift + offset)


def _paired(node: Node, t: str, at: dict[int, str]) -> Node:
    """``node`` reading x[t + o] as x[at[o]]."""
    if isinstance(node, Token) and node.index == t:
        return replace(node, index=at[node.offset], offset=0)
    if isinstance(node, Apply):
        return Apply(node.fn, tuple(_paired(a, t, at) for a in node.args))
    return node
