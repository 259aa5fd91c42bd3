"""What every trainer shares: the device and precision it trains in, the optimiser step of a
stacked ensemble, an AdamW whose learning rate is set per member, and checkpoints that a
killed run resumes from.

Members of an ensemble are stacked on a leading axis and trained by one optimiser on the sum
of their losses (their gradients do not mix). A :class:`Checkpoint` holds the model, the
optimiser, the schedule, the data generator's state, the step, what a worker recorded, the
digest of the group's identity and the SHA-256 of all of that (:func:`state_digest`); it is
written whole or not at all (a temporary file unique to the writer, then a rename) and
loaded with ``torch.load(weights_only=True)``, so a results folder from elsewhere cannot run
code. A checkpoint written for another group, one whose content does not match its digest
(edited or damaged), one that holds more than tensors and plain data, or one that cannot be
read, is a SpecError naming the file (exit code 2, one line), never trained on.
"""

from __future__ import annotations

import hashlib
import pickle
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from infoflow.core.errors import SpecError, out_of_memory
from infoflow.core.files import write_with
from infoflow.validators.identity import digest


def recorded_only(device: str | None) -> bool:
    """Whether step times on ``device`` come from another machine's record (a GPU asked for
    where there is none), not from a measurement here."""
    return device == "cuda" and not torch.cuda.is_available()


def pick_device(gpu: bool, device: str | None) -> torch.device:
    """``--gpu`` insists on CUDA; ``--device`` forces one; else the best there is."""
    if not (gpu or device == "cuda" or (device is None and torch.cuda.is_available())):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise SpecError("--gpu / --device cuda", [(None, "no CUDA device is available here")])
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    return torch.device("cuda")


def precision(device: torch.device) -> torch.autocast:
    """What trainers compute under: bf16 autocast on a GPU, full precision elsewhere."""
    return torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda")


@contextmanager
def deterministic(device: torch.device) -> Iterator[None]:
    """Within the block, on a CPU, torch's deterministic algorithms, so that a run trains
    bitwise the same models whether or not it was killed and resumed. Without them the
    backward of an indexed lookup (``W_E[members, x]``) of 32,768 elements or more adds into
    the weights' gradient from several threads at once, in an order, and so to a float sum,
    that changes from run to run (a resumed run of tests/icl_markov drifted 1e-3 from the
    uninterrupted one in 120 steps). A GPU's training is not bitwise reproducible anyway
    (bf16, atomics) and some of its deterministic kernels need cuBLAS settings: left alone."""
    before = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(before or device.type == "cpu", warn_only=warn_only)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before, warn_only=warn_only)


def ensemble_step(optimizer, schedule, per_member: torch.Tensor, clip=None) -> torch.Tensor:
    """One optimiser step on the sum of the members' losses (members are independent: their
    gradients do not mix), ``clip()`` called on the gradients first when given; returns the
    detached losses."""
    optimizer.zero_grad(set_to_none=True)
    per_member.sum().backward()
    if clip is not None:
        clip()
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


