"""Decoding with the latent store (LLA per head at rho = 4, K/V rebuilt on every read)
against the full per-loop cache: tokens per second, cache bytes and peak memory, one run,
as ratios, on the device asked for.

Run from the repository root: ``python bench/bench_latent_store.py [--device cuda]``.
"""

from __future__ import annotations

import argparse
import resource
import time

import torch

from infoflow.validators.looped_kv import codec as kv_codec
from infoflow.validators.looped_kv.model import ExactAttention, LoopedConfig, LoopedDecoder

BATCH, TOKENS = 8, 128


def peak_bytes(device: torch.device) -> int:
    """Peak memory since the last reset: the device's allocator on CUDA, the process's
    resident set on the CPU (which only grows: read it as an upper bound)."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    device = torch.device(parser.parse_args().device)
    torch.manual_seed(0)
    config = LoopedConfig(max_len=TOKENS)
    model = LoopedDecoder(config).eval().to(device)
    x = torch.randint(0, config.vocab, (BATCH, TOKENS)).to(device)
    record = ExactAttention(record=True)
    with torch.no_grad():
        model(x, record)
    k, v = kv_codec.core_kv(record, config)
    codecs = (kv_codec.SVDCodec.fit(k, "loop", 12), kv_codec.SVDCodec.fit(v, "loop", 20))
    print(
        f"decode {TOKENS} tokens x batch {BATCH}, {config.prelude} + {config.core} x "
        f"{config.loops} loops + {config.coda} layers, on {device} "
        f"({torch.get_num_threads()} threads)"
    )
    rows = {}
    for name, chosen in (("full cache", None), ("latent store, rho 4", codecs)):
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        store = kv_codec.LatentStore(model, BATCH, TOKENS, chosen)
        start = time.perf_counter()
        kv_codec.decode(model, x, store)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        seconds = time.perf_counter() - start
        rows[name] = (BATCH * TOKENS / seconds, store.nbytes(), peak_bytes(device))
        print(
            f"{name:<22} {rows[name][0]:8.0f} tokens/s  {rows[name][1]:>10,} cache bytes  "
            f"{rows[name][2] / 2**20:8.1f} MiB peak"
        )
    (full_speed, full_bytes, _), (latent_speed, latent_bytes, _) = rows.values()
    print(
        f"latent / full: speed {latent_speed / full_speed:.2f}x, "
        f"cache bytes {latent_bytes / full_bytes:.3f}x"
    )


if __name__ == "__main__":
    main()
