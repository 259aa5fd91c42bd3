"""Train an icl_markov group (a K sweep of next-state predictors, one ensemble) and record,
at log-spaced checkpoints, each member's KL to the truth and to the reference predictors.

Every checkpoint writes the metrics to the store and the training state atomically
(:mod:`~infoflow.validators.ensemble`); a killed run resumes from the last one with the
same data stream. :func:`load_trained` gives a finished group's model back, and
:func:`position_kl` measures it position by position.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import Tensor

from infoflow.validators.ensemble import Checkpoint, ensemble_step, precision, resume
from infoflow.validators.icl_markov.clocks import ClockData, ClockGroup, settled
from infoflow.validators.icl_markov.data import SPLITS, TARGETS, IclGroup, MemberData, Prefetched
from infoflow.validators.icl_markov.model import StackedGPT
from infoflow.validators.protocol import Context
from infoflow.validators.throughput import meter


def build_model(group, device: torch.device) -> StackedGPT:
    """The group's stacked model, member (K, s) initialised from seed 1000 s + K (K = infinity
    counts as 0); a clock group's attention patterns are its clock's."""
    spec = group.spec
    m = spec.model
    return StackedGPT(
        [seed * 1000 + (k or 0) for k, seed in group.members],
        spec.states,
        spec.context_len,
        m.layers,
        m.d_model,
        m.heads,
        m.mlp_width,
        getattr(group, "attention", None),
    ).to(device)


def train_icl_group(group: IclGroup | ClockGroup, context: Context) -> None:
    """Train ``group`` (a K sweep or a clock) to the end, resuming from its checkpoint; the
    metrics of every checkpoint go to the store."""
    torch.manual_seed(group.spec.seed)
    if isinstance(group, ClockGroup):
        data = ClockData(group, context.device)
        _train(group, context, data, data.evaluate, lambda rows: all(map(settled, rows)))
    else:
        data = MemberData(group, context.device)
        _train(group, context, data, lambda model: evaluate(model, data), lambda rows: False)


def _train(group, context: Context, data, evaluate_members, finished) -> None:
    """The training loop; it ends early at a checkpoint whose metrics are ``finished`` (a
    clock group whose every member's clock is final)."""
    started, device, store = time.perf_counter(), context.device, context.store
    spec, training = group.spec, group.spec.training
    model = build_model(group, device)
    optimizer = torch.optim.AdamW(
        model.parameter_groups(training.weight_decay),
        lr=training.lr,
        betas=(0.9, 0.95),
        fused=device.type == "cuda",
    )
    warmup = max(1, training.steps // 50)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))
    generator = torch.Generator(device=device).manual_seed(spec.seed + 2)
    checkpoint, start = resume(context, group, model, optimizer, schedule, generator)

    autocast = precision(device)
    losses, window = torch.zeros(len(group.members), device=device), 0
    stream = Prefetched(data, training.batch_size, spec.context_len, generator)
    speed = meter(model, spec.context_len, device)
    for step in range(start, training.steps):
        x = stream.at(step)
        with autocast:
            logits = model(x[:, :, :-1])
        per_member = F.cross_entropy(
            logits.float().flatten(1, 2).transpose(1, 2), x[:, :, 1:].flatten(1), reduction="none"
        ).mean(-1)
        with slowed_layer1_attention(model, training.layer1_attention_lr):
            losses += ensemble_step(optimizer, schedule, per_member)
        speed.add(len(group.members) * training.batch_size * spec.context_len)
        window += 1
        done = step + 1
        if done in group.checkpoints or done == training.steps:
            metrics = evaluate_members(model)
            mean_losses = (losses / window).tolist()
            for i, loss in enumerate(mean_losses):
                metrics[i]["train:loss"] = loss
            losses.zero_()
            window = 0
            store.record_metrics(group.name, done, metrics)
            checkpoint.save(model, optimizer, schedule, stream.state(done), done, store.rows)
            stop = finished(metrics)
            if context.progress:  # a finished group counts its remaining steps as done
                mean = sum(mean_losses) / len(mean_losses)
                shown = training.steps if stop else done
                context.progress(group.name, shown, training.steps, mean, speed.text())
            if stop:
                break
    store.record_throughput(group.name, speed.rates())
    store.finish_group(group.name, time.perf_counter() - started)


@contextmanager
def slowed_layer1_attention(model: StackedGPT, scale: float):
    """Within the block, an optimiser step moves layer 1's attention weights ``scale`` times
    as far: AdamW's update and decoupled decay are both proportional to the learning rate,
    and its moments do not depend on it, so this is exactly that layer's rate times
    ``scale``."""
    if scale == 1:
        yield
        return
    before = [p[0].detach().clone() for p in (model.W_QKV, model.W_O)]
    yield
    with torch.no_grad():
        for p, old in zip((model.W_QKV, model.W_O), before, strict=True):
            p[0].copy_(old + scale * (p[0] - old))


def load_trained(group: IclGroup, context: Context) -> tuple[MemberData, StackedGPT]:
    """A finished group's data and model (its final weights)."""
    torch.manual_seed(group.spec.seed)
    data = MemberData(group, context.device)
    model = build_model(group, context.device)
    Checkpoint.of(group, context.checkpoints).load_weights(model, context.device)
    return data, model


@torch.no_grad()
def position_kl(model: StackedGPT, data: MemberData, chunk: int = 64) -> dict[str, Tensor]:
    """The spec's KL between each target (truth, then the references) and the model, per
    member, target and position, weighted as the spec scores positions and averaged over the
    test sequences: {split: [members, targets, positions]}."""
    model.eval()
    out = {}
    for split in SPLITS:
        x, refs = data.x[split][..., :-1], data.refs[split][..., :-1, :]  # as in training
        total = torch.zeros(refs.shape[:2] + refs.shape[-2:-1], device=x.device)
        for i in range(0, x.shape[1], chunk):
            logp = F.log_softmax(model(x[:, i : i + chunk]).float(), -1)[:, None]
            weight = data.scored[split][:, None, i : i + chunk]
            total += (weight * data.divergence(refs[:, :, i : i + chunk], logp)).sum(2)
        out[split] = total / x.shape[1]
    model.train()
    return out


def evaluate(model: StackedGPT, data: MemberData) -> list[dict[str, float]]:
    """Mean KL (the spec's direction and position weights) over sequences and positions, per
    member, for every target on both splits: ``{"id:truth": ..., "ood:G2": ...}``."""
    out: list[dict[str, float]] = [{} for _ in range(data.x["id"].shape[0])]
    for split, kl in position_kl(model, data).items():
        for member, row in enumerate(kl.mean(-1).tolist()):
            out[member].update({f"{split}:{t}": v for t, v in zip(TARGETS, row, strict=True)})
    return out
