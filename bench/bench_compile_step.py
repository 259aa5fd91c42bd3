"""Whether ``torch.compile`` speeds up a retrieval group's training step: the group's stack
(its members, T and batch, as the validator plans it) trained for a few steps eagerly and
compiled, side by side in one run; the ratio of their step times and the compile time.

Run from the repository root, e.g. on a GPU: ``python bench/bench_compile_step.py
specs/retrieval/intrinsic-dimension-D4.json --scale paper --device cuda``.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch
from bench_profile_step import arguments, first_group

from infoflow.validators.ensemble import MemberAdamW, precision
from infoflow.validators.retrieval.model import EnsembleTransformer

STEPS = 20


def step_seconds(spec_path: Path, scale: str, device: torch.device, compiled: bool):
    """Seconds per step after warm-up, and the seconds of the first (compiling) steps."""
    group = first_group(spec_path, scale, device)
    torch.manual_seed(0)
    model = EnsembleTransformer(group.members, group.seq_len, 4, 1).to(device)
    optimizer = MemberAdamW(model.member_axes(), len(group.members), 1e-3, 1e-2)
    forward = torch.compile(model) if compiled else model
    x = torch.randn(group.settings.batch, group.seq_len, 4, device=device)
    y = torch.randn(group.settings.batch, 1, device=device)

    def step() -> None:
        with precision(device):
            loss = ((forward(x).float() - y) ** 2).mean((1, 2)).sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    start = time.perf_counter()
    for _ in range(3):
        step()
    _sync(device)
    first = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(STEPS):
        step()
    _sync(device)
    return (time.perf_counter() - start) / STEPS, first, group


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    args = arguments()
    device = torch.device(args.device)
    eager, _, group = step_seconds(args.spec, args.scale, device, False)
    compiled, first, _ = step_seconds(args.spec, args.scale, device, True)
    shape = f"{len(group.members)} members, T={group.seq_len}, batch {group.settings.batch}"
    print(f"{group.name}: {shape}, on {device}")
    ratio = f"{eager / compiled:.2f}x"
    print(f"eager {eager * 1e3:.1f} ms/step; compiled {compiled * 1e3:.1f} ms/step ({ratio})")
    print(f"first 3 compiled steps (compiling): {first:.0f} s")


if __name__ == "__main__":
    main()
