"""Shared helpers: the bundled specs and the real ``infoflow`` entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"
LOOPED_KV = SPECS / "looped_kv"


def infoflow_cmd() -> list[str]:
    """The installed console script (the entry point a user runs)."""
    script = Path(sys.executable).parent / "infoflow"
    if not script.exists():
        pytest.fail(f"the infoflow console script is not installed next to {sys.executable}")
    return [str(script)]


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*infoflow_cmd(), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
    )


def park_only_calibration(folder: Path, **anchor) -> Path:
    """The icl_markov calibration as shipped before any run (the Park et al. anchor, a = 0.7,
    transient_scale 1), with ``anchor`` fields added to the Park anchor; tests that must not
    depend on the constants of the day use it."""
    from infoflow.icl_markov.calibration import SHIPPED

    data = json.loads(SHIPPED.read_text())
    data["anchors"] = [a for a in data["anchors"] if a["name"] == "park2025"]
    data["anchors"][0].update(anchor)
    data["exponents"]["memorization"] = {"value": 0.7, "provenance": "prior", "source": "-"}
    data["transient_scale"] = {"value": 1.0, "provenance": "default", "source": "-"}
    path = folder / "park-only.json"
    path.write_text(json.dumps(data))
    return path
