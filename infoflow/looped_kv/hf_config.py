"""Hugging Face ``config.json`` -> ``looped_kv`` model fields.

The layouts read (by ``model_type``; a config without one is read by its keys):

- Ouro-style (``ouro``, ``total_ut_steps``): a Llama-like decoder whose ``num_hidden_layers``
  all loop. Ouro's public modelling code has four RMSNorms per layer and an early-exit gate.
- Huginn-style (``huginn_raven``, ``n_layers_in_recurrent_block``): prelude, recurrent block
  and coda, with non-standard keys (``n_embd``, ``n_heads``, ``mean_recurrence``), sandwich
  norms, a ``qk_bias`` and a linear adapter that injects the embedding at every loop.
- Plain decoders (``llama``, ``mistral``, ``qwen2``; T = 1), with grouped-query attention and
  sliding windows (``sliding_window``, or per layer ``layer_types``); mixtures of experts
  (``mixtral``; ``deepseek_v2``, ``deepseek_v3`` with shared experts, dense first layers and
  multi-head latent attention).

A key a config leaves out takes transformers' default for that model type (:data:`DEFAULTS`
for the keys whose absence changes a count). Config-driven memory calculators ignore the
loop keys and count Ouro's cache 4x too low; reading them is the point of this module.
Another ``model_type``, or a key that turns on something these layouts do not count
(:data:`UNMODELLED`), is refused with the key named, never counted as if it were a dense
decoder; fp8 weights (``quantization_config``) are read, other quantized weights refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infoflow.core.errors import FieldError, SpecError
from infoflow.core.files import read_json

_TORCH_DTYPES = {"bfloat16": "bfloat16", "float16": "float16", "float32": "float32"}

#: Config keys that change the cache or the parameter count in ways the layouts below do not
#: model, with what they are. Present with a value that turns them on (not null, 0, false or
#: empty) in a config whose layout does not read them, they make the config refused.
UNMODELLED = {
    "num_local_experts": "mixture of experts",
    "n_routed_experts": "mixture of experts",
    "num_experts": "mixture of experts",
    "moe_intermediate_size": "mixture of experts",
    "n_shared_experts": "mixture of experts",
    "num_experts_per_tok": "mixture of experts",
    "shared_expert_intermediate_size": "shared experts",
    "mlp_only_layers": "mixed MLP layers",
    "kv_lora_rank": "multi-head latent attention",
    "q_lora_rank": "multi-head latent attention",
    "qk_rope_head_dim": "multi-head latent attention",
    "attention_chunk_size": "chunked attention",
    "layer_types": "per-layer attention types",
    "sliding_window": "sliding-window attention",
    "sliding_window_pattern": "sliding windows",
    "state_size": "state-space layers",
    "ssm_cfg": "state-space layers",
    "mamba_d_state": "state-space layers",
    "layers_block_type": "hybrid layers",
    "hybrid_override_pattern": "hybrid layers",
    "attn_layer_period": "hybrid layers",
    "cross_attention_layers": "cross attention",
    "add_cross_attention": "cross attention",
    "is_encoder_decoder": "an encoder-decoder",
    "num_nextn_predict_layers": "multi-token-prediction layers, which transformers does not "
    "build either: a copy of the config without the key counts the rest",
    "multi_query": "multi-query attention (give kv_heads: 1 in the spec)",
    "kv_cache_dtype": "a cache dtype (give serving.cache_dtype in the spec)",
}


#: Config keys transformers reads as booleans: a value of another type (the string "false",
#: which Python reads as true) is refused, never guessed.
BOOLEANS = (
    "tie_word_embeddings",
    "tie_embeddings",
    "attention_bias",
    "mlp_bias",
    "qk_bias",
    "use_sliding_window",
    "add_cross_attention",
    "is_encoder_decoder",
    "multi_query",
)


def read_hf_config(path: Path) -> dict[str, Any]:
    """Model fields read from a Hugging Face config file (raises FieldError on hf_config)."""
    try:
        config = read_json(path, "config file")
    except SpecError as exc:
        raise FieldError("hf_config", str(exc)) from None
    if not isinstance(config, dict):
        raise FieldError("hf_config", f"{path} is not a JSON object")
    reader, reads = _layout(config, path)
    config = {**DEFAULTS.get(config.get("model_type"), {}), **config}
    for key in BOOLEANS:
        value = config.get(key)
        if value is not None and not isinstance(value, bool):
            message = (
                f"{path}: '{key}' is {value!r}, not true or false: transformers reads it as "
                'a boolean, and a string such as "false" would count as true'
            )
            raise FieldError("hf_config", message)
    for key, what in UNMODELLED.items():
        if key not in reads and _turned_on(config, key):
            message = (
                f"{path}: '{key}' ({what}) changes the cache or the parameter count in a way "
                "the calculator does not count yet: refused, not counted as dense"
            )
            raise FieldError("hf_config", message)
    try:
        fields = reader(config)
    except KeyError as exc:
        raise FieldError("hf_config", f"{path} lacks the key {exc.args[0]!r}") from None
    folder_name = path.parent.resolve().name if path.stem == "config" else path.stem
    fields.setdefault("name", config.get("_name_or_path") or folder_name)
    dtype = _TORCH_DTYPES.get(str(config.get("torch_dtype") or config.get("dtype")))
    if dtype:
        fields["dtype"] = dtype
    quantized = config.get("quantization_config")
    if quantized:
        method = quantized.get("quant_method") if isinstance(quantized, dict) else quantized
        if method != "fp8":
            message = f"{path}: weights quantized by {method!r} are not counted (fp8 is): give "
            raise FieldError("hf_config", message + "model.dtype in the spec")
        fields["dtype"] = "float8"  # DeepSeek-V3's released weights
    return {key: value for key, value in fields.items() if value is not None}


def _layout(config: dict[str, Any], path: Path):
    """The reader of the config's layout and the UNMODELLED keys it reads."""
    kind = config.get("model_type")
    if kind in LAYOUTS:
        return LAYOUTS[kind]
    if kind is not None:
        known = ", ".join(sorted(LAYOUTS))
        raise FieldError(
            "hf_config",
            f"{path}: model_type {kind!r} has a layout the calculator "
            f"does not know (it reads {known}): give the model's "
            "fields in the spec instead",
        )
    if "n_layers_in_recurrent_block" in config:
        return LAYOUTS["huginn_raven"]
    if "num_hidden_layers" in config:
        return LAYOUTS["llama"]
    raise FieldError(
        "hf_config",
        f"{path}: neither a Huginn-style (n_layers_in_recurrent_block) "
        "nor a Llama-style (num_hidden_layers) config",
    )


