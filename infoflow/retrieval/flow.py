"""Plans -> what flows where: the minimal architectures, the information sets of the readout
and of a generic token after each layer, and the information-set DAG."""

from __future__ import annotations

import networkx as nx

from infoflow.retrieval.schedule import (
    Architecture,
    Placement,
    Plan,
    fetch_positions,
)
from infoflow.retrieval.steps import EVERY, FETCH, Fragment, Step, fragments
from infoflow.retrieval.tree import ComparisonTree, global_reason, position_reads


def minimal(tree: ComparisonTree, ranks: dict) -> tuple[Plan, list[Architecture]]:
    """The plan on the fewest layers that reach the best exponent (every part from the first
    layer, as early as it can), and the alternatives with the same cost: that architecture
    and the narrowest one (one head per layer, the steps one after another)."""
    placements, frags = [], []
    for c in tree.parts:
        reason = global_reason(c, tree.separable_sum)
        if reason:
            placements.append(Placement(c.label, "global", c.copies, c, reason=reason))
            continue
        whole = [f for f in fragments(c, None, 1, ranks) if not f.theorem2]
        best = min(whole, key=lambda f: (f.depth, max(f.profile()), f.profile()))
        layers = tuple(
            range(end - step.length + 1, end + 1)
            for step, end in zip(best.steps, best.finish(), strict=True)
        )
        placements.append(Placement(c.label, "scheduled", c.copies, c, best, layers))
        frags.append(best)
    pe = bool(tree.positions) or any(position_reads(c) for c in tree.parts)
    keys = sorted(
        {k for f in frags for ks in f.shared for k in ks} | ({FETCH} if tree.positions else set())
    )
    profile = _sum_profiles(
        [f.profile() for f in frags] + [[len(keys)]] if keys else [f.profile() for f in frags]
    )
    heads = tuple(max(h, 1) for h in profile) or (1,)
    fewest = Architecture(len(heads), heads, pe)
    shared = {k: (_shared_step(k), 1) for k in keys}
    asap = Plan(fewest, placements, shared, tree.positions)
    total = sum(f.heads for f in frags) + len(keys)
    alternatives = [fewest]
    if total > len(heads) and max(heads) > 1:
        alternatives.append(Architecture(total, (1,) * total, pe))
    return asap, alternatives


def _sum_profiles(profiles: list[list[int]]) -> list[int]:
    out = [0] * max((len(p) for p in profiles), default=0)
    for p in profiles:
        for i, h in enumerate(p):
            out[i] += h
    return out


def _shared_step(key: str) -> Step:
    return Step("fetch") if key == FETCH else Step("shift", offset=int(key.removeprefix("shift")))


# ---- information sets --------------------------------------------------------------------


def step_labels(step: Step, placement: Placement, k: int | None = None) -> list[str]:
    """What a step brings to whoever holds its result, one label per position."""
    sub = f"_{placement.tag}" if placement.tag else ""
    copies = f" x{step.heads}" if step.heads > 1 else ""
    v = f"{step.variable}*{sub}"
    if step.kind == "pool":
        return [f"mean over {step.variable}{sub}{copies}"]
    holder = f"({step.holder}*{sub})" if step.holder not in (None, EVERY) else ""
    if step.kind in ("peel", "kth"):
        end = _end(step, k)
        ranks = range(1, step.rank + 1) if step.kind == "peel" else [step.rank]
        return [f"{v}{holder} ({ordinal(j)} {end}){copies}" for j in ranks]
    return [f"{v}{holder}{copies}"]


def _end(step: Step, k: int | None) -> str:
    """largest or smallest: the end a k-th step counts from (the nearer one, [R])."""
    smallest = step.comparison is not None and step.comparison.op == "kth_smallest"
    if k is not None and step.rank != k:
        smallest = not smallest
    return "smallest" if smallest else "largest"


def readout_sets(p: Plan) -> list[list[str]]:
    """The readout's information set after each layer, as labels."""
    sets: list[list[str]] = []
    for layer in range(1, p.architecture.layers + 1):
        labels: list[str] = []
        for placement in p.placements:
            if placement.mode == "global" and layer == p.architecture.layers:
                labels.append("all T positions")
            if placement.mode != "scheduled" or not placement.fragment:
                continue
            labels += _held(placement, layer)
        if FETCH in p.shared and p.shared[FETCH][1] <= layer:
            labels += fetch_positions(p)
        sets.append(list(dict.fromkeys(labels)))
    return sets


def _held(placement: Placement, layer: int) -> list[str]:
    """What the readout holds from one part after ``layer``: everything once its last step
    is done; before that, the peels it made itself."""
    frag = placement.fragment
    done = placement.last_layer <= layer
    sub = f"_{placement.tag}" if placement.tag else ""
    labels = []
    for i in _top_down(frag):
        step = frag.steps[i]
        every = step_labels(step, placement, _k(step))
        if done:
            labels += every
            c = step.comparison
            labels += [
                f"x[{v}*{sub}{o:+d}]"
                for f in (c.factors if c else ())
                for v, o in sorted(f.shifts)
                if v == step.variable
            ]
        elif step.kind == "peel" and step.holder is None:
            arrived = zip(every, placement.layers[i], strict=True)
            labels += [label for label, at in arrived if at <= layer]
    return labels


