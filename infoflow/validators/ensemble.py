"""What every trainer shares: the optimiser step of a stacked ensemble, an AdamW whose
learning rate is set per member, and checkpoints that a killed run resumes from.

Members of an ensemble are stacked on a leading axis and trained by one optimiser on the sum
of their losses (their gradients do not mix). A :class:`Checkpoint` holds the model, the
optimiser, the schedule, the data generator's state, the step, what a worker recorded and
the digest of the group's identity; it is written whole or not at all (a temporary file
unique to the writer, then a rename) and loaded with ``torch.load(weights_only=True)``, so
a results folder from elsewhere cannot run code. A checkpoint written for another group, or
one that cannot be read, is a SpecError naming the file (exit code 2), never trained on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from infoflow.core.errors import SpecError
from infoflow.core.files import write_with
from infoflow.validators.identity import digest


def precision(device: torch.device) -> torch.autocast:
    """What trainers compute under: bf16 autocast on a GPU, full precision elsewhere."""
    return torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda")


def ensemble_step(optimizer, schedule, per_member: torch.Tensor) -> torch.Tensor:
    """One optimiser step on the sum of the members' losses (members are independent: their
    gradients do not mix); returns the detached losses."""
    optimizer.zero_grad(set_to_none=True)
    per_member.sum().backward()
    optimizer.step()
    schedule.step()
    return per_member.detach()


class MemberAdamW(torch.optim.Optimizer):
    """AdamW (decoupled weight decay, bias-corrected moments) over stacked parameters, each
    given with the axis its members lie on, with a learning rate per member: the group's
    ``lr`` times ``member_lr[i]`` (set before each step; ones at the start). A member whose
    factor is 0 does not change at all, weight decay included."""

    def __init__(
        self,
        params: list[tuple[torch.nn.Parameter, int]],
        members: int,
        lr: float,
        weight_decay: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ):
        self.axes = [axis for _, axis in params]
        defaults = {"lr": lr, "weight_decay": weight_decay, "betas": betas, "eps": eps}
        super().__init__([p for p, _ in params], defaults)
        self.member_lr = torch.ones(members, device=params[0][0].device)
        self.extra: dict = {}  # what the trainer keeps with the optimiser (JSON-like data)

    def state_dict(self) -> dict:
        return {**super().state_dict(), "extra": self.extra}

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        self.extra = state_dict.pop("extra", {})
        super().load_state_dict(state_dict)

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            (beta1, beta2), eps = group["betas"], group["eps"]
            for p, axis in zip(group["params"], self.axes, strict=True):
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t = state["step"]
                shape = [1] * p.dim()
                shape[axis] = -1
                rate = (group["lr"] * self.member_lr).view(shape)
                p.mul_(1 - rate * group["weight_decay"])
                state["exp_avg"].lerp_(p.grad, 1 - beta1)
                state["exp_avg_sq"].mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                denominator = (state["exp_avg_sq"] / (1 - beta2**t)).sqrt_().add_(eps)
                p.sub_(rate * state["exp_avg"] / (1 - beta1**t) / denominator)


@dataclass(frozen=True)
class Checkpoint:
    """A group's checkpoint file and the digest of the identity it must carry (None: any)."""

    path: Path
    identity: str | None = None

    @classmethod
    def of(cls, group: Any, folder: Path) -> Checkpoint:
        """``folder/NAME.pt`` for ``group`` (it has ``name`` and ``identity()``)."""
        return cls(folder / f"{group.name}.pt", digest(group.identity()))

    def save(
        self, model, optimizer, schedule, data_state: torch.Tensor, step: int, records=()
    ) -> None:
        """Write the training state; ``data_state`` is the state of the generator that the
        next step's batch comes from; ``records`` what a worker recorded so far (see
        :class:`~infoflow.validators.store.Recorder`)."""
        state = {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "schedule": schedule.state_dict(),
            "data": data_state,
            "step": step,
            "records": list(records),
            "identity": self.identity,
        }
        write_with(self.path, lambda temporary: torch.save(state, temporary))

    def load(self, model, optimizer, schedule, data: torch.Generator, device) -> tuple[int, list]:
        """Restore the saved state and return its step and records; (0, []) when there is
        no checkpoint yet."""
        if not self.path.exists():
            return 0, []
        state = self._read(device)
        try:
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            schedule.load_state_dict(state["schedule"])
            data.set_state(state["data"].cpu())  # generator states live on the CPU
            return int(state["step"]), list(state.get("records", []))
        except Exception as exc:  # whatever is wrong with the file's content
            raise self._damaged(exc) from None

    def load_weights(self, model, device) -> None:
        """Only the model's weights (a finished group, to measure)."""
        state = self._read(device)
        try:
            model.load_state_dict(state["model"])
        except Exception as exc:  # weights of another shape
            raise self._damaged(exc) from None

    def _read(self, device) -> dict:
        try:
            state = torch.load(self.path, map_location=device, weights_only=True)
        except Exception as exc:  # truncated, not a checkpoint, a directory
            raise self._damaged(exc) from None
        if not isinstance(state, dict) or "model" not in state:
            raise self._damaged(ValueError("no model state in it"))
        if self.identity is not None and state.get("identity") != self.identity:
            raise SpecError(
                str(self.path),
                [
                    (
                        None,
                        "was written for another group (another "
                        "identity): delete it, or pick another "
                        "--out",
                    )
                ],
            )
        return state

    def _damaged(self, exc: Exception) -> SpecError:
        reason = f"{type(exc).__name__}: {exc}"
        return SpecError(
            str(self.path),
            [(None, f"damaged checkpoint ({reason}); delete it to train the group from the start")],
        )


def resume(context, group, model, optimizer, schedule, data: torch.Generator):
    """``group``'s checkpoint in ``context.checkpoints`` and the step to continue from (0 for
    a new group), its state restored into the model, optimiser, schedule and data generator,
    and what it had recorded into ``context.store``."""
    checkpoint = Checkpoint.of(group, context.checkpoints)
    start, records = checkpoint.load(model, optimizer, schedule, data, context.device)
    context.store.restore(records)
    return checkpoint, start
