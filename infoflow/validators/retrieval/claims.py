"""A retrieval experiment's measurements (best NMSE per model, the readout's attention) ->
claims.

The claims come from the engine's predictions for each point of the spec:

- predicted efficient: the architecture converges (NMSE under a threshold) and stays low as
  T grows; every neighbour with one head fewer in a layer, or one layer fewer, that the
  engine predicts inefficient ends clearly worse;
- predicted inefficient (exponent grows with T): NMSE rises with T at fixed size;
- positional encoding required (fixed positions, neighbours, index conditions): learned with
  PE, not without; for positions read directly, the readout's attention rests on them.

A claim is confirmed or refuted only when its preconditions hold (the model predicted to
succeed converged; its seeds agree); otherwise it is inconclusive and says why.
"""

from __future__ import annotations

from itertools import groupby

from infoflow.validators.claims import Claim
from infoflow.validators.retrieval.experiment import Experiment, Model, Scale


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
            out.append(_converges(model, nmse[model], scale))
            for neighbour in experiment.models:
                if (
                    _is_neighbour(neighbour, model)
                    and not experiment.models[neighbour]["efficient"].value
                ):
                    out.append(_clearly_worse(model, neighbour, nmse, scale))
        if result["requires_positional_encoding"].value and model.positional_encoding:
            twin = Model(model.seq_len, model.embed_dim, model.heads, False)
            out.append(_needs_pe(model, twin, best, scale))
            if attention and model in attention:
                out.append(_attends_to_positions(model, attention[model], best[model], scale))
    out += _trends_with_T(experiment, best, scale)
    return out


def _agree(values: list[float]) -> bool:
    """Seeds agree when the spread between them stays within a factor of 10."""
    return max(values) <= 10 * max(min(values), 1e-12)


def _converges(model: Model, values: list[float], scale: Scale) -> Claim:
    best = min(values)
    claim = f"{model.label()} learns the target (NMSE <= {scale.converged})"
    measured = {"best_nmse": best, "seeds": values}
    tolerance = f"NMSE <= {scale.converged}"
    if best <= scale.converged:
        return Claim.judged(claim, "efficient", measured, tolerance, True)
    if scale.name != "paper":  # only the full paper budget may refute convergence
        reason = f"not converged within the {scale.name} budget (best NMSE {best:.3g})"
        return Claim.undecided(claim, "efficient", measured, tolerance, reason)
    return Claim.judged(claim, "efficient", measured, tolerance, False,
                        f"best NMSE {best:.3g} after the full paper budget")  # fmt: skip


def _is_neighbour(candidate: Model, model: Model) -> bool:
    if (candidate.seq_len, candidate.embed_dim, candidate.positional_encoding) != (
        model.seq_len, model.embed_dim, model.positional_encoding,
    ):  # fmt: skip
        return False
    a, b = candidate.heads, model.heads
    if len(a) == len(b):
        diffs = [y - x for x, y in zip(a, b, strict=True)]
        return sorted(diffs) == [0] * (len(a) - 1) + [1]
    return len(a) == len(b) - 1 and a == b[:-1]


def _clearly_worse(model: Model, neighbour: Model, nmse, scale: Scale) -> Claim:
    good, bad = min(nmse[model]), min(nmse[neighbour])
    claim = (
        f"heads {list(neighbour.heads)} end clearly worse than {list(model.heads)} "
        f"(T={model.seq_len})"
    )
    tolerance = f"NMSE ratio >= {scale.worse}"
    measured = {"nmse": good, "neighbour_nmse": bad, "ratio": bad / max(good, 1e-12)}
    predicted = "neighbour inefficient (exponent grows with T)"
    if good > scale.converged:
        reason = f"{list(model.heads)} did not converge (NMSE {good:.3g} > {scale.converged})"
        return Claim.undecided(claim, predicted, measured, tolerance, reason)
    if not _agree(nmse[model]):
        return Claim.undecided(claim, predicted, measured, tolerance, "its seeds disagree")
    return Claim.judged(claim, predicted, measured, tolerance, measured["ratio"] >= scale.worse)


