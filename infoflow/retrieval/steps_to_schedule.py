"""Steps + an architecture's shape -> a schedule: which step of which part runs in which
layer.

Each top-level part (a comparison, each of its copies up to SPLIT, the fixed positions read
directly) has options: its fragments (:mod:`~infoflow.retrieval.tree_to_steps`), cheapest
first, then global aggregation ([R]: a fallback that may share a head); or it is impossible
(positions without positional encoding); a max or min that a k-th's peel takes in its first
round may be held by that peel, with no step of its own (:mod:`~infoflow.retrieval.
peel_firsts`). A depth-first search picks one option per part and keeps the best by
(impossible parts, fallbacks, Theorem-2 steps, their ranks);
:func:`~infoflow.retrieval.layer_fit.fits` decides exactly whether the chosen steps fit the
heads of each layer. So a head or a layer more never makes the schedule worse. Nothing here
depends on T.
"""

from __future__ import annotations

from dataclasses import replace

from infoflow.retrieval import mechanisms, peel_firsts
from infoflow.retrieval.canonical_to_tree import (
    SELF_EXCLUSION,
    position_reads,
    self_exclusions,
)
from infoflow.retrieval.layer_fit import fits
from infoflow.retrieval.mechanisms import fetch, kth
from infoflow.retrieval.tree_to_steps import fragments
from infoflow.retrieval.types import (
    FETCH,
    NO_THEOREM2,
    Comparison,
    ComparisonTree,
    Fragment,
    Option,
    Part,
    Placement,
    Schedule,
    Shape,
)

SPLIT = 16  # copies of a top-level comparison placed one by one (more: as one block)


# ---- the parts and their options ---------------------------------------------------------


def parts(tree: ComparisonTree, shape: Shape, ranks: dict) -> list[Part]:
    """Every part of ``tree`` with its options on ``shape``, cheapest first."""
    out: list[Part] = []
    many = len(tree.parts) > 1
    held = _hosts(tree, ranks)
    for i, c in enumerate(tree.parts):
        split = 1 < c.copies <= SPLIT
        unit = replace(c, copies=1) if split else c
        options = tuple(_options(unit, shape, ranks, tree))
        if i in held:  # first: it costs no head where a host's peel runs
            options = (Option("held", hosts=held[i]), *options)
        for j in range(c.copies if split else 1):
            tag = ".".join(([f"c{i + 1}"] if many else []) + ([str(j + 1)] if split else []))
            label = f"{c.label} ({_tag_words(tag, c.copies)})" if tag else c.label
            out.append(Part(label, unit, 1 if split else c.copies, options, i, tag, j))
    if tree.positions:
        out.append(fetch.part(tree.positions, shape))
    return out


def _hosts(tree: ComparisonTree, ranks: dict) -> dict[int, tuple[int, ...]]:
    """Each top-level max or min -> the top-level k-ths whose peel, at these ranks, takes it
    in its first round (:mod:`~infoflow.retrieval.peel_firsts`)."""
    out: dict[int, tuple[int, ...]] = {}
    for i, j, same_end in tree.firsts:
        host = tree.parts[j]
        if peel_firsts.holds(host, same_end, ranks.get((host.k, host.left_out), host.k)):
            out[i] = (*out.get(i, ()), j)
    return out


def _peels(fragment: Fragment | None) -> bool:
    """Whether ``fragment`` peels for the readout, with no single-head k-th step (which would
    fall back to global aggregation with its part)."""
    return (
        bool(fragment)
        and not fragment.theorem2
        and any(s.kind == "peel" and s.holder is None for s in fragment.steps)
    )


def _host(found: list[Part], choice: list[int], held: Part, option: Option) -> Part | None:
    """The part whose chosen option's peel holds the value of ``held`` (which chose
    ``option``): one of its hosts, the same copy (None: none)."""
    return next(
        (
            part
            for part, j in zip(found, choice, strict=True)
            if part.group in option.hosts
            and part.copy == held.copy
            and _peels(part.options[j].fragment)
        ),
        None,
    )


def _unhosted(found: list[Part], choice: list[int]) -> bool:
    """Whether some part chose to be held by a peel that none of its hosts runs."""
    return any(
        part.options[j].mode == "held" and not _host(found, choice, part, part.options[j])
        for part, j in zip(found, choice, strict=True)
    )


def _options(c: Comparison, shape: Shape, ranks: dict, tree: ComparisonTree) -> list[Option]:
    reads = position_reads(c)
    if reads and not shape.positional_encoding:
        if reads == self_exclusions(c):
            reason = (
                f"{reads[0]}: without positional encoding no head can leave its own token "
                f"out [{SELF_EXCLUSION}]"
            )
            return [Option("global", reason=reason)]
        reason = (
            f"{reads[0]} reads positions, and without positional encoding the model is "
            "permutation invariant"
        )
        return [Option("impossible", reason=reason)]
    reason = mechanisms.needs_global(c, tree.separable_sum)
    if reason:
        return [Option("global", reason=reason)]
    every = fragments(c, None, 1, ranks)
    if _by_position(tree) and not shape.positional_encoding:
        every = [f for f in every if not _peels_partners(f)]
        if not every:
            return [Option("global", reason=kth.BY_POSITION)]
    widest = max(shape.heads)
    fit = [f for f in every if f.depth <= shape.layers and max(s.heads for s in f.steps) <= widest]
    return [Option("scheduled", f) for f in fit] + [
        Option("global", reason=_fallback(every, shape))
    ]


def _by_position(tree: ComparisonTree) -> bool:
    """Whether a peel over a pair score needs positional encoding ([R] ``partner_peel``)."""
    return tree.partner_peel == "positions"


def _peels_partners(fragment: Fragment) -> bool:
    return any(kth.partner_peel(step) for step in fragment.steps)


