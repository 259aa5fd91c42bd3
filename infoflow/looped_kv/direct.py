"""A Hugging Face ``config.json`` (or a folder holding one) -> a ``looped_kv`` spec, so that
``infoflow predict path/to/config.json --context N`` needs no spec file.

A JSON object without a ``kind`` and with a model's keys is read as the model's config; a
folder is read through the ``config.json`` in it; anything else is left to the spec loader.
The command line's serving options (context, batch, device, cache dtype, tensor
parallelism, budget) become the spec's ``serving`` fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infoflow.core.errors import SpecError
from infoflow.core.files import is_folder, read_json

#: The context a config is sized at when no --context is given.
DEFAULT_CONTEXT = 4096
#: Keys that make a JSON object without a ``kind`` a model's config.
MODEL_KEYS = ("model_type", "architectures", "num_hidden_layers", "n_layer", "n_embd")


def spec_for_file(path: Path, serving: dict[str, Any]) -> dict[str, Any] | None:
    """The looped_kv spec that sizes the model whose config ``path`` is (or holds), with
    ``serving`` as its serving fields; None when ``path`` is not a model's config."""
    config = _config_path(path)
    if config is None:
        return None
    fields = {"context_tokens": DEFAULT_CONTEXT, **serving}
    return {"kind": "looped_kv", "model": {"hf_config": str(config)}, "serving": fields}


def _config_path(path: Path) -> Path | None:
    if is_folder(path):
        inside = path / "config.json"
        if not inside.is_file():
            message = "is a directory, not a spec file, and holds no config.json"
            raise SpecError(str(path), [(None, message)])
        return inside
    data = read_json(path, "spec file")
    if isinstance(data, dict) and "kind" not in data and any(k in data for k in MODEL_KEYS):
        return path
    return None
