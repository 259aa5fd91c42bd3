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

from fractions import Fraction

from infoflow.retrieval.algebra import key, normal, terms
from infoflow.retrieval.expression import KTH, Node, Reduce
from infoflow.retrieval.types import Comparison, ComparisonTree

#: The end of the values each reduction takes first: +1 the largest, -1 the smallest.
END = {"max": 1, "kth_largest": 1, "min": -1, "kth_smallest": -1}
#: How the compared reductions name the indices they bind (apart from every closed key's).
BOUND = "_b"


def firsts(closed: dict, parts: tuple[Comparison, ...]) -> tuple[tuple[int, int, bool], ...]:
    """(i, j, same end) for each top-level max or min ``parts[i]`` over the score and the
    candidates of a top-level k-th ``parts[j]``; same end: a max beside a k-th largest, a min
    beside a k-th smallest (the other end with the score scaled by a negative number).
    ``closed``: the reductions without free indices, by :func:`~infoflow.retrieval.algebra.
    key`, with what each became (its ``children``: the comparisons)."""
    index = {id(c): i for i, c in enumerate(parts)}
    extrema, kths = [], []
    for closed_node, summary in closed.items():
        for node, child in _reductions(closed_node, summary.children):
            if id(child) not in index or node.op not in END or len(node.variables) != 1:
                continue
            if not node.variables[0].is_token:
                continue
            score, end = _unscaled(node.body, END[node.op])
            copies = parts[index[id(child)]].copies  # copy i holds copy i
            same = (score, normal(node).conditions, copies)
            (kths if node.op in KTH else extrema).append((index[id(child)], same, end))
    return tuple(
        sorted((i, j, mine == theirs) for i, f, mine in extrema for j, g, theirs in kths if f == g)
    )


def _reductions(node: Node, children: tuple) -> list[tuple[Node, Comparison]]:
    """The top-level reductions of a closed ``node`` with their comparisons: itself, or, for
    a sum over range indices of reductions (a copy of each per index) and constants, each
    reduction with the comparison of its op, where no op is there twice (comparisons are not
    listed in the terms' order). Their bound indices are named apart (:data:`BOUND`) from the
    free range indices, which carry ``node``'s key."""
    if node.op != "sum" or any(v.is_token for v in node.variables):
        return [(key(node, BOUND), children[0])] if len(children) == 1 else []
    found = [term for _, term in terms(node.body) if term is not None]
    ops = [term.op if isinstance(term, Reduce) else None for term in found]
    by_op = {child.op: child for child in children}
    if None in ops or len(set(ops)) != len(ops) or sorted(ops) != sorted(by_op):
        return []
    if len(by_op) != len(children):
        return []
    return [(key(term, BOUND), by_op[term.op]) for term in found]


def _unscaled(body: Node, end: int) -> tuple[frozenset, int]:
    """A score up to a constant factor and an added constant (neither changes which token
    is the best): its terms, each with its coefficient over that of the first term; and the
    end that takes first: the max of -2 (f + g) + 1 is the min of f + g. ``body``'s indices
    are already named by the key (not named again term by term: a term's free index would
    take a bound one's name)."""
    totals: dict[Node, Fraction] = {}
    for coefficient, term in terms(body):
        if term is not None:
            name = normal(term)
            totals[name] = totals.get(name, Fraction(0)) + coefficient
    grouped = [(name, total) for name, total in totals.items() if total]
    if not grouped:
        return frozenset(), end
    lead = min(grouped, key=lambda item: repr(item[0]))[1]
    score = frozenset((name, total / lead) for name, total in grouped)
    return score, end if lead > 0 else -end


def holds(host: Comparison, same_end: bool, rank: int) -> bool:
    """Whether the peel of the k-th ``host`` (its rank from the nearer end: ``rank``) takes
    the extremum in its first round: the same end when it counts from its own end, the other
    when from its far end; rank 1 is no peel."""
    return rank > 1 and same_end == (rank == host.k)


def unpaired(tree: ComparisonTree, seq_len: int | None = None) -> list[Comparison]:
    """The max and min reductions of a target with a k-th that no k-th's peel holds as the
    planner pairs them: not paired by :func:`firsts` (nested, with other copies, two in one
    range sum, or over another score); paired at the other end of a k-th that ranks the same
    from both ends (the median of an odd count: the planner peels from the k-th's own end,
    a peel from the far end would hold it), unless an extremum at its own end is paired with
    it too (one peel holds one end); or paired with a k-th of rank 1 that is the same
    extremum (``kth_largest(f, k=T)`` beside ``min f``: one retrieval would do for both).
    The planner charges each a head it may not need, so its head count is then an upper
    bound."""
    found = [c for top in tree.parts for c in top.walk()]
    if not any(c.kind == "kth" for c in found):
        return []
    own_end = {j for _, j, same in tree.firsts if same}
    paired = set()
    for i, j, same in tree.firsts:
        host, counted = tree.parts[j], _candidates(tree.parts[j], seq_len)
        rank = host.k if counted is None else min(host.k, counted + 1 - host.k)
        if rank == 1 and same == (host.k == 1):
            continue  # the k-th is this extremum
        if not same and rank > 1 and 2 * rank == (counted or 0) + 1 and j not in own_end:
            continue  # a median's far end, which the planner does not peel from
        paired.add(id(tree.parts[i]))
    return [c for c in found if c.op in ("max", "min") and id(c) not in paired]


def _candidates(host: Comparison, seq_len: int | None) -> int | None:
    """How many values the k-th ``host`` ranks (T less those its conditions t != s leave
    out); None with T symbolic."""
    return None if seq_len is None else seq_len - host.left_out
