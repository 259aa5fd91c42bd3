"""A retrieval experiment's measurements (best NMSE per model, the readout's attention) ->
claims, each derived from the engine's numbers at the models it compares.

Every comparison the experiment planned (:attr:`Experiment.pairs`: two architectures at one
(T, E), or one architecture at two sequence lengths) is judged from the predicted cost
exponents alpha of its two models, evaluated at each model's own T, d, E and heads:

- they differ by at least :data:`MARGIN`: a separation, in the predicted direction: the
  model with the larger exponent ends at least :data:`BAND` times worse (NMSE ratio);
- they are equal: no separation: the NMSE ratio stays within [1/BAND, BAND];
- they differ by less than the margin: too small to test; no claim (the report lists the
  pair under ``untested``).

Besides: a model predicted efficient learns the target at the budget (only the paper scale
may refute that); a target that needs positional encoding is learned with it, not without;
for positions read directly, the readout's attention rests on them. Why the band and the
margin have these values: docs/validate.md, "Retrieval claims".

A claim is confirmed or refuted only when its preconditions hold (the model predicted to do
better converged, or for an equality either one; its seeds agree); otherwise it is
inconclusive and says why. A separation the other way round (the model predicted worse
converged, the other ends at least BAND times worse) is refuted.
"""

from __future__ import annotations

from infoflow.validators.claims import Claim
from infoflow.validators.retrieval.experiment import Experiment, Model, Scale

#: Exponents that differ by less than this are not called a separation.
MARGIN = 0.5
#: NMSE ratio: a separation is a ratio of at least BAND; no separation, one within
#: [1/BAND, BAND]. The two claims split the measurements between them.
BAND = 3.0
#: Exponents closer than this are equal (they are exact rationals printed as floats).
EQUAL = 1e-9


def claims(
    experiment: Experiment, nmse: dict[Model, list[float]], scale: Scale, attention=None
) -> list[Claim]:
    """Every claim the predictions make, with measured values and a verdict.

    ``nmse`` maps each model to its NMSE per seed; ``attention`` maps a model to the mean
    share of the readout's attention on each fixed position (when measured)."""
    out = []
    best = {model: min(values) for model, values in nmse.items()}
    for model in experiment.points:
        result = experiment.models[model]
        if result["efficient"].value:
            out.append(_converges(model, nmse[model], scale, experiment.derived(model)))
    for a, b in experiment.pairs:
        if predicted_outcome(experiment.exponent(a), experiment.exponent(b)) != "below margin":
            out.append(_compare(experiment, a, b, nmse, scale))
    for model in experiment.points:
        if experiment.models[model]["requires_positional_encoding"].value:
            twin = Model(model.seq_len, model.embed_dim, model.heads, False)
            if model.positional_encoding and twin in best:
                derived = {
                    **experiment.derived(model),
                    **experiment.derived(twin),
                    "requires_positional_encoding": True,
                }
                out.append(_needs_pe(model, twin, best, scale, derived))
            if attention and model in attention:
                out.append(_attends_to_positions(model, attention[model], best[model], scale))
    return out


def untested(experiment: Experiment, found: list[Claim]) -> list[str]:
    """What the theory does not let this experiment test, and why: the comparisons whose
    exponents differ by less than the margin, or, when nothing is claimed, the reason."""
    out = []
    for a, b in experiment.pairs:
        alpha_a, alpha_b = experiment.exponent(a), experiment.exponent(b)
        if predicted_outcome(alpha_a, alpha_b) == "below margin":
            out.append(
                f"{a.label()} ({alpha_a:.3g}) against {b.label()} ({alpha_b:.3g}): the "
                f"exponents differ by less than the margin {MARGIN}"
            )
    if not found:
        out.append(
            "no claim: no model is predicted efficient, and no two models trained "
            "here have exponents the margin can tell apart or equal ones"
        )
    return out


def predicted_outcome(alpha_a: float, alpha_b: float) -> str:
    """What the exponents of two models predict: ``separation``, ``no separation`` or
    ``below margin``."""
    delta = 0.0 if alpha_a == alpha_b else abs(alpha_b - alpha_a)  # inf == inf: both infeasible
    if delta < EQUAL:
        return "no separation"
    return "separation" if delta >= MARGIN else "below margin"


def _agree(values: list[float]) -> bool:
    """Seeds agree when the spread between them stays within a factor of 10."""
    return max(values) <= 10 * max(min(values), 1e-12)


def _converges(model: Model, values: list[float], scale: Scale, derived: dict) -> Claim:
    best = min(values)
    ident = f"learns:{model.key()}"
    claim = f"{model.label()} learns the target (NMSE <= {scale.converged})"
    measured = {"best_nmse": best, "seeds": values}
    tolerance = f"NMSE <= {scale.converged}"
    if best <= scale.converged:
        return Claim.judged(
            ident, claim, "efficient", measured, tolerance, True, derived_from=derived
        )
    if scale.name != "paper":  # only the full paper budget may refute convergence
        reason = f"not converged within the {scale.name} budget (best NMSE {best:.3g})"
        return Claim.undecided(ident, claim, "efficient", measured, tolerance, reason, derived)
    return Claim.judged(
        ident,
        claim,
        "efficient",
        measured,
        tolerance,
        False,
        f"best NMSE {best:.3g} after the full paper budget",
        derived,
    )


