"""Comparison tree + architecture -> a plan: which step of which part runs in which layer.

Each top-level part (a comparison, each of its copies up to SPLIT, the fixed positions read
directly) has options: its fragments (:mod:`~infoflow.retrieval.steps`), cheapest first,
then global aggregation ([R]: a fallback that may share a head); or it is impossible
(positions without positional encoding). A depth-first search picks one option per part and
keeps the best by (impossible parts, fallbacks, Theorem-2 steps, their ranks); :func:`fits`
decides exactly whether the chosen steps fit the heads of each layer. So a head or a layer
more never makes the plan worse. Nothing here depends on T.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from infoflow.retrieval.canonical import Comparison
from infoflow.retrieval.layers import fits
from infoflow.retrieval.steps import FETCH, Fragment, Step, fragments
from infoflow.retrieval.tree import ComparisonTree, global_reason, position_reads

SPLIT = 16  # copies of a top-level comparison placed one by one (more: as one block)
NO_THEOREM2 = -(10**18)  # the score of a plan without single-head k-th retrievals
ALREADY_GLOBAL = (
    "another part needs global aggregation, which costs less than a single-head k-th retrieval"
)
INSTEAD = "in place of its single-head k-th retrieval, where that costs more"


@dataclass(frozen=True)
class Architecture:
    layers: int
    heads: tuple[int, ...]
    positional_encoding: bool


@dataclass(frozen=True)
class Option:
    """One way to place a part: ``scheduled`` (a fragment), ``global`` or ``impossible``."""

    mode: str
    fragment: Fragment | None = None
    reason: str = ""

    def score(self, copies: int) -> tuple[int, int, int, int]:
        """What this option costs, smaller first: impossible parts, global aggregations,
        minus the smallest rank left to a single-head k-th retrieval (its Theorem-2 term
        grows the most), the number of such retrievals."""
        ranks = self.fragment.theorem2 if self.fragment else ()
        worst = -min(ranks) if ranks else NO_THEOREM2
        return (int(self.mode == "impossible"), copies * (self.mode == "global"), worst, len(ranks))


@dataclass(frozen=True)
class Part:
    label: str
    comparison: Comparison | None
    copies: int
    options: tuple[Option, ...]
    group: int  # copies of one comparison share a group
    tag: str = ""


@dataclass
class Placement:
    """Where one part runs: ``mode`` scheduled, global or impossible; ``layers[i]`` the
    layers step i of the fragment runs in (several for a peel)."""

    label: str
    mode: str
    copies: int = 1
    comparison: Comparison | None = None
    fragment: Fragment | None = None
    layers: tuple = ()
    reason: str = ""
    tag: str = ""
    sequential: bool = False

    @property
    def last_layer(self) -> int:
        return max((ls[-1] for ls in self.layers if len(ls)), default=0)


@dataclass
class Plan:
    architecture: Architecture
    placements: list[Placement]
    shared: dict[str, tuple[Step, int]] = field(default_factory=dict)  # key -> (step, layer)
    positions: frozenset[str] = frozenset()

    @property
    def feasible(self) -> bool:
        return all(p.mode != "impossible" for p in self.placements)

    @property
    def uses_global(self) -> bool:
        return any(p.mode == "global" for p in self.placements)

    @property
    def theorem2(self) -> bool:
        """Whether some part makes a single-head k-th retrieval."""
        return any(q.fragment and q.fragment.theorem2 for q in self.placements)

    @property
    def decoded_positions(self) -> int | None:
        """Positions the readout's state couples (None: all T of them)."""
        if self.uses_global:
            return None
        held = sum(
            held_positions(p.comparison) * p.copies
            for p in self.placements
            if p.comparison and p.mode == "scheduled"
        )
        fetch = self.shared.get(FETCH)
        return held + (len(fetch_positions(self)) if fetch else 0)

    def heads_used(self) -> list[int]:
        used = [0] * self.architecture.layers
        for p in self.placements:
            if p.fragment:
                for step, layers in zip(p.fragment.steps, p.layers, strict=True):
                    for layer in layers:
                        used[layer - 1] += step.heads
        for step, layer in self.shared.values():
            used[layer - 1] += step.heads
        return used


def held_positions(c: Comparison) -> int:
    """Token positions the result of one copy of ``c`` couples: its own indices, the
    neighbours its scores read, and what is nested in it."""
    own = len(c.variables) + sum(len(f.shifts) for f in c.factors)
    return own + sum(held_positions(child) * child.copies for child in c.children)


def fetch_positions(p: Plan) -> list[str]:
    """Fixed positions the specific-position head brings in: read directly or in a score."""
    inside = {
        q
        for pl in p.placements
        if pl.comparison and pl.mode == "scheduled"
        for c in pl.comparison.walk()
        for f in c.factors
        for q in f.fixed
    }
    return sorted(set(p.positions) | inside)


