"""Eight ensemble groups (the tiny icl_markov sweep at eight seeds) trained by the local
executor and by Ray on a local cluster of this machine, side by side in one run, as a
ratio: what Ray costs on one machine.

Run from the repository root: ``python bench/bench_executor.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPEC = {
    "kind": "icl_markov",
    "states": 3,
    "chains": 1,
    "context_len": 16,
    "model": {"layers": 2, "d_model": 16, "heads": 2, "mlp_width": 32},
    "training": {"steps": 200, "batch_size": 16, "lr": 0.003},
    "sweep": {"chains": [1, 4, 64], "seed": list(range(8))},
}


def main() -> None:
    infoflow = str(Path(sys.executable).parent / "infoflow")
    with tempfile.TemporaryDirectory() as folder:
        spec = Path(folder) / "eight-groups.json"
        spec.write_text(json.dumps(SPEC))
        seconds = {}
        for executor in ("local", "ray"):
            start = time.perf_counter()
            subprocess.run(
                [
                    infoflow,
                    "validate",
                    str(spec),
                    "--quiet",
                    "--device",
                    "cpu",
                    "--executor",
                    executor,
                    "--out",
                    f"{folder}/{executor}",
                ],
                check=True,
                capture_output=True,
            )
            seconds[executor] = time.perf_counter() - start
    print("8 groups (3 members each, 200 steps), whole `infoflow validate` runs, on this machine")
    for executor, value in seconds.items():
        print(f"{executor:<6} {value:6.1f} s")
    print(f"ray / local: {seconds['ray'] / seconds['local']:.2f}x")


if __name__ == "__main__":
    main()