def _compare(experiment: Experiment, a: Model, b: Model, nmse, scale: Scale) -> Claim:
    """The claim two models' exponents make about their NMSE."""
    alpha = {m: experiment.exponent(m) for m in (a, b)}
    derived = {**experiment.derived(a), **experiment.derived(b), "margin": MARGIN, "band": BAND}
    best = {m: min(nmse[m]) for m in (a, b)}
    ratio = best[b] / max(best[a], 1e-12)
    measured = {_name(a, b): best[a], _name(b, a): best[b], "ratio": ratio}
    outcome = predicted_outcome(alpha[a], alpha[b])
    if outcome == "no separation":
        return _no_separation(a, b, alpha[a], ratio, nmse, measured, derived, scale)
    worse, better = (b, a) if alpha[b] > alpha[a] else (a, b)
    ident = f"separation:{a.key()}:{b.key()}"
    claim = (
        f"{_name(worse, better)} ends at least {BAND:g}x worse than {_name(better, worse)}"
        f"{_context(a, b)} (exponent {alpha[worse]:.3g} against {alpha[better]:.3g})"
    )
    predicted = f"separation: exponent {alpha[worse]:.3g} > {alpha[better]:.3g}"
    tolerance = f"NMSE ratio >= {BAND:g}"
    if best[better] > scale.converged and best[worse] <= scale.converged:
        reversed_ = best[better] >= BAND * best[worse]  # the other way round, and clearly
        if reversed_ and _agree(nmse[worse]):
            reason = f"{_name(worse, better)}, predicted worse, converged and the other did not"
            return Claim.judged(
                ident, claim, predicted, measured, tolerance, False, reason, derived
            )
    if best[better] > scale.converged:
        reason = f"{_name(better, worse)} did not converge (NMSE {best[better]:.3g})"
        return Claim.undecided(ident, claim, predicted, measured, tolerance, reason, derived)
    if not _agree(nmse[better]):
        reason = f"the seeds of {_name(better, worse)} disagree"
        return Claim.undecided(ident, claim, predicted, measured, tolerance, reason, derived)
    holds = best[worse] / max(best[better], 1e-12) >= BAND
    return Claim.judged(ident, claim, predicted, measured, tolerance, holds, derived_from=derived)


def _no_separation(a, b, alpha, ratio, nmse, measured, derived, scale: Scale) -> Claim:
    ident = f"no_separation:{a.key()}:{b.key()}"
    claim = (
        f"{_name(b, a)} and {_name(a, b)} end within {BAND:g}x of each other{_context(a, b)} "
        f"(equal exponents, {alpha:.3g})"
    )
    predicted = f"no separation: equal exponents {alpha:.3g}"
    tolerance = f"NMSE ratio within [1/{BAND:g}, {BAND:g}]"
    if min(measured[_name(a, b)], measured[_name(b, a)]) > scale.converged:
        reason = f"neither converged (NMSE > {scale.converged})"
        return Claim.undecided(ident, claim, predicted, measured, tolerance, reason, derived)
    if not (_agree(nmse[a]) and _agree(nmse[b])):
        return Claim.undecided(
            ident, claim, predicted, measured, tolerance, "their seeds disagree", derived
        )
    holds = 1 / BAND <= ratio <= BAND
    return Claim.judged(ident, claim, predicted, measured, tolerance, holds, derived_from=derived)


def _name(model: Model, other: Model) -> str:
    """What tells ``model`` apart from ``other``: its heads, or its sequence length."""
    if model.seq_len != other.seq_len:
        return f"T={model.seq_len}"
    return f"heads {list(model.heads)}"


def _context(a: Model, b: Model) -> str:
    """What the two models share, for the claim's statement."""
    if a.seq_len != b.seq_len:
        return f" (heads {list(a.heads)}, E={a.embed_dim})"
    return f" (T={a.seq_len}, E={a.embed_dim})"


def _needs_pe(model: Model, twin: Model, best, scale: Scale, derived: dict) -> Claim:
    ident = f"needs_positional_encoding:{model.key()}"
    claim = f"{model.label()} learns the target only with positional encoding"
    tolerance = f"with PE NMSE <= {scale.converged}; without PE NMSE >= {scale.not_learned}"
    measured = {"with_pe": best[model], "without_pe": best[twin]}
    if best[model] > scale.converged:
        return Claim.undecided(
            ident,
            claim,
            "PE required",
            measured,
            tolerance,
            f"not converged even with PE (NMSE {best[model]:.3g})",
            derived,
        )
    return Claim.judged(
        ident,
        claim,
        "PE required",
        measured,
        tolerance,
        best[twin] >= scale.not_learned,
        derived_from=derived,
    )


def _attends_to_positions(model: Model, shares: dict[int, float], nmse: float, scale) -> Claim:
    count = len(shares)
    ident = f"attends_to_positions:{model.key()}"
    claim = f"the readout attends to the fixed positions, about 1/{count} each"
    tolerance = f"total >= 0.8 and each within [{0.5 / count:.2f}, {1.5 / count:.2f}]"
    measured = {"shares": {str(k): v for k, v in shares.items()}, "total": sum(shares.values())}
    derived = {"positions": sorted(shares)}
    if nmse > scale.converged:
        return Claim.undecided(
            ident,
            claim,
            "specific-position head",
            measured,
            tolerance,
            "the model did not converge",
            derived,
        )
    ok = measured["total"] >= 0.8 and all(0.5 / count <= v <= 1.5 / count for v in shares.values())
    return Claim.judged(
        ident, claim, "specific-position head", measured, tolerance, ok, derived_from=derived
    )
