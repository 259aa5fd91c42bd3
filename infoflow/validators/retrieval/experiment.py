"""A retrieval spec and a design -> an experiment: every model its claims need (the spec's
points sized by the design, the neighbours of the ones predicted efficient, an efficient
reference for the ones predicted inefficient, or themselves at half the length when they
are minimal already, and the twins without positional encoding), each with the engine's
prediction at its own size (:class:`Expected`); the pairs of models whose exponents the
claims compare; and one ensemble group per sequence length, in which every model trains as
a ladder of decoder sizes (the scale's MLP widths) times the seeds. A target that no
architecture makes efficient also gets a rescue group: its architecture at the longest T
with twice the width and twice the steps, at the largest MLP width only
(:mod:`~infoflow.validators.retrieval.claims` checks it does not learn all the same).

Which models are trained comes from the engine's predictions for each point of the spec,
not from the spec's name, so a target nobody wrote a validator for is still checked. Which
sizes are trained (the design) is chosen by :mod:`~infoflow.validators.retrieval.design`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from itertools import combinations, groupby
from pathlib import Path
from typing import TYPE_CHECKING

import infoflow
from infoflow.retrieval.predict import unfloored_exponent
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.validators.protocol import CannotValidate, Job
from infoflow.validators.retrieval.floors import Floors, architecture_label
from infoflow.validators.retrieval.model import Member
from infoflow.validators.retrieval.target_checks import problem_at
from infoflow.validators.retrieval.train import Group, TrainSettings

if TYPE_CHECKING:
    from infoflow.validators.retrieval.pilot import Pilot


@dataclass(frozen=True)
class Scale:
    """How big the experiments are: the training settings (``steps`` is the cap), the seeds,
    the ladder of MLP widths every model trains at (a rescue: the largest), and how long
    each spec may train on ``device``. What counts as learning comes from the target
    (:mod:`~infoflow.validators.retrieval.floors`), not from the scale."""

    name: str
    settings: TrainSettings
    seeds: int
    budget_seconds: float | None  # per spec; None: train the spec's own sizes
    rungs: tuple[int, ...] = (2, 4, 8, 20)  # MLP widths: >= 8x in decoder parameters
    device: str = "cpu"  # the device type the budget is spent on
    compile: bool = False  # the training step torch.compiled (--compile)
    pilot: bool = False  # designs piloted before one is taken (--pilot; design.py)


SCALES = {
    "smoke": Scale(
        "smoke",
        TrainSettings(steps=2000, batch=64, eval_every=100, eval_size=2048),
        seeds=3,
        budget_seconds=300,
    ),
    "paper": Scale(
        "paper",
        TrainSettings(steps=20000, batch=256, eval_every=500, eval_size=8192),
        seeds=3,
        budget_seconds=None,
        rungs=(4, 8, 16, 32, 64, 128),
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
        return f"{self.architecture()}, T={self.seq_len}, E={self.embed_dim}"

    def architecture(self) -> str:
        """Its heads and positional encoding: what its floors are kept under."""
        return architecture_label(self.heads, self.positional_encoding)

    def key(self) -> str:
        """The model in a claim's id: ``T16-E32-h1.2-pe``."""
        pe = "-pe" if self.positional_encoding else ""
        heads = ".".join(map(str, self.heads))
        return f"T{self.seq_len}-E{self.embed_dim}-h{heads}{pe}"


@dataclass(frozen=True)
class Expected:
    """What the engine says of one model: its exponent with the spec's floor (``alpha``),
    without it (``raw``: for a model predicted inefficient, the paper's lower bound, which
    the floor may hide), whether it is efficient (the exponent does not grow with T, a
    construction: an upper bound), whether it can represent the target at all, the term that
    sets the exponent (its provenance) and the exponent's formula."""

    alpha: float
    raw: float
    efficient: bool
    feasible: bool
    provenance: str
    expression: str

    @property
    def floor_hides(self) -> bool:
        """The floor lifts an inefficient model's lower bound: the engine's number is then the
        reconstruction's, not the paper's."""
        return not self.efficient and self.raw < self.alpha - EQUAL


