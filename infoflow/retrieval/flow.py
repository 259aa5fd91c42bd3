"""Comparison tree + architecture -> a plan (who retrieves what, in which layer and head)
and the information-set DAG.

Each top-level part of the target (a comparison, or the fixed positions read directly) is
placed on the layers. An efficient comparison needs its elimination rounds in increasing
layers (what a token retrieved stays in its residual stream), one head per retrieval;
k-th largest retrieval takes one head in each of up to k layers; fixed positions take one
head and need positional encoding. A part that cannot be placed falls back to global
aggregation (a head averaging the whole sequence; [R] it may share a head already in use).
The search maximises what is placed, so a head or a layer more never makes the plan worse.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import networkx as nx

from infoflow.retrieval.tree import Comparison, ComparisonTree

MAX_SEARCH = 200_000
MAX_CHOICES = 256
SPLIT = 16


@dataclass(frozen=True)
class Architecture:
    layers: int
    heads: tuple[int, ...]
    positional_encoding: bool


@dataclass
class Placement:
    """Where one part runs: its steps in increasing (not necessarily adjacent) layers, since
    what a token retrieved stays in its residual stream. ``mode``: max-position, pooled,
    k-th, specific-position, global (fallback or by nature) or impossible. ``kth_left`` is k
    minus the layers that peeled off the larger values (k-th parts only)."""

    label: str
    mode: str
    layers: tuple[int, ...] = ()  # 1-based layer of each step, increasing
    heads: tuple[int, ...] = ()  # heads each step takes
    positions: int = 0
    copies: int = 1
    kth_left: int | None = None
    reason: str = ""
    comparison: Comparison | None = None
    tag: str = ""

    @property
    def last_layer(self) -> int:
        """1-based layer of the part's final step (0 when it uses no layer)."""
        return self.layers[-1] if self.layers else 0


@dataclass
class Plan:
    architecture: Architecture
    placements: list[Placement]
    positions: frozenset[int] = field(default_factory=frozenset)

    @property
    def feasible(self) -> bool:
        return all(p.mode != "impossible" for p in self.placements)

    @property
    def uses_global(self) -> bool:
        return any(p.mode == "global" for p in self.placements)

    @property
    def decoded_positions(self) -> int | None:
        """Positions the readout decodes from (None: all T of them)."""
        if self.uses_global:
            return None
        return sum(p.positions * p.copies for p in self.placements)

    def heads_used(self) -> list[int]:
        used = [0] * self.architecture.layers
        for p in self.placements:
            for layer, h in zip(p.layers, p.heads, strict=True):
                used[layer - 1] += h
        return used


def plan(tree: ComparisonTree, arch: Architecture) -> Plan:
    """Place every part of ``tree`` on ``arch`` as well as the heads and layers allow.

    A depth-first search over each part's options (cheapest first) keeps the best by
    :func:`_score`. Copies of one comparison are interchangeable, so their option indices
    are taken in non-decreasing order; the search stops early once nothing can be better.
    """
    many = len(tree.comparisons) > 1
    parts: list[tuple[int, list[Placement]]] = [
        (i, _options(c, arch, copies, _tag(many and i + 1, copies < c.multiplicity and j + 1)))
        for i, c in enumerate(tree.comparisons)
        for copies, j in _split(c)
    ]
    if tree.positions:
        parts.append((-1, _position_options(tree.positions, arch)))
    floor = _score([options[-1] for _, options in parts if len(options) == 1])[:3]
    best: list[Placement] = []
    best_score: tuple | None = None
    budget = [MAX_SEARCH]
    free = list(arch.heads)

    def search(i: int, chosen: list[Placement], first: int) -> bool:
        """True when the search can stop: the best possible plan is found."""
        nonlocal best, best_score
        if best_score and _score(chosen)[:2] > best_score[:2]:
            return False  # already worse than the best: the prefix only grows
        budget[0] -= 1
        if i == len(parts):
            score = _score(chosen)
            if best_score is None or score < best_score:
                best, best_score = list(chosen), score
            return score[:3] == floor or budget[0] <= 0
        group, options = parts[i]
        same = i > 0 and parts[i - 1][0] == group and group >= 0
        for k in range(first if same else 0, len(options)):
            if _fits(options[k], free):
                _take(options[k], free, -1)
                done = search(i + 1, [*chosen, options[k]], k)
                _take(options[k], free, +1)
                if done:
                    return True
        return budget[0] <= 0

    search(0, [], 0)
    return Plan(arch, best, tree.positions)


