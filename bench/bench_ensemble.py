"""The ensemble trainer against a per-model training loop at equal work: 32 small members,
the same steps and batch, side by side in one run, reported as a ratio.

Run from the repository root: ``python bench/bench_ensemble.py [--device cuda]``.
"""

from __future__ import annotations

import argparse
import time

import torch
from infoflow.validators.model import EnsembleTransformer, Member
from infoflow.validators.targets import TargetFunction, sample_inputs

import infoflow

MEMBERS, STEPS, BATCH, SEQ, EMBED = 32, 30, 64, 16, 32


def train(members: list[Member], device: torch.device, spec, target) -> None:
    model = EnsembleTransformer(members, EMBED, SEQ, 4, 1).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.Generator().manual_seed(0)
    for _ in range(STEPS):
        x = sample_inputs(spec, BATCH, SEQ, data)
        y = target(x)[:, None].to(device)
        loss = ((model(x.to(device)) - y) ** 2).mean((1, 2)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    device = torch.device(parser.parse_args().device)
    spec = infoflow.load_spec("specs/retrieval/pairwise-min.json", ["sweep=null"])
    target = TargetFunction(spec, 0)
    members = [Member((2, 2), True, seed) for seed in range(MEMBERS)]
    train(members[:2], device, spec, target)  # warm up

    start = time.perf_counter()
    train(members, device, spec, target)
    ensemble = time.perf_counter() - start
    start = time.perf_counter()
    for member in members:
        train([member], device, spec, target)
    loop = time.perf_counter() - start

    print(f"{MEMBERS} members, {STEPS} steps, batch {BATCH}, T={SEQ}, E={EMBED}, on {device} "
          f"({torch.get_num_threads()} threads)")  # fmt: skip
    print(f"{'ensemble (stacked weights)':<30} {ensemble:>7.2f} s")
    print(f"{'one model at a time':<30} {loop:>7.2f} s")
    print(f"ratio: {loop / ensemble:.1f}x")


if __name__ == "__main__":
    main()
