"""What the mechanism modules share: the parts of a step's labels (which copy of a part it
serves, how many heads, whose result it is) and who makes a step, in words."""

from __future__ import annotations

from infoflow.retrieval.types import EVERY, Placement, Step


def tagged(placement: Placement) -> str:
    """``_c1.2``: the part's tag as a subscript ('' for a part without one)."""
    return f"_{placement.tag}" if placement.tag else ""


def copies(step: Step) -> str:
    """`` x3`` for a step of three heads side by side ('' for one)."""
    return f" x{step.heads}" if step.heads > 1 else ""


def holder(step: Step, placement: Placement) -> str:
    """``(s*)``: the token whose best value the step retrieves for ('' for the readout and for
    a value every token gets); ``(s)`` when s is pooled, not retrieved (every s counts)."""
    if step.holder in (None, EVERY):
        return ""
    steps = placement.fragment.steps if placement.fragment else ()
    pooled = any(s.variable == step.holder and s.kind == "pool" for s in steps)
    return f"({step.holder}{'' if pooled else '*'}{tagged(placement)})"


def who(step: Step) -> str:
    """Who makes the step, in words."""
    return {None: "the readout", EVERY: "every token"}.get(
        step.holder, f"every token {step.holder}"
    )


def left_out(step: Step, placement: Placement) -> tuple[str, str]:
    """Words and a tag for a token's step whose score leaves the token out by a positional
    term ([R] ``self_exclusion``: a factor over the step's index and its holder with a
    charged condition); ('', '') for any other step."""
    c = step.comparison or placement.comparison
    if step.holder is None or c is None:
        return "", ""
    pair = {step.variable, step.holder} - {EVERY}
    if not any(f.exclusions and pair <= f.scope for f in c.factors):
        return "", ""
    words = " other than itself (a positional term in the score leaves it out)"
    return words, ", reconstruction:self_exclusion"