#: Exponents closer than this are equal (they are exact rationals printed as floats).
EQUAL = 1e-9


@dataclass
class Experiment:
    """The models one spec needs, the predictions that say what they should show, and the
    groups that train them."""

    name: str
    base: RetrievalSpec
    scale: Scale
    design: Design = Design()
    models: dict[Model, infoflow.Result] = field(default_factory=dict)
    expected: dict[Model, Expected] = field(default_factory=dict)
    points: list[Model] = field(default_factory=list)  # the spec's own points, as designed
    pairs: list[tuple[Model, Model]] = field(default_factory=list)  # what the claims compare
    groups: list[Group] = field(default_factory=list)
    rescue: Model | None = None  # trained with twice the width and the steps
    floors: dict[int, Floors] = field(default_factory=dict)  # by T, filled by the design
    estimates: dict[str, float] = field(default_factory=dict)  # group name -> seconds
    step_time: str = ""  # where the estimates' step-time model comes from
    not_trained: str = ""  # why the groups do not train on this device (the spec says)
    construction_seconds: float = 0.0  # the construction claims' estimated time
    not_built: str = ""  # why no construction claim is made on this device (the spec says)
    pilot: Pilot | None = None  # the design's pilot, where one ran (pilot.py)
    left_out: str = ""  # the spec's lengths the design does not train, and why (design.py)

    @property
    def trained_groups(self) -> list[Group]:
        """The groups that train on this device: none where the spec leaves it out."""
        return [] if self.not_trained else self.groups

    @property
    def jobs(self) -> list[Job]:
        return [Job("retrieval", self.name, g, g.settings.steps) for g in self.trained_groups]

    def model_of(self, group: Group, index: int) -> tuple[Model, int, int]:
        """The model member ``index`` of ``group`` belongs to, its rung and its seed."""
        member = group.members[index]
        model = Model(group.seq_len, member.embed_dim, member.heads, member.positional_encoding)
        return model, self.scale.rungs.index(member.hidden), member.seed

    def exponent(self, model: Model) -> float:
        """The engine's cost exponent alpha at ``model``'s own T, d, E and heads; infinite
        where the architecture cannot represent the target at all (infeasible)."""
        return self.expected[model].alpha

    def derived(self, model: Model) -> dict:
        """What a claim about ``model`` is derived from: the engine's exponent with and
        without the floor, its bound and formula (JSON has no infinity: null)."""
        e = self.expected[model]
        finite = lambda v: v if math.isfinite(v) else None  # noqa: E731
        bound = "upper (a construction)" if e.efficient else "lower (the fallback's)"
        return {
            model.label(): {
                "exponent": finite(e.alpha),
                "without_floor": finite(e.raw),
                "bound": bound if e.feasible else "infeasible",
                "provenance": e.provenance,
                "expression": e.expression,
            }
        }


def _groups(experiment: Experiment) -> list[Group]:
    """One ensemble per sequence length: every width, architecture, rung and seed in it;
    the rescue model in a group of its own, with twice the steps, at its largest rung only
    (its claim reads that rung)."""
    groups, scale = [], experiment.scale
    key = lambda m: m.seq_len  # noqa: E731
    for seq_len, models in groupby(sorted(experiment.models, key=_order), key=key):
        models = [m for m in models if m != experiment.rescue]
        if models:
            prefix = f"{experiment.name}-T{seq_len}"
            groups.append(_group(experiment, prefix, models, scale.settings))
    if experiment.rescue:
        settings = replace(scale.settings, steps=2 * scale.settings.steps)
        prefix = f"{experiment.name}-rescue-T{experiment.rescue.seq_len}"
        largest = (max(scale.rungs),)
        groups.append(_group(experiment, prefix, [experiment.rescue], settings, largest))
    return groups