def _k(step: Step) -> int | None:
    return step.comparison.k if step.comparison else None


def _top_down(frag: Fragment) -> list[int]:
    """Step indices from the root down (the readout's retrieval first)."""
    order, queue = [], [frag.root] if frag.root >= 0 else []
    while queue:
        i = queue.pop(0)
        order.append(i)
        queue += sorted(frag.preds[i], reverse=True)
    return order


def token_sets(p: Plan) -> list[list[str]]:
    """A generic token's information set before the first layer and after each: itself (t)
    and what its role's steps bring it (``s*(t)``: the best s for it)."""
    gained: dict[int, list[str]] = {}
    for placement in p.placements:
        frag = placement.fragment
        if placement.mode != "scheduled" or not frag:
            continue
        for i, step in enumerate(frag.steps):
            if step.holder is None:
                continue
            labels = step_labels(step, placement, _k(step))
            if step.holder != EVERY:
                labels = [lab.replace(f"({step.holder}*", f"({step.holder}", 1) for lab in labels]
                labels = [_for_holder(lab, step) for lab in labels]
            for label, layer in zip(labels, _label_layers(step, placement.layers[i]), strict=True):
                gained.setdefault(layer, []).append(label)
    for key, (step, layer) in sorted(p.shared.items()):
        labels = fetch_positions(p) if key == FETCH else [f"x[t{step.offset:+d}]"]
        gained.setdefault(layer, []).extend(labels)
    sets, current = [["t"]], ["t"]
    for layer in range(1, p.architecture.layers + 1):
        current = list(dict.fromkeys(current + gained.get(layer, [])))
        sets.append(current)
    return sets


def _for_holder(label: str, step: Step) -> str:
    """``v*(w)``: the best v for the token in role w."""
    if "(" in label.split(" ")[0]:
        return label
    head, _, rest = label.partition(" ")
    return f"{head}({step.holder})" + (f" {rest}" if rest else "")


def _label_layers(step: Step, layers: tuple) -> list[int]:
    """The layer each of a step's labels arrives in."""
    if step.kind == "peel":
        return list(layers)
    return [layers[-1]]


def ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


# ---- the information-set DAG -------------------------------------------------------------

EDGE_MODES = {
    "retrieve": "max-position",
    "peel": "max-position",
    "kth": "k-th largest",
    "pool": "pooled",
    "fetch": "specific-position",
    "shift": "relative-position",
}


def information_dag(p: Plan) -> nx.MultiDiGraph:
    """Nodes ``role@layer`` (a generic token, the readout, each fixed position) with their
    information sets; edges labelled by propagation mode. Its size does not depend on T."""
    graph = nx.MultiDiGraph()
    positions = fetch_positions(p) if FETCH in p.shared else []
    roles = ["token", "readout", *positions]
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
                f"{source}@{layer - 1}",
                f"{target}@{layer}",
                mode=mode,
                part=placement.label,
                heads=heads,
            )
    for key, (step, layer) in sorted(p.shared.items()):
        mode = EDGE_MODES[step.kind]
        what = (
            f"fixed positions {', '.join(positions)}"
            if key == FETCH
            else f"the neighbour x[t{step.offset:+d}]"
        )
        pairs = [(q, "token") for q in positions] + [(q, "readout") for q in positions]
        for source, target in pairs if key == FETCH else [("token", "token")]:
            graph.add_edge(
                f"{source}@{layer - 1}", f"{target}@{layer}", mode=mode, part=what, heads=1
            )
    return graph


def _edges(placement: Placement, layers: int):
    """(layer, mode, source role, target role, heads) for one part."""
    if placement.mode == "global":
        yield layers, "global", "token", "readout", 0
    if placement.mode != "scheduled" or not placement.fragment:
        return
    for step, used in zip(placement.fragment.steps, placement.layers, strict=True):
        target = "readout" if step.holder is None else "token"
        for layer in used:
            yield layer, EDGE_MODES[step.kind], "token", target, step.heads


def to_dot(graph: nx.MultiDiGraph) -> str:
    """The DAG in Graphviz's DOT language, layers from bottom to top."""
    lines = ["digraph infoflow {", "  rankdir=BT;", "  node [shape=box, fontsize=10];"]
    for node, data in graph.nodes(data=True):
        info = ", ".join(data["info"]) or "empty"
        lines.append(f'  "{_quote(node)}" [label="{_quote(node)}\\n{{{_quote(info)}}}"];')
    for source, target, data in graph.edges(data=True):
        if data["mode"] == "residual":
            lines.append(
                f'  "{_quote(source)}" -> "{_quote(target)}" [label="residual", style=dotted];'
            )
            continue
        label = f"{data['mode']}, {data['heads']} head(s): {data['part']}"
        label += f"\\nalpha {data['cost']}" if "cost" in data else ""
        lines.append(f'  "{_quote(source)}" -> "{_quote(target)}" [label="{_quote(label)}"];')
    return "\n".join([*lines, "}"]) + "\n"


def _quote(text: str) -> str:
    return text.replace('"', '\\"')
