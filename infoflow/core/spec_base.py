"""Base classes every spec family builds on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo


class StrictModel(BaseModel):
    """A spec section: unknown fields are errors, so a typo cannot pass silently."""

    model_config = ConfigDict(extra="forbid")


class SpecBase(StrictModel):
    """Fields common to every spec; each family adds ``kind`` as a literal and its own."""

    description: str | None = Field(None, description="Free text: what this spec is and why.")
    sweep: dict[str, list[Any]] | None = Field(
        None,
        description="A grid: dotted field paths to lists of values (seq_len: [8, 16]); the "
        "spec stands for every combination. Predictions are made once per point.",
    )


def existing_path(value: str | None, info: ValidationInfo, what: str, folder: bool) -> str | None:
    """A path field given relative to the spec file, resolved to an absolute path; an error
    names ``what`` when the file (or ``folder``) is not there."""
    if value is None:
        return None
    path = Path((info.context or {}).get("base_dir", ".")) / value
    if not (path.is_dir() if folder else path.is_file()):
        raise ValueError(f"{what} not found: {path}")
    return str(path.resolve())
