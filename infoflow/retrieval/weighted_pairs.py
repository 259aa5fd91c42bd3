"""A max or min over two different tokens of a f(s) + b f(t) with unequal weights, one
function f, as what it is (``reconstruction:canonical_form``; an audit's gap, mended
2026-12-07; :func:`~infoflow.retrieval.diagonal.separable_pair` reads equal weights):

- weights of one sign: the larger weight takes the extremum and the smaller the runner-up
  (the rearrangement inequality): the max over s != t of f(s) + 2 f(t) is 2 max f +
  kth_largest(f, k=2); a min takes the smallest and kth_smallest, negative weights the
  other end (the max of -f(s) - 2 f(t) is -2 min f - kth_smallest(f, k=2));
- weights of two signs: the max of a f(s) - b f(t) (a, b > 0) is a max f - b min f, the
  pair without ``s != t`` (where the max and the min fall on one token every f is equal and
  the two values agree).

Before, such a pair was planned as a coupled pair (order 2) where the equal weights were a
peel of one token's scores.
"""

from __future__ import annotations

from fractions import Fraction

from infoflow.retrieval.algebra import collected, rebuilt, rename
from infoflow.retrieval.expression import Node, Reduce, Variable

_OTHER = {"max": "min", "min": "max"}
_SECOND = {"max": "kth_largest", "min": "kth_smallest"}


def unequal_weights(node: Reduce, split: dict, pair: tuple[str, str]) -> Node:
    """``node``, a max or min over the pair s != t whose terms ``split`` reads one index
    each (``split[s]``, ``split[t]``; ``split[None]`` reads neither), as the reductions over
    one token it is where t's terms are lambda times s's renamed (lambda != 1); else
    ``node``."""
    s, t = pair
    mine = collected(split[s])
    theirs = collected([(c, rename(term, {t: s})) for c, term in split[t]])
    if not mine or mine.keys() != theirs.keys():
        return node
    ratios = {theirs[k][0] / mine[k][0] for k in mine if mine[k][0]}
    if len(ratios) != 1 or any(not mine[k][0] for k in mine):
        return node
    (weight,) = ratios
    if weight in (1, -1):
        return node  # equal weights, or f(s) - f(t): read by separable_pair
    f = rebuilt(mine)
    one = Variable(s)
    if weight > 0:  # the larger weight on the extremum, the smaller on the runner-up
        big, small = max(Fraction(1), weight), min(Fraction(1), weight)
        parts = [
            (big, Reduce(node.op, (one,), f)),
            (small, Reduce(_SECOND[node.op], (one,), f, (), 2)),
        ]
    else:
        parts = [
            (Fraction(1), Reduce(node.op, (one,), f)),
            (weight, Reduce(_OTHER[node.op], (one,), f)),
        ]
    parts += [(c, term) for c, term in split[None]]
    return rebuilt(collected(parts))
