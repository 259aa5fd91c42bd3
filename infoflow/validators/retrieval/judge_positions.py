"""Measurements -> the verdicts of the claims about positions (a stage of
:mod:`~infoflow.validators.retrieval.judge`): a target that reads fixed positions is learned
only with positional encoding, and the readout attends to those positions, about 1/|P| each
(the paper's specific-position figure), judged seed by seed."""

from __future__ import annotations

from infoflow.validators.claims import Claim, fewer_seeds
from infoflow.validators.retrieval.experiment import Model
from infoflow.validators.retrieval.judge import Judge, judged, undecided


def needs_pe(judge: Judge, model: Model, twin: Model) -> Claim:
    ident = f"needs_positional_encoding:{model.key()}"
    statement = f"{model.label()} learns the target only with positional encoding"
    tolerance = f"with PE every seed at {judge.learns_text(model)}; without PE none"
    with_pe, without = judge.learned(model), judge.learned(twin)
    measured = {"with_pe": with_pe.to_json(), "without_pe": without.to_json()}
    derived = {**judge.derived(model, twin), "requires_positional_encoding": True}
    threshold = judge.threshold(model)
    claim = (ident, statement, "PE required", measured, tolerance)
    if without.below(threshold):
        return judged(*claim, False, derived, "learned without PE", "paper")
    stopped = not judge.improving.get(twin)
    if with_pe.below(threshold) and without.above(threshold) and stopped:
        return judged(*claim, True, derived, kind="paper")
    reason = "the model with PE does not learn, or the seeds straddle the threshold"
    if with_pe.below(threshold) and without.above(threshold):
        reason = "the model without PE does not learn, but was still improving at the cap"
    reason = fewer_seeds(min(with_pe.count, without.count)) or reason
    return undecided(*claim, reason, derived, "paper")


def attends(judge: Judge, model: Model, shares: dict[int, list[float]]) -> Claim:
    """The readout's first-layer attention on each fixed position, seed by seed (``shares``:
    position -> one share per seed): confirmed where every seed meets the tolerance,
    refuted where none does, else undecided (the seeds straddle it)."""
    count = len(shares)
    ident = f"attends_to_positions:{model.key()}"
    statement = f"the readout attends to the fixed positions, about 1/{count} each"
    tolerance = f"every seed: total >= 0.8 and each within [{0.5 / count:.2f}, {1.5 / count:.2f}]"
    seeds = [dict(zip(shares, one, strict=True)) for one in zip(*shares.values(), strict=True)]
    totals = [sum(seed.values()) for seed in seeds]
    mean = {str(k): sum(v) / len(v) for k, v in shares.items()}
    measured = {"shares": mean, "total": sum(mean.values()), "seed_totals": totals}
    derived = {"positions": sorted(shares)}
    claim = (ident, statement, "specific-position head", measured, tolerance)
    if not judge.learned(model).below(judge.threshold(model)):
        reason = fewer_seeds(judge.learned(model).count) or "the model does not learn the target"
        return undecided(*claim, reason, derived, "reproduction")
    meets = [
        total >= 0.8 and all(0.5 / count <= v <= 1.5 / count for v in seed.values())
        for seed, total in zip(seeds, totals, strict=True)
    ]
    if all(meets) and len(meets) >= 2:
        return judged(*claim, True, derived, kind="reproduction")
    if any(meets) or len(meets) < 2:
        reason = fewer_seeds(len(meets)) or "the seeds straddle the tolerance"
        return undecided(*claim, reason, derived, "reproduction")
    if judge.improving.get(model):
        reason = "the shares miss, but members were still improving at the cap"
        return undecided(*claim, reason, derived, "reproduction")
    reason = f"no seed meets it: totals {', '.join(f'{t:.3g}' for t in totals)}"
    return judged(*claim, False, derived, reason, "reproduction")
