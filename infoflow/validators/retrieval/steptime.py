"""A device's step-time model: a retrieval group -> the seconds its training will take.

A training step of a stacked ensemble costs about ``overhead + flops * per_flop`` seconds:
a fixed part (Python, kernel launches, the optimiser's loop) and a part proportional to the
step's floating-point work. Both constants are measured on the machine at hand, with a few
timed steps of two ensembles of different sizes, and cached per device, thread count and
torch version (``$INFOFLOW_CACHE``, else ``~/.cache/infoflow``). For a CUDA device on a
machine without one, the model is an assumption stated in :data:`ASSUMED_H200` (docs say
so wherever an estimate uses it). A target's own evaluation time is measured and cached the
same way (:func:`target_seconds`). The FLOPs of a step are counted as the throughput meter
counts them (nanoGPT's count).
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from infoflow.core.files import write_with
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.validators.ensemble import ensemble_step, precision
from infoflow.validators.retrieval.model import (
    EnsembleTransformer,
    Member,
    parameter_shapes,
    stack_size,
)
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs
from infoflow.validators.retrieval.train import TrainSettings, make_optimizer
from infoflow.validators.throughput import flops_per_token

#: Timed steps per size (after two untimed ones); the fastest counts.
TIMED_STEPS = 6


@dataclass(frozen=True)
class StepTime:
    """Seconds per training step: ``overhead + flops * per_flop``; ``source`` says whether
    it was measured (where, when) or assumed."""

    device_type: str  # "cpu" or "cuda"
    name: str
    overhead: float
    per_flop: float
    source: str
    assumed: bool = False  # True: not measured (the target's time is then in ``overhead``)

    def step(self, flops: float) -> float:
        return self.overhead + flops * self.per_flop


#: One H200 when none is at hand: a few hundred kernel launches a step (about 3 ms for a
#: two-layer stacked ensemble with a fused AdamW and the target's evaluation) and 15% of the
#: 989 TFLOP/s bf16 dense peak, the share small matrices reach.
ASSUMED_H200 = StepTime(
    "cuda",
    "NVIDIA H200 (assumed)",
    3e-3,
    1 / (0.15 * 989e12),
    "assumed, not measured: 3 ms of launches a step (the target's evaluation included), "
    "15% of the 989 TFLOP/s bf16 dense peak",
    assumed=True,
)


def group_flops(members: list[Member], seq_len: int, input_dim: int, batch: int) -> float:
    """FLOPs of one training step of the stack (forward and backward), as the stack computes
    them: every member at the widest member's size (masked channels still cost), counted
    by :func:`~infoflow.validators.throughput.flops_per_token`."""
    shapes = parameter_shapes(members, seq_len, input_dim, 1)
    params = sum(math.prod(shape) for shape in shapes.values())
    layers, _, heads, width = stack_size(members)
    attention = layers * len(members) * (seq_len + 1) * heads * width
    return flops_per_token(params, attention) * batch * (seq_len + 1)


def step_time(device: str) -> StepTime:
    """The step-time model of ``device`` ("cpu" or "cuda"): cached, else measured now; for
    "cuda" without a CUDA device, :data:`ASSUMED_H200`."""
    if device == "cuda" and not torch.cuda.is_available():
        return ASSUMED_H200
    path = cache_file(device)
    if path.is_file():
        try:
            return StepTime(**json.loads(path.read_text()))
        except (ValueError, TypeError):
            pass  # a damaged cache is measured anew
    model = measure(torch.device(device))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_with(path, lambda temporary: temporary.write_text(json.dumps(asdict(model))))
    return model


def measure(device: torch.device) -> StepTime:
    """Time a small and a large ensemble for a few steps and fit the two constants."""
    small = ([Member((1,), False, 0, 16)], 8)
    large = ([Member((4, 4), True, seed, 64) for seed in range(6)], 32)
    (f0, s0), (f1, s1) = (
        (group_flops(m, t, 4, 64), _seconds_per_step(m, t, device)) for m, t in (small, large)
    )
    per_flop = max((s1 - s0) / (f1 - f0), 1e-15)
    overhead = max(s0 - f0 * per_flop, 0.0)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else _cpu_name()
    when = time.strftime("%Y-%m-%d")
    source = f"measured on {name}, {torch.get_num_threads()} threads, {when}"
    return StepTime(device.type, name, overhead, per_flop, source)


def _seconds_per_step(members: list[Member], seq_len: int, device: torch.device) -> float:
    model = EnsembleTransformer(members, seq_len, 4, 1).to(device)
    optimizer = make_optimizer(model, TrainSettings(steps=1, batch=64), device)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)
    x, y = torch.randn(64, seq_len, 4, device=device), torch.randn(64, 1, device=device)
    autocast = precision(device)

    def steps(count: int) -> None:
        for _ in range(count):
            with autocast:
                prediction = model(x)
            ensemble_step(optimizer, schedule, ((prediction.float() - y) ** 2).mean((1, 2)))
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    steps(2)  # warm-up
    times = []
    for _ in range(TIMED_STEPS):
        start = time.perf_counter()
        steps(1)
        times.append(time.perf_counter() - start)
    return min(times)  # the least disturbed step: other work on the machine only adds time


#: The target times of each cache file, read once per process.
_TARGET_TIMES: dict[Path, dict[str, float]] = {}


def target_seconds(spec: RetrievalSpec, seq_len: int, batch: int, device: str) -> float:
    """Seconds to draw a batch and evaluate the target on it on ``device``: measured once,
    then read from the cache beside the device's step-time model (so that a resumed run
    designs the same experiment)."""
    models = cache_file(device)
    path = models.with_name(models.stem + "-targets.json")
    key = json.dumps(
        [
            spec.target,
            sorted(spec.params.items()),
            spec.input_dim,
            spec.data.model_dump(mode="json"),
            seq_len,
            batch,
        ]
    )
    if path not in _TARGET_TIMES:
        try:
            _TARGET_TIMES[path] = json.loads(path.read_text()) if path.is_file() else {}
        except ValueError:
            _TARGET_TIMES[path] = {}  # a damaged cache is measured anew
    known = _TARGET_TIMES[path]
    if not isinstance(known.get(key), float):
        known[key] = _time_target(spec, seq_len, batch, torch.device(device))
        path.parent.mkdir(parents=True, exist_ok=True)
        write_with(path, lambda temporary: temporary.write_text(json.dumps(known)))
    return known[key]


def _time_target(spec: RetrievalSpec, seq_len: int, batch: int, device: torch.device) -> float:
    target = TargetFunction(spec, seed=0, device=device)
    generator = torch.Generator(device=device).manual_seed(0)
    target(sample_inputs(spec, batch, seq_len, generator))  # warm-up
    start = time.perf_counter()
    for _ in range(3):
        target(sample_inputs(spec, batch, seq_len, generator))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return (time.perf_counter() - start) / 3


def cache_file(device: str) -> Path:
    """Where the model of ``device`` is cached: one file per device type, device name,
    thread count and torch version."""
    folder = Path(os.environ.get("INFOFLOW_CACHE") or Path.home() / ".cache" / "infoflow")
    name = torch.cuda.get_device_name() if device == "cuda" else _cpu_name()
    text = f"{device}-{name}-{torch.get_num_threads()}-{torch.__version__}"
    return folder / (
        "steptime-" + "".join(c if c.isalnum() or c in "-." else "_" for c in text) + ".json"
    )


def _cpu_name() -> str:
    return platform.processor() or platform.machine() or "cpu"
