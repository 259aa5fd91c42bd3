"""Hugging Face ``config.json`` -> ``looped_kv`` model fields.

Three styles are read:

- Ouro-style (``total_ut_steps``): a Llama-like decoder whose ``num_hidden_layers`` all loop.
  Ouro's public modelling code has four RMSNorms per layer and an early-exit gate.
- Huginn-style (``n_layers_in_recurrent_block``): prelude, recurrent block and coda, with
  non-standard keys (``n_embd``, ``n_heads``, ``mean_recurrence``), sandwich norms, a
  ``qk_bias`` and a linear adapter that injects the embedding at every loop.
- A plain decoder (``num_hidden_layers`` without a loop key): T = 1.

Config-driven memory calculators ignore the loop keys and count Ouro's cache 4x too low;
reading them is the point of this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infoflow.errors import FieldError, SpecError
from infoflow.files import read_json

_TORCH_DTYPES = {"bfloat16": "bfloat16", "float16": "float16", "float32": "float32"}


def read_hf_config(path: Path) -> dict[str, Any]:
    """Model fields read from a Hugging Face config file (raises FieldError on hf_config)."""
    try:
        config = read_json(path, "config file")
    except SpecError as exc:
        raise FieldError("hf_config", str(exc)) from None
    if not isinstance(config, dict):
        raise FieldError("hf_config", f"{path} is not a JSON object")
    try:
        if "n_layers_in_recurrent_block" in config:
            fields = _huginn(config)
        elif "num_hidden_layers" in config:
            fields = _llama_like(config)
        else:
            raise FieldError(
                "hf_config",
                f"{path}: neither a Huginn-style (n_layers_in_recurrent_block) nor a "
                "Llama-style (num_hidden_layers) config",
            )
    except KeyError as exc:
        raise FieldError("hf_config", f"{path} lacks the key {exc.args[0]!r}") from None
    folder_name = path.parent.resolve().name if path.stem == "config" else path.stem
    fields.setdefault("name", config.get("_name_or_path") or folder_name)
    dtype = _TORCH_DTYPES.get(str(config.get("torch_dtype") or config.get("dtype")))
    if dtype:
        fields["dtype"] = dtype
    return {key: value for key, value in fields.items() if value is not None}


def _llama_like(config: dict[str, Any]) -> dict[str, Any]:
    """Ouro-style (total_ut_steps) or a plain decoder (T = 1)."""
    looped = "total_ut_steps" in config
    act = str(config.get("hidden_act", "silu"))
    if config.get("attention_bias"):
        bias = "qkvo"  # Llama's attention_bias puts a bias on all four projections
    elif config.get("model_type") == "qwen2":
        bias = "qkv"
    else:
        bias = "none"
    return {
        "hidden_size": config["hidden_size"],
        "layers": config["num_hidden_layers"],
        "loops": config.get("total_ut_steps", 1),
        "heads": config["num_attention_heads"],
        "kv_heads": config.get("num_key_value_heads"),
        "head_dim": config.get("head_dim"),
        "intermediate_size": config["intermediate_size"],
        "vocab_size": config["vocab_size"],
        "tie_embeddings": bool(config.get("tie_word_embeddings", False)),
        "mlp": "gelu" if act.startswith("gelu") else "swiglu",
        "attention_bias": bias,
        "mlp_bias": bool(config.get("mlp_bias", False)),
        "norms_per_layer": 4 if looped else 2,
        "exit_gate": looped,
    }


def _huginn(config: dict[str, Any]) -> dict[str, Any]:
    heads = config["n_heads"]
    return {
        "hidden_size": config["n_embd"],
        "prelude_layers": config["n_layers_in_prelude"],
        "layers": config["n_layers_in_recurrent_block"],
        "coda_layers": config["n_layers_in_coda"],
        "loops": config["mean_recurrence"],
        "heads": heads,
        "kv_heads": config.get("num_key_value_heads", heads),
        "head_dim": config.get("head_dim"),
        "intermediate_size": config["intermediate_size"],
        "vocab_size": config.get("padded_vocab_size") or config["vocab_size"],
        "tie_embeddings": bool(config.get("tie_embeddings", True)),
        "mlp": "swiglu",
        "attention_bias": "qk" if config.get("qk_bias", False) else "none",
        "norms_per_layer": 4,
        "loop_adapter": config.get("injection_type", "linear") == "linear",
    }
