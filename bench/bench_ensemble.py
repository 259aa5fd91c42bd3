"""The ensemble trainer against a per-model training loop at equal work: 32 small members,
the same steps and batch, side by side in one run, reported as a ratio (target: at least 3x
at the smoke size), with tokens per second and MFU against the device's peak
(:mod:`infoflow.validators.throughput`), and where an ensemble step's time goes.

Run from the repository root: ``python bench/bench_ensemble.py [--device cuda]``.
"""

from __future__ import annotations

import argparse
import time

import torch

import infoflow
from infoflow.validators.retrieval.model import EnsembleTransformer, Member
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs
from infoflow.validators.retrieval.timing import stack_meter

MEMBERS, STEPS, TARGET = 32, 30, 3.0
TIMED = 8  # members trained one at a time; their time is scaled to MEMBERS
SIZES = {"small (T=8, E=16, batch 32)": (8, 16, 32), "smoke (T=16, E=32, batch 64)": (16, 32, 64)}


def train(members: list[Member], device, spec, size: tuple[int, int, int], parts=None):
    """Train ``members`` as one ensemble; returns its throughput meter. ``parts``, when given,
    collects seconds per phase (data, forward+backward, optimiser)."""
    seq, embed, batch = size
    target = TargetFunction(spec, 0, device)
    model = EnsembleTransformer(
        [Member(m.heads, m.positional_encoding, m.seed, embed) for m in members], seq, 4, 1
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.Generator(device=device).manual_seed(0)
    speed = stack_meter(model.members, seq, 4, batch, device)
    for _ in range(STEPS):
        mark = _clock(device)
        x = sample_inputs(spec, batch, seq, data)
        y = target(x)[:, None]
        mark = _tick(parts, "data", mark, device)
        loss = ((model(x) - y) ** 2).mean((1, 2)).sum()
        optimizer.zero_grad()
        loss.backward()
        mark = _tick(parts, "forward+backward", mark, device)
        optimizer.step()
        _tick(parts, "optimiser", mark, device)
        speed.add(len(members) * batch * seq)
    return speed


def _clock(device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter()


def _tick(parts, name: str, since: float, device) -> float:
    if parts is None:
        return since
    now = _clock(device)
    parts[name] = parts.get(name, 0.0) + now - since
    return now


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    device = torch.device(parser.parse_args().device)
    spec = infoflow.load_spec("specs/retrieval/pairwise-min.json", ["sweep=null"])
    members = [Member((2, 2), True, seed) for seed in range(MEMBERS)]
    print(
        f"{MEMBERS} two-layer members, {STEPS} steps each, pairwise-minimum target, on "
        f"{device} ({torch.get_num_threads()} threads)"
    )
    print(f"one by one: {TIMED} of the {MEMBERS} members timed, scaled to {MEMBERS}")
    print(
        f"{'size':<30} {'ensemble s':>10} {'one by one s':>13} {'ratio':>7} "
        f"{'ensemble tok/s':>15} {'MFU':>6}   target"
    )
    for name, size in SIZES.items():
        train(members[:2], device, spec, size)  # warm up
        start = time.perf_counter()
        speed = train(members, device, spec, size).rates()
        ensemble = time.perf_counter() - start
        start = time.perf_counter()
        for member in members[:TIMED]:
            train([member], device, spec, size)
        loop = (time.perf_counter() - start) * MEMBERS / TIMED
        ratio = loop / ensemble
        verdict = "met" if ratio >= TARGET else "MISSED"
        goal = f">= {TARGET:.0f}x ({verdict})" if "smoke" in name else ""
        tokens, mfu = speed["tokens_per_second"], speed["mfu"] or 0
        print(
            f"{name:<30} {ensemble:>10.2f} {loop:>13.2f} {ratio:>6.1f}x {tokens:>15,.0f} "
            f"{mfu:>6.2%}   {goal}"
        )
    print(f"peak: {speed['peak_source']}")
    parts: dict[str, float] = {}
    train(members, device, spec, SIZES[list(SIZES)[-1]], parts)
    total = sum(parts.values())
    shares = ", ".join(f"{k} {v / total:.0%}" for k, v in parts.items())
    print(f"where an ensemble step's time goes at the smoke size: {shares}")


if __name__ == "__main__":
    main()
