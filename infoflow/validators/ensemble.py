"""What every trainer shares: the optimiser step of a stacked ensemble and checkpoints that a
killed run resumes from.

Members of an ensemble are stacked on a leading axis and trained by one optimiser on the sum
of their losses (their gradients do not mix). Checkpoints hold the model, the optimiser, the
schedule, the data generator's state, the step and what a worker recorded; they are written
atomically (a temporary file unique to the writer, then a rename) and loaded with
``torch.load(weights_only=True)``, so a results folder from elsewhere cannot run code.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch


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
) -> None:
    """Write the training state atomically; ``data_state`` is the state of the generator that
    the next step's batch comes from; ``records`` what a worker recorded so far (see
    :class:`~infoflow.validators.store.Recorder`)."""
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "schedule": schedule.state_dict(),
        "data": data_state,
        "step": step,
        "records": list(records),
    }
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
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


def resume(context, name: str, model, optimizer, schedule, data: torch.Generator):
    """Group ``name``'s checkpoint path in ``context.checkpoints`` and the step to continue
    from (0 for a new group), its state restored into the model, optimiser, schedule and
    data generator, and what it had recorded into ``context.store``."""
    path = context.checkpoints / f"{name}.pt"
    start, records = load_checkpoint(path, model, optimizer, schedule, data, context.device)
    context.store.restore(records)
    return path, start


def load_weights(path: Path, model, device) -> None:
    """Only the model's weights from the checkpoint at ``path`` (a finished group, to
    measure)."""
    state = torch.load(path, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
