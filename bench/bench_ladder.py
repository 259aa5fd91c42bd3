"""The retrieval validator's ensemble at the ladder sizes it trains: tokens per second and MFU
of one group (two architectures x the scale's MLP widths x its seeds, stacked), against the
documented peak of :mod:`infoflow.validators.throughput` and against the peak measured here
(large matmuls timed in the training precision), side by side in one run.

Run from the repository root: ``python bench/bench_ladder.py [--device cuda] [--scale paper]``.
"""

from __future__ import annotations

import argparse
import time

import torch

import infoflow
from infoflow.validators.ensemble import MemberAdamW, precision
from infoflow.validators.retrieval.experiment import SCALES
from infoflow.validators.retrieval.model import EnsembleTransformer, Member
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs
from infoflow.validators.retrieval.timing import stack_meter

STEPS = 40
SEQ_LEN, EMBED = 16, 24  # the CPU suite's pairwise minimum at T = 16


def measured_peak(device: torch.device) -> float:
    """FLOP/s of a large square matmul in the precision training uses on ``device``."""
    size = 4096 if device.type == "cuda" else 1024
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    _sync(device)
    start, repeats = time.perf_counter(), 20
    for _ in range(repeats):
        a @ b
    _sync(device)
    return 2 * size**3 * repeats / (time.perf_counter() - start)


def train_ladder(device: torch.device, scale: str) -> dict:
    """The ladder group for STEPS steps: its throughput meter's rates."""
    settings = SCALES[scale]
    spec = infoflow.load_spec("specs/retrieval/cpu-suite/pairwise-min.json", ["sweep=null"])
    members = [
        Member(heads, False, seed, EMBED, width)
        for heads in ((1,), (1, 1))
        for width in settings.rungs
        for seed in range(settings.seeds)
    ]
    model = EnsembleTransformer(members, SEQ_LEN, 4, 1).to(device)
    optimizer = MemberAdamW(model.member_axes(), len(members), 1e-3, 1e-2)
    target = TargetFunction(spec, 0, device)
    data = torch.Generator(device=device).manual_seed(0)
    batch = settings.settings.batch
    speed = None
    for step in range(STEPS + 5):
        if step == 5:  # after the warm-up
            _sync(device)
            speed = stack_meter(members, SEQ_LEN, 4, batch, device)
        x = sample_inputs(spec, batch, SEQ_LEN, data)
        with precision(device):
            loss = ((model(x).float() - target(x)[:, None]) ** 2).mean((1, 2)).sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if speed:
            speed.add(len(members) * batch * SEQ_LEN)
    _sync(device)
    return {"members": len(members), "rungs": settings.rungs, **speed.rates()}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--scale", default="smoke", choices=sorted(SCALES))
    args = parser.parse_args()
    device = torch.device(args.device)
    peak = measured_peak(device)
    rates = train_ladder(device, args.scale)
    flops = rates["model_flops_per_second"]
    print(
        f"ladder group at T={SEQ_LEN}, E={EMBED}: {rates['members']} members (MLP widths "
        f"{', '.join(map(str, rates['rungs']))}), {STEPS} steps on {device} "
        f"({torch.get_num_threads()} threads)"
    )
    print(f"tokens/s {rates['tokens_per_second']:,.0f}; model FLOP/s {flops:.3g}")
    documented = f"{rates['mfu']:.2%}" if rates["mfu"] is not None else "n/a"
    print(f"MFU against the documented peak ({rates['peak_source']}): {documented}")
    print(f"MFU against the measured matmul peak ({peak:.3g} FLOP/s): {flops / peak:.2%}")


if __name__ == "__main__":
    main()