def _fallback(every: list[Fragment], shape: Shape) -> str:
    need = min(f.depth for f in every)
    if need > shape.layers:
        return f"too few layers: it needs {need}, the architecture has {shape.layers}"
    profile = every[0].profile() or [0]
    profile[0] += len({key for keys in every[0].shared for key in keys} | set(every[0].needs))
    return f"too few heads: it needs {profile} in increasing layers beside the other parts"


def _tag_words(tag: str, copies_of: int) -> str:
    words = []
    for piece in tag.split("."):
        words.append(
            f"comparison {piece[1:]}" if piece.startswith("c") else f"copy {piece} of {copies_of}"
        )
    return ", ".join(words)


# ---- the search --------------------------------------------------------------------------


def schedule(tree: ComparisonTree, shape: Shape, ranks: dict) -> Schedule:
    """The best schedule of ``tree`` on ``shape`` (SearchTooLarge when the exact layer
    search would not end in time)."""
    found = parts(tree, shape, ranks)
    choice = _search(found, list(shape.heads))
    chosen = [found[i].options[j] for i, j in enumerate(choice)]
    frags = [o.fragment for o in chosen if o.fragment]
    layers, shared = _place(frags, list(shape.heads))
    placements, k = [], 0
    for part, option in zip(found, chosen, strict=True):
        held = option.mode == "held"
        placement = Placement(
            part.label,
            "scheduled" if held else option.mode,
            part.copies,
            part.comparison,
            option.fragment,
            reason=option.reason,
            tag=part.tag,
            held_by=_host(found, choice, part, option).label if held else "",
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
    best = Schedule(shape, placements, shared, tree.positions)
    if best.uses_global and best.theorem2:  # the global term is paid anyway
        return kth.without_theorem2(best, kth.ALREADY_GLOBAL)
    return best


def _spread(layers: tuple) -> int:
    """How many layers a part's steps run in."""
    return len({layer for used in layers for layer in used})


def _search(found: list[Part], caps: list[int]) -> list[int]:
    """The option index per part of the best schedule (depth first, best options first;
    copies of one comparison take option indices in non-decreasing order)."""
    scores = [[o.score(p.copies) for o in p.options] for p in found]
    costs = [[o.fragment.heads if o.fragment else 0 for o in p.options] for p in found]
    lowest = _total(s[0] for s in scores)
    best: list = [None, None]  # score, choice
    capacity = sum(caps)

    def dfs(i: int, choice: list[int], acc: tuple, used: int) -> bool:
        if i == len(found):
            if _unhosted(found, choice):
                return False
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
    per_fragment = [tuple(tuple(layer[n] for n in chain) for chain in mine) for mine in nodes_of]
    shared = {
        key: (mechanisms.shared(key).step(key), layer[node]) for key, node in shared_node.items()
    }
    return per_fragment, shared


# ---- the minimal architectures ------------------------------------------------------------


def minimal(tree: ComparisonTree, ranks: dict) -> tuple[Schedule, list[Shape]]:
    """The schedule on the fewest layers that reach the best exponent (every part from the
    first layer, as early as it can), and the shapes with the same cost: that one and the
    narrowest (one head per layer, the steps one after another)."""
    placements, frags = [], []
    every = [_shallowest(c, tree, ranks) for c in tree.parts]
    held = _hosts(tree, ranks)
    for i, (c, best) in enumerate(zip(tree.parts, every, strict=True)):
        hosts = [tree.parts[j].label for j in held.get(i, ()) if _peels(every[j])]
        if hosts:  # a host's peel holds it: no step of its own
            placements.append(Placement(c.label, "scheduled", c.copies, c, held_by=hosts[0]))
        elif best is None:
            reason = mechanisms.needs_global(c, tree.separable_sum)
            placements.append(Placement(c.label, "global", c.copies, c, reason=reason))
        else:
            layers = tuple(
                range(end - step.length + 1, end + 1)
                for step, end in zip(best.steps, best.finish(), strict=True)
            )
            placements.append(Placement(c.label, "scheduled", c.copies, c, best, layers))
            frags.append(best)
    pe = bool(tree.positions) or any(position_reads(c) for c in tree.parts)
    pe = pe or (_by_position(tree) and any(_peels_partners(f) for f in frags))
    keys = sorted(
        {k for f in frags for ks in f.shared for k in ks} | ({FETCH} if tree.positions else set())
    )
    profile = _sum_profiles(
        [f.profile() for f in frags] + [[len(keys)]] if keys else [f.profile() for f in frags]
    )
    heads = tuple(max(h, 1) for h in profile) or (1,)
    fewest = Shape(len(heads), heads, pe)
    shared = {k: (mechanisms.shared(k).step(k), 1) for k in keys}
    asap = Schedule(fewest, placements, shared, tree.positions)
    total = sum(f.heads for f in frags) + len(keys)
    alternatives = [fewest]
    if total > len(heads) and max(heads) > 1:
        alternatives.append(Shape(total, (1,) * total, pe))
    return asap, alternatives


def _shallowest(c: Comparison, tree: ComparisonTree, ranks: dict) -> Fragment | None:
    """The shallowest (then narrowest) way to resolve ``c`` without a single-head k-th step;
    None when it needs global aggregation whatever the architecture."""
    if mechanisms.needs_global(c, tree.separable_sum):
        return None
    whole = [f for f in fragments(c, None, 1, ranks) if not f.theorem2]
    return min(whole, key=lambda f: (f.depth, max(f.profile()), f.profile()))


def _sum_profiles(profiles: list[list[int]]) -> list[int]:
    out = [0] * max((len(p) for p in profiles), default=0)
    for p in profiles:
        for i, h in enumerate(p):
            out[i] += h
    return out
