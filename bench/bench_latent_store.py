"""Decoding with the latent store (LLA per head at rho = 4, K/V rebuilt on every read)
against the full per-loop cache: tokens per second and cache bytes, one run, as ratios.

Run from the repository root: ``python bench/bench_latent_store.py``.
"""

from __future__ import annotations

import time

import torch

from infoflow.validators.looped_kv import codec as kv_codec
from infoflow.validators.looped_kv.model import ExactAttention, LoopedConfig, LoopedDecoder

BATCH, TOKENS = 8, 128


def main() -> None:
    torch.manual_seed(0)
    config = LoopedConfig(max_len=TOKENS)
    model = LoopedDecoder(config).eval()
    x = torch.randint(0, config.vocab, (BATCH, TOKENS))
    record = ExactAttention(record=True)
    with torch.no_grad():
        model(x, record)
    k, v = kv_codec.core_kv(record, config)
    codecs = (kv_codec.SVDCodec.fit(k, "loop", 12), kv_codec.SVDCodec.fit(v, "loop", 20))
    print(
        f"decode {TOKENS} tokens x batch {BATCH}, {config.prelude} + {config.core} x "
        f"{config.loops} loops + {config.coda} layers, on cpu ({torch.get_num_threads()} threads)"
    )
    rows = {}
    for name, chosen in (("full cache", None), ("latent store, rho 4", codecs)):
        store = kv_codec.LatentStore(model, BATCH, TOKENS, chosen)
        start = time.perf_counter()
        kv_codec.decode(model, x, store)
        seconds = time.perf_counter() - start
        rows[name] = (BATCH * TOKENS / seconds, store.nbytes())
        print(f"{name:<22} {rows[name][0]:8.0f} tokens/s  {rows[name][1]:>10,} cache bytes")
    (full_speed, full_bytes), (latent_speed, latent_bytes) = rows.values()
    print(
        f"latent / full: speed {latent_speed / full_speed:.2f}x, "
        f"cache bytes {latent_bytes / full_bytes:.3f}x"
    )


if __name__ == "__main__":
    main()
