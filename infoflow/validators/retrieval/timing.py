"""What the step-time model (:mod:`~infoflow.validators.steptime`) needs of a retrieval
group: the FLOPs of one training step of its stack, and the seconds to draw a batch and
evaluate the target on it (measured once per device and cached beside the step-time model,
so that a resumed run designs the same experiment)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import torch

from infoflow.core.files import write_with
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.validators.retrieval.model import Member, parameter_shapes, stack_size
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs
from infoflow.validators.steptime import cache_file
from infoflow.validators.throughput import flops_per_token


def group_flops(members: list[Member], seq_len: int, input_dim: int, batch: int) -> float:
    """FLOPs of one training step of the stack (forward and backward), as the stack computes
    them: every member at the widest member's size (masked channels still cost), counted
    by :func:`~infoflow.validators.throughput.flops_per_token`."""
    shapes = parameter_shapes(members, seq_len, input_dim, 1)
    params = sum(math.prod(shape) for shape in shapes.values())
    layers, _, heads, width = stack_size(members)
    attention = layers * len(members) * (seq_len + 1) * heads * width
    return flops_per_token(params, attention) * batch * (seq_len + 1)


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
    value = known.get(key)
    if not (isinstance(value, float) and math.isfinite(value) and value >= 0):  # or damaged
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
