"""Base classes every spec family builds on."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class StrictModel(BaseModel):
    """A spec section: unknown fields are errors, so a typo cannot pass silently."""

    model_config = ConfigDict(extra="forbid")


class SpecBase(StrictModel):
    """Fields common to every spec; each family adds ``kind`` as a literal and its own."""

    description: str | None = Field(None, description="Free text: what this spec is and why.")
