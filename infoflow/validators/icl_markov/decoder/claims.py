"""The decoder alone's measurement (:mod:`.judge`) -> claims: K*_2 against the decoder's
capacity, and per D_phi the paper's criterion (the head generalises when D_phi >~ C^2)
against the fresh-chain test.
"""

from __future__ import annotations

from dataclasses import replace

from infoflow.icl_markov.predict import generalizes
from infoflow.validators.claims import Claim

CAPACITY_TOLERANCE = 2.0  # the capacity form's constant is uncalibrated: a factor 2 either way


def decoder_claims(
    measured: dict, k2_star: float | None, states: int, calibrated_here: bool = False
) -> list[Claim]:
    """K*_2 against the decoder's capacity (inconclusive when ``calibrated_here``: the
    capacity constant was fitted to this very measurement); per D_phi, the paper's criterion
    against the fresh-chain test."""
    out = [_capacity_claim(measured["capacity"], k2_star, calibrated_here)]
    for dim, found in sorted(measured["task_dims"].items()):
        predicted = generalizes(dim, states)
        ident = f"task_vector:D_phi={dim}"
        claim = (
            f"whether a task vector of D_phi = {dim} numbers lets the head generalize: "
            f"{'yes' if predicted else 'no'} by the paper's criterion (D_phi >~ C^2 = "
            f"{states**2})"
        )
        tolerance = (
            "the decoder's KL on fresh chains is below G2's level iff D_phi >= C^2; "
            "D_phi from C (C - 1), the numbers a transition matrix has, up to C^2 is "
            "the band the paper's '>~' leaves open"
        )
        open_band = states * (states - 1) <= dim < states**2
        if open_band or found["generalizes"] is None:
            why = "inside the band the criterion leaves open"
            if not open_band:
                why = "the fresh-chain KL, or G2's level, is not finite (diverged)"
            out.append(Claim.undecided(ident, claim, predicted, found, tolerance, why))
        else:
            out.append(
                Claim.judged(
                    ident, claim, predicted, found, tolerance, found["generalizes"] == predicted
                )
            )
    return out


def _capacity_claim(capacity: dict, k2_star: float | None, calibrated_here: bool) -> Claim:
    ident = "k2_capacity"
    claim = "K*_2 is the second MLP's capacity: the largest K it stores below G2's level"
    tolerance = f"the prediction within a factor {CAPACITY_TOLERANCE} of the measured bracket"
    low, high = capacity["low"], capacity["high"]
    if k2_star is None:
        return Claim.undecided(ident, claim, None, capacity, tolerance, "no prediction")
    if calibrated_here:
        return Claim.undecided(
            ident,
            claim,
            k2_star,
            capacity,
            tolerance,
            "the capacity constant was fitted to this measurement",
        )
    if capacity.get("diverged"):
        reason = f"the decoder's KL is not finite at K = {capacity['diverged']} (diverged)"
        return Claim.undecided(ident, claim, k2_star, capacity, tolerance, reason)
    if not capacity["monotone"]:
        reason = "the decoder fits a K above one it fails: not monotone on this grid"
        return Claim.undecided(ident, claim, k2_star, capacity, tolerance, reason)
    if low is not None and k2_star * CAPACITY_TOLERANCE < low:
        return Claim.judged(
            ident, claim, k2_star, capacity, tolerance, False, f"the decoder still fits K = {low}"
        )
    if high is not None and k2_star > high * CAPACITY_TOLERANCE:
        return Claim.judged(
            ident,
            claim,
            k2_star,
            capacity,
            tolerance,
            False,
            f"the decoder already fails at K = {high}",
        )
    if low is None or high is None:
        return Claim.undecided(
            ident, claim, k2_star, capacity, tolerance, "the grid does not bracket the capacity"
        )
    return Claim.judged(ident, claim, k2_star, capacity, tolerance, True)


def every_seed(per_seed: dict[int, list[Claim]]) -> list[Claim]:
    """Each claim over the seeds' decoders (``per_seed``: seed -> its claims), matched by
    id: confirmed when every seed's is, refuted when every seed's is, else inconclusive
    (a seed without the claim too, or one seed alone), naming each seed's verdict and
    reason; its measurement per seed."""
    seeds = list(per_seed)
    by_id = {seed: {c.id: c for c in claims} for seed, claims in per_seed.items()}
    out = []
    for first in per_seed[seeds[0]]:
        found = {seed: by_id[seed].get(first.id) for seed in seeds}
        statement = first.statement + (
            f" ({len(seeds)} seeds)" if len(seeds) > 1 else f" (seed {seeds[0]} alone)"
        )
        common = {
            "statement": statement,
            "measured": {seed: c.measured if c else None for seed, c in found.items()},
            "tolerance": first.tolerance + ("; every seed's decoder" if len(seeds) > 1 else ""),
        }
        verdicts = {c.verdict if c else "missing" for c in found.values()}
        if verdicts in ({"confirmed"}, {"refuted"}):
            reasons = "; ".join(f"seed {s}: {c.reason}" for s, c in found.items() if c.reason)
            out.append(replace(first, **common, reason=reasons).over_seeds(len(seeds)))
            continue
        why = "; ".join(
            f"seed {s}: {c.verdict}" + (f" ({c.reason})" if c.reason else "")
            if c
            else f"seed {s}: no such claim"
            for s, c in found.items()
        )
        out.append(replace(first, **common, verdict="inconclusive", reason=why))
    return out
