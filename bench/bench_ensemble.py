"""The ensemble trainer against a per-model training loop at equal work: 32 small members,
the same steps and batch, side by side in one run, reported as a ratio.

Run from the repository root: ``python bench/bench_ensemble.py [--device cuda]``.
"""

from __future__ import annotations

import argparse
import time

import torch

import infoflow
from infoflow.validators.retrieval.model import EnsembleTransformer, Member
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs

MEMBERS, STEPS = 32, 30
SIZES = {"small (T=8, E=16, batch 32)": (8, 16, 32), "smoke (T=16, E=32, batch 64)": (16, 32, 64)}


def train(members: list[Member], device, spec, size: tuple[int, int, int]) -> None:
    seq, embed, batch = size
    target = TargetFunction(spec, 0, device)
    model = EnsembleTransformer(
        [Member(m.heads, m.positional_encoding, m.seed, embed) for m in members], seq, 4, 1
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.Generator(device=device).manual_seed(0)
    for _ in range(STEPS):
        x = sample_inputs(spec, batch, seq, data)
        loss = ((model(x) - target(x)[:, None]) ** 2).mean((1, 2)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    device = torch.device(parser.parse_args().device)
    spec = infoflow.load_spec("specs/retrieval/pairwise-min.json", ["sweep=null"])
    members = [Member((2, 2), True, seed) for seed in range(MEMBERS)]
    print(f"{MEMBERS} two-layer members, {STEPS} steps each, pairwise-minimum target, on "
          f"{device} ({torch.get_num_threads()} threads)")  # fmt: skip
    print(f"{'size':<30} {'ensemble s':>10} {'one by one s':>13} {'ratio':>7}")
    for name, size in SIZES.items():
        train(members[:2], device, spec, size)  # warm up
        start = time.perf_counter()
        train(members, device, spec, size)
        ensemble = time.perf_counter() - start
        start = time.perf_counter()
        for member in members:
            train([member], device, spec, size)
        loop = time.perf_counter() - start
        print(f"{name:<30} {ensemble:>10.2f} {loop:>13.2f} {loop / ensemble:>6.1f}x")


if __name__ == "__main__":
    main()
