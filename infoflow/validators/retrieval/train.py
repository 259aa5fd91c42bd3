"""Train one retrieval group: AdamW, warmup then a constant rate until each member's loss
stops improving, then its own cooldown (:mod:`~infoflow.validators.retrieval.plateau`),
fresh i.i.d. batches, NMSE on a held-out set, checkpoints that a killed run resumes from.

A group is the set of members that train together in one process on one device: one
target, one sequence length, every width and architecture the experiment needs. Every
``eval_every`` steps, and at the last, each member's training loss and held-out NMSE go to
the store's metrics and a checkpoint is written (:mod:`~infoflow.validators.ensemble`);
resuming continues with the same data stream. :func:`load_trained` gives the trained model
back for measurements.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar

import torch

from infoflow.retrieval.spec import RetrievalSpec
from infoflow.validators import protocol
from infoflow.validators.ensemble import (
    Checkpoint,
    MemberAdamW,
    ensemble_step,
    precision,
    resume,
)
from infoflow.validators.protocol import Context
from infoflow.validators.retrieval.model import EnsembleTransformer, Member
from infoflow.validators.retrieval.plateau import MemberSchedule, MemberState
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs
from infoflow.validators.retrieval.timing import stack_meter

#: The version of the model and training code: part of every group's identity, so a change
#: here (bump it) never resumes a checkpoint trained by the code before. A change that keeps
#: the function but not its rounding counts: 3 since the masks moved onto the weights
#: (commit 285e07e, 2026-12-04), which trains other weights in the last bits; 4 since the
#: evaluator adds a scalar to each coordinate of a vector (2026-12-05: such a target was a
#: wrong [B, B] table before); 5 since a parameter that a dot's argument combines
#: (``dot(p - q, x[t])``) is a vector (it was a scalar times the sum of x's coordinates); 6
#: since a cap a few evaluations long starts the cooldown at the evaluation before the cap's
#: (2026-12-07: the cap's own came first, with a cooldown of one step never trained); 7
#: since the last layer computes the readout token alone (the same function, other last bits).
TRAINING_VERSION = 7


@dataclass(frozen=True)
class TrainSettings:
    steps: int
    batch: int
    lr: float = 1e-3
    weight_decay: float = 1e-2
    eval_every: int = 100
    eval_size: int = 2048
    warmup_fraction: float = 0.05


@dataclass
class Group(protocol.Group):
    """Members that train together (one target, one sequence length), with the data they
    share and how they train."""

    kind: ClassVar[str] = "retrieval"
    code: ClassVar[int] = TRAINING_VERSION
    prefix: str
    spec: RetrievalSpec
    seq_len: int
    members: list[Member]
    labels: list[str]
    settings: TrainSettings
    data_seed: int = 0

    def trained(self) -> dict:
        """Everything that determines the trained members. Options only the engine reads and
        that came after runs were named (``self_exclusion``, ``partner_peel``) are left out, so
        those runs keep their names; the older engine options stay in for the same reason."""
        left_out = {"description": True, "sweep": True, "validation": True}
        spec = self.spec.model_dump(
            mode="json", exclude={**left_out, "options": {"self_exclusion", "partner_peel"}}
        )
        return {
            "spec": spec,
            "seq_len": self.seq_len,
            "members": [asdict(m) for m in self.members],
            "settings": asdict(self.settings),
            "data_seed": self.data_seed,
        }

    def describe(self) -> dict:
        return {"seq_len": self.seq_len, "data_seed": self.data_seed}

    def member_rows(self) -> list[dict]:
        return [
            {"label": label, **asdict(m)}
            for label, m in zip(self.labels, self.members, strict=True)
        ]


@dataclass
class HeldOut:
    """The group's held-out set, its standardised targets and the scaling used."""

    x: torch.Tensor
    y: torch.Tensor
    mean: torch.Tensor
    std: torch.Tensor


def held_out(group: Group, target: TargetFunction, device: torch.device) -> HeldOut:
    """The held-out set, drawn on the CPU so that it is the same on every device."""
    generator = torch.Generator().manual_seed(group.data_seed + 1)
    x = sample_inputs(group.spec, group.settings.eval_size, group.seq_len, generator).to(device)
    y = _as_matrix(target(x))
    mean, std = y.mean(0), y.std(0).clamp_min(1e-8)
    return HeldOut(x, (y - mean) / std, mean, std)


def build_model(group: Group, data: HeldOut, device: torch.device) -> EnsembleTransformer:
    return EnsembleTransformer(group.members, group.seq_len, data.x.shape[-1], data.y.shape[-1]).to(
        device
    )


def make_optimizer(model: EnsembleTransformer, settings: TrainSettings) -> MemberAdamW:
    """AdamW with a learning rate per member (each member's cooldown is its own)."""
    return MemberAdamW(model.member_axes(), len(model.members), settings.lr, settings.weight_decay)


