"""Spec files of one folder holding one spec: validate and plan plan it once, from the file
whose resolved path sorts first (two copies trained alike before: a review, 2026-12-06)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def copied(first: Path, skipped: list[str]) -> str:
    """Why a copy of the spec in ``first`` (one folder) is not planned: it is, once, there; or
    that one cannot be validated either (it is among the ``skipped`` spec files)."""
    if str(first) in skipped:
        return f"the same spec as {first} (one folder), which cannot be validated either"
    return f"the same spec as {first} (one folder): planned once, there"


def first_copies(specs: dict[Path, Any]) -> dict[Path, Path]:
    """Each spec file -> the file of its folder holding the same spec (the same fields after
    ``--set``, in any key order) whose path sorts first: itself, or the copy planned in its
    place (the order the files are given in renames nothing)."""

    identity = {
        path: (json.dumps(spec.model_dump(mode="json"), sort_keys=True), path.parent.resolve())
        for path, spec in specs.items()
    }
    first: dict[tuple[str, Path], Path] = {}
    for path in sorted(specs, key=lambda p: str(p.resolve())):  # however the path is typed
        first.setdefault(identity[path], path)
    return {path: first[identity[path]] for path in specs}
