"""Two models' predictions -> what the theory lets a claim say about them, respecting bounds.

The engine's exponent of a model predicted efficient is a construction's cost: an upper
bound. That of a model predicted inefficient comes from a fallback (global aggregation,
Theorem 1; a single-head k-th retrieval, Theorem 2): a lower bound, which the reconstructed
floor (``exponent_floor``, alpha >= 1) may lift. So, for a pair of models:

- both efficient, equal exponents: **equality** of their measured exponents (the same
  architecture at two lengths: the paper's "independent of T"); exponents at least
  :data:`MARGIN` apart: a **separation**, the cost law's estimate against another (a
  reconstruction);
- one inefficient: its lower bound *without the floor* at least :data:`MARGIN` above the
  other's upper bound: a **separation** (the paper's). When only the floor makes the two
  exponents equal, the paper predicts nothing; the floor's reading, equal exponents, is a
  claim of its own, ``exponent_floor:…`` of kind ``reconstruction``;
- one architecture at two lengths, both inefficient: the lower bound at the longer length
  at least :data:`MARGIN` above the other's, or above the floor where the floor lifts the
  other's (a bound under the floor orders nothing; since the evening of 2026-12-07): a
  **separation** ("grows with T", the paper's);
- anything else (two lower bounds of different architectures, a gap under the margin):
  nothing to test, listed as untested with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from infoflow.validators.retrieval.experiment import EQUAL, Expected, Experiment, Model

#: Exponents (bounds) that differ by less than this are not called a separation.
MARGIN = 0.5


@dataclass(frozen=True)
class Expectation:
    """What a pair of models is predicted to show: ``separation`` (``better`` has the
    smaller exponent) or ``equality``, the claim's kind and why."""

    outcome: str
    kind: str
    better: Model
    worse: Model
    why: str
    floor: bool = False  # only the reconstructed floor predicts it


def expect(experiment: Experiment, a: Model, b: Model) -> Expectation | str:
    """The expectation for the pair (a, b), or the reason there is none."""
    ea, eb = experiment.expected[a], experiment.expected[b]
    across_t = (a.embed_dim, a.heads, a.positional_encoding) == (
        b.embed_dim,
        b.heads,
        b.positional_encoding,
    )
    if ea.efficient and eb.efficient:
        return _both_efficient(a, b, ea, eb, across_t)
    if ea.efficient or eb.efficient:
        (better, eu), (worse, el) = ((a, ea), (b, eb)) if ea.efficient else ((b, eb), (a, ea))
        gap = el.raw - eu.alpha
        if gap >= MARGIN:
            why = f"lower bound {el.raw:.3g} against a construction's {eu.alpha:.3g}"
            return Expectation("separation", "paper", better, worse, why)
        if el.floor_hides and abs(el.alpha - eu.alpha) < EQUAL:
            why = (
                f"the floor lifts the lower bound {el.raw:.3g} to {el.alpha:.3g}, the other's "
                "exponent: only the reconstruction predicts equal exponents"
            )
            return Expectation("equality", "reconstruction", better, worse, why, floor=True)
        return (
            f"the lower bound {el.raw:.3g} is not {MARGIN} above the construction's "
            f"{eu.alpha:.3g}: the theory predicts no difference the runs could show"
        )
    if across_t and ea.feasible and eb.feasible:
        (short, es), (long, el) = sorted([(a, ea), (b, eb)], key=lambda p: p[0].seq_len)
        if el.raw - es.alpha >= MARGIN:
            why = f"the lower bound grows with T: {_lifted(es)} to {el.raw:.3g}"
            return Expectation("separation", "paper", short, long, why)
        return f"the exponents {_lifted(es)} and {el.raw:.3g} differ by less than {MARGIN}"
    if not ea.feasible and not eb.feasible:
        return "neither architecture can represent the target"
    return "two lower bounds of different architectures order nothing"


def _lifted(e: Expected) -> str:
    """A lower bound as the engine reads it: the floor's value where the floor lifts it."""
    return f"{e.alpha:.3g} (the floor; the bound {e.raw:.3g})" if e.floor_hides else f"{e.raw:.3g}"


def _both_efficient(a: Model, b: Model, ea: Expected, eb: Expected, across_t: bool):
    if abs(ea.alpha - eb.alpha) < EQUAL:
        paper = across_t or all(e.provenance.startswith("paper:") for e in (ea, eb))
        why = f"two constructions of exponent {ea.alpha:.3g}" + (" at two lengths" * across_t)
        return Expectation("equality", "paper" if paper else "reconstruction", a, b, why)
    (better, eb_), (worse, ew) = sorted([(a, ea), (b, eb)], key=lambda p: p[1].alpha)
    if ew.alpha - eb_.alpha >= MARGIN:
        why = f"the cost law's estimates {eb_.alpha:.3g} and {ew.alpha:.3g} (upper bounds)"
        return Expectation("separation", "reconstruction", better, worse, why)
    return f"the exponents {ea.alpha:.3g} and {eb.alpha:.3g} differ by less than {MARGIN}"


def expectations(experiment: Experiment) -> list[tuple[Model, Model, Expectation | str]]:
    """Every planned pair with its expectation (or the reason it has none)."""
    return [(a, b, expect(experiment, a, b)) for a, b in experiment.pairs]