def _llama_like(config: dict[str, Any]) -> dict[str, Any]:
    """Ouro-style (total_ut_steps) or a plain decoder (T = 1)."""
    looped = "total_ut_steps" in config
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
        "mlp": "swiglu",  # gated whatever the activation: gate, up and down projections
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


def _windowed(config: dict[str, Any]) -> dict[str, Any]:
    """Llama-like fields plus the sliding window, as transformers reads it: Mistral's and
    Mixtral's ``sliding_window`` on every layer; Qwen2's only with ``use_sliding_window``,
    on the layers ``layer_types`` marks or else from ``max_window_layers`` on."""
    fields, layers = _llama_like(config), config["num_hidden_layers"]
    window, types = config.get("sliding_window"), config.get("layer_types")
    qwen = config.get("model_type") == "qwen2"
    if qwen and not config.get("use_sliding_window"):
        window = None
    if types is not None:
        unknown = sorted(set(types) - {"full_attention", "sliding_attention"})
        if unknown:
            raise FieldError(
                "hf_config",
                f"layer_types holds {unknown[0]!r}, a kind of "
                "attention the calculator does not count",
            )
        windowed = any(kind == "sliding_attention" for kind in types)
        if windowed and (window is None or not qwen):
            raise FieldError(
                "hf_config",
                "layer_types marks windowed layers that this layout "
                "does not window as marked: refused",
            )
        marks = [kind == "sliding_attention" for kind in types]
    else:
        start = config.get("max_window_layers", 0) if qwen else 0
        marks = [i >= start for i in range(layers)]
    if window is None or not any(marks):
        return fields
    return {**fields, "sliding_window": window, "window_layers": marks}


