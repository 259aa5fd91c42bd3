"""A retrieval spec -> an experiment: every model its claims need (the spec's points, the
neighbours of the ones predicted efficient, the twins without positional encoding), each
with the engine's prediction at its own size, gathered in one ensemble group per sequence
length.

Which models are trained comes from the engine's predictions for each point of the spec,
not from the spec's name, so a target nobody wrote a validator for is still checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path

import torch

import infoflow
from infoflow.retrieval.parse import parse_target
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.validators.protocol import CannotValidate, Job
from infoflow.validators.retrieval.model import Member
from infoflow.validators.retrieval.targets import (
    CHUNK,
    TargetFunction,
    fixed_positions,
    footprint,
    sample_inputs,
)
from infoflow.validators.retrieval.train import Group, TrainSettings

MAX_TARGET_BYTES = 2 * 2**30  # the largest tensor the target's evaluator may build


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
    """The models one spec needs, the predictions that say what they should show, and the
    groups that train them."""

    name: str
    base: RetrievalSpec
    scale: Scale
    models: dict[Model, infoflow.Result] = field(default_factory=dict)
    points: list[Model] = field(default_factory=list)  # the spec's own points
    groups: list[Group] = field(default_factory=list)

    @property
    def jobs(self) -> list[Job]:
        steps = self.scale.settings.steps
        return [Job("retrieval", self.name, group, steps) for group in self.groups]

    def model_of(self, group: Group, index: int) -> Model:
        """The model member ``index`` of ``group`` is a seed of."""
        member = group.members[index]
        return Model(group.seq_len, member.embed_dim, member.heads, member.positional_encoding)


def _groups(experiment: Experiment) -> list[Group]:
    """One ensemble per sequence length: every width, architecture and seed in it."""
    groups, scale = [], experiment.scale
    key = lambda m: m.seq_len  # noqa: E731
    for seq_len, models in groupby(sorted(experiment.models, key=_order), key=key):
        models = list(models)
        members, labels = [], []
        for model in models:
            for seed in range(scale.seeds):
                members.append(
                    Member(model.heads, model.positional_encoding, seed, model.embed_dim)
                )
                labels.append(f"{model.label()}, seed {seed}")
        spec = experiment.models[models[0]].spec
        prefix = f"{experiment.name}-T{seq_len}"
        groups.append(Group(prefix, spec, seq_len, members, labels, scale.settings))
    return groups


def _order(model: Model) -> tuple:
    return (model.seq_len, model.embed_dim, model.heads, model.positional_encoding)


def plan(name: str, spec: RetrievalSpec, scale: Scale, base_dir: Path | None = None) -> Experiment:
    """Every model the claims about ``spec`` need, with its prediction, grouped for training;
    CannotValidate when the target cannot be evaluated on tensors at a trained point."""
    experiment = Experiment(name, spec, scale)
    points = [point for _, point in infoflow.expand(spec, base_dir)]
    cap = scale.max_seq_len
    has_short = cap and any(p.seq_len and p.seq_len <= cap for p in points)
    for point in points:
        if cap and point.seq_len and point.seq_len > cap:
            if has_short:
                continue  # the sweep has points within the cap: keep those
            point = point.model_copy(update={"seq_len": cap})
        problem = _cannot_evaluate(point)
        if problem:
            raise CannotValidate(problem)
        model = _add(experiment, point)
        if model not in experiment.points:
            experiment.points.append(model)
        result = experiment.models[model]
        if result["efficient"].value:
            for neighbour in _neighbours(point):
                _add(experiment, neighbour)
        if result["requires_positional_encoding"].value and model.positional_encoding:
            _add(experiment, _with(point, positional_encoding=False))
    experiment.groups = _groups(experiment)
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


def _cannot_evaluate(spec: RetrievalSpec) -> str | None:
    """Why the validator cannot learn this target at the spec's size (None when it can): an
    operation it does not evaluate, a position or coordinate beyond the input, tensors beyond
    MAX_TARGET_BYTES, or values that are not finite numbers on sampled inputs."""
    seq_len, d = spec.seq_len or 16, spec.input_dim or 4
    tree = parse_target(spec.target, tuple(sorted(spec.params.items())))
    beyond = sorted(p for p in fixed_positions(tree) if p > seq_len)
    if beyond:
        return f"the target reads x[{beyond[0]}], beyond the T = {seq_len} trained at this scale"
    needed = footprint(tree, seq_len, d)
    if needed > MAX_TARGET_BYTES:
        return (
            f"evaluating the target at T = {seq_len} needs about {needed / 2**30:,.1f} GiB per "
            f"chunk of {CHUNK} sequences (the limit is {MAX_TARGET_BYTES / 2**30:g} GiB)"
        )
    x = sample_inputs(spec, 64, seq_len, torch.Generator().manual_seed(0))
    try:
        y = TargetFunction(spec, seed=0)(x)
    except NotImplementedError as exc:
        return f"the validator cannot evaluate this target yet: {exc}"
    except (RuntimeError, IndexError, ValueError) as exc:  # k beyond T, a coordinate beyond d
        return f"the target cannot be evaluated at T = {seq_len}, d = {d} ({exc})"
    finite = float(torch.isfinite(y).float().mean())
    if finite < 1:
        return (f"the target is not a finite number on {1 - finite:.0%} of sampled inputs "
                "(a logarithm or root of a negative number, a division by zero, an empty "
                "reduction?): there is nothing to regress on")  # fmt: skip
    return None