def _group(experiment: Experiment, prefix: str, models: list[Model], settings, rungs=None) -> Group:
    members, labels = [], []
    for model in models:
        for width in rungs or experiment.scale.rungs:
            for seed in range(experiment.scale.seeds):
                members.append(
                    Member(model.heads, model.positional_encoding, seed, model.embed_dim, width)
                )
                labels.append(f"{model.label()}, MLP {width}, seed {seed}")
    spec = experiment.models[models[0]].spec
    return Group(prefix, spec, models[0].seq_len, members, labels, settings)


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
        problem = problem_at(point)
        if problem:
            raise CannotValidate(problem)
        model = _add(experiment, point)
        if model not in experiment.points:
            experiment.points.append(model)
        expected = experiment.expected[model]
        partners = (
            _neighbours(point) if expected.efficient else _reference(point, model, experiment)
        )
        if not partners and expected.feasible and not expected.efficient:
            partners = _shorter(point)  # its own architecture at half the length
        for partner in partners:
            _pair(experiment, model, _add(experiment, partner))
        if (
            experiment.models[model]["requires_positional_encoding"].value
            and model.positional_encoding
        ):
            _add(experiment, _with(point, positional_encoding=False))
    for a, b in combinations(experiment.points, 2):
        if _setting(a) == _setting(b):
            _pair(experiment, a, b)
    for a, b in _series(experiment.points):
        _pair(experiment, a, b)
    experiment.rescue = _rescue(experiment)
    experiment.groups = _groups(experiment)
    return experiment


def _rescue(experiment: Experiment) -> Model | None:
    """When no architecture makes the target efficient: the longest point's architecture
    with twice the width (trained with twice the steps), else None."""
    longest = max(experiment.points, key=lambda m: (m.seq_len, m.embed_dim))
    result = experiment.models[longest]
    minimal = result["min_cost_exponent"].expression
    hopeless = "T" in {str(symbol) for symbol in minimal.free_symbols}
    if not hopeless or not experiment.expected[longest].feasible:
        return None
    wider = Model(
        longest.seq_len, 2 * longest.embed_dim, longest.heads, longest.positional_encoding
    )
    point = _with(result.spec, embed_dim=wider.embed_dim)
    experiment.models[wider] = infoflow.predict(point)
    experiment.expected[wider] = _expected(point, experiment.models[wider])
    return wider


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


def by_architecture(models: list[Model]) -> list[list[Model]]:
    """The models of each architecture (E, heads, PE), shortest T first."""
    key = lambda m: (m.embed_dim, m.heads, m.positional_encoding)  # noqa: E731
    ordered = sorted(models, key=lambda m: (key(m), m.seq_len))
    return [list(group) for _, group in groupby(ordered, key=key)]


def _series(points: list[Model]) -> list[tuple[Model, Model]]:
    """For each architecture trained at several T: its shortest and longest."""
    return [(models[0], models[-1]) for models in by_architecture(points) if len(models) > 1]


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
        experiment.expected[model] = _expected(point, experiment.models[model])
    return model


def _expected(point: RetrievalSpec, result: infoflow.Result) -> Expected:
    """The engine's numbers for one model, with its exponent as if the floor were 0."""
    number = lambda v: math.inf if v is None else float(v)  # noqa: E731
    prediction = result["cost_exponent"]
    return Expected(
        number(prediction.value),
        number(unfloored_exponent(point)),
        bool(result["efficient"].value),
        bool(result["feasible"].value),
        prediction.provenance,
        str(prediction.expression),
    )


def _with(point: RetrievalSpec, **architecture) -> RetrievalSpec:
    arch = point.architecture.model_copy(update=architecture)
    return point.model_copy(update={"architecture": arch})


def _reference(point: RetrievalSpec, model: Model, experiment: Experiment) -> list[RetrievalSpec]:
    """The engine's minimal architecture with the fewest layers, when it is not ``point``'s
    own: the reference a point predicted inefficient is compared with."""
    heads = experiment.models[model]["min_architectures"].value[0]
    if list(heads) == list(point.architecture.heads_per_layer):
        return []
    return [_with(point, layers=len(heads), heads=list(heads))]


def _shorter(point: RetrievalSpec) -> list[RetrievalSpec]:
    """``point`` at half its length, when the target can be trained there: the companion of
    a point predicted inefficient that has no better architecture to be compared with."""
    shorter = point.model_copy(update={"seq_len": max(2, (point.seq_len or 16) // 2)})
    return [] if problem_at(shorter) else [shorter]


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
