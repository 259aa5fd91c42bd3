"""A compiled witness's width ladder -> the construction's measured exponent, and the claims
that compare it with the engine's.

A witness that decodes (:mod:`.construction`) is built at the MLP widths :data:`WIDTHS` (8x)
at the sharpness ``construction.SHARP`` (the softmax's error stays below the decoders'), once
per seed (the seed draws the target's parameters and the fresh sequences its NMSE is measured
on). Each seed's slope of log NMSE against log decoder parameters is a measured exponent,
alpha = -2 / slope (:mod:`.exponents`). A witness is one construction: its exponent bounds the
architecture's cost from above, which is what the engine's exponent of an efficient
architecture is (a construction's cost). Two claims, of kind construction:

- ``witness_exponent:KEY``: the construction costs no more than the engine says: every
  seed's slope at or below -2 / alpha. Refuted when every seed's slope is above it: the plan's
  construction does not achieve the engine's number at this T.
- ``witness_flat:KEY:KEY``: the same architecture at two lengths, where the engine gives
  both the same exponent (the paper's "independent of T" for an efficient architecture): the
  seed-paired exponents differ by less than ``expect.MARGIN`` (the gap the engine needs to
  predict a separation), every seed; refuted when every seed's difference is ``MARGIN`` or
  more, the same way. This is the two-layer
  half of the depth separation, settled by construction where trained ladders are flat.

A witness without a decoder (its error depends on beta, not on a size) has no ladder and no
exponent claims.
"""

from __future__ import annotations

from infoflow.retrieval.circuit import Circuit
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.validators.claims import Claim
from infoflow.validators.retrieval import construction
from infoflow.validators.retrieval.circuit_to_weights import TooNarrow
from infoflow.validators.retrieval.expect import MARGIN
from infoflow.validators.retrieval.experiment import Model
from infoflow.validators.retrieval.exponents import (
    Ladder,
    equal_within,
    exponent_of,
    paired_differences,
    paired_exponent_differences,
    undecided_pairs,
)
from infoflow.validators.retrieval.judge import EQUAL_TEXT, STEEP

KIND = "construction"
#: The MLP widths of a witness's ladder (8x in width, about 8x in decoder parameters).
WIDTHS = (128, 256, 512, 1024)


def ladder_of(spec: RetrievalSpec, circuit: Circuit, seeds: int) -> Ladder | None:
    """The witness's NMSE at every width of :data:`WIDTHS` its decoders fit in, and seed
    (None: no decoder, or fewer than two widths fit; with fewer than
    :data:`~.exponents.MIN_RUNGS` it is shown but measures no exponent)."""
    if not any(m.kind == "decode" for m in circuit.mlps):
        return None
    sizes, rows = [], []
    for width in WIDTHS:
        row = []
        try:
            for seed in range(seeds):
                built = construction.build(
                    spec, beta=construction.SHARP, width=width, seed=seed, circuit=circuit
                )
                row.append(built.nmse)
        except TooNarrow:
            continue
        sizes.append(built.model.members[0].decoder_parameters())
        rows.append(row)
    return Ladder(sizes, rows) if len(sizes) >= 2 else None


def exponent_claim(model: Model, ladder: Ladder, alpha: float) -> Claim:
    """The witness's measured exponent is at most the engine's ``alpha``."""
    limit = -2 / alpha
    slope = ladder.slope()
    statement = (
        f"{model.label()}: the compiled witness costs no more than the engine's exponent "
        f"{alpha:.3g} (an efficient architecture's cost is a construction's, an upper bound)"
    )
    measured = {"slope": slope.to_json(), "exponent": exponent_of(slope.median)}
    tolerance = f"slope <= {limit:.3g} (= -2 / {alpha:.3g}) for every seed"
    claim = (f"witness_exponent:{model.key()}", statement, f"alpha <= {alpha:.3g}", measured)
    holds = slope.count >= 2 and not slope.missing and slope.high <= limit
    fails = "the plan's construction does not achieve the engine's exponent"
    why = ladder.too_few() or "the seeds' slopes straddle the limit"
    return _verdict(*claim, tolerance, holds, slope.above(limit), fails, why)


def flat_claim(short: Model, long: Model, ladders: dict[Model, Ladder], alpha: float) -> Claim:
    """The witnesses of one architecture at two lengths have equal exponents."""
    a, b = ladders[short], ladders[long]
    difference = paired_exponent_differences(a, b)
    statement = (
        f"heads {list(short.heads)}, E={short.embed_dim}: the compiled witness's exponent is "
        f"the same at T={short.seq_len} and T={long.seq_len} (the engine: {alpha:.3g} at both)"
    )
    measured = {
        "slope": {m.label(): ladders[m].slope().to_json() for m in (short, long)},
        "slope_difference": paired_differences(a, b).to_json(),
        "exponent_difference": difference.to_json(),
    }
    tolerance = f"{EQUAL_TEXT}; both ladders steep (every seed below -{STEEP:g})"
    claim = (f"witness_flat:{short.key()}:{long.key()}", statement, "equal exponents", measured)
    equal = equal_within(difference, MARGIN)
    fails = "every seed's exponents differ by the margin or more, the same way"
    why = undecided_pairs(difference, "the seeds' differences straddle the margin")
    unmeasured = [ladder.too_few() for ladder in (a, b) if ladder.too_few()]
    if unmeasured:
        equal, why = None, f"a witness's ladder measures no exponent: {unmeasured[0]}"
    elif not all(ladder.slope().below(-STEEP) for ladder in (a, b)):
        equal = None  # a flat or rising ladder measures no exponent
        why = f"a witness's ladder is flat or rising (not every seed below -{STEEP:g}): no exponent"
    return _verdict(*claim, tolerance, equal is True, equal is False, fails, why)


def _verdict(ident, statement, predicted, measured, tolerance, holds, refuted, fails, why) -> Claim:
    """Confirmed when ``holds``, refuted (saying ``fails``) when ``refuted``, else
    inconclusive (saying ``why``); of kind construction."""
    if holds or refuted:
        claim = Claim.judged(
            ident, statement, predicted, measured, tolerance, holds, "" if holds else fails
        )
    else:
        claim = Claim.undecided(ident, statement, predicted, measured, tolerance, why)
    return claim.of_kind(KIND)


def same_architecture(a: Model, b: Model) -> bool:
    """Two models that differ in their length only."""
    return (a.heads, a.embed_dim, a.positional_encoding) == (
        b.heads,
        b.embed_dim,
        b.positional_encoding,
    ) and a.seq_len != b.seq_len
