"""A device's step-time model: the seconds a training step of a stacked ensemble takes.

A step costs about ``overhead + flops * per_flop`` seconds: a fixed part (Python, kernel
launches, the optimiser's loop) and a part proportional to the step's floating-point work.
Both constants are measured on the machine at hand, with a few timed steps of a small and a
large stacked ensemble, and cached per device, thread count, busy cores (the load average
rounded: a model measured on a loaded machine is not used on an idle one, nor the reverse),
torch version and probe (``$INFOFLOW_CACHE``, else ``$XDG_CACHE_HOME/infoflow``, else
``~/.cache/infoflow``). The generic probe
(:class:`Probe`: pre-LN attention and MLP blocks on a member axis, torch's AdamW) has the
shape of what every family trains; a family whose own stack costs more per FLOP (masks, a
per-member optimiser) gives its own pair (:class:`Probes`), so that its estimates are
measured on what it trains. For a CUDA device on a machine without one, the model is the
one recorded on a GPU for the probes (:attr:`Probes.recorded`: :data:`H200_GENERIC` for the
generic ones), else an assumption stated in :data:`ASSUMED_H200` (docs say so wherever an
estimate uses either).
FLOPs are counted as the throughput meter counts them (nanoGPT's count); each family turns
its own groups into FLOPs and seconds.
"""

from __future__ import annotations

import json
import math
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from infoflow.core.files import cache_folder, write_cache
from infoflow.core.notes import progress_note
from infoflow.validators.ensemble import ensemble_step, precision, recorded_only
from infoflow.validators.threads import busy_cores, machine
from infoflow.validators.throughput import flops_per_token

#: Timed steps per size (after two untimed ones); their median counts.
TIMED_STEPS = 8
#: Each probe is timed this many times, the two probes in turn, and the median time kept: one
#: timing of a probe varies by up to 30% on a shared CPU from one second to the next (a slow
#: spell, which a single timing would cache as the machine's speed); the median of three,
#: taken in turn, varies by about 5% (the fitted time of a 24-member ladder step, four fits
#: each way).
REPEATS = 3


class Stepper(Protocol):
    """What a probe is: its FLOPs per training step, and a function doing one step."""

    def flops(self) -> float: ...

    def stepper(self, device: torch.device) -> Callable[[], None]: ...


@dataclass(frozen=True)
class Probes:
    """How to build a small and a large probe, and the name of the cache they fill (bump its
    version when a probe or the way it is timed changes: a model measured otherwise is
    measured again, never read as this one's)."""

    name: str
    small: Callable[[], Stepper]
    large: Callable[[], Stepper]
    label: str = ""  # what the measurement's source adds, e.g. "on the retrieval stack"
    recorded: StepTime | None = None  # "cuda" on a machine without one: measured elsewhere


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
    threads: int | None = None  # the torch threads it was measured with
    load: float | None = None  # the 1-minute load average it was measured under

    def step(self, flops: float) -> float:
        return self.overhead + flops * self.per_flop


#: One H200 when none is at hand and the probes recorded none: a few hundred kernel launches
#: a step (about 3 ms for a two-layer stacked ensemble with a fused AdamW and the target's
#: evaluation) and 15% of the 989 TFLOP/s bf16 dense peak, the share small matrices reach.
#: Both stacks since timed on an H200 ran far slower (retrieval's 10x, icl_markov's smoke
#: groups 4.6x): every probe bundled now carries a recorded model instead.
ASSUMED_H200 = StepTime(
    "cuda",
    "NVIDIA H200 (assumed)",
    3e-3,
    1 / (0.15 * 989e12),
    "assumed, not measured: 3 ms of launches a step (the target's evaluation included), "
    "15% of the 989 TFLOP/s bf16 dense peak (the stacks timed on an H200 ran 4.6-10x "
    "slower: likely optimistic)",
    assumed=True,
)

