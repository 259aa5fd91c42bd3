"""Each term's heads and MLPs (built from layer 1) -> the layers they run in on the
architecture: a stage of :mod:`~infoflow.retrieval.schedule_to_circuit`, before the fit.

A term's layers keep their order and may spread out (a head reads what earlier layers wrote,
which the residual stream keeps), so any increasing map of them onto the architecture's
layers carries it out, as long as each layer holds the heads mapped to it. In order of
preference:

1. side by side: every term from layer 1 (what compile built; nothing moves);
2. the engine's layers: each term where the engine's schedule runs the part it realises,
   when the terms and the engine's parts pair up one to one (the same reduction over as
   many indices using as many layers, and no other like it), so each head can be named
   after the step in its layer;
3. a search: the first increasing maps, term by term, that fit (the heads are then not
   named after the engine's steps, which run elsewhere).

A term that reads |x|^2 from LayerNorm's scale keeps its first layer: only the first
LayerNorm carries it.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

from infoflow.retrieval.circuit import SQNORM, Head, Mlp
from infoflow.retrieval.circuit_forms import Unbuildable
from infoflow.retrieval.types import Schedule

#: A term's heads and MLPs, and its reduction's (op, number of indices) where it has one.
Part = tuple[list[Head], list[Mlp], tuple[str, int] | None]

#: How many increasing maps the search tries before it gives up.
SEARCH_BUDGET = 100_000


def lay_out(parts: list[Part], heads: tuple[int, ...], schedule: Schedule) -> tuple[list, str]:
    """The parts' heads and MLPs on the architecture's layers (``heads``: per layer), and
    how they were laid out: "side by side", "engine" or "search"."""
    used = [_layers(part) for part in parts]
    maps, how = [{layer: layer for layer in u} for u in used], "side by side"
    if not _fits(parts, maps, heads):
        maps, how = _engine_maps(parts, used, schedule), "engine"
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
    return moved, how


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
    return any(f.key == SQNORM for h in part[0] for f in h.score)


def _engine_maps(parts: list[Part], used: list[list[int]], schedule: Schedule) -> list | None:
    """Each term mapped onto the layers the engine runs its part in, when the terms (those
    with heads) and the engine's scheduled parts pair up one to one by what they are (the
    same reduction over as many indices, using as many layers), each the only one of its
    kind; else None."""
    planned = [
        q
        for q in schedule.placements
        if q.mode == "scheduled" and q.fragment and q.comparison is not None
    ]
    built = [i for i, part in enumerate(parts) if part[0]]
    if schedule.shared or len(planned) != len(built):
        return None
    engine: dict[tuple, list[int]] = {}
    for q in planned:
        layers = sorted({layer for step in q.layers for layer in step})
        what = (q.comparison.op, len(q.comparison.variables), len(layers))
        engine.setdefault(what, []).append(layers)
    maps: list[dict[int, int]] = [{} for _ in parts]
    for i in built:
        if parts[i][2] is None:
            return None
        found = engine.get((*parts[i][2], len(used[i])), [])
        if len(found) != 1:
            return None
        maps[i] = dict(zip(used[i], found[0], strict=True))
    return maps


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
