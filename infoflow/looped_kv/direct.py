"""A Hugging Face ``config.json`` (or a folder holding one) -> a ``looped_kv`` spec, so that
``infoflow predict path/to/config.json --context N`` needs no spec file.

A JSON file with a ``kind`` is a spec; one without is read as a model's config; a folder is
read through the ``config.json`` in it. The serving options (context, batch, device, cache
dtype, tensor parallelism) become the spec's ``serving`` fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infoflow.core.errors import SpecError
from infoflow.core.files import read_json

#: The context a config is sized at when no --context is given.
DEFAULT_CONTEXT = 4096


@dataclass(frozen=True)
class ServingOptions:
    """The command line's serving options; None: not given."""

    context: int | None = None
    batch: int | None = None
    device: str | None = None
    cache_dtype: str | None = None
    tensor_parallel: int | None = None
    budget_gib: float | None = None

    def fields(self) -> dict[str, Any]:
        """The ``serving`` fields these options set."""
        named = {
            "context_tokens": self.context,
            "batch": self.batch,
            "device": self.device,
            "cache_dtype": self.cache_dtype,
            "tensor_parallel": self.tensor_parallel,
            "memory_budget_gib": self.budget_gib,
        }
        return {key: value for key, value in named.items() if value is not None}

    def overrides(self) -> list[str]:
        """The options as ``--set`` overrides of a spec file's serving fields."""
        return [f"serving.{key}={value}" for key, value in self.fields().items()]


def config_path(path: Path) -> Path | None:
    """The model config ``path`` names (itself, or the config.json in a folder), or None when
    ``path`` is a spec (a JSON object with a ``kind``); a SpecError naming the path when it is
    neither."""
    if path.is_dir():
        inside = path / "config.json"
        if not inside.is_file():
            raise SpecError(str(path), [(None, "a folder without a config.json")])
        return inside
    data = read_json(path, "spec or config file")
    if isinstance(data, dict) and "kind" in data:
        return None
    if not isinstance(data, dict):
        raise SpecError(str(path), [(None, "neither a spec nor a model config: not an object")])
    return path


def spec_for_config(path: Path, options: ServingOptions) -> dict[str, Any]:
    """The looped_kv spec that sizes the model of the config at ``path``."""
    serving = {"context_tokens": DEFAULT_CONTEXT, **options.fields()}
    return {"kind": "looped_kv", "model": {"hf_config": str(path)}, "serving": serving}
