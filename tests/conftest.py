"""Shared helpers: the bundled specs and the real ``infoflow`` entry point."""

from __future__ import annotations

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
        timeout=120,
    )
