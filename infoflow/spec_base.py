"""Base classes every spec family builds on."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


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
