"""Comparison tree -> steps: every way to resolve a comparison as heads in layers.

A step is one head in one layer (``heads`` copies side by side), and waits for the steps
whose results its score reads (they run in strictly earlier layers):

- ``retrieve``: eliminating index v of a min/max (max-position retrieval), made by every
  token holding the index v's factors still touch, or by the readout;
- ``pool``: a sum over one token of a score of that token, one averaging head;
- ``peel``: a k-th retrieval of rank r as r steps in increasing layers (layer j learns the
  j-th largest, [R] ``kth_layers``), or ``kth``: one single-head retrieval priced by
  Theorem 2. Peeling fewer than r leaves the (r - p)-th largest of T - p candidates, which
  Theorem 2 prices as the r-th of T, so a k-th step is peeled whole or not at all;
- ``fetch`` and ``shift``: shared steps that bring fixed positions, or a neighbour
  x[t + offset], to every token (specific-position aggregation, positional encoding needed).

An extremum comparison's elimination tree may be rooted at any of its indices (the one the
readout retrieves last): a chain a-b-c rooted at b is [2, 1], rooted at a is [1, 1, 1]
([R] sequential schedules). :func:`fragments` lists the distinct ways, cheapest first.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from infoflow.retrieval.canonical import Comparison, Factor

EVERY = "*"  # a step every token makes (the holder of a broadcast value)
MAX_FRAGMENTS = 64  # ways kept per comparison (the cheapest by Theorem-2 steps and depth)
FETCH = "fetch"


@dataclass(frozen=True)
class Step:
    kind: str  # retrieve | pool | peel | kth | fetch | shift
    heads: int = 1
    length: int = 1  # layers a peel takes (one head in each)
    variable: str | None = None
    holder: str | None = None  # a token index, EVERY, or None (the readout)
    rank: int | None = None  # peel and kth: the rank retrieved
    comparison: Comparison | None = None
    offset: int = 0  # shift: x[t + offset]


@dataclass(frozen=True)
class Fragment:
    """Steps resolving a comparison and everything nested in it: ``preds[i]`` are the
    steps step i waits for, ``shared[i]`` the shared steps (fetch, shift) it waits for;
    ``needs`` lists shared steps wanted without a consumer (fixed positions read directly)."""

    steps: tuple[Step, ...]
    preds: tuple[tuple[int, ...], ...]
    shared: tuple[tuple[str, ...], ...]
    root: int
    needs: tuple[str, ...] = ()

    @property
    def theorem2(self) -> tuple[int, ...]:
        """Ranks of the single-head k-th steps, smallest first (each copy counted)."""
        return tuple(sorted(s.rank for s in self.steps for _ in range(s.heads) if s.kind == "kth"))

    @property
    def heads(self) -> int:
        """Heads over all layers (a peel counts one per layer)."""
        return sum(s.heads * s.length for s in self.steps)

    def finish(self) -> list[int]:
        """The layer each step ends in when every step runs as early as it can (shared
        steps in layer 1)."""
        end: list[int] = []
        for i, step in enumerate(self.steps):
            start = max([end[p] for p in self.preds[i]] + [1 if self.shared[i] else 0]) + 1
            end.append(start + step.length - 1)
        return end

    @property
    def depth(self) -> int:
        return max(self.finish(), default=1 if self.needs else 0)

    def profile(self) -> list[int]:
        """Heads per layer when every step runs as early as it can."""
        diff = [0] * (self.depth + 2)
        for step, end in zip(self.steps, self.finish(), strict=True):
            diff[end - step.length + 1] += step.heads
            diff[end + 1] -= step.heads
        out, running = [], 0
        for value in diff[1 : self.depth + 1]:
            running += value
            out.append(running)
        return out

    def signature(self, i: int | None = None) -> tuple:
        """The structure below step ``i`` (the root by default), names left out: two
        fragments with one signature schedule alike."""
        i = self.root if i is None else i
        if i < 0:
            return ("needs", self.needs)
        step = self.steps[i]
        below = tuple(sorted(self.signature(p) for p in self.preds[i]))
        return (step.kind, step.heads, step.length, step.rank, self.shared[i], below)


def shared_key(kind: str, offset: int = 0) -> str:
    return FETCH if kind == "fetch" else f"shift{offset:+d}"


def fragments(c: Comparison, holder: str | None, heads: int, ranks: dict) -> list[Fragment]:
    """Every distinct way to resolve ``c`` (and what is nested in it) whose result ends up
    with ``holder``, cheapest first: fewest Theorem-2 steps, then shallowest."""
    heads *= c.copies
    children = [_child_fragments(f, heads, ranks) for f in c.factors]
    if c.kind == "extremum" or (c.kind == "kth" and ranks.get(c.k, c.k) == 1):
        roots = sorted(c.free) if c.free else list(c.variables)
        owns = [_rooted(c, root, holder, heads) for root in roots]
    else:
        kind = "pool" if c.kind == "sum" else "kth"
        r = ranks.get(c.k, c.k) if c.kind == "kth" else None
        variable = c.variables[0]
        owns = [[(Step(kind, heads, 1, variable, holder, r, c), tuple(range(len(c.factors))))]]
        if kind == "kth":
            peel = Step("peel", heads, r, variable, holder, r, c)
            owns.insert(0, [(peel, tuple(range(len(c.factors))))])
    out = []
    for own in owns:
        for picked in itertools.islice(itertools.product(*children), MAX_FRAGMENTS * 4):
            out.append(_assemble(c, own, picked))
    return _cheapest(out)


def _child_fragments(f: Factor, heads: int, ranks: dict) -> list[tuple[Fragment, ...]]:
    """The ways to resolve the comparisons nested in one factor, together."""
    each = [fragments(child, next(iter(child.free), EVERY), heads, ranks) for child in f.children]
    return list(itertools.islice(itertools.product(*each), MAX_FRAGMENTS))


def _rooted(c: Comparison, root: str, holder: str | None, heads: int) -> list:
    """The elimination tree of an extremum comparison rooted at ``root`` (an own index, or
    the enclosing index the result goes to): (step, factors consumed) in elimination order."""
    edges: dict[str, set[str]] = {v: set() for v in (*c.variables, *c.free)}
    for f in c.factors:
        if len(f.scope) == 2:
            a, b = sorted(f.scope)
            edges[a].add(b)
            edges[b].add(a)
    parent, depth, queue = {root: None}, {root: 0}, [root]
    for v in queue:
        for u in sorted(edges[v]):
            if u not in parent:
                parent[u], depth[u] = v, depth[v] + 1
                queue.append(u)
    own = [v for v in reversed(queue) if v in c.variables]
    consumed: dict[str, list[int]] = {v: [] for v in own}
    for i, f in enumerate(c.factors):
        consumed[max((v for v in f.scope if v in c.variables), key=depth.get)].append(i)
    steps = []
    for v in own:
        up = parent[v] if parent[v] in c.variables else holder
        steps.append((Step("retrieve", heads, 1, v, up, None, c), tuple(consumed[v])))
    return steps


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
        reads = sorted({key for i in factors for key in _reads(c.factors[i])})
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


def _reads(f: Factor) -> list[str]:
    keys = [shared_key("fetch")] if f.fixed else []
    return keys + [shared_key("shift", o) for o in sorted({o for _, o in f.shifts})]


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
