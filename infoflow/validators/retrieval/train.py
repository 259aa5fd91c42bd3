"""Train one retrieval group: AdamW, cosine schedule, fresh i.i.d. batches, NMSE on a
held-out set, checkpoints that a killed run resumes from.

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
from infoflow.validators.ensemble import Checkpoint, ensemble_step, precision, resume
from infoflow.validators.protocol import Context
from infoflow.validators.retrieval.model import EnsembleTransformer, Member
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs
from infoflow.validators.throughput import meter

#: The version of the model and training code: part of every group's identity, so a change
#: here (bump it) never resumes a checkpoint trained by the code before.
TRAINING_VERSION = 1


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
        """Everything that determines the trained members."""
        spec = self.spec.model_dump(mode="json", exclude={"description", "sweep"})
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


def make_optimizer(model: torch.nn.Module, settings: TrainSettings, device: torch.device):
    """AdamW, fused on a GPU."""
    fused = device.type == "cuda"
    return torch.optim.AdamW(
        model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay, fused=fused
    )


def train_group(group: Group, context: Context) -> None:
    """Train ``group`` to the end, resuming from its checkpoint; every ``eval_every`` steps
    (and at the last) record each member's mean training loss (``train:loss``) and held-out
    NMSE (``eval:nmse``)."""
    started, device, store = time.perf_counter(), context.device, context.store
    settings = group.settings
    target = TargetFunction(group.spec, seed=group.data_seed, device=device)
    data = held_out(group, target, device)
    model = build_model(group, data, device)
    optimizer = make_optimizer(model, settings, device)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, _cosine(settings))
    generator = torch.Generator(device=device).manual_seed(group.data_seed + 2)
    checkpoint, start = resume(context, group, model, optimizer, schedule, generator)

    autocast = precision(device)
    losses, window = torch.zeros(len(group.members), device=device), 0
    speed = meter(model, group.seq_len, device)
    for step in range(start, settings.steps):
        x = sample_inputs(group.spec, settings.batch, group.seq_len, generator)
        y = (_as_matrix(target(x)) - data.mean) / data.std
        with autocast:
            prediction = model(x)
        per_member = ((prediction.float() - y) ** 2).mean((1, 2))
        losses += ensemble_step(optimizer, schedule, per_member)
        speed.add(len(group.members) * settings.batch * group.seq_len)
        window += 1
        done = step + 1
        if done % settings.eval_every == 0 or done == settings.steps:
            mean_loss = (losses / window).tolist()
            losses.zero_()
            window = 0
            nmse = evaluate(model, data.x, data.y)
            rows = [
                {"train:loss": loss, "eval:nmse": value}
                for loss, value in zip(mean_loss, nmse, strict=True)
            ]
            store.record_metrics(group.name, done, rows)
            checkpoint.save(model, optimizer, schedule, generator.get_state(), done, store.rows)
            if context.progress:
                mean = sum(mean_loss) / len(mean_loss)
                context.progress(group.name, done, settings.steps, mean, speed.text())
    store.record_throughput(group.name, speed.rates())
    store.finish_group(group.name, time.perf_counter() - started)


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


def _cosine(settings: TrainSettings) -> Callable[[int], float]:
    warmup = max(1, int(settings.steps * settings.warmup_fraction))

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, settings.steps - warmup)
        return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))

    return factor
