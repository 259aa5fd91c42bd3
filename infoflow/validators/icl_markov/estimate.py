"""``infoflow plan`` for an icl_markov spec: the groups validate would train (the K sweep per
setting and, with ``race`` and ``decoder``, the clock runs and the decoder alone), their
members and steps, and the estimated time on a device from the step-time model of
:mod:`~infoflow.validators.steptime` (measured on this machine, or the stated H200
assumption for ``cuda`` without one).

A step costs the model FLOPs of every member (nanoGPT's count, as the throughput meter
counts them), plus the evaluations at each checkpoint (a forward pass, a third of a training
step's FLOPs per token, over the test sequences: two sets for a K sweep, one for a clock).
The step-time model was fitted on a probe ensemble, so this is an estimate of the
training's arithmetic and launches, not of the data sampler or the references.
"""

from __future__ import annotations

from infoflow.icl_markov.spec import IclMarkovSpec
from infoflow.validators.icl_markov.ceiling import plan_lines
from infoflow.validators.icl_markov.clocks.data import ClockGroup
from infoflow.validators.icl_markov.decoder.data import (
    GENERALISATION_CHAINS,
    STEPS,
    DecoderGroup,
)
from infoflow.validators.steptime import NOT_COMPILED, StepTime, gpu_line, minutes, step_time
from infoflow.validators.throughput import flops_per_token


def member_flops_per_token(spec: IclMarkovSpec) -> float:
    """Training FLOPs per token of one member, as :func:`throughput.meter` counts them: 6 per
    parameter, the position embeddings included (nanoGPT's count leaves them out), plus
    attention."""
    c, n, m = spec.states, spec.context_len, spec.model
    d, f, layers = m.d_model, m.mlp_width, m.layers
    per_layer = 4 * d + 3 * d * d + d * d + d * f + f + f * d + d  # norms, attention, MLP
    params = c * d + n * d + layers * per_layer + 2 * d + d * c + c
    return flops_per_token(params, layers * n * d)


def group_seconds(group, steptime: StepTime) -> float:
    """Training and evaluation time of one group on the step-time model."""
    spec = group.spec
    tokens = spec.training.batch_size * (spec.context_len - 1)
    per_token = member_flops_per_token(spec) * len(group.members)
    train = steptime.step(per_token * tokens)
    sets = 1 if isinstance(group, ClockGroup) else 2
    evaluation = steptime.step(per_token / 3 * sets * group.eval_sequences * spec.context_len)
    return spec.training.steps * train + len(group.checkpoints) * evaluation


def decoder_seconds(group: DecoderGroup, steptime: StepTime) -> float:
    """The decoder's fits: full-batch steps over every (chain, state) pair, from their FLOPs
    alone (a step is a dozen operations, so the ensembles' per-step overhead is left out)."""
    spec = group.spec
    c, d, f = spec.states, spec.model.d_model, spec.model.mlp_width
    params = d * d + c * d + 2 * d * f + f + d + 4 * d + d * c + c  # input, MLP, norms, unembed
    pairs = [k * c for k in group.chains] + [GENERALISATION_CHAINS * c] * len(group.task_dims)
    return sum(STEPS * 6 * params * n * steptime.per_flop for n in pairs)


def plan_command(
    spec: IclMarkovSpec,
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
    """What ``infoflow plan`` prints for one icl_markov spec, and its estimated seconds."""
    from infoflow.validators.icl_markov.validator import VALIDATOR
    from infoflow.validators.run import plan_one

    asked, args = steps, (scale, device, budget, steps, seeds)
    experiment, sized, device = plan_one(VALIDATOR, spec, source, *args)
    steptime = step_time(device)
    lines = [
        f"{source}: icl_markov at scale {sized.name} on {device}, seeds {sized.seeds}",
        f"  step time: {steptime.source}",
        *([NOT_COMPILED] if compile else []),
    ]
    total = 0.0
    for group in [*experiment.groups, *experiment.clocks]:
        seconds = group_seconds(group, steptime)
        total += seconds
        rate = group.spec.training.layer1_attention_lr
        what = f"clock {group.clock}" if isinstance(group, ClockGroup) else "K sweep"
        what += f", layer-1 attention at {rate:g} x lr" if rate != 1 else ""
        ks = ", ".join("inf" if k is None else str(k) for k in group.chains)
        steps = group.spec.training.steps
        length = (
            f"at most {steps:,} steps (it stops once its clocks are final), at most"
            if isinstance(group, ClockGroup)
            else f"{steps:,} steps, about"
        )
        lines.append(
            f"  {what}: K = {ks}; {len(group.members)} members, {length} {minutes(seconds)}"
        )
    for group in experiment.decoders:
        seconds = decoder_seconds(group, steptime)
        total += seconds
        lines.append(
            f"  decoder alone, seed {group.seed}: capacity K = "
            f"{', '.join(map(str, group.chains))}; D_phi = "
            f"{', '.join(map(str, group.task_dims))}; {len(group.members)} fits of "
            f"{STEPS:,} full-batch steps, about {minutes(seconds)}"
        )
    lines += ceiling_lines(experiment, sized.max_context)
    if experiment.capped:
        lines.append("  capped: " + "; ".join(experiment.capped))
    if not device.startswith("cuda"):  # a GPU stacks each clock's K in one group
        experiment = plan_one(VALIDATOR, spec, source, scale, "cuda", budget, asked, seeds)[0]
    lines.append(gpu_line(source, scale, sized.seeds, gpu_seconds(experiment), asked, overrides))
    if budget is not None and total > budget:
        lines.append(f"  over the budget of {minutes(budget)}: lower --steps or the sweep")
    return "\n".join(lines), total


def group_estimates(experiment, steptime: StepTime) -> dict[str, float]:
    """Each group's seconds: the K sweeps' and clock runs' training, the decoder's fits."""
    trained = [*experiment.groups, *experiment.clocks]
    out = {g.name: group_seconds(g, steptime) for g in trained}
    return out | {g.name: decoder_seconds(g, steptime) for g in experiment.decoders}


def gpu_seconds(experiment) -> float:
    """The experiment's time on the GPU step time (planned for a GPU: its grouping)."""
    return sum(group_estimates(experiment, step_time("cuda")).values())


def ceiling_lines(experiment, max_context: int | None = None) -> list[str]:
    """The criterion's ceiling at the K sweep's setting (the data do not depend on the
    layer-1 rate; the predictions are the full rate's when it is swept, else the first
    group's), against the predicted thresholds; a setting it proposes fits the scale's
    ``max_context``, or says which scale it needs."""
    if not experiment.groups:
        return []
    full = [g for g in experiment.groups if g.spec.training.layer1_attention_lr == 1]
    group = (full or experiment.groups)[0]
    predicted = experiment.predictions[(group.name, group.chains[0])]
    k1, k2 = predicted["k1_star"], predicted["k2_star"].value
    interval = k1.interval or ((k1.value, k1.value) if k1.value else None)
    own = max(experiment.base.context_len, group.spec.context_len)  # before the scale's cap
    return plan_lines(group.spec, group.chains, group.seeds, interval, k2, max_context, own)
