"""Comparison tree -> steps: every way to resolve a comparison, and everything nested in it,
as heads in layers (fragments).

A step is one head in one layer (``heads`` copies side by side; a peel takes ``length``
layers, one head each) and waits for the steps whose results its score reads (they run in
strictly earlier layers) and for the shared steps (fetch, shift) its score needs. The steps of
a comparison's own indices come from its mechanism (:mod:`~infoflow.retrieval.mechanisms`);
this stage puts them after the fragments of the comparisons nested in its factors, and keeps
the distinct ways, cheapest first (:func:`fragment_cost`: fewest Theorem-2 steps, the largest
ranks left to them, shallowest, narrowest).
"""

from __future__ import annotations

import itertools

from infoflow.retrieval import mechanisms
from infoflow.retrieval.types import EVERY, Comparison, Factor, Fragment, Step

MAX_FRAGMENTS = 64  # ways kept per comparison (the cheapest by Theorem-2 steps and depth)


def fragments(c: Comparison, holder: str | None, heads: int, ranks: dict) -> list[Fragment]:
    """Every distinct way to resolve ``c`` (and what is nested in it) whose result ends up
    with ``holder``, cheapest first: fewest Theorem-2 steps, then shallowest."""
    heads *= c.copies
    children = [_child_fragments(f, heads, ranks) for f in c.factors]
    owns = mechanisms.own_steps(c, holder, heads, ranks)
    out = []
    for own in owns:
        for picked in itertools.islice(itertools.product(*children), MAX_FRAGMENTS * 4):
            out.append(_assemble(c, own, picked))
    return _cheapest(out)


def _child_fragments(f: Factor, heads: int, ranks: dict) -> list[tuple[Fragment, ...]]:
    """The ways to resolve the comparisons nested in one factor, together."""
    each = [fragments(child, next(iter(child.free), EVERY), heads, ranks) for child in f.children]
    return list(itertools.islice(itertools.product(*each), MAX_FRAGMENTS))


def _assemble(c: Comparison, own: list, picked: tuple) -> Fragment:
    """One fragment: the nested comparisons' fragments first, then ``c``'s own steps."""
    steps: list[Step] = []
    preds: list[tuple[int, ...]] = []
    shared: list[tuple[str, ...]] = []
    roots: list[list[int]] = []
    for group in picked:
        roots.append([])
        for frag in group:
            base = len(steps)
            steps += frag.steps
            preds += [tuple(p + base for p in ps) for ps in frag.preds]
            shared += frag.shared
            roots[-1].append(frag.root + base)
    index: dict[str, int] = {}
    for step, factors in own:
        waits = [index[v] for v in index if _parent_var(own, v) == step.variable]
        waits += [r for i in factors for r in roots[i]]
        reads = sorted({key for i in factors for key in mechanisms.shared_keys(c.factors[i])})
        index[step.variable] = len(steps)
        steps.append(step)
        preds.append(tuple(sorted(waits)))
        shared.append(tuple(reads))
    return Fragment(tuple(steps), tuple(preds), tuple(shared), len(steps) - 1)


def _parent_var(own: list, v: str) -> str | None:
    for step, _ in own:
        if step.variable == v:
            return step.holder
    return None  # pragma: no cover


def _cheapest(found: list[Fragment]) -> list[Fragment]:
    """Distinct fragments (by signature), cheapest first, at most MAX_FRAGMENTS."""
    unique: dict[tuple, Fragment] = {}
    for frag in found:
        unique.setdefault(frag.signature(), frag)
    ranked = sorted(unique.values(), key=fragment_cost)
    return ranked[:MAX_FRAGMENTS]


def fragment_cost(frag: Fragment) -> tuple:
    """Fewest Theorem-2 steps, the largest ranks left to them, shallowest, narrowest."""
    t2 = frag.theorem2
    profile = frag.profile()
    return (len(t2), tuple(-r for r in t2), frag.depth, max(profile, default=0), profile)