# ---- the parts and their options ---------------------------------------------------------


def parts(tree: ComparisonTree, arch: Architecture, ranks: dict) -> list[Part]:
    """Every part of ``tree`` with its options on ``arch``, cheapest first."""
    out: list[Part] = []
    many = len(tree.parts) > 1
    for i, c in enumerate(tree.parts):
        split = 1 < c.copies <= SPLIT
        unit = replace(c, copies=1) if split else c
        options = tuple(_options(unit, arch, ranks, tree.separable_sum))
        for j in range(c.copies if split else 1):
            tag = ".".join(([f"c{i + 1}"] if many else []) + ([str(j + 1)] if split else []))
            label = f"{c.label} ({_tag_words(tag, c.copies)})" if tag else c.label
            out.append(Part(label, unit, 1 if split else c.copies, options, i, tag))
    if tree.positions:
        label = "fixed positions " + ", ".join(sorted(tree.positions))
        if arch.positional_encoding:
            reason = "no head left for a specific-position head"
            fetch = Fragment((), (), (), -1, (FETCH,))
            options = (Option("scheduled", fetch), Option("global", reason=reason))
        else:
            reason = "without positional encoding no head can single out a fixed position"
            options = (Option("impossible", reason=reason),)
        out.append(Part(label, None, 1, options, -1))
    return out


def _options(c: Comparison, arch: Architecture, ranks: dict, separable_sum: str) -> list[Option]:
    reads = position_reads(c)
    if reads and not arch.positional_encoding:
        reason = (
            f"{reads[0]} reads positions, and without positional encoding the model is "
            "permutation invariant"
        )
        return [Option("impossible", reason=reason)]
    reason = global_reason(c, separable_sum)
    if reason:
        return [Option("global", reason=reason)]
    every = fragments(c, None, 1, ranks)
    widest = max(arch.heads)
    fit = [f for f in every if f.depth <= arch.layers and max(s.heads for s in f.steps) <= widest]
    return [Option("scheduled", f) for f in fit] + [Option("global", reason=_fallback(every, arch))]


def _fallback(every: list[Fragment], arch: Architecture) -> str:
    need = min(f.depth for f in every)
    if need > arch.layers:
        return f"too few layers: it needs {need}, the architecture has {arch.layers}"
    return (
        f"too few heads: it needs {every[0].profile()} in increasing layers beside the other parts"
    )


def _tag_words(tag: str, copies_of: int) -> str:
    words = []
    for piece in tag.split("."):
        words.append(
            f"comparison {piece[1:]}" if piece.startswith("c") else f"copy {piece} of {copies_of}"
        )
    return ", ".join(words)


# ---- the search --------------------------------------------------------------------------


def plan(tree: ComparisonTree, arch: Architecture, ranks: dict) -> Plan:
    """The best plan of ``tree`` on ``arch`` (PlanTooLarge when the exact search would not
    end in time)."""
    found = parts(tree, arch, ranks)
    choice = _search(found, list(arch.heads))
    chosen = [found[i].options[j] for i, j in enumerate(choice)]
    frags = [o.fragment for o in chosen if o.fragment]
    layers, shared = _place(frags, list(arch.heads))
    placements, k = [], 0
    for part, option in zip(found, chosen, strict=True):
        placement = Placement(
            part.label,
            option.mode,
            part.copies,
            part.comparison,
            option.fragment,
            reason=option.reason,
            tag=part.tag,
        )
        if option.fragment:
            placement.layers = layers[k]
            placement.sequential = _spread(layers[k]) > min(
                o.fragment.depth
                for o in part.options
                if o.fragment and o.fragment.theorem2 == option.fragment.theorem2
            )
            k += 1
        placements.append(placement)
    found_plan = Plan(arch, placements, shared, tree.positions)
    if found_plan.uses_global and found_plan.theorem2:  # the global term is paid anyway
        return without_theorem2(found_plan, ALREADY_GLOBAL)
    return found_plan


def _spread(layers: tuple) -> int:
    """How many layers a part's steps run in."""
    return len({layer for used in layers for layer in used})


def without_theorem2(p: Plan, reason: str = INSTEAD) -> Plan:
    """``p`` with every part that makes a single-head k-th retrieval falling back to global
    aggregation instead: the other candidate for the cheapest plan, since both exponents
    grow with T and either may be the smaller one at a given T, E and d."""
    placements = [
        replace(q, mode="global", fragment=None, layers=(), reason=reason)
        if q.fragment and q.fragment.theorem2
        else q
        for q in p.placements
    ]
    needed = {
        k
        for q in placements
        if q.fragment
        for ks in (*q.fragment.shared, q.fragment.needs)
        for k in ks
    }
    shared = {k: v for k, v in p.shared.items() if k in needed}
    return Plan(p.architecture, placements, shared, p.positions)


