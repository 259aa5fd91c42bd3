"""A reduction whose whole body is one of the same kind, joined (a rewrite of
:mod:`~infoflow.retrieval.expression_rewrite`; ``reconstruction:canonical_form``).

The canonical form flattens such reductions anyway; joining them before the other rewrites
lets each see both generators and both conditions at once, so that the nested spelling of a
target gets the plan of the flat one (a review's fuzz, 2026-12-07: the window over a nested
max, an implied bound on the outer sum, were read only when written flat).
"""

from __future__ import annotations

from infoflow.retrieval.expression import Reduce


def nested_joined(node: Reduce) -> Reduce:
    """A sum, max or min whose whole body is one of the same kind, as one reduction over both
    generators with both conditions (an empty inner one is the outer's neutral value, 0 or
    -inf, as the pair outside the joint domain is): ``sum(sum(g for t in T if s < t) for s in
    T if s < T)`` is the sum over s < t and s < T, whose implied s < T then drops (since
    2026-12-07; a review found the nested spelling planned apart). Else ``node``."""
    inner = node.body
    if node.op not in ("sum", "max", "min") or not isinstance(inner, Reduce):
        return node
    variables = (*node.variables, *inner.variables)
    if inner.op != node.op or not all(v.is_token for v in variables):
        return node  # a range index reduced apart makes copies (joined, it joins the score)
    return Reduce(node.op, variables, inner.body, (*node.conditions, *inner.conditions))