def train_group(group: Group, context: Context, until: int | None = None) -> None:
    """Train ``group`` until every member is done (:mod:`plateau`: warmup, a constant rate
    until its loss stops improving, a cooldown) or the cap of ``settings.steps`` (or step
    ``until`` of the same schedule: a pilot's), resuming from its checkpoint. Every
    ``eval_every`` steps, and at the end, record each member's mean training loss
    (``train:loss``) and held-out NMSE (``eval:nmse``); at the end, how each member stopped
    (``plateau:capped`` 1 when the cap, not a plateau, started its cooldown;
    ``plateau:improving`` 1 when its loss was still falling then; ``plateau:slope``, the
    log-log loss slope then; ``plateau:step``, its last training step)."""
    started, device, store = time.perf_counter(), context.device, context.store
    settings = group.settings
    target = TargetFunction(group.spec, seed=group.data_seed, device=device)
    data = held_out(group, target, device)
    model = build_model(group, data, device)
    optimizer = make_optimizer(model, settings)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, _warmup(settings))
    generator = torch.Generator(device=device).manual_seed(group.data_seed + 2)
    stopping = MemberSchedule.start(len(group.members), settings.steps, settings.eval_every)
    optimizer.extra = stopping.to_dict()
    checkpoint, start = resume(context, group, model, optimizer, schedule, generator, started)
    members = MemberSchedule.from_dict(optimizer.extra)

    autocast = precision(device)
    forward = torch.compile(model) if context.compile else model  # the same weights
    losses, window = torch.zeros(len(group.members), device=device), 0
    speed = stack_meter(group.members, group.seq_len, model.W_in.shape[1], settings.batch, device)
    step, last = start, min(until or settings.steps, settings.steps)
    while step < last and not members.done(step):
        factors = members.factors(step)
        optimizer.member_lr = torch.tensor(factors, device=device)
        x = sample_inputs(group.spec, settings.batch, group.seq_len, generator)
        y = (_as_matrix(target(x)) - data.mean) / data.std
        with autocast:
            prediction = forward(x)
        per_member = ((prediction.float() - y) ** 2).mean((1, 2))
        losses += ensemble_step(optimizer, schedule, per_member)
        speed.add(len(group.members) * settings.batch * group.seq_len)
        window, step, mean = window + 1, step + 1, None
        if step % settings.eval_every == 0 or step == last or members.done(step):
            mean_loss = (losses / window).tolist()
            mean = sum(mean_loss) / len(mean_loss)
            losses.zero_()
            window = 0
            members.observe(step, mean_loss)
            nmse = evaluate(model, data.x, data.y)
            final = members.done(step) or step == settings.steps
            store.record_metrics(group.name, step, _rows(mean_loss, nmse, members, final))
            optimizer.extra = members.to_dict()
            checkpoint.save(model, optimizer, schedule, generator.get_state(), step, store.rows)
        if context.progress:
            context.progress(group.name, step, settings.steps, mean, speed.text())
    store.record_throughput(group.name, speed.rates())
    store.finish_group(group.name, checkpoint.seconds())


def _rows(losses: list, nmse: list, members: MemberSchedule, final: bool) -> list[dict]:
    """Each member's metrics at an evaluation; at the last, how it stopped too."""
    rows = [{"train:loss": a, "eval:nmse": b} for a, b in zip(losses, nmse, strict=True)]
    if not final:
        return rows
    states = members.members
    return [{**r, **_stopped(s, members.last_step(s))} for r, s in zip(rows, states, strict=True)]


def _stopped(state: MemberState, end: float) -> dict[str, float]:
    """How a member stopped, as metrics (a slope that could not be fitted is NaN), ``end``
    its last training step."""
    slope = math.nan if state.slope is None else state.slope
    return {
        "plateau:capped": float(state.capped),
        "plateau:improving": float(state.still_improving),
        "plateau:slope": slope,
        "plateau:step": end,
    }


def load_trained(
    group: Group, device: torch.device, checkpoints: Path
) -> tuple[EnsembleTransformer, torch.Tensor]:
    """A finished group's model (its final weights) and held-out inputs."""
    target = TargetFunction(group.spec, seed=group.data_seed, device=device)
    data = held_out(group, target, device)
    model = build_model(group, data, device)
    Checkpoint.of(group, checkpoints).load_weights(model, device)
    return model.eval(), data.x


@torch.no_grad()
def evaluate(model: EnsembleTransformer, x: torch.Tensor, y: torch.Tensor) -> list[float]:
    """NMSE = MSE / Var(y) per member, on the held-out set."""
    model.eval()
    squared = torch.zeros(len(model.members), device=x.device)
    for chunk in range(0, x.shape[0], 512):
        prediction = model(x[chunk : chunk + 512]).float()
        squared += ((prediction - y[chunk : chunk + 512]) ** 2).sum((1, 2))
    model.train()
    variance = y.var(0, unbiased=False).sum() * x.shape[0]
    return (squared / variance).tolist()


def _as_matrix(y: torch.Tensor) -> torch.Tensor:
    return y[:, None] if y.dim() == 1 else y


def _warmup(settings: TrainSettings) -> Callable[[int], float]:
    """Linear warmup over ``warmup_fraction`` of the cap, then the full rate (each member's
    cooldown multiplies it: :mod:`~infoflow.validators.retrieval.plateau`)."""
    warmup = max(1, int(settings.steps * settings.warmup_fraction))
    return lambda step: min(1.0, (step + 1) / warmup)
