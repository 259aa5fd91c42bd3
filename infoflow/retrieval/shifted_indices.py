"""An index read only at offsets other than 0 -> the position it reads at one of them, for
:mod:`~infoflow.retrieval.expression_rewrite` (``reconstruction:canonical_form``):
``max(f(x[t-1]) for t in T)`` is ``max(f(x[t]) for t in T if t <= T - 1)``, the boundary a
mask and the index's other conditions shifted with it."""

from __future__ import annotations

from dataclasses import replace

from infoflow.retrieval.algebra import reads
from infoflow.retrieval.expression import KTH, SEQUENCE, Apply, Condition, Node, Reduce, Token


def renamed_shifts(node: Reduce) -> Reduce:
    """Each token index read only at offsets o != 0 becomes the position its largest offset
    reads: ``x[t-1]`` alone is ``x[u]`` over u <= T - 1, and ``x[t-1]`` beside ``x[t+1]``
    is ``x[u-2]`` beside ``x[u]``, one neighbour head where two offsets took two (since
    2026-12-07). Not under a k-th, which refuses a neighbour in its own words rather than the
    mask's. Under an argmax or argmin for one offset: its value, the index as written, is
    the position found less o, which the positional encoding the argmax needs gives with no
    head of its own."""
    if node.op in KTH:
        return node
    for v in node.variables:
        offsets = reads(node.body, v.name) if v.is_token else set()
        if not offsets or 0 in offsets:
            continue
        if len(offsets) > 1 and node.op in ("argmax", "argmin"):
            continue
        low, offset = min(offsets), max(offsets)
        # as written 1 - low <= t <= T - offset (and 1 <= t <= T); u = t + offset reads
        # positions u + o - offset, which keep 1 + offset - low <= u <= T of themselves
        boundary = ()
        if offset < 0:
            boundary = (Condition(v.name, "<=", SEQUENCE, offset),)
        elif low > 0:
            boundary = (Condition(v.name, ">=", 1 + offset),)
        conditions = tuple(_shift_condition(c, v.name, offset) for c in node.conditions)
        node = replace(
            node,
            body=unshift(node.body, v.name, offset),
            conditions=(*conditions, *boundary),
        )
    return node


def _shift_condition(c: Condition, name: str, offset: int) -> Condition:
    """A condition on t rewritten for u = t + offset."""
    shift = c.shift + (offset if c.left == name else 0) - (offset if c.right == name else 0)
    return replace(c, shift=shift)


def unshift(node: Node, name: str, offset: int) -> Node:
    """``node`` reading the token index ``name`` at each offset less ``offset`` (its
    conditions shifted with it): ``x[t-1]`` at offset -1 is ``x[t]``."""
    if isinstance(node, Token) and node.index == name:
        return replace(node, offset=node.offset - offset)
    if isinstance(node, Apply):
        return Apply(node.fn, tuple(unshift(a, name, offset) for a in node.args))
    if isinstance(node, Reduce):
        conditions = tuple(_shift_condition(c, name, offset) for c in node.conditions)
        return replace(node, body=unshift(node.body, name, offset), conditions=conditions)
    return node
