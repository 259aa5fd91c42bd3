"""The ways a transformer resolves a comparison, one module each, and their registry.

A comparison is resolved by the mechanisms of its kind (:data:`BY_KIND`): a min or max by
max-position retrieval (:mod:`.max_position`), a sum over one token by an averaging head
(:mod:`.pooling`), a k-th largest by peeling or by one head (:mod:`.kth`); when none of them
can (their ``limit``), or something nested in the comparison cannot be resolved, by global
aggregation (:mod:`.global_aggregation`), the fallback, which has an interface of its own
(``term``, ``sentence(placement)``, ``edge_cost``, ``READOUT``). Two shared steps bring
positions to every token (:data:`SHARED`): the fixed-position fetch (:mod:`.fetch`) and the
neighbour fetch (:mod:`.neighbour`).

A comparison mechanism's module gives: ``NAME`` (its words in explain), ``EDGES`` (its step
kinds and the propagation mode of their edges in the information-set DAG), ``limit(c,
separable_sum)`` (why it cannot resolve c, '' when it can), ``own_steps(c, to, heads, ranks)``
(every way to resolve c as steps, each with the factors it consumes), ``labels(step,
placement)`` (what a step brings to whoever holds its result), ``sentence(step, placement, j,
who)`` (the step in explain's words, with its provenance) and ``edge_cost(schedule, part,
layer, options)`` (the exponent of its edges); a mechanism that prices its own steps in the
exponent gives ``terms(placement, options)`` too (k-th retrieval: Theorem 2). A shared step's
module gives ``owns(key)``, ``keys(factor)``, ``step(key)``, ``decoded(schedule)``,
``readout_labels(schedule, layer)``, ``roles(schedule)``, ``labels``, ``sentence``,
``part_text``, ``edge_roles`` and ``edge_cost``. docs/retrieval.md, "Adding a mechanism",
lists the files a new one touches.
"""

from __future__ import annotations

from functools import lru_cache
from types import ModuleType

from infoflow.retrieval.mechanisms import (
    fetch,
    global_aggregation,
    kth,
    max_position,
    neighbour,
    pooling,
)
from infoflow.retrieval.mechanisms.base import who
from infoflow.retrieval.types import Comparison, Placement, Schedule

#: The mechanisms that can resolve a comparison of each kind (types.Comparison.kind), the
#: one explain names first: every way of each is a candidate for the schedule.
BY_KIND: dict[str, tuple[ModuleType, ...]] = {
    "extremum": (max_position,),
    "sum": (pooling,),
    "kth": (kth,),
}
#: The shared steps that bring positions, in the order a factor's score asks for them.
SHARED: tuple[ModuleType, ...] = (fetch, neighbour)
#: Every mechanism, the fallback included; those that price their own steps in the exponent.
ALL: tuple[ModuleType, ...] = (
    *dict.fromkeys(m for ways in BY_KIND.values() for m in ways),
    *SHARED,
    global_aggregation,
)
PRICED: tuple[ModuleType, ...] = tuple(m for m in ALL if hasattr(m, "terms"))
#: The mechanism of each step kind, the DAG's propagation mode of each step kind, and the
#: mechanism behind each mode.
BY_STEP: dict[str, ModuleType] = {kind: m for m in ALL for kind in m.EDGES}
EDGE_MODES: dict[str, str] = {kind: mode for m in ALL for kind, mode in m.EDGES.items()}
BY_EDGE: dict[str, ModuleType] = {mode: m for m in reversed(ALL) for mode in m.EDGES.values()}


def own_steps(c: Comparison, to: str | None, heads: int, ranks: dict) -> list[list]:
    """Every way the mechanisms of ``c``'s kind resolve its own indices."""
    return [way for m in BY_KIND[c.kind] for way in m.own_steps(c, to, heads, ranks)]


def shared(key: str) -> ModuleType:
    """The mechanism of the shared step ``key`` (``fetch``, ``shift-1``)."""
    return next(m for m in SHARED if m.owns(key))


def shared_keys(factor) -> list[str]:
    """The shared steps a factor's score waits for."""
    return [key for m in SHARED for key in m.keys(factor)]


@lru_cache(maxsize=4096)
def needs_global(c: Comparison, separable_sum: str = "pool") -> str:
    """Why ``c`` needs global aggregation whatever the architecture ('' when it does not): no
    mechanism of its kind can resolve it (the first one's reason), or something nested in it
    needs it."""
    reasons = [m.limit(c, separable_sum) for m in BY_KIND[c.kind]]
    if all(reasons):
        return reasons[0]
    for child in c.children:
        reason = needs_global(child, separable_sum)
        if reason:
            return f"{child.label} inside it: {reason}"
    return ""


def name(c: Comparison, separable_sum: str = "pool") -> str:
    """How ``c`` is resolved, in explain's words."""
    return global_aggregation.NAME if needs_global(c, separable_sum) else BY_KIND[c.kind][0].NAME


def sentences(schedule: Schedule) -> dict[int, list[str]]:
    """What runs in each layer, part by part (global fallbacks in the last layer)."""
    out: dict[int, list[str]] = {}
    last = schedule.shape.layers
    for q in schedule.placements:
        if q.mode == "global":
            out.setdefault(last, []).append(global_aggregation.sentence(q))
        if q.mode != "scheduled" or not q.fragment:
            continue
        for layer, said in part_sentences(q).items():
            out.setdefault(layer, []).extend(said)
    for key, (step, layer) in sorted(schedule.shared.items()):
        out.setdefault(layer, []).append(shared(key).sentence(schedule, step))
    return out


def part_sentences(q: Placement) -> dict[int, list[str]]:
    """What one scheduled part runs in each layer."""
    out: dict[int, list[str]] = {}
    for step, layers in zip(q.fragment.steps, q.layers, strict=True):
        mechanism = BY_STEP[step.kind]
        for j, layer in enumerate(layers, 1):
            out.setdefault(layer, []).append(mechanism.sentence(step, q, j, who(step)))
    return out
