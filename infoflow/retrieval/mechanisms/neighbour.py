"""Neighbour fetch (relative position, [R] ``relative_position``): one head, shared by every
part, in which every token t copies its neighbour x[t + offset] (a score that reads
``x[t - 1]``). It needs positional encoding. Decoding the neighbour costs Theorem 3's exponent
for one position.
"""

from __future__ import annotations

import sympy

from infoflow.retrieval.laws import decode_exponent
from infoflow.retrieval.types import CostOptions, Factor, Schedule, Step

EDGES = {"shift": "relative-position"}


def owns(key: str) -> bool:
    return key.startswith("shift")


def keys(factor: Factor) -> list[str]:
    """The shared steps a score needs first: one per neighbour offset it reads."""
    return [f"shift{offset:+d}" for offset in sorted({o for _, o in factor.shifts})]


def step(key: str) -> Step:
    return Step("shift", offset=int(key.removeprefix("shift")))


def labels(schedule: Schedule, step: Step) -> list[str]:
    """What every token holds after it: its neighbour."""
    return [f"x[t{step.offset:+d}]"]


def decoded(schedule: Schedule) -> int:
    """Nothing of its own: a neighbour is counted with the comparison that reads it."""
    return 0


def readout_labels(schedule: Schedule, layer: int) -> list[str]:
    """Nothing: the readout has no neighbour."""
    return []


def roles(schedule: Schedule) -> list[str]:
    """No node of its own in the DAG."""
    return []


def sentence(schedule: Schedule, step: Step) -> str:
    return (
        f"1 head: every token t copies its neighbour x[t{step.offset:+d}] "
        "[reconstruction:relative_position]"
    )


def part_text(schedule: Schedule, step: Step) -> str:
    """What the DAG's edge is for."""
    return f"the neighbour x[t{step.offset:+d}]"


def edge_roles(schedule: Schedule) -> list[tuple[str, str]]:
    """The DAG's edge of the neighbour fetch: from the token to itself, a layer up."""
    return [("token", "token")]


def edge_cost(schedule: Schedule, part: str, layer: int, options: CostOptions) -> sympy.Expr:
    """Decoding one position."""
    return decode_exponent(1, options)
