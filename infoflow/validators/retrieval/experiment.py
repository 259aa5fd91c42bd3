"""A retrieval spec and a design -> an experiment: every model its claims need (the spec's
points sized by the design, the neighbours of the ones predicted efficient, an efficient
reference for the ones predicted inefficient, or themselves at half the length when they
are minimal already, and the twins without positional encoding), each with the engine's
prediction at its own size; the pairs of models whose exponents the claims compare; and one
ensemble group per sequence length.

Which models are trained comes from the engine's predictions for each point of the spec,
not from the spec's name, so a target nobody wrote a validator for is still checked. Which
sizes are trained (the design) is chosen by :mod:`~infoflow.validators.retrieval.design`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations, groupby
from pathlib import Path

import torch

import infoflow
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.retrieval.text_to_expression import parse_target
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
    """How big the experiments are, how long each spec may train on ``device``, and the
    NMSE thresholds for learning."""

    name: str
    settings: TrainSettings
    seeds: int
    budget_seconds: float | None  # per spec; None: train the spec's own sizes
    converged: float  # NMSE under which a model counts as having learned the target
    not_learned: float = 0.5  # NMSE above which a model has not learned the target
    device: str = "cpu"  # the device type the budget is spent on


SCALES = {
    "smoke": Scale(
        "smoke",
        TrainSettings(steps=1500, batch=64, eval_every=100, eval_size=1024),
        seeds=2,
        budget_seconds=150,
        converged=0.05,
    ),
    "paper": Scale(
        "paper",
        TrainSettings(steps=20000, batch=256, eval_every=500, eval_size=4096),
        seeds=3,
        budget_seconds=None,
        converged=0.01,
    ),
}


@dataclass(frozen=True)
class Design:
    """The sizes a spec is trained at: its points whose T is in ``seq_lens`` (a spec of one
    T: every point at the one length given) and width ``embed_dim``; None keeps the spec's
    own."""

    seq_lens: tuple[int, ...] | None = None
    embed_dim: int | None = None

    def describe(self) -> dict:
        lengths = list(self.seq_lens) if self.seq_lens else None
        return {"seq_lens": lengths, "embed_dim": self.embed_dim}


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

    def key(self) -> str:
        """The model in a claim's id: ``T16-E32-h1.2-pe``."""
        pe = "-pe" if self.positional_encoding else ""
        heads = ".".join(map(str, self.heads))
        return f"T{self.seq_len}-E{self.embed_dim}-h{heads}{pe}"


@dataclass
class Experiment:
    """The models one spec needs, the predictions that say what they should show, and the
    groups that train them."""

    name: str
    base: RetrievalSpec
    scale: Scale
    design: Design = Design()
    models: dict[Model, infoflow.Result] = field(default_factory=dict)
    points: list[Model] = field(default_factory=list)  # the spec's own points, as designed
    pairs: list[tuple[Model, Model]] = field(default_factory=list)  # what the claims compare
    groups: list[Group] = field(default_factory=list)
    estimates: dict[str, float] = field(default_factory=dict)  # group name -> seconds
    step_time: str = ""  # where the estimates' step-time model comes from

    @property
    def jobs(self) -> list[Job]:
        steps = self.scale.settings.steps
        return [Job("retrieval", self.name, group, steps) for group in self.groups]

    def model_of(self, group: Group, index: int) -> Model:
        """The model member ``index`` of ``group`` is a seed of."""
        member = group.members[index]
        return Model(group.seq_len, member.embed_dim, member.heads, member.positional_encoding)

    def exponent(self, model: Model) -> float:
        """The engine's cost exponent alpha at ``model``'s own T, d, E and heads; infinite
        where the architecture cannot represent the target at all (infeasible)."""
        value = self.models[model]["cost_exponent"].value
        return math.inf if value is None else float(value)

    def derived(self, model: Model) -> dict:
        """What a claim about ``model`` is derived from: its exponent, value and formula."""
        prediction = self.models[model]["cost_exponent"]
        alpha = self.exponent(model)  # JSON has no infinity: an infeasible model is null
        return {
            model.label(): {
                "exponent": alpha if math.isfinite(alpha) else None,
                "expression": str(prediction.expression),
            }
        }


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


