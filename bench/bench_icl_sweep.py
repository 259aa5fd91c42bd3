"""A K sweep of the icl_markov validator trained as one ensemble against the same members
trained one by one: equal steps, batch and data, side by side in one run, as a ratio. The
data sampling is part of each step, as in the validator.

Run from the repository root: ``python bench/bench_icl_sweep.py [--device cuda]``.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

import infoflow
from infoflow.validators.icl_markov.ksweep.data import IclGroup, MemberData
from infoflow.validators.icl_markov.model import StackedGPT

STEPS = 20
CHAINS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]


def train(group: IclGroup, device: torch.device) -> None:
    spec = group.spec
    data = MemberData(group, device)
    model = StackedGPT(
        [k for k, _ in group.members],
        spec.states,
        spec.context_len,
        spec.model.layers,
        spec.model.d_model,
        spec.model.heads,
        spec.model.mlp_width,
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator(device=device).manual_seed(0)
    for _ in range(STEPS):
        x = data.batches(1, spec.training.batch_size, spec.context_len, generator)[0]
        logits = model(x[:, :, :-1])
        loss = F.cross_entropy(logits.flatten(0, 2), x[:, :, 1:].flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    device = torch.device(parser.parse_args().device)
    spec = infoflow.load_spec("specs/icl_markov/smoke-c3.json", ["sweep=null"])
    group = lambda chains: IclGroup("bench", spec, chains, [0], [], 8)  # noqa: E731
    print(
        f"{len(CHAINS)} members (K = 1..1024) of the smoke-c3 spec, {STEPS} steps each "
        f"(setup and data included), on {device} ({torch.get_num_threads()} threads)"
    )
    train(group([1, 2]), device)  # warm up
    start = time.perf_counter()
    train(group(CHAINS), device)
    together = time.perf_counter() - start
    start = time.perf_counter()
    for k in CHAINS:
        train(group([k]), device)
    alone = time.perf_counter() - start
    print(f"ensemble {together:.1f} s, one by one {alone:.1f} s: {alone / together:.2f}x")


if __name__ == "__main__":
    main()
