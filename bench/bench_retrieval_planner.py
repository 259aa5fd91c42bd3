"""How long the retrieval planner takes against the number of layers, heads and k.

Run from the repository root: ``python bench/bench_retrieval_planner.py``. Every row is a
fresh derivation (caches cleared), timed with ``time.perf_counter``: parse, canonical form,
the schedule search on the spec's architecture, the minimal architectures and the exponent.
"""

from __future__ import annotations

import time

import infoflow
from infoflow.retrieval import canonical_to_tree, mechanisms, text_to_expression
from infoflow.retrieval.derive import _derive

INTRINSIC = "sum(max(bilinear(x[s], A[i], x[t]) for s in T for t in T) for i in range(D))"
CHAIN = (
    "max(dot(x[a], x[b]) + dot(x[b], x[c]) + dot(x[c], x[e]) "
    "for a in T for b in T for c in T for e in T)"
)
KTH = "kth_largest((dot(q, x[t]) for t in T), k={k})"
TWENTY = " + ".join(f"kth_largest((dot(q{i}, x[t]) for t in T), k={i + 2})" for i in range(20))


def clear() -> None:
    caches = (
        _derive,
        canonical_to_tree.tree_of,
        text_to_expression._parse_cached,
        canonical_to_tree.order,
        mechanisms.needs_global,
    )
    for cached in caches:
        cached.cache_clear()


def timed(target: str, layers: int, heads: int, seq_len: int, params=None) -> tuple[float, str]:
    clear()
    spec = {
        "kind": "retrieval",
        "target": target,
        "params": params or {},
        "input_dim": 4,
        "seq_len": seq_len,
        "architecture": {"layers": layers, "heads": heads, "embed_dim": 256},
    }
    start = time.perf_counter()
    result = infoflow.predict(spec)
    seconds = time.perf_counter() - start
    verdict = "efficient" if result["efficient"].value else "alpha grows with T"
    return seconds, f"{verdict}, min layers {result['min_layers'].value:,}"


def main() -> None:
    rows = []
    for size in (2, 4, 8, 16):
        rows.append(
            (
                f"intrinsic dimension D = 6, {size} x {size}",
                *timed(INTRINSIC, size, size, 64, {"D": 6}),
            )
        )
        rows.append((f"chain of four, {size} x {size}", *timed(CHAIN, size, size, 64)))
        rows.append(
            (f"20 k-th terms (k = 2..21), {size} x {size}", *timed(TWENTY, size, size, 1000))
        )
    for k in (10, 100, 1_000, 10_000, 100_000):
        rows.append((f"k = {k:,} on T = 10^6, 16 x 16", *timed(KTH.format(k=k), 16, 16, 10**6)))
    rows.append(("k = 10^5 on T = 10^6, 1024 x 1", *timed(KTH.format(k=100_000), 1024, 1, 10**6)))
    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}} {'seconds':>8}  result")
    for name, seconds, result in rows:
        print(f"{name:<{width}} {seconds:>8.3f}  {result}")


if __name__ == "__main__":
    main()