def _search(found: list[Part], caps: list[int]) -> list[int]:
    """The option index per part of the best plan (depth first, best options first;
    copies of one comparison take option indices in non-decreasing order)."""
    scores = [[o.score(p.copies) for o in p.options] for p in found]
    costs = [[o.fragment.heads if o.fragment else 0 for o in p.options] for p in found]
    lowest = _total(s[0] for s in scores)
    best: list = [None, None]  # score, choice
    capacity = sum(caps)

    def dfs(i: int, choice: list[int], acc: tuple, used: int) -> bool:
        if i == len(found):
            if best[0] is None or acc < best[0]:
                best[0], best[1] = acc, list(choice)
            return acc == lowest
        part = found[i]
        start = choice[-1] if i and found[i - 1].group == part.group >= 0 else 0
        for j in range(start, len(part.options)):
            total, spent = _add(acc, scores[i][j]), used + costs[i][j]
            if best[0] is not None:
                bound = _add(total, _rest_bound(scores[i + 1 :], costs[i + 1 :], capacity - spent))
                if bound >= best[0]:
                    continue
            option = part.options[j]
            if option.fragment and not _fits_choice(found, [*choice, j], caps):
                continue
            if dfs(i + 1, [*choice, j], total, spent):
                return True
        return False

    dfs(0, [], (0, 0, NO_THEOREM2, 0), 0)
    return best[1]


def _add(a: tuple, b: tuple) -> tuple:
    """Two scores together: counts add, the worst Theorem-2 rank is the worse one."""
    return (a[0] + b[0], a[1] + b[1], max(a[2], b[2]), a[3] + b[3])


def _total(scores) -> tuple:
    out = (0, 0, NO_THEOREM2, 0)
    for score in scores:
        out = _add(out, score)
    return out


def _rest_bound(scores: list, costs: list, room: int) -> tuple:
    """A lower bound on what the remaining parts cost: each its best option, plus the
    fallbacks and Theorem-2 steps needed for their heads to fit the heads left (a
    relaxation that ignores layers)."""
    base = _total(s[0] for s in scores)
    cheapest = [
        min([c for c, s in zip(cs, ss, strict=True) if s[1] == 0] or [0])
        for cs, ss in zip(costs, scores, strict=True)
    ]
    fallbacks = _needed(sorted(cheapest, reverse=True), sum(cheapest) - room)
    first = sorted((cs[0] for cs in costs), reverse=True)
    deficit = sum(first) - room - sum(first[:fallbacks])
    savings = sorted((cs[0] - low for cs, low in zip(costs, cheapest, strict=True)), reverse=True)
    more = _needed(savings, deficit) if fallbacks == 0 else 0
    return _add(base, (0, fallbacks, NO_THEOREM2, more))


def _needed(savings: list[int], deficit: int) -> int:
    """How many of ``savings`` (largest first) it takes to cover ``deficit``."""
    count = 0
    for saving in savings:
        if deficit <= 0:
            break
        deficit -= saving
        count += 1
    return count


def _fits_choice(found: list[Part], choice: list[int], caps: list[int]) -> bool:
    frags = [found[i].options[j].fragment for i, j in enumerate(choice)]
    heads, preds, _, _ = _graph([f for f in frags if f])
    return fits(heads, preds, caps) is not None


def _graph(frags: list[Fragment]):
    """The chosen steps as one graph of single-layer nodes (a peel of rank r is a chain of
    r nodes): heads and predecessors per node, the nodes of each step, the shared steps."""
    keys = sorted({k for f in frags for ks in (*f.shared, f.needs) for k in ks})
    heads = [1] * len(keys)
    preds: list[list[int]] = [[] for _ in keys]
    shared_node = {k: i for i, k in enumerate(keys)}
    nodes_of: list[list[list[int]]] = []
    for frag in frags:
        mine: list[list[int]] = []
        for i, step in enumerate(frag.steps):
            waits = [mine[p][-1] for p in frag.preds[i]] + [shared_node[k] for k in frag.shared[i]]
            chain = []
            for _ in range(step.length):
                heads.append(step.heads)
                preds.append(waits)
                chain.append(len(heads) - 1)
                waits = [chain[-1]]
            mine.append(chain)
        nodes_of.append(mine)
    return heads, preds, nodes_of, shared_node


def _place(frags: list[Fragment], caps: list[int]):
    """Layers of every chosen step, and of the shared steps."""
    heads, preds, nodes_of, shared_node = _graph(frags)
    layer = fits(heads, preds, caps) if heads else []
    assert layer is not None  # the search only keeps what fits
    steps = {FETCH: Step("fetch")}
    per_fragment = [tuple(tuple(layer[n] for n in chain) for chain in mine) for mine in nodes_of]
    shared = {}
    for key, node in shared_node.items():
        step = steps.get(key) or Step("shift", offset=int(key.removeprefix("shift")))
        shared[key] = (step, layer[node])
    return per_fragment, shared
