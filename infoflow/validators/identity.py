"""A run's identity is its content: the digest of everything that determines what a group
trains names the group, its checkpoints and its rows in the database, and what differs
between two identities is said field by field."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def digest(identity: dict[str, Any]) -> str:
    """12 hex digits of the hash of ``identity`` (a JSON-able dict)."""
    text = json.dumps(identity, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def content_name(prefix: str, identity: dict[str, Any]) -> str:
    """A group's name, ``prefix-DIGEST``: two groups share a name only when their identities
    (everything that determines the models they train) are equal."""
    return f"{prefix}-{digest(identity)}"


def differences(old: Any, new: Any, path: str = "") -> list[str]:
    """``field: old -> new`` for every leaf that differs between two JSON-like values."""
    if isinstance(old, dict) and isinstance(new, dict):
        lines = []
        for key in sorted(old.keys() | new.keys(), key=str):
            lines += differences(old.get(key), new.get(key), f"{path}.{key}".lstrip("."))
        return lines
    if isinstance(old, list | tuple) and isinstance(new, list | tuple) and len(old) == len(new):
        lines = []  # a stored list and a live tuple are the same JSON: compare their items
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            lines += differences(a, b, f"{path}[{i}]")
        return lines
    if old == new:
        return []
    return [f"{path or 'value'}: {json.dumps(old, default=str)} -> {json.dumps(new, default=str)}"]
