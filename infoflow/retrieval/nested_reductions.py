"""A reduction whose whole body is one of the same kind, joined (a rewrite of
:mod:`~infoflow.retrieval.expression_rewrite`; ``reconstruction:canonical_form``), and the
reductions a body holds inside its terms (which
:mod:`~infoflow.retrieval.expression_to_canonical` does not flatten where they are terms too).

The canonical form flattens such reductions anyway; joining them before the other rewrites
lets each see both generators and both conditions at once, so that the nested spelling of a
target gets the plan of the flat one (a review's fuzz, 2026-12-07: the window over a nested
max, an implied bound on the outer sum, were read only when written flat).
"""

from __future__ import annotations

from infoflow.retrieval.algebra import key, terms
from infoflow.retrieval.expression import Apply, Node, Reduce


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


def held_inside(body: Node) -> set[Node]:
    """The keys of the reductions ``body`` holds inside its terms (``exp(max f)``): one that
    is also a term stays a comparison of its own, planned once with them, not flattened into
    the reduction around (``max f + exp(max f)``: one head for max f; since 2026-12-07)."""
    found: set[Node] = set()

    def walk(node: Node) -> None:
        if isinstance(node, Reduce):
            found.add(key(node))
        elif isinstance(node, Apply):
            for arg in node.args:
                walk(arg)

    for _, term in terms(body):
        if isinstance(term, Apply):
            walk(term)
    return found
