"""Train one ensemble group: AdamW, cosine schedule, fresh i.i.d. batches, NMSE on a
held-out set, checkpoints that a killed run resumes from.

A group is the set of members that train together in one process on one device: one
target, one sequence length, one embedding width. Every ``eval_every`` steps the group's
NMSE curves go to the database and a checkpoint is written atomically (temporary file, then
rename); resuming loads it with ``torch.load(weights_only=True)``, so a results folder from
elsewhere cannot run code, and continues with the same data stream.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from infoflow.validators.model import EnsembleTransformer, Member
from infoflow.validators.store import Store
from infoflow.validators.targets import TargetFunction, sample_inputs

from infoflow.retrieval.spec import RetrievalSpec


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
class Group:
    """Members that train together (one target, one sequence length), with the data they
    share."""

    name: str
    spec: RetrievalSpec
    seq_len: int
    members: list[Member]
    labels: list[str]
    data_seed: int = 0

    def describe(self) -> dict:
        return {"seq_len": self.seq_len, "data_seed": self.data_seed}

    def member_rows(self) -> list[dict]:
        return [
            {"label": label, **asdict(m)}
            for label, m in zip(self.labels, self.members, strict=True)
        ]


Progress = Callable[[str, int, int, float], None]  # group, step, steps, mean loss


def train_group(
    group: Group,
    settings: TrainSettings,
    device: torch.device,
    store: Store,
    checkpoints: Path,
    progress: Progress | None = None,
) -> tuple[list[float], EnsembleTransformer, torch.Tensor]:
    """Train ``group`` to the end, resuming from its checkpoint (a finished group only
    evaluates). Returns the final NMSE per member, the model and the held-out inputs."""
    started = time.perf_counter()
    target = TargetFunction(group.spec, seed=group.data_seed, device=device)
    eval_generator = torch.Generator().manual_seed(group.data_seed + 1)  # on the CPU, so
    x_eval = sample_inputs(group.spec, settings.eval_size, group.seq_len, eval_generator)
    x_eval = x_eval.to(device)  # the held-out set is the same on every device
    y_eval = _as_matrix(target(x_eval))
    mean, std = y_eval.mean(0), y_eval.std(0).clamp_min(1e-8)
    y_eval = (y_eval - mean) / std

    model = EnsembleTransformer(
        group.members, group.seq_len, x_eval.shape[-1], y_eval.shape[-1]
    ).to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay,
        fused=device.type == "cuda",
    )  # fmt: skip
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, _cosine(settings))
    data = torch.Generator(device=device).manual_seed(group.data_seed + 2)
    path = checkpoints / f"{group.name}.pt"
    start, records = load_checkpoint(path, model, optimizer, schedule, data, device)
    store.restore(records)

    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda")
    losses, window = torch.zeros(len(group.members), device=device), 0
    for step in range(start, settings.steps):
        x = sample_inputs(group.spec, settings.batch, group.seq_len, data)
        y = (_as_matrix(target(x)) - mean) / std
        with autocast:
            prediction = model(x)
        per_member = ((prediction.float() - y) ** 2).mean((1, 2))
        losses += ensemble_step(optimizer, schedule, per_member)
        window += 1
        done = step + 1
        if done % settings.eval_every == 0 or done == settings.steps:
            mean_loss = (losses / window).tolist()
            losses.zero_()
            window = 0
            nmse = evaluate(model, x_eval, y_eval)
            store.record_curves(group.name, done, mean_loss, nmse)
            save_checkpoint(path, model, optimizer, schedule, data.get_state(), done, store.rows)
            if progress:
                progress(group.name, done, settings.steps, sum(mean_loss) / len(mean_loss))
    final = evaluate(model, x_eval, y_eval)
    store.finish_group(group.name, final, time.perf_counter() - started)
    return final, model, x_eval


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


def ensemble_step(optimizer, schedule, per_member: torch.Tensor) -> torch.Tensor:
    """One optimiser step on the sum of the members' losses (members are independent: their
    gradients do not mix); returns the detached losses."""
    optimizer.zero_grad(set_to_none=True)
    per_member.sum().backward()
    optimizer.step()
    schedule.step()
    return per_member.detach()


def save_checkpoint(
    path: Path, model, optimizer, schedule, data_state: torch.Tensor, step: int, records=()
):
    """Write the training state atomically (a temporary file, then a rename); ``data_state``
    is the state of the data generator that the next step's batch comes from; ``records``
    what a worker recorded so far (see :class:`~infoflow.validators.store.Recorder`)."""
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "schedule": schedule.state_dict(),
        "data": data_state,
        "step": step,
        "records": list(records),
    }
    temporary = path.with_suffix(".tmp")
    torch.save(state, temporary)
    os.replace(temporary, path)


def load_checkpoint(
    path: Path, model, optimizer, schedule, data: torch.Generator, device
) -> tuple[int, list]:
    """Restore the state saved at ``path`` (plain data only: ``weights_only``) and return
    its step and records; (0, []) when there is none."""
    if not path.exists():
        return 0, []
    state = torch.load(path, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    schedule.load_state_dict(state["schedule"])
    data.set_state(state["data"].cpu())  # generator states live on the CPU
    return int(state["step"]), state.get("records", [])