#: The generic probe on one H200, 2026-12-04 (docs/results/2026-12-04-h200-compile.md):
#: 7.9 ms a step and 1.6% of the bf16 dense peak. The probes are small for an H200, so the
#: fixed part dominates and the FLOP term is barely resolved (a second measurement there,
#: under more load, found the large probe no slower than the small); 1.6% is close to the
#: 1.5% the retrieval stack reached. An icl_markov race at smoke scale (seven groups, 200
#: steps) took 1.7x what it gives, 4.6x what :data:`ASSUMED_H200` gave.
H200_GENERIC = StepTime(
    "cuda",
    "NVIDIA H200 (recorded)",
    7.9e-3,
    1 / (0.016 * 989e12),
    "recorded on one H200 on 2026-12-04, not measured here: 7.9 ms a step and 1.6% of the "
    "989 TFLOP/s bf16 dense peak (the generic probe; small icl_markov groups took 1.7x this)",
    assumed=True,
)


#: What the design measures, inside :func:`recorded`: the models (and a target's times) a
#: resumed run recorded when it started, and those answered with, by "device:probes"
#: (a target's: "target:...").
_PINNED: dict[str, dict | float] = {}
_USED: dict[str, dict | float] = {}


@contextmanager
def recorded(pins: object = None) -> Iterator[dict[str, dict | float]]:
    """While the block runs, :func:`step_time` and :func:`remembered` answer with ``pins``
    (what a resumed run recorded) where they hold a plausible value, so that a run resumed
    under another load, or on another machine, designs the same experiment; yields what
    they answered with, for the run to record."""
    _USED.clear()
    if isinstance(pins, dict):
        _PINNED.update({k: v for k, v in pins.items() if isinstance(v, dict | float)})
    try:
        yield _USED
    finally:
        _PINNED.clear()


def recorded_without(prefix: str) -> bool:
    """Whether the run being resumed (inside :func:`recorded`) recorded no number under
    ``prefix``: it started before such numbers were measured, so its design is derived
    again without them."""
    return bool(_PINNED) and not any(key.startswith(prefix) for key in _PINNED)


def remembered(key: str, measure: Callable[[], float]) -> float:
    """A number the design measures besides the step time (a target's time, a group's
    timed step): a resumed run's recorded one inside :func:`recorded`, else ``measure()``;
    recorded either way."""
    pinned = _PINNED.get(key)
    ok = isinstance(pinned, float) and math.isfinite(pinned) and pinned >= 0
    value = pinned if ok else measure()
    _USED[key] = value
    return value


def step_time(device: str, probes: Probes | None = None) -> StepTime:
    """The step-time model of ``device`` ("cpu" or "cuda") on ``probes`` (the generic
    :data:`GENERIC` when None): pinned (:func:`recorded`), cached, else measured now; for
    "cuda" without a CUDA device, the probes' recorded model, else :data:`ASSUMED_H200`."""
    probes = probes or GENERIC
    key = f"{device}:{probes.name}"
    pinned = _PINNED.get(key)
    try:
        model = StepTime(**pinned) if isinstance(pinned, dict) else None
    except TypeError:
        model = None
    if model is None or not _plausible(model):
        model = _cached_or_measured(device, probes)
    _USED[key] = asdict(model)
    return model


def _cached_or_measured(device: str, probes: Probes) -> StepTime:
    if recorded_only(device):
        return probes.recorded or ASSUMED_H200
    path = cache_file(device, probes.name)
    if path.is_file():
        try:
            cached = StepTime(**json.loads(path.read_text()))
        except (ValueError, TypeError):
            cached = None
        if cached is not None and _plausible(cached):
            if _same_conditions(cached):
                return cached
            print(
                f"warning: {path} was measured with {cached.threads} threads under load "
                f"{cached.load:.1f}, not as now; measuring the device again",
                file=sys.stderr,
            )
        else:
            print(f"warning: {path} is damaged; measuring the device again", file=sys.stderr)
    progress_note(f"measuring the {device} step time (a few seconds)...")
    model = measure(torch.device(device), probes)
    write_cache(path, json.dumps(asdict(model)))
    return model


