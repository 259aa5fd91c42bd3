"""A 10^5-point sweep of one retrieval target (T, E and heads varying), evaluated vectorised
from the library and from the CLI, beside the per-point path (``infoflow.predict`` at every
point, derivation cached) on a 1,000-point slice of the same grid.

Run from the repository root: ``python bench/bench_retrieval_sweep.py``. Everything is timed
side by side in one run; the target (under 2 s for 10^5 points) is printed beside each row.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import infoflow
from infoflow.retrieval.sweep import sweep

INFOFLOW = str(Path(sys.executable).parent / "infoflow")
TARGET_S = 2.0
SPEC = {
    "kind": "retrieval",
    "target": "sum(max(bilinear(x[s], A[i], x[t]) for s in T for t in T) for i in range(D))",
    "params": {"D": 4},
    "input_dim": 4,
    "seq_len": 64,
    "architecture": {"layers": 2, "heads": [4, 3], "embed_dim": 64},
    "sweep": {
        "seq_len": list(range(8, 8 + 50 * 16, 16)),
        "architecture.embed_dim": list(range(16, 16 + 250 * 8, 8)),
        "architecture.heads": [[1, 1], [1, 2], [2, 1], [2, 2], [4, 3], [1, 4], [4, 1], [4, 4]],
    },
}


def wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    spec = infoflow.load_spec(SPEC)
    start = time.perf_counter()
    points = len(sweep(spec))
    library = time.perf_counter() - start

    few = {
        **SPEC,
        "sweep": {
            **SPEC["sweep"],
            "architecture.embed_dim": SPEC["sweep"]["architecture.embed_dim"][:3],
        },
    }
    start = time.perf_counter()
    expanded = infoflow.expand(infoflow.load_spec(few))
    for _, point in expanded:
        infoflow.predict(point)
    per_point = (time.perf_counter() - start) / len(expanded)

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "sweep.json"
        path.write_text(json.dumps(SPEC))
        cli_json = wall([INFOFLOW, "sweep", str(path)])
        cli_table = wall([INFOFLOW, "sweep", str(path), "--format", "table"])

    print(f"{points:,} sweep points of the intrinsic-dimension target (T, E, heads varying)")
    print(f"{'evaluation':<44} {'s':>7} {'us/point':>9}   target")
    rows = [
        ("library: retrieval.sweep.sweep (vectorised)", library),
        ("CLI: infoflow sweep (JSON lines, fresh process)", cli_json),
        ("CLI: infoflow sweep --format table", cli_table),
    ]
    for name, seconds in rows:
        verdict = "met" if seconds < TARGET_S else "MISSED"
        print(
            f"{name:<44} {seconds:>7.2f} {seconds / points * 1e6:>9.2f}   "
            f"< {TARGET_S:.0f} s ({verdict})"
        )
    estimate = per_point * points
    print(
        f"{'per point: infoflow.predict (cached), est.':<44} {estimate:>7.2f} "
        f"{per_point * 1e6:>9.2f}   (measured on {len(expanded):,} points)"
    )
    print(f"ratio (per point / vectorised library): {estimate / library:.0f}x")


if __name__ == "__main__":
    main()
