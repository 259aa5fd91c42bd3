"""The training the K sweep and the clock runs share: a group's members, each on its own
mixture of chains, trained as one stacked model on next-state prediction, and at each
checkpoint their metrics recorded and the training state saved.

- the batches: every member's chains and mixture weights (:class:`Mixtures`), drawn many steps
  at a time and resumable to the same stream (:class:`Prefetched`);
- the model: the group's :class:`~infoflow.validators.icl_markov.model.StackedGPT`, member
  (K, s) initialised from seed 1000 s + K (:func:`build_model`);
- the loop (:func:`train_group`): AdamW with a short warmup (or Park et al.'s recipe: the
  gradient clipped, no warmup), layer 1's attention optionally slowed
  (:func:`slowed_layer1_attention`); every checkpoint writes the metrics to the store and
  the training state atomically (:mod:`~infoflow.validators.ensemble`), so a killed run
  resumes from the last one with the same data stream.

What each member is measured on, and when a group may stop early, is the experiment's own
(:mod:`.ksweep.train`, :mod:`.clocks.train`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import contextmanager
from functools import partial
from typing import Protocol

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from infoflow.icl_markov.spec import ADDED_TRAINING, Training
from infoflow.validators.chains import ChainSampler
from infoflow.validators.ensemble import ensemble_step, precision, resume
from infoflow.validators.icl_markov.model import StackedGPT
from infoflow.validators.protocol import Context
from infoflow.validators.throughput import meter

#: The version of the model, data and training code: part of every group's identity, so a
#: change here (bump it) never resumes a checkpoint trained by the code before.
TRAINING_VERSION = 3

#: Spec fields that do not reach a group's training (the calibration file changes only
#: predictions: the report keeps it, the identity drops it).
NOT_TRAINED = {"chains", "sweep", "description", "calibration", "race", "decoder"}

#: Training fields added after runs were recorded, at the value those runs trained with: one
#: at that value is left out of a group's identity, so the runs before it keep their names.
ADDED_LATER = {name: Training.model_fields[name].default for name in ADDED_TRAINING}


def trained_setting(spec, exclude: set[str] = NOT_TRAINED) -> dict:
    """``spec`` as a group's identity records it: its JSON less ``exclude``, and less the
    training fields of :data:`ADDED_LATER` that hold their earlier value."""
    setting = spec.model_dump(mode="json", exclude=exclude)
    training = setting.get("training", {})
    for name, earlier in ADDED_LATER.items():
        if name in training and training[name] == earlier:
            del training[name]
    return setting


class Mixtures:
    """Every member's training chains P[i] [K_i, C, C] and mixture weights [K_i], on ``device``:
    batches of fresh sequences, each from a chain drawn by its member's weights."""

    def __init__(self, P: list[Tensor], weights: list[Tensor], device: torch.device):
        widest = max(len(w) for w in weights)
        padded = torch.zeros(len(P), widest)
        for i, w in enumerate(weights):
            padded[i, : len(w)] = w.float()
        self.padded = padded.to(device)
        self.offsets = torch.tensor(np.cumsum([0] + [len(p) for p in P[:-1]]), device=device)
        self.sampler = ChainSampler(torch.cat(P), device)

    def batches(self, count: int, size: int, length: int, generator: torch.Generator) -> Tensor:
        """``count`` steps' training sequences [count, members, size, length]."""
        members = len(self.padded)
        local = torch.multinomial(self.padded, count * size, replacement=True, generator=generator)
        chain = (local + self.offsets[:, None]).flatten()
        x = self.sampler.sample(chain, length, generator).view(members, count, size, length)
        return x.transpose(0, 1)


def mixture_weights(k: int, pool: int, mixture: str, seed: int) -> Tensor:
    """The chains' weights: equal, normalised Exp(1) draws (Dirichlet(1): ``random``) or
    normalised U(0, 1) draws (``park``); the first k of a pool's draws, so nested in K."""
    if mixture == "uniform":
        return torch.full((k,), 1 / k, dtype=torch.float64)
    rng = np.random.default_rng(seed + 7)
    draws = (rng.uniform(size=pool) if mixture == "park" else rng.exponential(size=pool))[:k]
    return torch.tensor(draws / draws.sum())