def _mixtral(config: dict[str, Any]) -> dict[str, Any]:
    """Mixtral: every layer's MLP is a mixture of SwiGLU experts of intermediate_size."""
    experts = {"routed": config["num_local_experts"], "per_token": config["num_experts_per_tok"]}
    return {**_windowed(config), "experts": experts}


def _deepseek(config: dict[str, Any]) -> dict[str, Any]:
    """DeepSeek-V2/V3: routed and shared experts after dense first layers, and multi-head
    latent attention; V3's router carries a correction bias per expert (a stored tensor)."""
    experts = {
        "routed": config["n_routed_experts"],
        "per_token": config["num_experts_per_tok"],
        "shared": config["n_shared_experts"] or 0,
        "width": config["moe_intermediate_size"],
        "dense_layers": config["first_k_dense_replace"],
        "every": config["moe_layer_freq"],
        "router_bias": config.get("model_type") == "deepseek_v3",
    }
    latent = {
        "kv_rank": config["kv_lora_rank"],
        "q_rank": config["q_lora_rank"],
        "rope_dim": config["qk_rope_head_dim"],
        "nope_dim": config["qk_nope_head_dim"],
        "v_dim": config["v_head_dim"],
    }
    return {**_llama_like(config), "experts": experts, "latent_attention": latent}


_WINDOW_KEYS = {"sliding_window", "layer_types"}
_DEEPSEEK_KEYS = {
    "n_routed_experts",
    "n_shared_experts",
    "num_experts_per_tok",
    "moe_intermediate_size",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
}
#: The layouts read, by model_type: the reader and the UNMODELLED keys it reads.
LAYOUTS = {
    "llama": (_llama_like, set()),
    "ouro": (_llama_like, set()),
    "mistral": (_windowed, _WINDOW_KEYS),
    "qwen2": (_windowed, _WINDOW_KEYS),
    "mixtral": (_mixtral, {"num_local_experts", "num_experts_per_tok", *_WINDOW_KEYS}),
    "deepseek_v2": (_deepseek, _DEEPSEEK_KEYS),
    "deepseek_v3": (_deepseek, _DEEPSEEK_KEYS),
    "huginn_raven": (_huginn, set()),
}
#: What transformers takes for a key the config leaves out (its config classes' defaults,
#: transformers 5.24), for the keys whose absence changes a count.
DEFAULTS = {
    "mistral": {"sliding_window": 4096},
    "qwen2": {"use_sliding_window": False, "sliding_window": 4096, "max_window_layers": 28},
    "deepseek_v2": {
        "q_lora_rank": 1536,
        "n_shared_experts": 2,
        "first_k_dense_replace": 0,
        "moe_layer_freq": 1,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
        "kv_lora_rank": 512,
    },
    "deepseek_v3": {
        "q_lora_rank": 1536,
        "n_shared_experts": 1,
        "first_k_dense_replace": 3,
        "moe_layer_freq": 1,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
        "kv_lora_rank": 512,
    },
}


def _turned_on(config: dict[str, Any], key: str) -> bool:
    """Whether ``key`` is in ``config`` with a value that turns its feature on."""
    value = config.get(key)
    if key == "sliding_window" and config.get("use_sliding_window") is False:
        return False  # Qwen2 keeps a window size it does not use
    if key == "layer_types" and isinstance(value, list):
        return any(kind != "full_attention" for kind in value)
    return value not in (None, 0, False, [], {}, "")
