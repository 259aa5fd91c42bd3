"""A 1,000-point sweep of a retrieval spec: cached derivation against deriving every point
from scratch, side by side in one run, reported as a ratio.

Run from the repository root: ``python bench/bench_retrieval_sweep.py``. The grid varies
only numbers (T, E, eps), so one symbolic derivation serves every point; "from scratch"
clears the caches before each point, as a tool without them would have to.
"""

from __future__ import annotations

import time

import infoflow
from infoflow.retrieval import parse
from infoflow.retrieval.predict import _derive, comparison_tree

SPEC = {
    "kind": "retrieval",
    "target": "sum(max(bilinear(x[s], A[i], x[t]) for s in T for t in T) for i in range(D))",
    "params": {"D": 4},
    "input_dim": 4,
    "architecture": {"layers": 2, "heads": [4, 3], "embed_dim": 64},
    "sweep": {
        "seq_len": [2**k for k in range(3, 13)],
        "architecture.embed_dim": list(range(16, 176, 16)),
        "epsilon": [10**-k for k in range(1, 11)],
    },
}


def clear_caches() -> None:
    _derive.cache_clear()
    parse._parse_cached.cache_clear()
    comparison_tree.cache_clear()


def run(from_scratch: bool) -> tuple[float, list]:
    clear_caches()
    start = time.perf_counter()
    points = infoflow.expand(infoflow.load_spec(SPEC))
    values = []
    for _, point in points:
        if from_scratch:
            clear_caches()
        values.append(infoflow.predict(point)["cost_exponent"].value)
    return time.perf_counter() - start, values


def main() -> None:
    cached, cached_values = run(from_scratch=False)
    scratch, scratch_values = run(from_scratch=True)
    assert cached_values == scratch_values, "the cache changed a result"
    n = len(cached_values)
    print(f"{n} sweep points of the intrinsic-dimension target, heads (4, 3)")
    print(f"{'evaluation':<32} {'total s':>8} {'ms/point':>9}")
    print(f"{'cached derivation':<32} {cached:>8.2f} {cached / n * 1e3:>9.2f}")
    print(f"{'derived from scratch each point':<32} {scratch:>8.2f} {scratch / n * 1e3:>9.2f}")
    print(f"ratio (from scratch / cached): {scratch / cached:.1f}x")


if __name__ == "__main__":
    main()
