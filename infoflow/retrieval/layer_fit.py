"""Does a set of steps fit the layers? An exact test for nodes with heads and predecessors
(which run in strictly earlier layers) on a capacity per layer: an as-late-as-possible greedy
first, then a search over the layers from the top that never tries two interchangeable
choices. The greedy alone is not exact when layers differ in heads (nor is the classic
highest-level-first rule), so the search settles what it cannot place."""

from __future__ import annotations

MAX_STATES = 200_000  # states of the exhaustive search before it refuses


class SearchTooLarge(ValueError):
    """The exact layer search would take more than MAX_STATES states."""


def fits(heads: list[int], preds: list[list[int]], caps: list[int]) -> list[int] | None:
    """Layers (1-based) for nodes with ``heads`` and predecessors (which must run in
    strictly earlier layers), at most ``caps[l - 1]`` heads in layer l; None when no such
    placement exists. Exact: an as-late-as-possible greedy first, then a search over the
    layers from the top that skips interchangeable choices."""
    n, layers = len(heads), len(caps)
    if n == 0:
        return []
    height = [0] * n
    for v in range(n):  # predecessors always come first
        height[v] = 1 + max((height[p] for p in preds[v]), default=0)
    succs: list[list[int]] = [[] for _ in range(n)]
    for v, ps in enumerate(preds):
        for p in ps:
            succs[p].append(v)
    if max(height) > layers or not _counts_fit(heads, height, caps, range(n)):
        return None
    found = _greedy(heads, preds, succs, height, caps)
    return found or _exhaustive(heads, preds, succs, height, caps)


def _counts_fit(heads, height, caps, unplaced, top: int | None = None) -> bool:
    """Nodes of height h need a layer >= h: for each h, those heads fit layers h..top."""
    top = len(caps) if top is None else top
    need = [0] * (top + 2)
    for v in unplaced:
        if height[v] > top:
            return False
        need[height[v]] += heads[v]
    demand = capacity = 0
    for h in range(top, 0, -1):
        demand += need[h]
        capacity += caps[h - 1]
        if demand > capacity:
            return False
    return True


def _greedy(heads, preds, succs, height, caps) -> list[int] | None:
    """From the top layer down, place the available nodes (all successors placed above)
    with the greatest height first."""
    layer = [0] * len(heads)
    waiting = [len(s) for s in succs]
    ready = [v for v in range(len(heads)) if not waiting[v]]
    for top in range(len(caps), 0, -1):
        ready.sort(key=lambda v: (-height[v], v))
        room, later, freed = caps[top - 1], [], []
        for v in ready:
            if heads[v] <= room and height[v] <= top:
                room -= heads[v]
                layer[v] = top
                for p in preds[v]:
                    waiting[p] -= 1
                    if not waiting[p]:
                        freed.append(p)
            else:
                later.append(v)
        ready = later + freed
    return layer if all(layer) else None


def _exhaustive(heads, preds, succs, height, caps) -> list[int] | None:
    """Search layer by layer from the top: at each layer, place a maximal set of available
    nodes, choosing how many of each class of interchangeable nodes (same heads, same
    structure below) rather than which ones."""
    n = len(heads)
    kind = _classes(heads, preds, succs)
    failed: set[tuple[int, int]] = set()
    layer = [0] * n
    states = [0]

    def go(top: int, placed: int) -> bool:
        if placed == (1 << n) - 1:
            return True
        if top == 0 or (top, placed) in failed:
            return False
        states[0] += 1
        if states[0] > MAX_STATES:
            raise SearchTooLarge(
                f"the exact layer search exceeded {MAX_STATES:,} states; try fewer layers, "
                "fewer heads or a smaller target"
            )
        unplaced = [v for v in range(n) if not placed >> v & 1]
        if not _counts_fit(heads, height, caps, unplaced, top):
            failed.add((top, placed))
            return False
        ready = [v for v in unplaced if height[v] <= top and all(placed >> s & 1 for s in succs[v])]
        classes: dict[tuple, list[int]] = {}
        for v in sorted(ready, key=lambda v: (-height[v], v)):
            classes.setdefault(kind[v], []).append(v)
        for picked in _maximal(list(classes.values()), heads, caps[top - 1]):
            mask = placed
            for v in picked:
                mask |= 1 << v
                layer[v] = top
            if go(top - 1, mask):
                return True
        failed.add((top, placed))
        return False

    return layer if go(len(caps), 0) else None


def _maximal(classes: list[list[int]], heads: list[int], room: int):
    """Sets of nodes that fit ``room`` heads and leave no other ready node that fits, as
    counts per class (the first nodes of each class), most nodes first."""

    def pick(i: int, room: int):
        if i == len(classes):
            yield []
            return
        members = classes[i]
        h = heads[members[0]]
        most = min(len(members), room // h)
        for count in range(most, -1, -1):
            for rest in pick(i + 1, room - count * h):
                yield members[:count] + rest

    for picked in pick(0, room):
        left = room - sum(heads[v] for v in picked)
        chosen = set(picked)
        if not any(heads[v] <= left for group in classes for v in group if v not in chosen):
            yield picked


def _classes(heads, preds, succs) -> list[tuple]:
    """Interchangeable nodes share a class: same heads and the same structure below, with
    nodes that wait on several others (shared steps) kept apart by identity."""
    kind: list[tuple] = []
    for v in range(len(heads)):
        below = tuple(sorted(kind[p] for p in preds[v]))
        kind.append((heads[v], below, v if len(succs[v]) > 1 else -1))
    return kind
