"""Fixed-position fetch (specific-position aggregation, the papers' summary): one head, shared
by every part, in which every token and the readout attend to the fixed positions the target
reads (``x[1]``, ``x[T]``), directly or inside a score. It needs positional encoding: without
it the model is permutation invariant and no head can single out a position. Decoding what it
brings costs Theorem 3's exponent over the positions it fetches.
"""

from __future__ import annotations

import sympy

from infoflow.retrieval.circuit import ANCHOR, THE_READOUT, Copy, Form, Head
from infoflow.retrieval.laws import decode_exponent
from infoflow.retrieval.types import (
    FETCH,
    CostOptions,
    Factor,
    Fragment,
    Option,
    Part,
    Schedule,
    Shape,
    Step,
)

KEY = FETCH  # the shared step's key in a schedule
EDGES = {"fetch": "specific-position"}


def owns(key: str) -> bool:
    return key == KEY


def keys(factor: Factor) -> list[str]:
    """The shared step a score needs first: the fetch, when it reads a fixed position."""
    return [KEY] if factor.fixed else []


def step(key: str) -> Step:
    return Step("fetch")


def part(positions: frozenset[str], shape: Shape) -> Part:
    """The part for the fixed positions the target reads directly: fetched (with positional
    encoding, else impossible), or left to global aggregation when no head is left."""
    label = "fixed positions " + ", ".join(sorted(positions))
    if shape.positional_encoding:
        reason = "no head left for a specific-position head"
        fetch = Fragment((), (), (), -1, (KEY,))
        options = (Option("scheduled", fetch), Option("global", reason=reason))
    else:
        reason = "without positional encoding no head can single out a fixed position"
        options = (Option("impossible", reason=reason),)
    return Part(label, None, 1, options, -1)


def positions(schedule: Schedule) -> list[str]:
    """Fixed positions the head brings in: read directly or in a scheduled part's score."""
    return sorted(set(schedule.positions) | _inside(schedule))


def _inside(schedule: Schedule) -> set[str]:
    """Fixed positions a scheduled part's score reads (brought to every token)."""
    return {
        q
        for pl in schedule.placements
        if pl.comparison and pl.mode == "scheduled"
        for c in pl.comparison.walk()
        for f in c.factors
        for q in f.fixed
    }


def labels(schedule: Schedule, step: Step) -> list[str]:
    """What every token (and the readout) holds after the fetch: the positions."""
    return positions(schedule)


def decoded(schedule: Schedule) -> int:
    """Positions the fetch adds to the readout's state."""
    return len(positions(schedule)) if KEY in schedule.shared else 0


def readout_labels(schedule: Schedule, layer: int) -> list[str]:
    """What the readout holds of the fetch after ``layer``."""
    fetched = KEY in schedule.shared and schedule.shared[KEY][1] <= layer
    return positions(schedule) if fetched else []


def roles(schedule: Schedule) -> list[str]:
    """The DAG's nodes the fetch adds: one per fixed position."""
    return positions(schedule) if KEY in schedule.shared else []


def sentence(schedule: Schedule, step: Step) -> str:
    """The fetch in explain's words: the papers' specific-position aggregation; bringing a
    position to every token for a score to read is the theory note's [R]."""
    fixed = ", ".join(positions(schedule))
    tag = "paper:summary, specific-position" + (
        "; reconstruction:fixed_query, to every token" if _inside(schedule) else ""
    )
    return f"1 head: every token and the readout attend to the fixed positions {fixed} [{tag}]"


def part_text(schedule: Schedule, step: Step) -> str:
    """What the DAG's edges from the fixed positions are for."""
    return f"fixed positions {', '.join(positions(schedule))}"


def edge_roles(schedule: Schedule) -> list[tuple[str, str]]:
    """The DAG's edges of the fetch: from each fixed position to the token and the readout."""
    fixed = roles(schedule)
    return [(q, "token") for q in fixed] + [(q, "readout") for q in fixed]


def edge_cost(schedule: Schedule, part: str, layer: int, options: CostOptions) -> sympy.Expr:
    """Decoding the fetched positions."""
    return decode_exponent(len(positions(schedule)), options)


def circuit_head(flag: str, value: Copy, does: str) -> Head:
    """The fixed-position head compile builds: the key reads a flag channel the positional
    encoding sets at the fixed positions, so the readout's logit is beta there and 0
    elsewhere, and it averages ``value`` over them (``value.scale`` = |P| makes the sum)."""
    score = (Form(ANCHOR, flag),)
    return Head(1, -1, "fetch", THE_READOUT, does, score=score, values=(value,), positions=flag)
