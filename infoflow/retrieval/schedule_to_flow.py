"""Schedule -> what flows where: the information sets of the readout and of a generic token
after each layer, and the information-set DAG (nodes ``role@layer``, edges labelled by
propagation mode), in Graphviz's DOT language too. What each step brings is its mechanism's
to say (:mod:`~infoflow.retrieval.mechanisms`)."""

from __future__ import annotations

import networkx as nx

from infoflow.retrieval import mechanisms
from infoflow.retrieval.mechanisms import global_aggregation
from infoflow.retrieval.mechanisms.base import tagged
from infoflow.retrieval.types import EVERY, Fragment, Placement, Schedule, Step

# ---- information sets --------------------------------------------------------------------


def step_labels(step: Step, placement: Placement) -> list[str]:
    """What a step brings to whoever holds its result, one label per position."""
    return mechanisms.BY_STEP[step.kind].labels(step, placement)


def readout_sets(schedule: Schedule) -> list[list[str]]:
    """The readout's information set after each layer, as labels."""
    sets: list[list[str]] = []
    last = schedule.shape.layers
    for layer in range(1, last + 1):
        labels: list[str] = []
        for placement in schedule.placements:
            if placement.mode == "global" and layer == last:
                labels.append(global_aggregation.READOUT)
            if placement.mode != "scheduled" or not placement.fragment:
                continue
            labels += _held(placement, layer)
        for mechanism in mechanisms.SHARED:
            labels += mechanism.readout_labels(schedule, layer)
        sets.append(list(dict.fromkeys(labels)))
    return sets


def _held(placement: Placement, layer: int) -> list[str]:
    """What the readout holds from one part after ``layer``: everything once its last step
    is done; before that, what its own steps of several layers (a peel) brought so far."""
    frag = placement.fragment
    done = placement.last_layer <= layer
    sub = tagged(placement)
    labels = []
    for i in _top_down(frag):
        step = frag.steps[i]
        every = step_labels(step, placement)
        if done:
            labels += every
            c = step.comparison
            labels += [
                f"x[{v}*{sub}{o:+d}]"
                for f in (c.factors if c else ())
                for v, o in sorted(f.shifts)
                if v == step.variable
            ]
        elif step.length > 1 and step.holder is None:
            arrived = zip(every, placement.layers[i], strict=True)
            labels += [label for label, at in arrived if at <= layer]
    return labels


def _top_down(frag: Fragment) -> list[int]:
    """Step indices from the root down (the readout's retrieval first)."""
    order, queue = [], [frag.root] if frag.root >= 0 else []
    while queue:
        i = queue.pop(0)
        order.append(i)
        queue += sorted(frag.preds[i], reverse=True)
    return order


def token_sets(schedule: Schedule) -> list[list[str]]:
    """A generic token's information set before the first layer and after each: itself (t)
    and what its role's steps bring it (``s*(t)``: the best s for it)."""
    gained: dict[int, list[str]] = {}
    for placement in schedule.placements:
        frag = placement.fragment
        if placement.mode != "scheduled" or not frag:
            continue
        for i, step in enumerate(frag.steps):
            if step.holder is None:
                continue
            labels = step_labels(step, placement)
            if step.holder != EVERY:
                labels = [lab.replace(f"({step.holder}*", f"({step.holder}", 1) for lab in labels]
                labels = [_for_holder(lab, step) for lab in labels]
            for label, layer in zip(labels, _label_layers(step, placement.layers[i]), strict=True):
                gained.setdefault(layer, []).append(label)
    for key, (step, layer) in sorted(schedule.shared.items()):
        gained.setdefault(layer, []).extend(mechanisms.shared(key).labels(schedule, step))
    sets, current = [["t"]], ["t"]
    for layer in range(1, schedule.shape.layers + 1):
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
    """The layer each of a step's labels arrives in: one per layer for a step of several
    layers (a peel), else the step's layer."""
    if step.length > 1:
        return list(layers)
    return [layers[-1]]


# ---- the information-set DAG -------------------------------------------------------------


def information_dag(schedule: Schedule) -> nx.MultiDiGraph:
    """Nodes ``role@layer`` (a generic token, the readout, each fixed position) with their
    information sets; edges labelled by propagation mode. Its size does not depend on T."""
    graph = nx.MultiDiGraph()
    roles = ["token", "readout", *(r for m in mechanisms.SHARED for r in m.roles(schedule))]
    readout = [[], *readout_sets(schedule)]
    token = token_sets(schedule)
    for layer in range(schedule.shape.layers + 1):
        for role in roles:
            info = {"readout": readout[layer], "token": token[layer]}.get(role, [role])
            graph.add_node(f"{role}@{layer}", role=role, layer=layer, info=info)
        if layer:
            for role in roles:
                graph.add_edge(f"{role}@{layer - 1}", f"{role}@{layer}", mode="residual")
    for placement in schedule.placements:
        for layer, mode, source, target, heads in _edges(placement, schedule.shape.layers):
            graph.add_edge(
                f"{source}@{layer - 1}",
                f"{target}@{layer}",
                mode=mode,
                part=placement.label,
                heads=heads,
            )
    for key, (step, layer) in sorted(schedule.shared.items()):
        mechanism = mechanisms.shared(key)
        mode, what = mechanism.EDGES[step.kind], mechanism.part_text(schedule, step)
        for source, target in mechanism.edge_roles(schedule):
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
            yield layer, mechanisms.EDGE_MODES[step.kind], "token", target, step.heads


def to_dot(graph: nx.MultiDiGraph) -> str:
    """The DAG in Graphviz's DOT language, layers from bottom to top."""
    lines = ["digraph infoflow {", "  rankdir=BT;", "  node [shape=box, fontsize=10];"]
    if "verdict" in graph.graph:
        lines.append(f'  label="{_quote(graph.graph["verdict"])}"; labelloc=t;')
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
