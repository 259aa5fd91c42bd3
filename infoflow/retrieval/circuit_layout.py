"""Each term's heads and MLPs (built from layer 1) -> the layers they run in on the
architecture: a stage of :mod:`~infoflow.retrieval.schedule_to_circuit`, before the fit.

A term's layers keep their order and may spread out (a head reads what earlier layers wrote,
which the residual stream keeps), so any increasing map of them onto the architecture's
layers carries it out, as long as each layer holds the heads mapped to it. In order of
preference:

1. side by side: every term from layer 1 (what compile built; nothing moves);
2. the engine's layers: each term where the engine's schedule runs the part it realises,
   when the terms and the engine's parts pair up one to one (:func:`pairing`: the same
   reduction over as many indices using as many layers, alike ones in order where the
   engine runs them alike);
3. a search: the first increasing maps, term by term, that fit.

Where the terms and the engine's parts pair up, compile names each term's heads after its
own part's steps, whatever the layout (the i-th layer the term uses is the i-th its part
uses); else heads side by side are named layer by layer where their layers and the engine's
align (as many heads in the i-th layer used of each) and the index each retrieves tells a
layer's heads apart, and otherwise, as searched ones, not at all (the witness's notes say
so).

A term that reads |x|^2 from LayerNorm's scale keeps its first layer: only the first
LayerNorm carries it.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import replace

from infoflow.retrieval.circuit import SQNORM, Head, Mlp, head_reads
from infoflow.retrieval.circuit_forms import Unbuildable
from infoflow.retrieval.circuit_sums import one_head
from infoflow.retrieval.types import EVERY, Comparison, Factor, Placement, Schedule

#: A term's heads and MLPs, and its reduction's (op, number of indices) where it has one.
Part = tuple[list[Head], list[Mlp], tuple[str, int] | None]

#: How many increasing maps the search tries before it gives up.
SEARCH_BUDGET = 100_000


def lay_out(
    parts: list[Part], heads: tuple[int, ...], schedule: Schedule
) -> tuple[list, str, list | None]:
    """The parts' heads and MLPs on the architecture's layers (``heads``: per layer), how
    they were laid out ("side by side", "engine" or "search"), and each part's engine part
    where the two pair up one to one (:func:`pairing`; None otherwise)."""
    used = [_layers(part) for part in parts]
    paired = pairing(parts, used, schedule)
    maps, how = [{layer: layer for layer in u} for u in used], "side by side"
    if not _fits(parts, maps, heads):
        maps, how = _engine_maps(used, paired), "engine"
        if maps is None or not _fits(parts, maps, heads):
            maps, how = _search(parts, used, heads), "search"
    if maps is None:
        depth = max((len(u) for u in used), default=0)
        raise Unbuildable(
            f"no layout of the terms fits heads {list(heads)}: {sum(len(p[0]) for p in parts)} "
            f"heads in all, each term's layers in increasing order (the deepest uses {depth})"
        )
    moved = [
        (
            [replace(h, layer=m[h.layer]) for h in part[0]],
            [replace(x, layer=m[x.layer]) for x in part[1]],
        )
        for part, m in zip(parts, maps, strict=True)
    ]
    return moved, how, paired


def shared_retrievals(parts: list[Part]) -> list[Part]:
    """Terms of one sharp head each that attend alike (the same layer, score, readout mask,
    fixed positions and query) as one part, their head copying every term's value, as the
    engine plans them: ``max(norm(x[t]) for t in T) + max(sqnorm(x[t]) for t in T)`` is one
    head on [1] (until 2026-12-07, one head a term: refused on [1], the engine's plan). The
    parts' MLPs follow; the first part's reduction names the whole."""
    alike: dict[tuple, list[int]] = {}
    for i, (heads, _, _) in enumerate(parts):
        if len(heads) == 1 and heads[0].sharp:
            alike.setdefault(_attention(heads[0]), []).append(i)
    out: list[Part | None] = list(parts)
    for members in alike.values():
        if len(members) < 2:
            continue
        head = one_head([(parts[i][0][0], False) for i in members])  # all in one layer
        mlps = [m for i in members for m in parts[i][1]]
        out[members[0]] = ([head], mlps, parts[members[0]][2])
        for i in members[1:]:
            out[i] = None
    return [part for part in out if part is not None]


def _attention(head: Head) -> tuple:
    """What decides where a head attends: two heads alike in it attend to the same token."""
    return (
        head.layer,
        head.mechanism,
        head.score,
        head.mask_readout,
        head.positions,
        head.who,
    )


def _layers(part: Part) -> list[int]:
    """The layers a term uses, its heads' and its MLPs'."""
    return sorted({h.layer for h in part[0]} | {m.layer for m in part[1]})


def _fits(parts: list[Part], maps: list[dict[int, int]], heads: tuple[int, ...]) -> bool:
    """Whether every mapped layer exists and holds its heads, and a term reading |x|^2 keeps
    its first layer."""
    load = [0] * len(heads)
    for part, m in zip(parts, maps, strict=True):
        if any(layer > len(heads) for layer in m.values()):
            return False
        if _reads_norm(part) and m and m[min(m)] != min(m):
            return False
        for h in part[0]:
            load[m[h.layer] - 1] += 1
    return all(n <= have for n, have in zip(load, heads, strict=True))


def _reads_norm(part: Part) -> bool:
    return any(SQNORM in head_reads(h) for h in part[0])


def pairing(parts: list[Part], used: list[list[int]], schedule: Schedule) -> list | None:
    """Each term's part in the engine's schedule (None for a term without heads), when the
    terms with heads and the engine's scheduled parts pair up one to one by what they are:
    the same reduction over as many indices using as many layers. Alike parts (two maxima
    over one token, say) pair in order only where the engine runs each alike (:func:`_said`:
    the same steps in the same relative layers, up to the names of indices and
    comparisons), so which is which changes no head's name; else None."""
    planned = [
        q
        for q in schedule.placements
        if q.mode == "scheduled" and q.fragment and q.comparison is not None
    ]
    built = [i for i, part in enumerate(parts) if part[0]]
    if schedule.shared or any(parts[i][2] is None for i in built):
        return None
    ours = {i: (*parts[i][2], len(used[i])) for i in built}
    theirs: dict[tuple, list[Placement]] = {}
    for q in planned:
        kind = (q.comparison.op, len(q.comparison.variables), len(_planned(q)))
        theirs.setdefault(kind, []).append(q)
    if sorted(ours.values()) != sorted(kind for kind, qs in theirs.items() for _ in qs):
        return None
    if any(len({_said(q) for q in alike}) > 1 for alike in theirs.values()):
        return None  # alike parts the engine runs differently: which term is which is unknown
    return [theirs[ours[i]].pop(0) if i in ours else None for i in range(len(parts))]


def _said(q: Placement) -> tuple:
    """What the engine runs for a part, up to the names of indices and comparisons: each
    step's kind, heads, length, rank, offset and holder (the readout, every token or a
    token), in which layers from the part's first, and the comparison's factors
    (:func:`_factor`)."""
    first = min(_planned(q))
    steps = tuple(
        (
            step.kind,
            step.heads,
            step.length,
            step.rank,
            step.offset,
            step.holder if step.holder in (None, EVERY) else "a token",
            tuple(layer - first for layer in layers),
        )
        for step, layers in zip(q.fragment.steps, q.layers, strict=True)
    )
    return steps, _comparison(q.comparison, _indices(q.comparison))


def _comparison(c: Comparison, indices: list[str]) -> tuple:
    """A comparison and those nested in it, up to the names of ``indices``."""
    factors = tuple(sorted(_factor(f, indices) for f in c.factors))
    return c.op, len(c.variables), c.copies, c.k, c.left_out, factors


def _indices(c: Comparison) -> list[str]:
    """The indices of ``c`` and of the comparisons nested in it, outermost first."""
    return [*c.variables, *(i for child in c.children for i in _indices(child))]


def _factor(f: Factor, indices: list[str]) -> tuple:
    """A factor up to the names of ``indices``: how many indices, neighbours and fixed
    positions it reads, its conditions and exclusions as written with each index by its
    place (``s < t`` and ``s2 < t2`` alike, a window and an order not), and the comparisons
    nested in it (:func:`_comparison`)."""

    def unnamed(text: str) -> str:
        for i, name in enumerate(indices):
            text = re.sub(rf"\b{re.escape(name)}\b", f"#{i}", text)
        return text

    tests = tuple(sorted(unnamed(t) for t in (*f.conditions, *f.exclusions)))
    counts = (len(f.scope), len(f.shifts), len(f.fixed))
    return counts, tests, tuple(sorted(_comparison(child, indices) for child in f.children))


def _planned(q: Placement) -> list[int]:
    """The layers the engine runs a part's steps in."""
    return sorted({layer for step in q.layers for layer in step})


def _engine_maps(used: list[list[int]], paired: list | None) -> list | None:
    """Each term's layers mapped onto those the engine runs its part in (:func:`pairing`)."""
    if paired is None:
        return None
    return [
        dict(zip(u, _planned(q), strict=True)) if q is not None else {}
        for u, q in zip(used, paired, strict=True)
    ]


def _search(parts: list[Part], used: list[list[int]], heads: tuple[int, ...]) -> list | None:
    """The first increasing maps, term by term (each term's earliest layers first), that
    fit; None when none does within :data:`SEARCH_BUDGET` tries."""
    choices = [
        [
            dict(zip(u, c, strict=True))
            for c in itertools.combinations(range(1, len(heads) + 1), len(u))
        ]
        for u in used
    ]
    tries = 0

    def extend(chosen: list[dict[int, int]]) -> list | None:
        nonlocal tries
        if len(chosen) == len(parts):
            return chosen
        for m in choices[len(chosen)]:
            tries += 1
            if tries > SEARCH_BUDGET:
                return None
            if _fits(parts[: len(chosen) + 1], [*chosen, m], heads):
                found = extend([*chosen, m])
                if found is not None:
                    return found
        return None

    return extend([])