class TrainingData(Protocol):
    """What the loop reads of an experiment's data: its members' training batches."""

    def batches(self, count: int, size: int, length: int, generator: torch.Generator) -> Tensor: ...


class Prefetched:
    """Training batches drawn ``count`` steps at a time: the sampler loops over positions, so
    one draw for many steps saves launches on a GPU. ``state(step)`` is the generator state
    from which the batch of ``step`` is drawn again, so a resumed run sees the same data."""

    def __init__(self, data: TrainingData, size: int, length: int, generator, count: int = 16):
        self.data, self.size, self.length, self.count = data, size, length, count
        self.generator = generator
        self.buffer, self.index, self.start = None, -1, None

    def at(self, step: int) -> Tensor:
        if step // self.count != self.index:  # buffers are drawn in order, from the state
            self.start = self.generator.get_state()
            self.buffer = self.data.batches(self.count, self.size, self.length, self.generator)
            self.index = step // self.count
        return self.buffer[step % self.count]

    def state(self, step: int) -> Tensor:
        """The generator state to save when ``step`` is the next step to train."""
        return self.start if step % self.count else self.generator.get_state()


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


def train_group(
    group,
    context: Context,
    data: TrainingData,
    evaluate_members: Callable[[StackedGPT], list[dict[str, float]]],
    finished: Callable[[list[dict[str, float]]], bool],
) -> None:
    """Train ``group`` (a K sweep or a clock) to the end, resuming from its checkpoint; at
    every checkpoint ``evaluate_members(model)`` gives each member's metrics for the store,
    and the run ends early at one whose metrics are ``finished`` (a clock group whose every
    member's clock is final)."""
    started, device, store = time.perf_counter(), context.device, context.store
    spec, training = group.spec, group.spec.training
    model = build_model(group, device)
    optimizer, schedule = _optimiser(model, training, device)
    clip = partial(model.clip_gradients, training.grad_clip) if training.grad_clip else None
    generator = torch.Generator(device=device).manual_seed(spec.seed + 2)
    checkpoint, start = resume(context, group, model, optimizer, schedule, generator, started)

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
            losses += ensemble_step(optimizer, schedule, per_member, clip)
        speed.add(len(group.members) * training.batch_size * spec.context_len)
        window += 1
        done = step + 1
        if done not in group.checkpoints and done != training.steps:
            if context.progress:  # a checkpoint's step is reported below, with its loss
                context.progress(group.name, done, training.steps, None, speed.text())
            continue
        metrics = evaluate_members(model)
        mean_losses = (losses / window).tolist()
        for i, loss in enumerate(mean_losses):
            metrics[i]["train:loss"] = loss
        losses.zero_()
        window = 0
        store.record_metrics(group.name, done, metrics)
        checkpoint.save(model, optimizer, schedule, stream.state(done), done, store.rows)
        stop = finished(metrics)
        if context.progress:  # an early stop's remaining steps: the executor's to count
            mean = sum(mean_losses) / len(mean_losses)
            context.progress(group.name, done, training.steps, mean, speed.text())
        if stop:
            break
    store.record_throughput(group.name, speed.rates())
    store.finish_group(group.name, checkpoint.seconds())


def _optimiser(model: StackedGPT, training: Training, device: torch.device):
    """AdamW (betas (0.9, 0.95), weight decay on the matrices only or on every parameter)
    and its schedule: a linear warmup over ``warmup_fraction`` of the steps (2% by default;
    at least one step), then a constant rate; none at fraction 0."""
    optimizer = torch.optim.AdamW(
        model.parameter_groups(training.weight_decay, training.decay),
        lr=training.lr,
        betas=(0.9, 0.95),
        fused=device.type == "cuda",
    )
    warmup = max(1, int(round(training.steps * training.warmup_fraction, 6)))  # 1: none
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))
    return optimizer, schedule


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