def _needs_pe(model: Model, twin: Model, best, scale: Scale) -> Claim:
    claim = f"{model.label()} learns the target only with positional encoding"
    tolerance = f"with PE NMSE <= {scale.converged}; without PE NMSE >= {scale.not_learned}"
    measured = {"with_pe": best[model], "without_pe": best[twin]}
    if best[model] > scale.converged:
        return Claim.undecided(claim, "PE required", measured, tolerance,
                               f"not converged even with PE (NMSE {best[model]:.3g})")  # fmt: skip
    return Claim.judged(claim, "PE required", measured, tolerance,
                        best[twin] >= scale.not_learned)  # fmt: skip


def _attends_to_positions(model: Model, shares: dict[int, float], nmse: float, scale) -> Claim:
    count = len(shares)
    claim = f"the readout attends to the fixed positions, about 1/{count} each"
    tolerance = f"total >= 0.8 and each within [{0.5 / count:.2f}, {1.5 / count:.2f}]"
    measured = {"shares": {str(k): v for k, v in shares.items()}, "total": sum(shares.values())}
    if nmse > scale.converged:
        return Claim.undecided(claim, "specific-position head", measured, tolerance,
                               "the model did not converge")  # fmt: skip
    ok = measured["total"] >= 0.8 and all(0.5 / count <= v <= 1.5 / count for v in shares.values())
    return Claim.judged(claim, "specific-position head", measured, tolerance, ok)


def _trends_with_T(experiment: Experiment, best, scale: Scale) -> list[Claim]:
    """Across the spec's own points of one architecture at several T."""
    out = []
    key = lambda m: (m.embed_dim, m.heads, m.positional_encoding)  # noqa: E731
    for (embed_dim, heads, pe), models in groupby(sorted(experiment.points, key=key), key=key):
        models = sorted(models, key=lambda m: m.seq_len)
        if len(models) < 2:
            continue
        series = {m.seq_len: best[m] for m in models}
        arch = f"heads {list(heads)}, E={embed_dim}" + (", PE" if pe else "")
        if experiment.models[models[0]]["efficient"].value:
            out.append(_stays_low(arch, series, scale))
        else:
            out.append(_rises(arch, series, scale))
    return out


def _stays_low(arch: str, series: dict[int, float], scale: Scale) -> Claim:
    first, last = min(series), max(series)
    claim = f"{arch} stays low as T grows ({first} -> {last})"
    tolerance = f"NMSE <= {scale.converged} at every T"
    if series[first] > scale.converged:
        return Claim.undecided(claim, "efficient", series, tolerance,
                               "not converged even at the smallest T")  # fmt: skip
    return Claim.judged(claim, "efficient", series, tolerance,
                        max(series.values()) <= scale.converged)  # fmt: skip


def _rises(arch: str, series: dict[int, float], scale: Scale) -> Claim:
    first, last = min(series), max(series)
    claim = f"{arch}: NMSE rises with T ({first} -> {last})"
    tolerance = (
        f"confirmed if NMSE(T={last}) >= {scale.rise} x NMSE(T={first}); refuted if it does "
        "not rise"
    )
    predicted = "exponent grows with T"
    if series[first] > scale.not_learned:
        return Claim.undecided(claim, predicted, series, tolerance,
                               "not learned even at the smallest T")  # fmt: skip
    ratio = series[last] / max(series[first], 1e-12)
    if ratio >= scale.rise:
        return Claim.judged(claim, predicted, series, tolerance, True)
    if ratio <= 1:
        return Claim.judged(claim, predicted, series, tolerance, False, "NMSE did not rise at all")
    reason = f"NMSE rose {ratio:.2f}x, less than the {scale.rise}x the claim asks"
    return Claim.undecided(claim, predicted, series, tolerance, reason)
