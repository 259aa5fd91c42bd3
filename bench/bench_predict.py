"""Time ``infoflow predict`` against ``python -c "import sympy"``, and every bundled spec in one
process.

Run from the repository root with the package installed: ``python bench/bench_predict.py``.
All timings are taken side by side in one run and reported as ratios, with the targets
beside them, so the numbers mean the same on a fast or a slow machine. Nothing here is a
test: tests never time anything.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INFOFLOW = str(Path(sys.executable).parent / "infoflow")
REPEATS = 7
LOOPED = "specs/looped_kv/ouro-1.4b-h200.json"  # the README's main job
OTHERS = ("specs/retrieval/pairwise-min.json", "specs/icl_markov/park2025.json")
PER_SPEC_MS = 5.0
#: One pass over every bundled spec in a process whose modules are imported; the imports are
#: timed apart (they are paid once per process, not per spec).
IN_PROCESS = """
import sys, time
from pathlib import Path
start = time.perf_counter()
import sympy, infoflow
from infoflow.families import FAMILIES
for f in FAMILIES.values():
    f.spec_model(), f.predictor()
sympy.Symbol("x") + 1
imports = time.perf_counter() - start
specs = sorted(Path("specs").glob("*/*.json"))
start = time.perf_counter()
for spec in specs:
    infoflow.predict(spec)
print(imports, (time.perf_counter() - start) / len(specs), len(specs))
"""


def wall(cmd: list[str]) -> float:
    """Median wall time of ``cmd`` over REPEATS runs (seconds), run from the root."""
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    sympy = wall([sys.executable, "-c", "import sympy"])
    rows = [
        ("python -c pass", wall([sys.executable, "-c", "pass"]), None),
        ("infoflow --help", wall([INFOFLOW, "--help"]), None),
        (f"infoflow predict {Path(LOOPED).name} (table)", wall([INFOFLOW, "predict", LOOPED]), 1.2),
        (
            f"infoflow predict {Path(LOOPED).name} -f json",
            wall([INFOFLOW, "predict", "-f", "json", LOOPED]),
            1.5,
        ),
    ]
    for spec in OTHERS:
        rows.append(
            (f"infoflow predict {Path(spec).name} (table)", wall([INFOFLOW, "predict", spec]), None)
        )
    out = subprocess.run(
        [sys.executable, "-c", IN_PROCESS], check=True, capture_output=True, text=True, cwd=ROOT
    ).stdout.split()
    imports, per_spec, count = float(out[0]), float(out[1]), int(out[2])

    print(
        f"median of {REPEATS} runs each; baseline = 'python -c \"import sympy\"' "
        f"({sympy * 1e3:.0f} ms here)"
    )
    print(f"{'command':<46} {'ms':>7} {'/ import sympy':>15}   target")
    for name, seconds, target in rows:
        ratio = seconds / sympy
        goal = "" if target is None else f"<= {target}x ({_verdict(ratio <= target)})"
        print(f"{name:<46} {seconds * 1e3:>7.1f} {ratio:>14.2f}x   {goal}")
    print(
        f"all {count} bundled specs in one process: {per_spec * 1e3:.2f} ms a spec   target "
        f"<= {PER_SPEC_MS:.0f} ms ({_verdict(per_spec * 1e3 <= PER_SPEC_MS)}); imports, once: "
        f"{imports * 1e3:.0f} ms"
    )


def _verdict(met: bool) -> str:
    return "met" if met else "MISSED"


if __name__ == "__main__":
    main()
