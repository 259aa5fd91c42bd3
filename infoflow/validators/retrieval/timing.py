"""What the step-time model (:mod:`~infoflow.validators.steptime`) needs of a retrieval
group: the model itself, measured on the retrieval stack (:data:`PROBES`: the ensemble
transformer with its masks and the per-member AdamW, which cost about three times the
generic probe's time per FLOP on a CPU), the FLOPs of one training step of a group's stack,
the seconds of that step timed on the stack itself (:func:`group_step`, which corrects the
model where its fit to two stacks is off, as for narrow ones), and the seconds to draw a
batch and evaluate the target on it (both measured once per device and cached beside the
step-time model, so that ``plan``, ``validate`` and a resumed run design the same
experiment)."""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch

from infoflow.core.files import write_cache
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.validators.ensemble import MemberAdamW
from infoflow.validators.retrieval.model import (
    EnsembleTransformer,
    Member,
    parameter_shapes,
    stack_size,
)
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs
from infoflow.validators.steptime import (
    Probes,
    StepTime,
    cache_file,
    regression_step,
    remembered,
    seconds_per_step,
    step_time,
)
from infoflow.validators.throughput import Meter, flops_per_token, peak

#: The batch the probes train on (the smoke scale's).
PROBE_BATCH = 64


class StackProbe:
    """A retrieval group's stack of ``members`` at ``seq_len`` on ``input_dim`` inputs and
    batches of ``batch``, trained as :mod:`~infoflow.validators.retrieval.train` trains it
    (the per-member AdamW)."""

    def __init__(
        self, members: list[Member], seq_len: int, input_dim: int = 4, batch: int = PROBE_BATCH
    ):
        self.members, self.seq_len = members, seq_len
        self.input_dim, self.batch = input_dim, batch

    def flops(self) -> float:
        return group_flops(self.members, self.seq_len, self.input_dim, self.batch)

    def stepper(self, device: torch.device) -> Callable[[], None]:
        model = EnsembleTransformer(self.members, self.seq_len, self.input_dim, 1).to(device)
        optimizer = MemberAdamW(model.member_axes(), len(self.members), 1e-3, 1e-2)
        x = torch.randn(self.batch, self.seq_len, self.input_dim, device=device)
        y = torch.randn(self.batch, 1, device=device)
        return regression_step(model, optimizer, x, y)


def _ladder(heads: tuple[int, ...], embed_dim: int, widths: tuple[int, ...]) -> list[Member]:
    return [Member(heads, False, seed, embed_dim, width) for width in widths for seed in range(3)]


#: The retrieval stack on one H200, recorded on 2026-12-04 (second lease), its masks on the
#: weights: the paper-scale intrinsic-dimension groups of D = 4 and D = 2 (72 members, T =
#: 64, batch 256) took 57.6 and 59.8 ms a training step eagerly, and the D = 4 run about
#: 5 ms a step more for the target and the held-out passes (which the estimate also counts
#: apart: about 0.4 ms a step, within the fit's error). So 10 ms a step (what a
#: 36-member group at T = 16 took on the first lease, nearly all of it fixed) plus 1.5% of
#: the bf16 dense peak (1.31% and 1.65% for the two, the target's share taken as D = 4's),
#: which put them at 0.90x and 1.10x (docs/results/2026-12-04-h200-compile.md). Since
#: 2026-12-07 (night) the last layer computes the readout token alone, and :func:`group_flops`
#: counts what the stack computes: the same steps are 0.89% and 1.15% of the peak in that
#: count, so 1.0% (0.91x and 1.13x). Those steps computed every token in the last layer:
#: today's should be shorter, by how much on a GPU no lease has measured yet (1.2-2.3x on a
#: CPU). The first lease's model (0.83%, masks on the activations) put these steps about
#: 1.4x longer.
H200_RETRIEVAL = StepTime(
    "cuda",
    "NVIDIA H200 (recorded)",
    10e-3,
    1 / (0.010 * 989e12),
    "recorded on one H200 on 2026-12-04, not measured here: 10 ms a step and 1.0% of the "
    "989 TFLOP/s bf16 dense peak (the target's evaluation included; the last layer then "
    "computed every token: today's step should be shorter)",
    assumed=True,
)

#: A two-layer stack of two narrow members at T = 8 (a step's fixed cost is mostly launches,
#: which grow with the layers); a ladder group at T = 16 of one and two layers, four widths,
#: three seeds (the size of the CPU suite's groups).
PROBES = Probes(
    # 5: the masks act on the weights (1.2-1.3x faster on a CPU); 6: the last layer computes
    # the readout token alone (1.2-2.3x faster on a CPU)
    "retrieval6",
    partial(StackProbe, [Member((1, 1), False, 0, 8, 2), Member((1,), False, 0, 8, 2)], 8),
    partial(StackProbe, _ladder((1, 1), 24, (2, 4, 8, 20)) + _ladder((1,), 24, (2, 4, 8, 20)), 16),
    "on the retrieval stack",
    recorded=H200_RETRIEVAL,
)


@dataclass(frozen=True)
class CompileGain:
    """What ``torch.compile`` (``--compile``) does to a group's training step on a device
    type: the step ``speedup`` times faster, after ``seconds`` of compiling per group;
    ``source`` says where it was recorded (it is not measured by ``plan``)."""

    speedup: float
    seconds: float
    source: str

    def describe(self) -> str:
        gain = f"{self.speedup:.2f}x faster after {self.seconds:.0f} s of compiling per group"
        return f"the step compiled: {gain} ({self.source})"


