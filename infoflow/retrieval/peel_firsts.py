"""Expression -> the top-level maxima and minima that a top-level k-th's peel holds
(``reconstruction:kth_layers``): the peel of ``kth_largest(f, k=2)`` retrieves the largest
f in its first round, so ``max f`` beside it needs no head of its own wherever the peel
runs. The separable pair, max over s != t of f(s) + f(t), is such a sum
(:func:`~infoflow.retrieval.diagonal.separable_pair`): planned on [1, 1], not [2, 1].

Two reductions match when they run over one token index with the same conditions and the
same score, up to the index's name, the order of commutative arguments and a constant factor
(whose sign flips the end: :func:`~infoflow.retrieval.algebra.key`, :func:`~infoflow.
retrieval.algebra.normal`).
Which end a peel's first round takes depends on T (a k-th counted from its far end,
:func:`~infoflow.retrieval.mechanisms.kth.rank`), and whether the k-th is peeled at all
on the architecture, so the schedule decides (:mod:`~infoflow.retrieval.steps_to_schedule`).
"""

from __future__ import annotations

from infoflow.retrieval.algebra import normal, terms
from infoflow.retrieval.expression import KTH, Node
from infoflow.retrieval.types import Comparison

#: The end of the values each reduction takes first: +1 the largest, -1 the smallest.
END = {"max": 1, "kth_largest": 1, "min": -1, "kth_smallest": -1}


def firsts(closed: dict, parts: tuple[Comparison, ...]) -> tuple[tuple[int, int, bool], ...]:
    """(i, j, same end) for each top-level max or min ``parts[i]`` over the score and the
    candidates of a top-level k-th ``parts[j]``; same end: a max beside a k-th largest, a min
    beside a k-th smallest (the other end with the score scaled by a negative number).
    ``closed``: the reductions without free indices, by :func:`~infoflow.retrieval.algebra.
    key`, with what each became (its ``children``: the comparisons)."""
    index = {id(c): i for i, c in enumerate(parts)}
    extrema, kths = [], []
    for node, summary in closed.items():
        found = [index[id(c)] for c in summary.children if id(c) in index]
        if len(summary.children) != 1 or not found or parts[found[0]].copies != 1:
            continue
        if node.op not in END or len(node.variables) != 1 or not node.variables[0].is_token:
            continue
        body, end = _unscaled(node.body, END[node.op])
        entry = (found[0], (normal(body), normal(node).conditions), end)
        (kths if node.op in KTH else extrema).append(entry)
    return tuple(
        sorted((i, j, mine == theirs) for i, f, mine in extrema for j, g, theirs in kths if f == g)
    )


def _unscaled(body: Node, end: int) -> tuple[Node, int]:
    """A score without its constant factor, and the end that takes first: the max of -2 f
    is the min of f."""
    found = terms(body)
    if len(found) != 1 or found[0][1] is None:
        return body, end
    coefficient, score = found[0]
    return score, end if coefficient > 0 else -end


def holds(host: Comparison, same_end: bool, rank: int) -> bool:
    """Whether the peel of the k-th ``host`` (its rank from the nearer end: ``rank``) takes
    the extremum in its first round: the same end when it counts from its own end, the other
    when from its far end; rank 1 is no peel."""
    return rank > 1 and same_end == (rank == host.k)