@dataclass
class Checkpoint:
    """A group's checkpoint file and the digest of the identity it must carry (None: any).
    It keeps the group's training clock: the seconds since it was made, plus those of the
    runs before a resume (saved with the state), so a resumed group's time is its whole."""

    path: Path
    identity: str | None = None
    earlier: float = field(default=0.0, compare=False)
    started: float = field(default_factory=time.perf_counter, compare=False, repr=False)

    def seconds(self) -> float:
        """Training seconds so far, the runs before a resume included."""
        return self.earlier + time.perf_counter() - self.started

    @classmethod
    def of(cls, group: Any, folder: Path, started: float | None = None) -> Checkpoint:
        """``folder/NAME.pt`` for ``group`` (it has ``name`` and ``identity()``), its clock
        running from ``started`` (a ``time.perf_counter()``; default: now)."""
        path, identity = folder / f"{group.name}.pt", digest(group.identity())
        return cls(path, identity) if started is None else cls(path, identity, started=started)

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
            "seconds": self.seconds(),
        }
        state["digest"] = state_digest(state)
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
            self.earlier = float(state.get("seconds", 0.0))
            return int(state["step"]), list(state.get("records", []))
        except Exception as exc:  # whatever is wrong with the file's content
            if out_of_memory(exc):  # the allocation failed, not the file (a review)
                raise
            raise self._damaged(exc) from None

    def load_weights(self, model, device) -> None:
        """Only the model's weights (a finished group, to measure)."""
        state = self._read(device)
        try:
            model.load_state_dict(state["model"])
        except Exception as exc:  # weights of another shape
            if out_of_memory(exc):  # the allocation failed, not the file (a review)
                raise
            raise self._damaged(exc) from None

    def _read(self, device) -> dict:
        if not self.path.exists():  # a finished group's weights, deleted: nothing retrains it
            why = "missing: this finished group's weights were deleted; pick another --out to "
            raise SpecError(str(self.path), [(None, why + "train it anew")])
        try:
            with warnings.catch_warnings():  # torch's warnings on a file it refuses: ours say it
                warnings.simplefilter("ignore")
                state = torch.load(self.path, map_location=device, weights_only=True)
        except Exception as exc:  # truncated, not a checkpoint, a directory, a foreign pickle
            if out_of_memory(exc):  # the allocation failed, not the file (a review)
                raise
            raise self._refused(_unreadable(exc)) from None
        if not isinstance(state, dict) or "model" not in state:
            raise self._refused("damaged checkpoint (no model state in it)")
        if "digest" not in state:
            raise self._refused("it carries no digest of its content (an older infoflow's)")
        if state.pop("digest") != state_digest(state):
            raise self._refused("its content does not match the digest written with it (edited)")
        if self.identity is not None and state.get("identity") != self.identity:
            message = "was written for another group (another identity): delete it, or pick "
            raise SpecError(str(self.path), [(None, message + "another --out")])
        return state

    def _damaged(self, exc: Exception) -> SpecError:
        """A state that does not fit the model or optimiser (say, of another shape)."""
        return self._refused(f"damaged checkpoint ({type(exc).__name__}: {exc})")

    def _refused(self, why: str) -> SpecError:
        return SpecError(str(self.path), [(None, f"{why}; delete it to train the group anew")])


def state_digest(state: dict) -> str:
    """The SHA-256 of a checkpoint's content: every key, value and tensor (its dtype, shape
    and bytes), in order, so that any change to what was written changes it."""
    hashed = hashlib.sha256()
    _feed(hashed, state)
    return hashed.hexdigest()


def _feed(hashed, value: Any) -> None:
    if isinstance(value, torch.Tensor):
        flat = value.detach().cpu().contiguous().reshape(-1)
        hashed.update(f"tensor {flat.dtype} {tuple(value.shape)};".encode())
        hashed.update(flat.view(torch.uint8).numpy().tobytes())
    elif isinstance(value, dict):
        hashed.update(f"dict {len(value)};".encode())
        for key, item in value.items():
            _feed(hashed, key)
            _feed(hashed, item)
    elif isinstance(value, list | tuple):
        hashed.update(f"{type(value).__name__} {len(value)};".encode())
        for item in value:
            _feed(hashed, item)
    else:  # numbers, strings, None: repr is exact for floats
        text = repr(value)
        hashed.update(f"{type(value).__name__} {len(text)} {text};".encode())


def _unreadable(exc: Exception) -> str:
    """Why ``torch.load`` refused a file, in our words (torch's message advises loading it
    with ``weights_only=False``, which could run code from the file)."""
    if isinstance(exc, pickle.UnpicklingError) and "unsupported global" in str(exc).lower():
        return (
            "not a checkpoint infoflow wrote: it holds objects other than tensors and plain "
            "data (a pickle that could run code), so it was not loaded"
        )
    if isinstance(exc, IsADirectoryError):
        return "damaged checkpoint (a directory, not a file)"
    if isinstance(exc, OSError):
        return f"damaged checkpoint (cannot read it: {exc.strerror or type(exc).__name__})"
    return "damaged checkpoint (truncated, or not a file torch.save wrote)"


def resume(context, group, model, optimizer, schedule, data: torch.Generator, started: float):
    """``group``'s checkpoint in ``context.checkpoints`` and the step to continue from (0 for
    a new group), its state restored into the model, optimiser, schedule and data generator,
    and what it had recorded into ``context.store``; its clock runs from ``started`` (the
    ``time.perf_counter()`` at which the group's setup began)."""
    checkpoint = Checkpoint.of(group, context.checkpoints, started)
    start, records = checkpoint.load(model, optimizer, schedule, data, context.device)
    context.store.restore(records)
    return checkpoint, start
