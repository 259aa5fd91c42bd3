"""An icl_markov spec -> its experiments' groups, capped to a scale (:class:`IclScale`): the K
sweep (a group per setting of the spec's sweep, whose members are the K values and seeds, with
the prediction at every (group, K)), and when the spec asks for them the clock runs
(``race``) and the decoder alone (``decoder``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import infoflow
from infoflow.core.errors import SpecError
from infoflow.icl_markov.spec import IclMarkovSpec
from infoflow.validators.icl_markov.clocks.data import ClockGroup, plan_clocks
from infoflow.validators.icl_markov.decoder.data import DecoderGroup
from infoflow.validators.icl_markov.ksweep.data import IclGroup
from infoflow.validators.protocol import Job

#: Seeds per K unless ``--seeds`` says otherwise: enough for a majority without ties and for
#: the logistic fit of K*_1 to see mixed outcomes near the transition.
DEFAULT_SEEDS = 3
#: The largest tensor a group may build (its chains' transition matrices, a weight, a batch's
#: logits), per seed: a spec beyond it is refused before anything trains.
MAX_TENSOR_BYTES = 2 * 2**30


@dataclass(frozen=True)
class IclScale:
    """Caps that make a spec fit a budget (None: the spec's own value) and how densely
    to measure."""

    name: str
    max_steps: int | None
    max_context: int | None
    max_batch: int | None
    max_chains: int | None
    eval_sequences: int
    checkpoints: int
    seeds: int = DEFAULT_SEEDS
    #: One clock group per clock and K (each stops once its own clocks are final: on a CPU a
    #: step costs in proportion to its members), else one per clock (on a GPU a step costs
    #: its launches, so fewer and larger groups are faster).
    clock_group_per_k: bool = True


SCALES = {
    "smoke": IclScale("smoke", 1500, 64, 64, 1024, eval_sequences=128, checkpoints=24),
    "paper": IclScale("paper", None, None, None, None, eval_sequences=256, checkpoints=32),
}


@dataclass
class IclExperiment:
    """One spec's plan (the protocol's experiment): the groups of its K sweep (a group per
    setting; its members are the K values and seeds), of its clock runs and of its decoder
    alone, and the prediction at every (K sweep group, K)."""

    name: str
    base: IclMarkovSpec
    capped: list[str] = field(default_factory=list)
    groups: list[IclGroup] = field(default_factory=list)
    clocks: list[ClockGroup] = field(default_factory=list)  # the race's, when the spec asks
    decoders: list[DecoderGroup] = field(default_factory=list)  # the decoder alone, likewise
    predictions: dict[tuple[str, int], infoflow.Result] = field(default_factory=dict)

    @property
    def jobs(self) -> list[Job]:
        jobs = [
            Job("icl_markov", self.name, g, g.spec.training.steps)
            for g in [*self.groups, *self.clocks]
        ]
        return jobs + [Job("icl_markov", self.name, g, len(g.members)) for g in self.decoders]


def plan(
    name: str, spec: IclMarkovSpec, scale: IclScale, base_dir: Path | None = None
) -> IclExperiment:
    """Every group the spec's experiments need, capped to ``scale``: the K sweep's, then
    (with ``race``) the clock runs at its settings and (with ``decoder``) one decoder group
    per setting."""
    experiment = IclExperiment(name, spec)
    settings: dict[str, tuple[IclMarkovSpec, list[int]]] = {}
    if spec.race is not None and spec.model.layers != 2:
        message = f"the race's clock runs train two-layer models, not {spec.model.layers}"
        raise SpecError(name, [("model.layers", message)])
    for _, point in infoflow.expand(spec, base_dir):
        point = _cap(point, scale, experiment.capped)
        if scale.max_chains and point.chains > scale.max_chains:
            experiment.capped.append(f"K={point.chains} left out (more than {scale.max_chains})")
            continue
        _check_sizes(name, point)
        training_only = point.model_copy(update={"calibration": None})  # predictions only
        key = training_only.model_dump_json(exclude={"chains", "sweep", "description"})
        settings.setdefault(key, (point, []))[1].append(point.chains)
        experiment.predictions[(key, point.chains)] = infoflow.predict(point)
    for key, (point, chains) in settings.items():
        group = IclGroup(
            name,
            point,
            sorted(set(chains)),
            [point.seed + s for s in range(scale.seeds)],
            log_spaced(point.training.steps, scale.checkpoints),
            scale.eval_sequences,
        )
        experiment.groups.append(group)
        for k in group.chains:
            experiment.predictions[(group.name, k)] = experiment.predictions.pop((key, k))
    if not settings:
        message = f"every K is above the {scale.name} scale's {scale.max_chains:,} chains"
        raise SpecError(name, [("chains", message)])
    if spec.race is not None:
        seeds = [spec.seed + s for s in range(scale.seeds)]
        experiment.clocks = plan_clocks(
            name, [g.spec for g in experiment.groups], seeds, log_spaced, scale.clock_group_per_k
        )
    if spec.decoder is not None:
        chains, dims = sorted(spec.decoder.chains), sorted(spec.decoder.task_dims)
        decoders = [
            DecoderGroup(name, g.spec, chains, dims, g.spec.seed + s)
            for g in experiment.groups
            for s in range(scale.seeds)
        ]
        experiment.decoders = list({d.name: d for d in decoders}.values())  # per setting, seed
    experiment.capped = sorted(set(experiment.capped))
    return experiment


def _check_sizes(name: str, point: IclMarkovSpec) -> None:
    """A SpecError naming the field when a tensor of one seed's model or data would exceed
    :data:`MAX_TENSOR_BYTES`."""
    m, batch = point.model, point.training.batch_size
    tensors = (
        ("states", point.chains * point.states**2 * 8, "the chains' transition matrices"),
        ("model.d_model", m.d_model * max(3 * m.d_model, m.mlp_width) * 4, "a layer's weight"),
        ("model.mlp_width", m.d_model * m.mlp_width * 4, "the MLP's weight"),
        ("context_len", batch * point.context_len * max(point.states, m.d_model) * 4, "a batch"),
    )
    for field_name, size, what in tensors:
        if size > MAX_TENSOR_BYTES:
            message = f"{what} would take {size / 2**30:,.1f} GiB (a model of one seed "
            message += f"builds at most {MAX_TENSOR_BYTES / 2**30:g} GiB a tensor): not trainable"
            raise SpecError(name, [(field_name, message)])


def _cap(point: IclMarkovSpec, scale: IclScale, notes: list[str]) -> IclMarkovSpec:
    training = point.training
    updates = {}
    for limit, value, where in (
        (scale.max_steps, training.steps, "training.steps"),
        (scale.max_batch, training.batch_size, "training.batch_size"),
        (scale.max_context, point.context_len, "context_len"),
    ):
        if limit and value > limit:
            updates[where] = limit
            notes.append(f"{where} {value:,} capped to {limit:,} at the {scale.name} scale")
    if not updates:
        return point
    steps = updates.get("training.steps", training.steps)
    batch = updates.get("training.batch_size", training.batch_size)
    training = training.model_copy(update={"steps": steps, "batch_size": batch})
    context = updates.get("context_len", point.context_len)
    return point.model_copy(update={"training": training, "context_len": context})


def log_spaced(steps: int, count: int, first: int = 10) -> list[int]:
    """About ``count`` distinct steps from ``first`` to ``steps``, evenly spaced in log."""
    grid = np.geomspace(min(first, steps), steps, count)
    return sorted({round(float(v)) for v in grid})
