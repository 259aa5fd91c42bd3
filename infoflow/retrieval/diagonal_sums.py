"""A sum over a pair of tokens less its diagonal, ``sum(g(x[s], x[t]) for s in T for t in
T if s != t)``, is what it is: the sum over every pair less the sum of g(x[s], x[s])
(``reconstruction:canonical_form``). Written with ``s != t`` it was planned as a coupled
pair, a global aggregation (order 2, alpha 7 at T = 64 for ``dot``), where ``s <= t`` and
"every pair less the diagonal" spelled out are one head (an audit, 2026-12-07).

Only where the pair is the sum's two token indices, ``s != t`` (no shift) its one test of
both (others test one of them: the sum over s <= 4, t != s is the sum over s <= 4 and every
t less the diagonal's over s <= 4), the score reads both at no offset (``x[t+1]`` would
narrow the diagonal's range) and nothing in it can be infinite or undefined where the
tokens are finite (:data:`_FINITE`: a division, a log or a negative power may be infinite
at s = t, a root undefined, an exp overflow, and inf - inf is nan where the written sum is
not)."""

from __future__ import annotations

from dataclasses import replace

from infoflow.retrieval.algebra import free_indices, names, reads, rename
from infoflow.retrieval.conditions import renamed
from infoflow.retrieval.expression import Apply, Const, Node, Reduce


def without_diagonal(node: Reduce) -> Node:
    """``node``, a sum over s != t of a score of both, as the sum over every pair less the
    diagonal's; any other reduction as it is (``sum(sum(g for t in T if t != s) for s in
    T)`` reaches it joined: :mod:`.nested_reductions`)."""
    if node.op != "sum" or len(node.variables) != 2:
        return node
    (s, t), body = node.variables, node.body
    both = {s.name, t.name}
    tests = [c for c in node.conditions if {c.left, c.right} == both]
    rest = tuple(c for c in node.conditions if {c.left, c.right} != both)
    if len(tests) != 1 or tests[0].op != "!=" or tests[0].shift:
        return node  # one s != t, and tests of one of them each (s <= 4)
    if not (s.is_token and t.is_token) or names(body):
        return node
    if not both <= free_indices(body) or not _everywhere_finite(body):
        return node
    if reads(body, s.name) - {0} or reads(body, t.name) - {0}:
        return node
    on_s = {t.name: s.name}
    diagonal = Reduce("sum", (s,), rename(body, on_s), tuple(renamed(c, on_s) for c in rest))
    return Apply("-", (replace(node, conditions=rest), diagonal))


#: What a score may be built of to be finite wherever the tokens are: no division, log,
#: root or fractional power (undefined or infinite at s = t: sqrt(|x(s) - x(t)|^2 - c)), no
#: exp (it overflows to inf, and inf - inf is nan; a review's fuzz found both).
_FINITE = {"+", "-", "neg", "*", "dot", "bilinear", "norm", "sqnorm", "abs", "relu", "tanh"}


def _everywhere_finite(node: Node) -> bool:
    if not isinstance(node, Apply):
        return True
    if node.fn == "**":
        power = node.args[1]
        whole = isinstance(power, Const) and power.value >= 0 and power.value == int(power.value)
        return whole and _everywhere_finite(node.args[0])
    return node.fn in _FINITE and all(_everywhere_finite(a) for a in node.args)
