"""A built circuit, laid out -> checked against the spec's architecture (head width, E),
and each head named after the engine's step it realises: the last stage of
compile's circuit (:mod:`~infoflow.retrieval.schedule_to_circuit`)."""

from __future__ import annotations

import re
from dataclasses import replace

from infoflow.retrieval.circuit import PAD, Circuit, Head
from infoflow.retrieval.circuit_forms import Unbuildable
from infoflow.retrieval.spec import RetrievalSpec


def fit(circuit: Circuit, spec: RetrievalSpec) -> None:
    """Refuse what the architecture cannot hold (its layers and heads per layer are the
    layout's: :mod:`~infoflow.retrieval.circuit_layout`): the head width and E, counting the
    channel :data:`~.circuit.PAD` that a norm read beside positional content needs (added
    here, last: it evens what every position adds to LayerNorm's variance)."""
    arch = spec.architecture
    if circuit.padded:
        circuit.add(PAD, 1)
    e = arch.embed_dim or circuit.width
    if circuit.width > e:
        raise Unbuildable(f"the circuit needs {circuit.width} channels, E = {e}")
    for head in circuit.heads:
        n = e // arch.heads_per_layer[head.layer - 1]
        need = head_dims(circuit, head)
        if need > n:
            raise Unbuildable(
                f"head {head.slot} of layer {head.layer} needs {need} dimensions, n = E / h = {n}"
            )


def head_dims(circuit: Circuit, head) -> int:
    """The dimensions a head uses: its scores' (the smaller group of each) plus one to leave
    the readout out, or its copies' (the smaller side of each), whichever is more."""
    width = circuit.width_of
    score = sum(min(width(f.query), width(f.key)) for f in head.score) + int(head.mask_readout)
    values = sum(min(width(c.source), width(c.dest)) for c in head.values)
    return max(score, values)


def named(heads: list[Head], steps: dict[int, list[str]], by_order: bool = True) -> list[Head]:
    """``heads``, in their order, each given the engine's sentence (``steps``: per layer) for
    the step it realises: by the index both retrieve ("its best a", "the best a") where that
    pairs them one to one, else, ``by_order``, the steps of a layer in the engine's order,
    the heads in theirs (one term's heads); without it, a layer of several heads that the
    index does not pair is left unnamed (heads of several terms side by side, which the
    order does not tell apart). The engine places steps as late as the architecture allows
    and compile builds them from layer 1: where the two use as many layers with as many heads
    each, the i-th layer used of one is the i-th of the other; where they do not, no head is
    named (a layer's number alone would give a retrieval the sentence of a fetch)."""
    heads = list(heads)
    built = sorted({h.layer for h in heads})
    planned = sorted(steps)
    counts = [sum(h.layer == layer for h in heads) for layer in built]
    if counts != [len(steps[layer]) for layer in planned]:
        return heads
    for at, layer in zip(built, planned, strict=True):
        here, said = [h for h in heads if h.layer == at], steps[layer]
        mine = [_retrieved(h.does, "its best") for h in here]
        theirs = [_retrieved(sentence, "the best") for sentence in said]
        if None not in mine and len(set(mine)) == len(mine) and set(mine) == set(theirs):
            said = [said[theirs.index(v)] for v in mine]
        elif len(here) > 1 and not by_order:
            continue
        for head, sentence in zip(here, said, strict=True):
            heads[heads.index(head)] = replace(head, step=sentence)
    return heads


def _retrieved(text: str, words: str) -> str | None:
    """The index after ``words`` in ``text`` ("its best a into ..." -> "a"); None if none."""
    found = re.search(rf"{words} (\w+)\b", text)
    return found.group(1) if found else None