def _plausible(model: StepTime) -> bool:
    """Finite numbers, a non-negative overhead and a positive time per FLOP."""
    numbers = (model.overhead, model.per_flop)
    if not all(isinstance(v, int | float) and math.isfinite(v) for v in numbers):
        return False
    return model.overhead >= 0 and model.per_flop > 0


def _same_conditions(model: StepTime) -> bool:
    """Measured with this process's threads and as many busy cores as now (a model that
    does not record them is taken as it is)."""
    if model.threads is None or model.load is None:
        return True
    cores, load = machine()
    same_load = busy_cores(cores, model.load) == busy_cores(cores, load)
    return model.threads == torch.get_num_threads() and same_load


def measure(device: torch.device, probes: Probes | None = None) -> StepTime:
    """Time a small and a large probe for a few steps (:data:`REPEATS` times each, in turn,
    the median kept) and fit the two constants."""
    probes = probes or GENERIC
    pair = (probes.small(), probes.large())
    timed = [[seconds_per_step(p, device) for p in pair] for _ in range(REPEATS)]
    s0, s1 = (statistics.median(times) for times in zip(*timed, strict=True))
    f0, f1 = (p.flops() for p in pair)
    per_flop = max((s1 - s0) / (f1 - f0), 1e-15)
    overhead = max(s0 - f0 * per_flop, 0.0)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else _cpu_name()
    when, threads, load = time.strftime("%Y-%m-%d"), torch.get_num_threads(), machine()[1]
    source = f"measured on {name}, {threads} threads, load {load:.1f}, {when}"
    if probes.label:
        source += f", {probes.label}"
    return StepTime(device.type, name, overhead, per_flop, source, threads=threads, load=load)


class Probe(nn.Module):
    """A stacked ensemble of ``members`` two-layer pre-LN transformers of width ``width``
    (four heads, a 4x MLP) on sequences of ``length`` tokens of 4 numbers, regressing one
    number: a training step has the launches and the arithmetic of the families' ensembles."""

    BATCH, INPUTS, HEADS, LAYERS = 64, 4, 4, 2

    def __init__(self, members: int, width: int, length: int):
        super().__init__()
        self.members, self.width, self.length = members, width, length
        m, e, layers = members, width, self.LAYERS
        shapes = {
            "W_in": (m, self.INPUTS, e),
            "ln": (layers, 2, m, 1, 1, e),
            "W_QKV": (layers, m, e, 3 * e),
            "W_O": (layers, m, e, e),
            "W_1": (layers, m, e, 4 * e),
            "W_2": (layers, m, 4 * e, e),
            "W_out": (m, e, 1),
        }
        for name, shape in shapes.items():
            setattr(self, name, nn.Parameter(torch.randn(shape) * 0.02))

    def forward(self, x: Tensor) -> Tensor:
        """x: [batch, length, inputs] -> [members, batch, 1]."""
        m, (b, t, _) = self.members, x.shape
        h = torch.einsum("btd,mde->mbte", x, self.W_in)  # [m, b, t, e]
        for layer in range(self.LAYERS):
            z = F.layer_norm(h, h.shape[-1:]) * (1 + self.ln[layer, 0])
            q, k, v = torch.einsum("mbte,mef->mbtf", z, self.W_QKV[layer]).chunk(3, -1)
            q, k, v = (u.reshape(m * b, t, self.HEADS, -1).transpose(1, 2) for u in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # [m b, heads, t, e/heads]
            a = a.transpose(1, 2).reshape(m, b, t, -1)
            h = h + torch.einsum("mbte,mef->mbtf", a, self.W_O[layer])
            z = F.layer_norm(h, h.shape[-1:]) * (1 + self.ln[layer, 1])
            z = F.gelu(torch.einsum("mbte,mef->mbtf", z, self.W_1[layer]))
            h = h + torch.einsum("mbtf,mfe->mbte", z, self.W_2[layer])
        return torch.einsum("mbe,meo->mbo", h[:, :, -1], self.W_out)  # [m, b, 1]

    def flops(self) -> float:
        """FLOPs of one training step, counted by
        :func:`~infoflow.validators.throughput.flops_per_token`."""
        params = sum(p.numel() for p in self.parameters())
        attention = self.LAYERS * self.members * self.length * self.width
        return flops_per_token(params, attention) * self.BATCH * self.length

    def stepper(self, device: torch.device) -> Callable[[], None]:
        """One training step of the probe on ``device`` (torch's AdamW, a fixed batch)."""
        probe = self.to(device)
        optimizer = torch.optim.AdamW(probe.parameters(), lr=1e-3, fused=device.type == "cuda")
        x = torch.randn(Probe.BATCH, probe.length, Probe.INPUTS, device=device)
        y = torch.randn(Probe.BATCH, 1, device=device)
        return regression_step(probe, optimizer, x, y)


def regression_step(model: nn.Module, optimizer, x: Tensor, y: Tensor) -> Callable[[], None]:
    """One training step of a stacked ensemble regressing ``y`` from ``x`` (members' squared
    errors summed), under the device's precision."""
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)
    autocast = precision(x.device)

    def step() -> None:
        with autocast:
            prediction = model(x)
        ensemble_step(optimizer, schedule, ((prediction.float() - y) ** 2).mean((1, 2)))

    return step