#: Recorded side by side, eager against compiled (bench/bench_compile_step.py): on the GPU
#: the median of the D = 4 and D = 2 paper-scale groups (2.04x and 2.12x, 26 s and 20 s for
#: the first three steps; docs/results/2026-12-04-h200-compile.md).
COMPILE_GAINS = {
    "cuda": CompileGain(
        2.08,
        23.0,
        "recorded on one H200 on 2026-12-04: the intrinsic-dimension groups of D = 4 and "
        "D = 2, 72 members at T = 64",
    ),
    "cpu": CompileGain(
        1.08,
        29.0,
        "recorded on a 2-core CPU on 2026-12-04: the pairwise minimum's group at T = 8",
    ),
}


def step_model(device: str) -> StepTime:
    """The step-time model of the retrieval stack on ``device``."""
    return step_time(device, PROBES)


#: A group's own step is timed (:func:`group_step`) where the step-time model puts it under
#: LONGEST_TIMED_STEP seconds: two untimed steps, then GROUP_STEPS timed ones, fewer once
#: GROUP_SECONDS are spent (one at least), the median kept.
GROUP_STEPS, GROUP_SECONDS, LONGEST_TIMED_STEP = 5, 2.0, 2.0


def group_step(members: list[Member], seq_len: int, input_dim: int, batch: int, device: str):
    """Seconds of one training step of this stack on ``device``, timed on the stack itself:
    measured once, then read from the cache beside the step-time model it corrects (same
    threads, same busy cores); a resumed run's is the one it recorded
    (:func:`~infoflow.validators.steptime.remembered`)."""
    shape = [[list(m.heads), m.positional_encoding, m.embed_dim, m.hidden] for m in members]
    text = json.dumps([shape, seq_len, input_dim, batch, torch.get_num_threads()])
    key = hashlib.sha256(text.encode()).hexdigest()[:16]
    models = cache_file(device, PROBES.name)
    path = models.with_name(models.stem + "-groups.json")
    probe = StackProbe(members, seq_len, input_dim, batch)
    timing = partial(seconds_per_step, probe, torch.device(device), GROUP_STEPS, GROUP_SECONDS)
    return remembered(f"step:{device}:{key}", partial(cached_number, path, key, timing))


#: The weights the readout token alone goes through: in the last layer (a [layers, ...]
#: weight's last share), and after it.
LAST_LAYER_READOUT = ("W_O", "ln2", "W_1", "b_1", "W_2", "b_2")
FINAL_READOUT = ("ln_f", "W_out", "b_out")


def group_flops(members: list[Member], seq_len: int, input_dim: int, batch: int) -> float:
    """FLOPs of one training step of the stack (forward and backward), as the stack computes
    them: every member at the widest member's size (masked channels still cost), every
    token through every layer but the last, whose attention output and MLP (and the output
    after it) compute the readout token alone; counted by
    :func:`~infoflow.validators.throughput.flops_per_token`."""
    sizes = {n: math.prod(s) for n, s in parameter_shapes(members, seq_len, input_dim, 1).items()}
    layers, _, heads, width = stack_size(members)
    readout = sum(sizes[n] for n in FINAL_READOUT)
    readout += sum(sizes[n] for n in LAST_LAYER_READOUT) / layers
    tokens = seq_len + 1
    query = len(members) * tokens * heads * width  # one query's scores and mix, one layer
    every_token = flops_per_token(sum(sizes.values()) - readout, (layers - 1) * query)
    return (every_token * tokens + flops_per_token(readout, query)) * batch


def stack_meter(
    members: list[Member], seq_len: int, input_dim: int, batch: int, device: torch.device
) -> Meter:
    """A throughput meter for training the stack on batches of ``batch``, a token being one
    member's input token: the FLOPs the stack computes (:func:`group_flops`) spread over
    them."""
    tokens = len(members) * batch * seq_len
    return Meter(group_flops(members, seq_len, input_dim, batch) / tokens, peak(device))


#: The numbers of each cache file (targets' times, groups' steps), read once per process.
_CACHED: dict[Path, dict[str, float]] = {}


def target_seconds(spec: RetrievalSpec, seq_len: int, batch: int, device: str) -> float:
    """Seconds to draw a batch and evaluate the target on it on ``device``: measured once,
    then read from the cache beside the device's idle step-time model, whatever the load
    now; a resumed run's is the one it recorded (:func:`~infoflow.validators.steptime.
    remembered`), so that it designs the same experiment."""
    models = cache_file(device, load=0.0)
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
    timing = partial(_time_target, spec, seq_len, batch, torch.device(device))
    return remembered(f"target:{device}:{key}", partial(cached_number, path, key, timing))


def cached_number(path: Path, key: str, measure: Callable[[], float]) -> float:
    """The number under ``key`` in the JSON cache ``path``: measured and written when it is
    missing (or damaged)."""
    if path not in _CACHED:
        try:
            _CACHED[path] = json.loads(path.read_text()) if path.is_file() else {}
        except ValueError:
            _CACHED[path] = {}  # a damaged cache is measured anew
    known = _CACHED[path]
    value = known.get(key)
    if not (isinstance(value, float) and math.isfinite(value) and value >= 0):  # or damaged
        known[key] = measure()
        write_cache(path, json.dumps(known))
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
