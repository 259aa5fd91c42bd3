"""Pooling: a sum over one token of a score of that token is one averaging head (step
``pool``, [R] ``separable_sum``): the readout, or every token, averages the score over the
sequence and decodes one position's worth of information. A sum over several tokens, or of
a score that depends on an enclosing token, needs every position (global aggregation); so
does any one-token sum under the option ``separable_sum: global``.
"""

from __future__ import annotations

import sympy

from infoflow.retrieval.circuit import ANCHOR, THE_READOUT, Copy, Form, Head
from infoflow.retrieval.laws import decode_exponent
from infoflow.retrieval.mechanisms.base import copies, tagged
from infoflow.retrieval.types import Comparison, CostOptions, Placement, Schedule, Step

NAME = "pooled by one averaging head (a score of one token)"
EDGES = {"pool": "pooled"}
PROVENANCE = "reconstruction:separable_sum"


def limit(c: Comparison, separable_sum: str = "pool") -> str:
    """Why one averaging head cannot pool ``c`` ('' when it can)."""
    if len(c.variables) > 1:
        return "a sum over several tokens of a score coupling them needs every position"
    if c.free:
        return (
            f"a sum over {c.variables[0]} of a score that depends on "
            f"{', '.join(sorted(c.free))} needs every position in every token"
        )
    if separable_sum == "global":
        return "option separable_sum=global: a one-token sum is a global aggregation"
    return ""


def own_steps(c: Comparison, to: str | None, heads: int, ranks: dict) -> list[list]:
    """One way: one averaging head, consuming every factor."""
    step = Step("pool", heads, 1, c.variables[0], to, None, c)
    return [[(step, tuple(range(len(c.factors))))]]


def labels(step: Step, placement: Placement) -> list[str]:
    return [f"mean over {step.variable}{tagged(placement)}{copies(step)}"]


def sentence(step: Step, placement: Placement, j: int, who: str) -> str:
    return f"{step.heads} head(s): {who} pools {step.variable} for {placement.label} [{PROVENANCE}]"


def edge_cost(schedule: Schedule, part: str, layer: int, options: CostOptions) -> sympy.Expr:
    """Decoding the one position the average couples."""
    return decode_exponent(1, options)


def circuit_head(value: Copy, does: str, weights: str = "") -> Head:
    """The averaging head compile builds: every logit zero (the readout left out), so the
    readout takes the mean of ``value`` over the tokens; ``value.scale`` = T turns it into
    the sum. Exact whatever the temperature. With a logit channel ``weights`` (log w(p):
    :meth:`~infoflow.retrieval.circuit.Circuit.logit`, written over beta), token p weighs
    w(p), whatever beta, and ``value.scale`` = the weights' sum turns the mean into the
    weighted sum (a position of weight 0 is left out: e^-100)."""
    if not weights:
        return Head(1, -1, "pooling", THE_READOUT, does, values=(value,), sharp=False)
    return Head(
        1, -1, "pooling", THE_READOUT, does, score=(Form(ANCHOR, weights),), values=(value,)
    )