#: The generic probes: a small and a large stacked ensemble of :class:`Probe`.
GENERIC = Probes(
    "probe4", partial(Probe, 1, 16, 8), partial(Probe, 6, 64, 32), recorded=H200_GENERIC
)


def seconds_per_step(
    probe: Stepper, device: torch.device, timed: int = TIMED_STEPS, limit: float = math.inf
) -> float:
    """The median of ``timed`` timed steps (fewer once ``limit`` seconds are spent, one at
    least), after two untimed ones: what a long run sustains (the fastest step made the
    estimates optimistic), robust to a stray slow one."""
    step = probe.stepper(device)

    def steps(count: int) -> None:
        for _ in range(count):
            step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    steps(2)  # warm-up
    times: list[float] = []
    while not times or (len(times) < timed and sum(times) < limit):
        start = time.perf_counter()
        steps(1)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cache_file(device: str, probes: str | None = None, load: float | None = None) -> Path:
    """Where the model of ``device`` is cached: one file per device type, device name,
    thread count, busy cores under ``load`` (None: the load now), torch version and probes
    (their name, with its version)."""
    folder = cache_folder()
    name = torch.cuda.get_device_name() if device == "cuda" else _cpu_name()
    probes = probes or GENERIC.name
    cores, now = machine()
    busy = busy_cores(cores, now if load is None else load)
    threads = torch.get_num_threads()
    text = f"{device}-{name}-{threads}-busy{busy}-{torch.__version__}-{probes}"
    return folder / (
        "steptime-" + "".join(c if c.isalnum() or c in "-." else "_" for c in text) + ".json"
    )


def _cpu_name() -> str:
    return platform.processor() or platform.machine() or "cpu"


def duration(seconds: float) -> str:
    """A time for ``infoflow plan``: seconds under two minutes, then minutes to a tenth, then
    hours to a tenth from two hours."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def minutes(seconds: float) -> str:
    """An estimate for ``infoflow plan``: minutes to a tenth, or whole seconds under one."""
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{math.ceil(seconds)} s"


#: What ``plan --compile`` says for a family whose trainer does not compile its step.
NOT_COMPILED = "  --compile: not used (only the retrieval trainer compiles its step)"


def gpu_line(
    source: str,
    scale: str,
    seeds: int,
    seconds: float,
    steps: int | None = None,
    overrides: tuple[str, ...] = (),
) -> str:
    """The plan's last line: the command of the GPU run (the plan's own options: its steps,
    seeds and --set overrides) and its time on the GPU step time."""
    basis = step_time("cuda").source.split(":")[0]
    options = [f"--steps {steps}"] if steps else []
    options += [f"--set {shlex.quote(override)}" for override in overrides]
    return (
        f"  on a GPU: infoflow validate {shlex.quote(source)} --scale {scale} --gpu "
        f"--seeds {seeds}{''.join(' ' + o for o in options)} "
        f"(about {minutes(seconds)} by the step time {basis})"
    )
