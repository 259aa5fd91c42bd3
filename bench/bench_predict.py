"""Time ``infoflow predict`` on every bundled spec, and the CLI's cold start against sympy's.

Run from the repository root with the package installed: ``python bench/bench_predict.py``.
All timings are taken side by side in one run and reported as ratios, so the numbers mean
the same on a fast or a slow machine. Nothing here is a test: tests never time anything.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INFOFLOW = str(Path(sys.executable).parent / "infoflow")
REPEATS = 5


def wall(cmd: list[str]) -> float:
    """Median wall time of ``cmd`` over REPEATS runs (seconds)."""
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    specs = sorted(ROOT.glob("specs/*/*.json"))
    python = wall([sys.executable, "-c", "pass"])
    sympy = wall([sys.executable, "-c", "import sympy"])
    help_ = wall([INFOFLOW, "--help"])
    one = wall([INFOFLOW, "predict", "-f", "json", str(specs[0])])
    every = wall([INFOFLOW, "predict", "-f", "json", *map(str, specs)])

    import infoflow

    start = time.perf_counter()
    for spec in specs:
        infoflow.predict(spec)
    in_process = (time.perf_counter() - start) / len(specs)

    print(
        f"{len(specs)} bundled specs; median of {REPEATS} runs each; baseline = "
        f"'python -c \"import sympy\"' ({sympy * 1e3:.0f} ms here)"
    )
    print(f"{'command':<44} {'ms':>8} {'/ import sympy':>15}")
    rows = [
        ("python -c pass", python),
        ("infoflow --help", help_),
        (f"infoflow predict ({specs[0].name})", one),
        (f"infoflow predict (all {len(specs)} specs)", every),
        ("infoflow.predict(spec), in process, per spec", in_process),
    ]
    for name, seconds in rows:
        print(f"{name:<44} {seconds * 1e3:>8.1f} {seconds / sympy:>14.2f}x")


if __name__ == "__main__":
    main()
