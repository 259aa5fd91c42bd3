"""How many threads torch trains with: the cores this process may use that the machine's
load leaves free, unless the user said how many.

Tiny models on more OpenMP threads than there are free cores crawl (each step waits for the
thread whose core is busy: a looped smoke run took 9.5 minutes for what one thread does in
under 2), so ``validate`` and ``plan`` never oversubscribe: one thread per free core, at
least one. An explicit count (``--threads``, or ``OMP_NUM_THREADS`` in the environment) wins.
The count a run used is in its report (:func:`environment`): results agree to the last bit
only on the same count.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Threads:
    """The chosen thread count, the sentence that says why, and whether the machine is busy
    enough to slow training (and the step times measured now)."""

    count: int
    reason: str
    loaded: bool

    def line(self) -> str:
        """``torch threads: 1 (2 cores, load 1.2: 1 free); warning: ...`` in one line."""
        warning = "; warning: the machine is loaded, training runs slower" if self.loaded else ""
        return f"torch threads: {self.count} ({self.reason}){warning}"


def busy_cores(cores: int, load: float) -> int:
    """The cores the load average keeps busy, rounded to the nearest, at most ``cores``."""
    return min(cores, math.floor(max(load, 0.0) + 0.5))


def choose(cores: int, load: float, requested: int | None = None, source: str = "") -> Threads:
    """The threads to train with on ``cores`` usable cores under ``load`` (the 1-minute
    load average): ``requested`` when given (``source`` says by what), else one per free
    core, at least one. Loaded: a quarter of the cores or more busy (at least one)."""
    busy = busy_cores(cores, load)
    loaded = busy >= max(1, cores / 4)
    state = f"{cores} cores, load {load:.1f}"
    if requested is not None:
        return Threads(requested, f"{source}; {state}", loaded)
    free = max(1, cores - busy)
    return Threads(free, f"{state}: {free} free", loaded)


#: The load averages :func:`held_load` holds (the outermost one decides).
_HELD: list[float] = []


def machine() -> tuple[int, float]:
    """The cores this process may run on and the 1-minute load average (0 where the system
    does not report one; inside :func:`held_load`, the one it read on entry)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    if _HELD:
        return cores, _HELD[-1]
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    return cores, load


@contextmanager
def held_load() -> Iterator[float]:
    """While the block runs, :func:`machine` reports the load average read on entry. A run
    plans with it (which step-time model and cache apply), and planning's own work (timed
    steps, pilots) raises the load: read afresh, it would change the choices halfway."""
    _HELD.append(machine()[1])
    try:
        yield _HELD[-1]
    finally:
        _HELD.pop()


@contextmanager
def free_cores(requested: int | None = None) -> Iterator[Threads]:
    """Torch's thread count for this machine while the block runs (``requested``, else
    ``OMP_NUM_THREADS``, else the free cores), the one before restored after it; the load
    read to choose it is held meanwhile (:func:`held_load`)."""
    import torch

    source = "--threads"
    if requested is None and os.environ.get("OMP_NUM_THREADS", "").isdigit():
        requested, source = int(os.environ["OMP_NUM_THREADS"]), "OMP_NUM_THREADS"
    with held_load():
        chosen, before = choose(*machine(), requested or None, source), torch.get_num_threads()
        torch.set_num_threads(chosen.count)
        try:
            yield chosen
        finally:
            torch.set_num_threads(before)


def keep_threads(recorded: object, device_type: str) -> str | None:
    """A resumed CPU run trains (and plans) on the thread count it started with
    (``recorded``, from its settings): float sums and step times depend on it, and a resumed
    run reproduces the uninterrupted one. The line that says so, None where nothing was
    recorded."""
    import torch

    if device_type != "cpu" or not isinstance(recorded, int) or recorded < 1:
        return None
    torch.set_num_threads(recorded)
    return f"torch threads: {recorded}, as when this run started"


def environment() -> dict[str, object]:
    """What a run's floating-point results depend on beyond its content, for report.json:
    torch's version and threads (a reduction over 1 or 2 threads rounds differently), Python,
    the machine and its CPU model (kernels differ between CPU families)."""
    import platform

    import torch

    return {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu": cpu_model(),
    }


def cpu_model() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo; else what the platform says, or '')."""
    import platform
    from pathlib import Path

    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor()
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    return names[0] if names else platform.processor()
