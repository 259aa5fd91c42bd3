"""What ``plan`` says of the construction claims (:mod:`.witness`) before they run: which
witnesses compile builds, which deficient architectures train from them, and how long that
takes (:func:`construction_seconds`), on the step-time model.

A witness costs its builds (:func:`construction_work`): the default precision, the coarser
one, the largest trained MLP width and the width ladder (:data:`~.witness_ladder.WIDTHS` x
the seeds, where it decodes); an ablated neighbour costs a build of the witness at the
tune's width, one of the smaller model where a head is removed, and a fine-tune; the
witness's control, one fine-tune for all of them. A build is counted as
:data:`BUILD_OVERHEAD` and one forward pass of :data:`~.construction.SAMPLES` sequences in
float64 on the CPU (compile runs there, whatever the device); a fine-tune as its steps at
the tune's batch and its held-out passes, on the device, in float64 where the circuit reads
``|x|^2``. Float64 is counted as twice the step-time model's float32 on a CPU, and as
float32 on a GPU (an assumption). docs/validate.md compares the estimate with measured
times.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from infoflow.core.errors import SpecError
from infoflow.retrieval.schedule_to_circuit import circuit_of
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.validators.retrieval import construction
from infoflow.validators.retrieval.ablation import CHUNK, EVALUATIONS, HELD_OUT
from infoflow.validators.retrieval.experiment import Experiment, Model
from infoflow.validators.retrieval.model import Member
from infoflow.validators.retrieval.timing import group_flops, target_seconds
from infoflow.validators.retrieval.witness_ladder import WIDTHS
from infoflow.validators.steptime import StepTime, duration


@dataclass(frozen=True)
class Tune:
    """How the ablated witnesses train: steps, batch and learning rate."""

    steps: int
    batch: int = 256
    lr: float = 1e-3
    width: int = 512  # the MLP width of the witness they start from


TUNE = {"smoke": Tune(400), "paper": Tune(5000)}


def tune_of(experiment: Experiment) -> Tune:
    """The scale's fine-tuning, never longer than the ladder's own cap (``--steps``)."""
    tune = TUNE.get(experiment.scale.name.split(" ")[0], TUNE["smoke"])
    return replace(tune, steps=min(tune.steps, experiment.scale.settings.steps))


def spec_at(experiment: Experiment, model: Model) -> RetrievalSpec:
    """The experiment's spec at one model's T, E, heads and PE."""
    data = experiment.base.model_dump(mode="json", exclude={"sweep"})
    data["seq_len"] = model.seq_len
    data["architecture"] = {
        "layers": len(model.heads),
        "heads": list(model.heads),
        "embed_dim": model.embed_dim,
        "positional_encoding": model.positional_encoding,
    }
    return RetrievalSpec.model_validate(data)


def plan_lines(experiment: Experiment) -> list[str]:
    """What ``plan`` says of the construction claims: which witnesses compile builds, which
    deficient architectures train from them, and the time it takes."""
    if experiment.not_built:
        return [f"  {experiment.not_built}"]
    estimate = experiment.construction_seconds
    lines = [f"  construction claims (infoflow compile): about {duration(estimate)}"]
    tune = tune_of(experiment)
    for model in experiment.points:
        if not experiment.expected[model].efficient:
            continue
        try:
            circuit = circuit_of(spec_at(experiment, model))
        except SpecError as exc:
            lines.append(f"    {model.label()}: not compiled: {str(exc).split(': ', 1)[-1]}")
            continue
        lines.append(f"    witness {model.label()}: {circuit.width} channels")
        for other in experiment.points:
            removed = removed_part(model, other)
            if removed is not None:
                layer, slot = removed
                what = f"layer {layer}" if slot is None else f"head {slot} of layer {layer}"
                lines.append(
                    f"    {other.label()}: the witness without {what}, trained {tune.steps} steps"
                )
    return lines if len(lines) > 1 else []


def removed_part(witness: Model, other: Model) -> tuple[int, int | None] | None:
    """(layer, slot) of the head ``other`` lacks, (layer, None) for a layer, else None."""
    same = (witness.seq_len, witness.embed_dim, witness.positional_encoding)
    if same != (other.seq_len, other.embed_dim, other.positional_encoding):
        return None
    a, b = witness.heads, other.heads
    if len(b) == len(a):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) == 1 and b[diff[0]] == a[diff[0]] - 1:
            return diff[0] + 1, a[diff[0]] - 1  # the last head of that layer
    if len(b) == len(a) - 1:
        for i in range(len(a)):
            if a[:i] + a[i + 1 :] == b:
                return i + 1, None
    return None


#: Seconds a build spends besides its forward pass (compiling the circuit, fitting the
#: decoders): 0.01 to 0.09 s on this project's CPU on 2026-12-06, once a decoder's error was
#: measured in chunks (0.3 before, when its whole hidden layer was most of a build).
BUILD_OVERHEAD = 0.1


@dataclass(frozen=True)
class Work:
    """What the construction claims on one witness compute: a float64 build at each MLP
    width in ``builds``, a build at each of ``ablation_builds`` in the ablations' dtype
    (float64 where ``float64``, else float32), and ``fine_tunes`` fine-tunes in that dtype."""

    model: Model
    builds: tuple[int, ...]
    ablation_builds: tuple[int, ...]
    fine_tunes: int
    float64: bool


def construction_work(experiment: Experiment) -> list[Work]:
    """The work of :func:`~.witness.construction_claims`, witness by witness: the default,
    coarser and largest-trained-width builds, the width ladder's (where it decodes), and for
    each ablated neighbour a build of the witness at the tune's width (and of the smaller
    model, for a head) and a fine-tune, with one for the control."""
    out, tune, seeds = [], tune_of(experiment), experiment.scale.seeds
    for model in experiment.points:
        if not experiment.expected[model].efficient:
            continue
        try:
            circuit = circuit_of(spec_at(experiment, model))
        except SpecError:
            continue
        decodes = any(m.kind == "decode" for m in circuit.mlps)
        coarse = construction.WIDTH // 4 if decodes else construction.WIDTH
        widths = [construction.WIDTH, coarse, max(experiment.scale.rungs)]
        if decodes:
            widths += [w for w in WIDTHS for _ in range(seeds)]
        removed = [removed_part(model, o) for o in experiment.points]
        removed = [r for r in removed if r is not None]
        ablation = [tune.width] * sum(1 if slot is None else 2 for _, slot in removed)
        fine_tunes = 1 + len(removed) if removed else 0
        out.append(Work(model, tuple(widths), tuple(ablation), fine_tunes, circuit.reads_norm))
    return out


def construction_seconds(experiment: Experiment, cpu: StepTime, device: StepTime) -> float:
    """Estimated seconds of ``experiment``'s construction claims
    (:func:`construction_work`): builds on the ``cpu`` model, fine-tunes on the
    ``device``'s, each step with the target's own time (measured, as the design's are)."""
    total, tune = 0.0, tune_of(experiment)
    d = experiment.base.input_dim or 4
    for work in construction_work(experiment):
        model, precision = work.model, 2 if work.float64 else 1
        total += sum(_build_seconds(cpu, model, w, d, 2) for w in work.builds)
        total += sum(_build_seconds(cpu, model, w, d, precision) for w in work.ablation_builds)
        member = Member(model.heads, model.positional_encoding, 0, model.embed_dim, tune.width)
        step = device.step(group_flops([member], model.seq_len, d, tune.batch))
        if not device.assumed:  # an assumed model's overhead holds the target's time
            spec = spec_at(experiment, model)
            step += target_seconds(spec, model.seq_len, tune.batch, device.device_type)
        chunk = device.step(_forward(model, tune.width, d, CHUNK))
        passes = (EVALUATIONS + 2) * (HELD_OUT // CHUNK) * chunk
        on_cpu = precision if device.device_type == "cpu" else 1
        total += work.fine_tunes * (tune.steps * step + passes) * on_cpu
    return total


def _build_seconds(cpu: StepTime, model: Model, width: int, input_dim: int, precision: int):
    """One build: :data:`BUILD_OVERHEAD`, and a forward pass of
    :data:`~.construction.SAMPLES` sequences (``precision`` 2: float64, twice float32)."""
    forward = cpu.step(_forward(model, width, input_dim, construction.SAMPLES))
    return BUILD_OVERHEAD + precision * forward


def _forward(model: Model, width: int, input_dim: int, sequences: int) -> float:
    """FLOPs of one forward pass of ``model`` at MLP ``width`` over ``sequences``."""
    member = Member(model.heads, model.positional_encoding, 0, model.embed_dim, width)
    return group_flops([member], model.seq_len, input_dim, sequences) / 3
