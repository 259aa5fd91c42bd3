"""Retrieval specs -> experiments (which models to train) and claims (what to check).

The claims come from the engine's predictions for each point of the spec, not from the
spec's name, so a target nobody wrote a validator for is still checked:

- predicted efficient: the architecture converges (NMSE under a threshold) and stays low as
  T grows; every neighbour with one head fewer in a layer, or one layer fewer, that the
  engine predicts inefficient ends clearly worse;
- predicted inefficient (exponent grows with T): NMSE rises with T at fixed size;
- positional encoding required: learned with PE, not without; the readout's attention then
  rests on the fixed positions.

A claim is confirmed or refuted only when its preconditions hold (the model predicted to
succeed converged; its seeds agree); otherwise it is inconclusive and says why.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from itertools import groupby

from infoflow.validators.model import Member
from infoflow.validators.train import Group, TrainSettings

import infoflow
from infoflow.retrieval.spec import RetrievalSpec


@dataclass(frozen=True)
class Scale:
    """How big the experiments are; thresholds for the claims."""

    name: str
    settings: TrainSettings
    seeds: int
    max_seq_len: int | None  # smoke runs cap T
    converged: float  # NMSE under which a model counts as having learned the target
    worse: float  # "clearly worse": at least this many times the NMSE
    rise: float  # "rises with T": the largest T at least this many times the smallest
    not_learned: float = 0.5  # NMSE above which a model has not learned the target


SCALES = {
    "smoke": Scale(
        "smoke", TrainSettings(steps=1500, batch=64, eval_every=100, eval_size=1024),
        seeds=2, max_seq_len=16, converged=0.05, worse=3.0, rise=2.0,
    ),
    "paper": Scale(
        "paper", TrainSettings(steps=20000, batch=256, eval_every=500, eval_size=4096),
        seeds=3, max_seq_len=None, converged=0.01, worse=10.0, rise=2.0,
    ),
}  # fmt: skip


@dataclass(frozen=True)
class Model:
    """One architecture to train at one (T, E), over every seed."""

    seq_len: int
    embed_dim: int
    heads: tuple[int, ...]
    positional_encoding: bool

    def label(self) -> str:
        pe = ", PE" if self.positional_encoding else ""
        return f"heads {list(self.heads)}{pe}, T={self.seq_len}, E={self.embed_dim}"


@dataclass
class Experiment:
    """The models one spec needs and the predictions that say what they should show."""

    name: str
    base: RetrievalSpec
    models: dict[Model, infoflow.Result] = field(default_factory=dict)
    points: list[Model] = field(default_factory=list)  # the spec's own points

    def groups(self, scale: Scale) -> list[Group]:
        """One ensemble per sequence length: every width, architecture and seed in it."""
        groups = []
        key = lambda m: m.seq_len  # noqa: E731
        for seq_len, models in groupby(sorted(self.models, key=_order), key=key):
            models = list(models)
            members, labels = [], []
            for model in models:
                for seed in range(scale.seeds):
                    members.append(
                        Member(model.heads, model.positional_encoding, seed, model.embed_dim)
                    )
                    labels.append(f"{model.label()}, seed {seed}")
            spec = self.models[models[0]].spec
            digest = hashlib.sha1(repr((self.name, models)).encode()).hexdigest()[:8]
            groups.append(Group(f"{self.name}-T{seq_len}-{digest}", spec, seq_len, members, labels))
        return groups


def _order(model: Model) -> tuple:
    return (model.seq_len, model.embed_dim, model.heads, model.positional_encoding)


def plan(name: str, spec: RetrievalSpec, scale: Scale, base_dir=None) -> Experiment:
    """Every model the claims about ``spec`` need, with its prediction."""
    experiment = Experiment(name, spec)
    points = [point for _, point in infoflow.expand(spec, base_dir)]
    cap = scale.max_seq_len
    has_short = cap and any(p.seq_len and p.seq_len <= cap for p in points)
    for point in points:
        if cap and point.seq_len and point.seq_len > cap:
            if has_short:
                continue  # the sweep has points within the cap: keep those
            point = point.model_copy(update={"seq_len": cap})
        model = _add(experiment, point)
        if model not in experiment.points:
            experiment.points.append(model)
        result = experiment.models[model]
        if result["efficient"].value:
            for neighbour in _neighbours(point):
                _add(experiment, neighbour)
        if result["requires_positional_encoding"].value and model.positional_encoding:
            _add(experiment, _with(point, positional_encoding=False))
    return experiment


def _add(experiment: Experiment, point: RetrievalSpec) -> Model:
    arch = point.architecture
    model = Model(
        point.seq_len or 16, arch.embed_dim or 32, tuple(arch.heads_per_layer),
        arch.positional_encoding,
    )  # fmt: skip
    if model not in experiment.models:
        experiment.models[model] = infoflow.predict(point)
    return model


def _with(point: RetrievalSpec, **architecture) -> RetrievalSpec:
    arch = point.architecture.model_copy(update=architecture)
    return point.model_copy(update={"architecture": arch})


def _neighbours(point: RetrievalSpec) -> list[RetrievalSpec]:
    """One head fewer in a layer, or the last layer dropped."""
    heads = point.architecture.heads_per_layer
    out = []
    for layer, count in enumerate(heads):
        if count > 1:
            fewer = [*heads[:layer], count - 1, *heads[layer + 1 :]]
            out.append(_with(point, heads=fewer))
    if len(heads) > 1:
        out.append(_with(point, layers=len(heads) - 1, heads=heads[:-1]))
    return out


# ---- claims ----------------------------------------------------------------------------


def claims(
    experiment: Experiment, nmse: dict[Model, list[float]], scale: Scale, attention=None
) -> list[dict]:
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


def _claim(claim, predicted, measured, tolerance, verdict, reason) -> dict:
    return {"claim": claim, "predicted": predicted, "measured": measured,
            "tolerance": tolerance, "verdict": verdict, "reason": reason}  # fmt: skip


def _agree(values: list[float]) -> bool:
    """Seeds agree when the spread between them stays within a factor of 10."""
    return max(values) <= 10 * max(min(values), 1e-12)


def _converges(model: Model, values: list[float], scale: Scale) -> dict:
    best = min(values)
    claim = f"{model.label()} learns the target (NMSE <= {scale.converged})"
    measured = {"best_nmse": best, "seeds": values}
    if best <= scale.converged:
        return _claim(claim, "efficient", measured, f"NMSE <= {scale.converged}", "confirmed", "")
    if scale.name != "paper":  # only the full paper budget may refute convergence
        reason = f"not converged within the {scale.name} budget (best NMSE {best:.3g})"
        return _claim(
            claim, "efficient", measured, f"NMSE <= {scale.converged}", "inconclusive", reason
        )
    return _claim(claim, "efficient", measured, f"NMSE <= {scale.converged}", "refuted",
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


def _clearly_worse(model: Model, neighbour: Model, nmse, scale: Scale) -> dict:
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
        return _claim(claim, predicted, measured, tolerance, "inconclusive", reason)
    if not _agree(nmse[model]):
        return _claim(claim, predicted, measured, tolerance, "inconclusive", "its seeds disagree")
    verdict = "confirmed" if measured["ratio"] >= scale.worse else "refuted"
    return _claim(claim, predicted, measured, tolerance, verdict, "")


def _needs_pe(model: Model, twin: Model, best, scale: Scale) -> dict:
    claim = f"{model.label()} learns the fixed positions only with positional encoding"
    tolerance = f"with PE NMSE <= {scale.converged}; without PE NMSE >= {scale.not_learned}"
    measured = {"with_pe": best[model], "without_pe": best[twin]}
    if best[model] > scale.converged:
        return _claim(claim, "PE required", measured, tolerance, "inconclusive",
                      f"not converged even with PE (NMSE {best[model]:.3g})")  # fmt: skip
    verdict = "confirmed" if best[twin] >= scale.not_learned else "refuted"
    return _claim(claim, "PE required", measured, tolerance, verdict, "")


def _attends_to_positions(model: Model, shares: dict[int, float], nmse: float, scale) -> dict:
    count = len(shares)
    claim = f"the readout attends to the fixed positions, about 1/{count} each"
    tolerance = f"total >= 0.8 and each within [{0.5 / count:.2f}, {1.5 / count:.2f}]"
    measured = {"shares": {str(k): v for k, v in shares.items()}, "total": sum(shares.values())}
    if nmse > scale.converged:
        return _claim(claim, "specific-position head", measured, tolerance, "inconclusive",
                      "the model did not converge")  # fmt: skip
    ok = measured["total"] >= 0.8 and all(0.5 / count <= v <= 1.5 / count for v in shares.values())
    return _claim(claim, "specific-position head", measured, tolerance,
                  "confirmed" if ok else "refuted", "")  # fmt: skip


def _trends_with_T(experiment: Experiment, best, scale: Scale) -> list[dict]:
    """Across the spec's own points of one architecture at several T."""
    out = []
    key = lambda m: (m.embed_dim, m.heads, m.positional_encoding)  # noqa: E731
    for (embed_dim, heads, pe), models in groupby(sorted(experiment.points, key=key), key=key):
        models = sorted(models, key=lambda m: m.seq_len)
        if len(models) < 2:
            continue
        first, last = models[0], models[-1]
        series = {m.seq_len: best[m] for m in models}
        arch = f"heads {list(heads)}, E={embed_dim}" + (", PE" if pe else "")
        if experiment.models[first]["efficient"].value:
            claim = f"{arch} stays low as T grows ({first.seq_len} -> {last.seq_len})"
            tolerance = f"NMSE <= {scale.converged} at every T"
            if series[first.seq_len] > scale.converged:
                out.append(_claim(claim, "efficient", series, tolerance, "inconclusive",
                                  "not converged even at the smallest T"))  # fmt: skip
                continue
            verdict = "confirmed" if max(series.values()) <= scale.converged else "refuted"
            out.append(_claim(claim, "efficient", series, tolerance, verdict, ""))
        else:
            claim = f"{arch}: NMSE rises with T ({first.seq_len} -> {last.seq_len})"
            tolerance = (
                f"confirmed if NMSE(T={last.seq_len}) >= {scale.rise} x NMSE(T={first.seq_len}); "
                "refuted if it does not rise"
            )
            if series[first.seq_len] > scale.not_learned:
                reason = "not learned even at the smallest T"
                out.append(_claim(claim, "exponent grows with T", series, tolerance,
                                  "inconclusive", reason))  # fmt: skip
                continue
            ratio = series[last.seq_len] / max(series[first.seq_len], 1e-12)
            if ratio >= scale.rise:
                verdict, reason = "confirmed", ""
            elif ratio <= 1:
                verdict, reason = "refuted", "NMSE did not rise at all"
            else:
                verdict = "inconclusive"
                reason = f"NMSE rose {ratio:.2f}x, less than the {scale.rise}x the claim asks"
            out.append(_claim(claim, "exponent grows with T", series, tolerance, verdict, reason))
    return out