def minimal_architecture(tree: ComparisonTree) -> Architecture:
    """The smallest architecture on which every part is placed as cheaply as it can be:
    each part from the first layer, heads added up per layer."""
    depth = max((len(_efficient_heads(c)) for c in tree.comparisons), default=0)
    if tree.positions:
        depth = max(depth, 1)
    heads = [0] * max(depth, 1)
    for c in tree.comparisons:
        for j, h in enumerate(_efficient_heads(c)):
            heads[j] += h
    if tree.positions:
        heads[0] += 1
    return Architecture(len(heads), tuple(max(h, 1) for h in heads), bool(tree.positions))


def _efficient_heads(c: Comparison) -> list[int]:
    heads = [sum(m.count for m in rnd) for rnd in c.rounds]
    if c.mode == "k-th":  # one head in each of k layers peels off the k largest
        return heads[:-1] + [c.multiplicity] * (c.k or 1)
    return heads


def _split(c: Comparison) -> list[tuple[int, int]]:
    """(copies, index) of the parts a comparison is placed as: its copies one by one, so
    that too few heads cost only the copies that do not fit (at most SPLIT of them)."""
    if 1 < c.multiplicity <= SPLIT:
        return [(1, j) for j in range(c.multiplicity)]
    return [(c.multiplicity, 0)]


def _tag(comparison: int | bool, copy: int | bool) -> str:
    """Names one part among several: ``c2`` (second comparison), ``3`` (third copy)."""
    return ".".join(([f"c{comparison}"] if comparison else []) + ([str(copy)] if copy else []))


def _tag_words(tag: str, copies_of: int) -> str:
    words = []
    for piece in tag.split("."):
        if piece.startswith("c"):
            words.append(f"comparison {piece[1:]}")
        else:
            words.append(f"copy {piece} of {copies_of}")
    return ", ".join(words)


