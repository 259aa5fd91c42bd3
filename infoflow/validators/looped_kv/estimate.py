"""``infoflow plan`` for a looped_kv spec: the models validate would train (every seed and
width of the loop-axis structure, the main model first), their parameters and steps, the
estimated time on a device from the step-time model of :mod:`~infoflow.validators.steptime`
(measured on this machine, or the stated H200 assumption for ``cuda`` without one), and the
command of the GPU run.

A training step costs the model's FLOPs (6 per parameter, the core's counted once per loop,
plus attention) over a batch; each model's snapshots of the loop-axis structure, a few
forward passes each, are counted with its training (they were not before 2026-12-07).
The measurement after training runs on every seed's model of
the spec's width (the paper's comparisons are judged over them): at every ratio of the codec
grid, the LLA codec distilled for ``distill_steps`` (a training
step on the calibration sequences each) and about five scored forward passes on the
evaluation sequences (a third of a step's FLOPs each); the SVDs are not counted.
"""

from __future__ import annotations

from infoflow.looped_kv.spec import LoopedKVSpec
from infoflow.validators.looped_kv.experiment import LoopedGroup, LoopedScale
from infoflow.validators.looped_kv.model import LoopedConfig
from infoflow.validators.steptime import NOT_COMPILED, StepTime, gpu_line, minutes, step_time
from infoflow.validators.throughput import flops_per_token


def looped_flops_per_token(config: LoopedConfig) -> float:
    """Training FLOPs per token of the looped model: each block applied as often as it runs
    (the core ``loops`` times)."""
    d, f, v = config.d_model, config.mlp_width, config.vocab
    block = 4 * d * d + 2 * d * f + f + 5 * d  # attention, MLP, norms and biases
    applied = config.prelude + config.core * config.loops + config.coda
    params = applied * block + 2 * v * d + config.max_len * d
    return flops_per_token(params, applied * config.max_len * d)


def group_seconds(group: LoopedGroup, steps: int, batch: int, steptime: StepTime) -> float:
    """One model's ``steps`` training steps of ``batch`` sequences and its snapshots of the
    loop-axis structure (:func:`snapshot_seconds`)."""
    config = group.config
    training = steps * steptime.step(looped_flops_per_token(config) * batch * config.max_len)
    return training + len(group.snapshots) * snapshot_seconds(config, group.scale.length, steptime)


def snapshot_seconds(config: LoopedConfig, length: int, steptime: StepTime) -> float:
    """One snapshot of the loop-axis structure (:func:`.structure.snapshot`): a forward pass
    on its calibration sequences, and one on its evaluation sequences per ratio of the grid
    plus the exact model's (a third of a step's FLOPs a token each); the SVDs are not
    counted."""
    from infoflow.validators.looped_kv.measure import RHOS
    from infoflow.validators.looped_kv.structure import CALIBRATION, EVALUATION

    forward = looped_flops_per_token(config) / 3 * length
    scored = (len(RHOS) + 1) * steptime.step(forward * EVALUATION)
    return steptime.step(forward * CALIBRATION) + scored


def measurement_seconds(config: LoopedConfig, scale: LoopedScale, steptime: StepTime) -> float:
    """The measurement of one model after training (see the module's docstring)."""
    from infoflow.validators.looped_kv.measure import RHOS

    ratios = len({*RHOS, float(config.loops)})
    per_token = looped_flops_per_token(config)
    distill = steptime.step(per_token * scale.calibration * scale.length)
    score = steptime.step(per_token / 3 * scale.evaluation * scale.length)
    return ratios * scale.distill_steps * distill + (5 * ratios + 3) * score


def plan_command(
    spec: LoopedKVSpec,
    source: str,
    scale: str,
    device: str | None,
    budget: float | None,
    steps: int | None,
    seeds: int | None,
    compile: bool = False,
    pilot: bool = False,  # retrieval's alone
    overrides: tuple[str, ...] = (),  # the --set options, repeated in the GPU command
) -> tuple[str, float]:
    """What ``infoflow plan`` prints for one looped_kv spec, and its estimated seconds."""
    from infoflow.validators.looped_kv.validator import VALIDATOR
    from infoflow.validators.run import plan_one

    experiment, sized, device = plan_one(
        VALIDATOR, spec, source, scale, device, budget, steps, seeds, "model"
    )
    if experiment.group is None:
        line = f"{source}: looped_kv loads {spec.model.checkpoint}; nothing is trained"
        return line, 0.0
    asked, steps = steps, sized.steps
    here, cuda = step_time(device), step_time("cuda")
    lines = [
        f"{source}: looped_kv at scale {sized.name} on {device}: {sized.seeds} seeds x widths "
        f"{', '.join(f'{w}x' for w in sized.widths)}, snapshots at "
        f"{', '.join(f'{s:g}' for s in sized.snapshots)} of the steps",
        f"  step time: {here.source}",
        *([NOT_COMPILED] if compile else []),
    ]
    total = 0.0
    for group in experiment.structure:
        seconds = group_seconds(group, steps, sized.batch, here)
        total += seconds
        c = group.config
        lines.append(
            f"  {group.name}: d_model {c.d_model}, MLP {c.mlp_width}, {c.loops} loops; "
            f"{sized.steps:,} steps of {sized.batch} x {c.max_len} tokens and "
            f"{len(group.snapshots)} snapshots, about {minutes(seconds)}"
        )
    main, models = experiment.group.config, sized.seeds
    measuring = models * measurement_seconds(main, sized, here)
    total += measuring
    lines.append(
        f"  then the measurement of the {models} seed{'s' * (models > 1)} at d_model "
        f"{main.d_model} (the codec grid at {sized.distill_steps:,} distillation steps a "
        f"ratio), about {minutes(measuring)}"
    )
    gpu = models * measurement_seconds(main, sized, cuda) + sum(
        group_seconds(g, steps, sized.batch, cuda) for g in experiment.structure
    )
    lines.append(gpu_line(source, scale, sized.seeds, gpu, asked, overrides))
    if budget is not None and total > budget:
        lines.append(f"  over the budget of {minutes(budget)}: lower --steps or --seeds")
    return "\n".join(lines), total