def plan(
    name: str,
    spec: RetrievalSpec,
    scale: Scale,
    base_dir: Path | None = None,
    design: Design = Design(),
) -> Experiment:
    """Every model the claims about ``spec`` need at ``design``'s sizes, with its prediction,
    the pairs the claims compare, grouped for training; CannotValidate when the target
    cannot be evaluated on tensors at a trained point."""
    experiment = Experiment(name, spec, scale, design)
    for point in _sized([point for _, point in infoflow.expand(spec, base_dir)], design):
        problem = _problem(point)
        if problem:
            raise CannotValidate(problem)
        model = _add(experiment, point)
        if model not in experiment.points:
            experiment.points.append(model)
        result = experiment.models[model]
        partners = _neighbours(point) if result["efficient"].value else _reference(point, result)
        if not partners and result["feasible"].value and not result["efficient"].value:
            partners = _shorter(point)  # its own architecture at half the length
        for partner in partners:
            _pair(experiment, model, _add(experiment, partner))
        if result["requires_positional_encoding"].value and model.positional_encoding:
            _add(experiment, _with(point, positional_encoding=False))
    for a, b in combinations(experiment.points, 2):
        if _setting(a) == _setting(b):
            _pair(experiment, a, b)
    for a, b in _series(experiment.points):
        _pair(experiment, a, b)
    experiment.groups = _groups(experiment)
    return experiment


def _sized(points: list[RetrievalSpec], design: Design) -> list[RetrievalSpec]:
    """The points at the design's sizes, each once, with every size a number (T = 16,
    E = 32 and d = 4 where the spec leaves them open)."""
    points = [_filled(p) for p in points]
    if design.embed_dim:
        points = [_with(p, embed_dim=design.embed_dim) for p in points]
    if design.seq_lens:
        kept = [p for p in points if (p.seq_len or 16) in design.seq_lens]
        (only, *_) = design.seq_lens
        points = kept or [p.model_copy(update={"seq_len": only}) for p in points]
    unique = {p.model_dump_json(): p for p in points}
    return list(unique.values())


def _filled(point: RetrievalSpec) -> RetrievalSpec:
    filled = _with(point, embed_dim=point.architecture.embed_dim or 32)
    return filled.model_copy(
        update={"seq_len": point.seq_len or 16, "input_dim": point.input_dim or 4}
    )


def _setting(model: Model) -> tuple:
    return (model.seq_len, model.embed_dim, model.positional_encoding)


def _series(points: list[Model]) -> list[tuple[Model, Model]]:
    """For each architecture trained at several T: its shortest and longest."""
    key = lambda m: (m.embed_dim, m.heads, m.positional_encoding)  # noqa: E731
    out = []
    for _, models in groupby(sorted(points, key=lambda m: (key(m), m.seq_len)), key=key):
        models = list(models)
        if len(models) > 1:
            out.append((models[0], models[-1]))
    return out


def _pair(experiment: Experiment, a: Model, b: Model) -> None:
    """Compare ``a`` with ``b`` (once), unless neither can represent the target at all."""
    both_infeasible = math.isinf(experiment.exponent(a)) and math.isinf(experiment.exponent(b))
    if a != b and not both_infeasible and {(a, b), (b, a)}.isdisjoint(experiment.pairs):
        experiment.pairs.append((a, b))


def _add(experiment: Experiment, point: RetrievalSpec) -> Model:
    arch = point.architecture
    model = Model(
        point.seq_len or 16,
        arch.embed_dim or 32,
        tuple(arch.heads_per_layer),
        arch.positional_encoding,
    )
    if model not in experiment.models:
        experiment.models[model] = infoflow.predict(point)
    return model


def _with(point: RetrievalSpec, **architecture) -> RetrievalSpec:
    arch = point.architecture.model_copy(update=architecture)
    return point.model_copy(update={"architecture": arch})


def _reference(point: RetrievalSpec, result: infoflow.Result) -> list[RetrievalSpec]:
    """The engine's minimal architecture with the fewest layers, when it is not ``point``'s
    own: the reference a point predicted inefficient is compared with."""
    heads = result["min_architectures"].value[0]
    if list(heads) == list(point.architecture.heads_per_layer):
        return []
    return [_with(point, layers=len(heads), heads=list(heads))]


def _shorter(point: RetrievalSpec) -> list[RetrievalSpec]:
    """``point`` at half its length, when the target can be trained there: the companion of
    a point predicted inefficient that has no better architecture to be compared with."""
    shorter = point.model_copy(update={"seq_len": max(2, (point.seq_len or 16) // 2)})
    return [] if _problem(shorter) else [shorter]


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


_PROBLEMS: dict[str, str | None] = {}


def _problem(point: RetrievalSpec) -> str | None:
    """:func:`_cannot_evaluate`, once per target and size (the architecture plays no part)."""
    key = point.model_dump_json(exclude={"architecture", "description", "sweep", "epsilon"})
    if key not in _PROBLEMS:
        _PROBLEMS[key] = _cannot_evaluate(point)
    return _PROBLEMS[key]


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
        return (
            f"the target is not a finite number on {1 - finite:.0%} of sampled inputs "
            "(a logarithm or root of a negative number, a division by zero, an empty "
            "reduction?): there is nothing to regress on"
        )
    return None