def _options(c: Comparison, arch: Architecture, copies: int, tag: str) -> list[Placement]:
    """Every way to place ``copies`` copies of comparison ``c``, cheapest first; the last
    always fits."""
    options = []
    label = f"{c.label} ({_tag_words(tag, c.multiplicity)})" if tag else c.label
    common = {"label": label, "copies": copies, "comparison": c, "tag": tag}
    per_round = [sum(m.count for m in rnd) * copies // c.multiplicity for rnd in c.rounds]
    if c.mode == "k-th":
        before = per_round[:-1]
        for peels in range(min(c.k or 1, arch.layers - len(before)), 0, -1):
            heads = tuple(before + [copies] * peels)
            left = (c.k or 1) - (peels - 1)
            mode = "max-position" if left == 1 else "k-th"
            for layers in _increasing(arch.layers, len(heads)):
                options.append(
                    Placement(mode=mode, layers=layers, heads=heads, positions=1,
                              kth_left=left, **common)
                )  # fmt: skip
    elif c.mode != "global":
        heads = tuple(per_round)
        for layers in _increasing(arch.layers, len(heads)):
            options.append(
                Placement(mode=c.mode, layers=layers, heads=heads, positions=c.positions, **common)
            )
    reason = _fallback_reason(c, arch, per_round)
    options.append(Placement(mode="global", reason=reason, positions=0, **common))
    return options


def _increasing(layers: int, steps: int) -> list[tuple[int, ...]]:
    """Choices of ``steps`` increasing layers out of 1..``layers``, earliest first."""
    return list(itertools.islice(itertools.combinations(range(1, layers + 1), steps), MAX_CHOICES))


def _fallback_reason(c: Comparison, arch: Architecture, heads: list[int]) -> str:
    if c.mode == "global":
        if c.op == "sum":
            return "a sum over tokens of a score coupling several indices needs every position"
        return f"order {c.order}: no chain of max-position retrievals resolves it"
    need = len(c.rounds)
    if need > arch.layers:
        return f"too few layers: it needs {need}, the architecture has {arch.layers}"
    return f"too few heads: it needs {heads} in increasing layers beside the other parts"


def _position_options(positions: frozenset[int], arch: Architecture) -> list[Placement]:
    label = "fixed positions " + ", ".join(f"x[{p}]" for p in sorted(positions))
    common = {"label": label, "positions": len(positions)}
    if not arch.positional_encoding:
        reason = "without positional encoding no head can single out a fixed position"
        return [Placement(mode="impossible", reason=reason, **common)]
    options = [
        Placement(mode="specific-position", layers=(layer,), heads=(1,), **common)
        for layer in range(1, arch.layers + 1)
    ]
    reason = "no head left for a specific-position head"
    return [*options, Placement(mode="global", reason=reason, **{**common, "positions": 0})]


def _fits(option: Placement, free: list[int]) -> bool:
    return all(free[layer - 1] >= h for layer, h in zip(option.layers, option.heads, strict=True))


def _take(option: Placement, free: list[int], sign: int) -> None:
    for layer, h in zip(option.layers, option.heads, strict=True):
        free[layer - 1] += sign * h


def _score(chosen: list[Placement]) -> tuple:
    """Smaller is better: impossible parts, then global fallbacks, then k-th work left,
    then the latest layer used."""
    impossible = sum(p.mode == "impossible" for p in chosen)
    fallbacks = sum(p.copies for p in chosen if p.mode == "global")
    kth = sum((p.kth_left or 1) - 1 for p in chosen if p.mode != "global")
    last = max((p.last_layer for p in chosen), default=0)
    return impossible, fallbacks, kth, last


# ---- the information-set DAG -----------------------------------------------------------


def readout_sets(p: Plan) -> list[list[str]]:
    """The readout token's information set after each layer, as labels."""
    sets: list[list[str]] = []
    for layer in range(1, p.architecture.layers + 1):
        labels: list[str] = []
        for placement in p.placements:
            if placement.mode in ("global", "impossible"):
                if placement.mode == "global" and layer == p.architecture.layers:
                    labels.append("all T positions")
                continue
            if placement.last_layer <= layer:
                labels.extend(_labels(placement))
        sets.append(sorted(set(labels), key=labels.index))
    return sets


def token_sets(p: Plan) -> list[list[str]]:
    """A generic token's information set before the first layer and after each: itself (t)
    and, for each retrieval it makes, the best partner it found (``s*(t)``)."""
    gained: dict[int, list[str]] = {}
    for placement in p.placements:
        c = placement.comparison
        if c is None or placement.mode in ("global", "k-th") or placement.kth_left is not None:
            continue
        sub = f"_{placement.tag}" if placement.tag else ""
        for j, rnd in enumerate(c.rounds):
            for m in rnd:
                if m.holder:
                    label = f"{m.variable}*{sub}({m.holder})"
                    gained.setdefault(placement.layers[j], []).append(label)
    sets, current = [["t"]], ["t"]
    for layer in range(1, p.architecture.layers + 1):
        current = current + gained.get(layer, [])
        sets.append(current)
    return sets


def _labels(placement: Placement) -> list[str]:
    """Positions the readout holds from one part: ``t*`` is the best t, ``s*(t*)`` the best
    s for it; ``_c2.3`` names the comparison and copy, `` x4`` counts unsplit copies."""
    if placement.mode == "specific-position":
        return placement.label.removeprefix("fixed positions ").split(", ")
    c = placement.comparison
    if c is None:  # pragma: no cover - only fixed positions have no comparison
        return []
    sub = f"_{placement.tag}" if placement.tag else ""
    copies = f" x{placement.copies}" if placement.copies > 1 else ""
    if placement.kth_left is not None:
        return [f"{c.variables[0]}*{sub} ({ordinal(c.k or 1)} largest){copies}"]
    if placement.mode == "pooled":
        return [f"mean over {c.variables[0]}{sub}{copies}"]
    labels = []
    for comparison in c.walk():  # outer comparisons first, and in each the last round first
        own = comparison.rounds[len(comparison.rounds) - _own_rounds(comparison) :]
        for rnd in reversed(own):
            for m in rnd:
                holder = f"({m.holder}*{sub})" if m.holder else ""
                labels.append(f"{m.variable}*{sub}{holder}{copies}")
    return labels


def ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def _own_rounds(c: Comparison) -> int:
    child = max((len(ch.rounds) for ch in c.children), default=0)
    return len(c.rounds) - child


def information_dag(p: Plan) -> nx.MultiDiGraph:
    """Nodes ``role@layer`` (a generic token t, the readout, each fixed position) with their
    information sets; edges labelled by propagation mode. Its size does not depend on T."""
    graph = nx.MultiDiGraph()
    roles = ["token", "readout"] + [f"x[{q}]" for q in sorted(p.positions)]
    readout = [[], *readout_sets(p)]
    token = token_sets(p)
    for layer in range(p.architecture.layers + 1):
        for role in roles:
            info = {"readout": readout[layer], "token": token[layer]}.get(role, [role])
            graph.add_node(f"{role}@{layer}", role=role, layer=layer, info=info)
        if layer:
            for role in roles:
                graph.add_edge(f"{role}@{layer - 1}", f"{role}@{layer}", mode="residual")
    for placement in p.placements:
        for layer, mode, source, target, heads in _edges(placement, p.architecture.layers):
            graph.add_edge(
                f"{source}@{layer - 1}", f"{target}@{layer}",
                mode=mode, part=placement.label, heads=heads,
            )  # fmt: skip
    return graph


def to_dot(graph: nx.MultiDiGraph) -> str:
    """The DAG in Graphviz's DOT language, layers from bottom to top."""
    lines = ["digraph infoflow {", "  rankdir=BT;", "  node [shape=box, fontsize=10];"]
    for node, data in graph.nodes(data=True):
        info = ", ".join(data["info"]) or "empty"
        lines.append(f'  "{node}" [label="{node}\\n{{{_quote(info)}}}"];')
    for source, target, data in graph.edges(data=True):
        if data["mode"] == "residual":
            lines.append(f'  "{source}" -> "{target}" [label="residual", style=dotted];')
            continue
        label = f"{data['mode']}, {data['heads']} head(s): {data['part']}"
        label += f"\\nalpha {data['cost']}" if "cost" in data else ""
        lines.append(f'  "{source}" -> "{target}" [label="{_quote(label)}"];')
    return "\n".join([*lines, "}"]) + "\n"


def _quote(text: str) -> str:
    return text.replace('"', '\\"')


def _edges(placement: Placement, layers: int):
    """(layer, mode, source role, target role, heads) for one placed part."""
    if placement.mode == "impossible":
        return
    if placement.mode == "global":
        yield layers, "global", "token", "readout", 0
        return
    if placement.mode == "specific-position":
        for q in placement.label.removeprefix("fixed positions ").split(", "):
            yield placement.layers[0], "specific-position", q, "readout", 1
        return
    last = len(placement.heads) - 1
    for j, heads in enumerate(placement.heads):
        target = "readout" if j == last else "token"
        if placement.kth_left is not None:
            mode = "k-th largest" if j == last and placement.kth_left > 1 else "max-position"
        else:
            mode = "global" if placement.mode == "pooled" else "max-position"
        yield placement.layers[j], mode, "token", target, heads
