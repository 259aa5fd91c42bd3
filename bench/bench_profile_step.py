"""Where one retrieval group's training step spends its time: torch.profiler over steps of
the real loop (``train_group``; the window holds no held-out pass or checkpoint, which come
every ``eval_every`` steps), the ops that take the most host time and the most device time,
and how busy the device was.

Run from the repository root, e.g. on a GPU: ``python bench/bench_profile_step.py
specs/retrieval/intrinsic-dimension-D4.json --scale paper --device cuda``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, schedule

import infoflow
from infoflow.validators.protocol import Context
from infoflow.validators.retrieval.train import train_group
from infoflow.validators.retrieval.validator import RetrievalValidator
from infoflow.validators.store import Recorder

WARMUP, ACTIVE = 10, 30


def first_group(spec_path: Path, scale_name: str, device: torch.device, steps: int | None = None):
    """The first group the validator plans for the spec at the scale on ``device``, its
    steps ``steps`` when given (its evaluation interval kept)."""
    validator = RetrievalValidator()
    scale = validator.scale(scale_name, None, None, device.type)
    if steps:
        scale = replace(scale, settings=replace(scale.settings, steps=steps))
    with tempfile.TemporaryDirectory() as folder:
        spec = infoflow.load_spec(spec_path)
        return validator.plan(spec_path.stem, spec, scale, Path(folder)).trained_groups[0]


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("spec", type=Path)
    parser.add_argument("--scale", default="smoke")
    parser.add_argument("--device", default="cpu")
    return parser.parse_args()


def profile_group(spec_path: Path, scale_name: str, device: torch.device) -> None:
    # the scale's evaluation interval: no held-out pass or checkpoint inside the window
    group = first_group(spec_path, scale_name, device, WARMUP + ACTIVE + 2)
    with tempfile.TemporaryDirectory() as folder:
        activities = [ProfilerActivity.CPU]
        if device.type == "cuda":
            activities.append(ProfilerActivity.CUDA)
        steps: list[float] = []
        with profile(
            activities=activities, schedule=schedule(wait=0, warmup=WARMUP, active=ACTIVE, repeat=1)
        ) as prof:

            def progress(*_: object) -> None:
                if device.type == "cuda":
                    torch.cuda.synchronize()
                steps.append(time.perf_counter())
                prof.step()

            train_group(group, Context(device, Recorder(), Path(folder), progress))
    active = steps[WARMUP : WARMUP + ACTIVE + 1]
    wall = (active[-1] - active[0]) / (len(active) - 1)
    print(
        f"{group.name}: {len(group.members)} members, T={group.seq_len}, batch "
        f"{group.settings.batch}, eval every {group.settings.eval_every} steps, on {device}"
    )
    print(f"wall per step (steps {WARMUP + 1}-{WARMUP + ACTIVE}): {wall * 1e3:.1f} ms")
    events = prof.key_averages()
    if device.type == "cuda":
        kernels = [e for e in events if e.device_type == DeviceType.CUDA]
        busy = sum(e.self_device_time_total for e in kernels) / ACTIVE / 1e3
        print(f"device busy per step: {busy:.1f} ms ({busy / (wall * 1e3):.0%} of the wall time)")
        print(
            events.table(sort_by="self_device_time_total", row_limit=15, max_name_column_width=60)
        )
    print(events.table(sort_by="self_cpu_time_total", row_limit=15, max_name_column_width=60))


def main() -> None:
    args = arguments()
    profile_group(args.spec, args.scale, torch.device(args.device))


if __name__ == "__main__":
    main()
