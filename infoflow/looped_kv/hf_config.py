"""Hugging Face ``config.json`` -> ``looped_kv`` model fields.

The layouts read (by ``model_type``; a config without one is read only when its keys or its
``architectures`` name one layout without doubt; the readers are in :mod:`hf_families`):

- Ouro-style (``ouro``, ``total_ut_steps``): a Llama-like decoder whose ``num_hidden_layers``
  all loop. Ouro's public modelling code has four RMSNorms per layer and an early-exit gate.
- Huginn-style (``huginn_raven``, ``n_layers_in_recurrent_block``): prelude, recurrent block
  and coda, with non-standard keys (``n_embd``, ``n_heads``, ``mean_recurrence``), sandwich
  norms, a ``qk_bias`` and a linear adapter that injects the embedding at every loop.
- Plain decoders (T = 1): ``llama``, ``mistral``, ``qwen2``, ``qwen3``, ``phi3``, ``gemma``,
  ``gemma2``, ``gemma3_text``, ``olmo2``, ``cohere``, ``gpt2``, ``gpt_neox``, ``starcoder2``,
  ``falcon``, with grouped-query attention and sliding windows (``sliding_window``, the
  family's per-layer pattern, or ``layer_types``); mixtures of experts (``mixtral``,
  ``qwen2_moe``, ``qwen3_moe``, ``phimoe``, ``olmoe``, ``gpt_oss``, ``llama4_text`` with
  chunked attention; ``deepseek_v2``, ``deepseek_v3`` with shared experts, dense first layers
  and multi-head latent attention); ``jamba``, with Mamba layers beside attention.

A key a config leaves out takes transformers' default for that model type
(:data:`~infoflow.looped_kv.hf_defaults.DEFAULTS`, for the keys whose absence changes a
count). Config-driven memory calculators ignore the loop keys and count Ouro's cache 4x too
low; reading them is the point of this module.
Another ``model_type``, or a key that turns on something these layouts do not count
(:data:`UNMODELLED`), is refused with the key named, never counted as if it were a dense
decoder; fp8 weights with block scales and MXFP4 experts (``quantization_config``) are read,
other quantized weights refused by method.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from infoflow.core.errors import FieldError, SpecError
from infoflow.core.files import read_json
from infoflow.core.text import one_line
from infoflow.looped_kv.hf_defaults import ARCHITECTURES, DEFAULTS, REFUSED
from infoflow.looped_kv.hf_layouts import LAYOUTS

__all__ = ["BOOLEANS", "DEFAULTS", "LAYOUTS", "UNMODELLED", "read_hf_config"]

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
    "use_bidirectional_attention": "bidirectional attention (an embedding model's)",
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
    "num_nextn_predict_layers": "multi-token-prediction layers (reported for DeepSeek only)",
    "multi_query": "multi-query attention (give kv_heads: 1 in the spec)",
    "kv_cache_dtype": "a cache dtype (give serving.cache_dtype in the spec)",
}


#: Config keys transformers reads as whole numbers: a string or a float is refused.
INTEGERS = (
    "num_hidden_layers",
    "hidden_size",
    "intermediate_size",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "vocab_size",
    "num_experts",
    "num_local_experts",
    "num_experts_per_tok",
    "moe_intermediate_size",
    "max_window_layers",
    "decoder_sparse_step",
    "attn_layer_period",
    "attn_layer_offset",
    "expert_layer_period",
    "expert_layer_offset",
    "sliding_window_pattern",
    "total_ut_steps",  # Ouro's loops; Huginn's keys below
    "mean_recurrence",
    "n_embd",
    "n_heads",
    "n_layers",
    "n_layers_in_prelude",
    "n_layers_in_recurrent_block",
    "n_layers_in_coda",
    "n_shared_experts",  # the layouts' nested keys (a review: [] read as 0, -1 as no experts)
    "n_routed_experts",
    "first_k_dense_replace",
    "moe_layer_freq",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "num_nextn_predict_layers",
    "interleave_moe_layer_step",
    "intermediate_size_mlp",
    "attention_chunk_size",
    "no_rope_layer_interval",
    "mamba_d_state",
    "mamba_d_conv",
    "mamba_expand",
    "shared_expert_intermediate_size",
    "padded_vocab_size",
    "sliding_window",
)
#: Of :data:`INTEGERS`, the keys a null cannot stand for (transformers has no default for
#: them and builds no layer without them): refused, not read as 0 or as another key's value.
NOT_NULL = (
    "intermediate_size",
    "moe_intermediate_size",
    "intermediate_size_mlp",
    "shared_expert_intermediate_size",
    "num_experts_per_tok",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
)


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
    "mamba_conv_bias",
    "mamba_proj_bias",
    "qkv_bias",
    "lm_head_bias",
)


def read_hf_config(path: Path, required: frozenset[str]) -> dict[str, Any]:
    """Model fields read from a Hugging Face config file (raises FieldError on hf_config,
    also where a field in ``required``, the model's, reads as null)."""
    try:
        config = read_json(path, "config file")
    except SpecError as exc:
        raise FieldError("hf_config", str(exc)) from None
    if not isinstance(config, dict):
        raise FieldError("hf_config", f"{path} is not a JSON object")
    try:
        kind = _model_type(config, path)
        reader, reads = _layout(kind, path)
        config = {**DEFAULTS.get(kind, {}), **config, "model_type": kind}
        _check_keys(config, reads, path)
        fields = reader(config)
    except KeyError as exc:
        raise FieldError("hf_config", f"{path} lacks the key {exc.args[0]!r}") from None
    except FieldError:
        raise
    except (TypeError, ValueError, ArithmeticError, AttributeError, IndexError) as exc:
        message = (
            f"{path}: a value of a type or size transformers would not read ({one_line(exc, 160)})"
        )
        raise FieldError("hf_config", message) from None
    _check_read_values(fields, config, path, required)
    folder_name = path.parent.resolve().name if path.stem == "config" else path.stem
    fields.setdefault("name", config.get("_name_or_path") or folder_name)
    dtype = _dtype(config, path)
    if dtype:
        fields["dtype"] = dtype
    quantized = config.get("quantization_config")
    if quantized:
        fields["weight_quantization"] = _quantization(quantized, path)
    return {key: value for key, value in fields.items() if value is not None}


def _check_read_values(
    fields: dict[str, Any], config: dict[str, Any], path: Path, required: frozenset[str]
) -> None:
    """Refuse a null the layout read where the model needs a value (a field in
    ``required``), naming the config keys that hold it rather than the model field it would
    fill (a wrong type is refused before, by key: :data:`INTEGERS`, :data:`BOOLEANS`)."""
    for name, value in fields.items():
        if value is None and name in required:
            keys = [k for k, v in config.items() if v is None]
            named = ", ".join(repr(k) for k in keys[:3]) or "the key it reads"
            raise FieldError("hf_config", f"{path}: {named} is null, where a number belongs")


def _dtype(config: dict[str, Any], path: Path) -> str | None:
    """The weights' dtype from ``torch_dtype`` (older configs) or ``dtype`` (newer); None
    when neither is given. A value the calculator does not count, or two that disagree, is
    refused by key rather than read as the default."""
    given = {key: config[key] for key in ("torch_dtype", "dtype") if config.get(key) is not None}
    for key, value in given.items():
        if str(value) not in _TORCH_DTYPES:
            known = ", ".join(_TORCH_DTYPES)
            message = f"{path}: {key} {value!r} is not a dtype the calculator counts ({known})"
            raise FieldError("hf_config", message)
    if len(set(map(str, given.values()))) > 1:
        message = (
            f"{path}: torch_dtype {given['torch_dtype']!r} and dtype {given['dtype']!r} disagree"
        )
        raise FieldError("hf_config", message)
    return _TORCH_DTYPES[str(next(iter(given.values())))] if given else None


def _check_keys(config: dict[str, Any], reads: set[str], path: Path) -> None:
    """Booleans that are not booleans, and keys that turn on what the layout does not read,
    are refused by name."""
    for key in BOOLEANS:
        value = config.get(key)
        if value is not None and not isinstance(value, bool):
            message = (
                f"{path}: '{key}' is {value!r}, not true or false: transformers reads it as "
                'a boolean, and a string such as "false" would count as true'
            )
            raise FieldError("hf_config", message)
    for key in INTEGERS:
        value = config.get(key)
        read = key not in UNMODELLED or key in reads  # a dense config's null MoE key: unread
        if value is None and key in config and key in NOT_NULL and read:
            message = f"{path}: '{key}' is null, where a number belongs (transformers has none)"
            raise FieldError("hf_config", message)
        if value is not None and not (_integer(value) and value >= 0):
            message = (
                f"{path}: '{key}' is {value!r}, not a whole number 0 or more (transformers "
                "reads an int)"
            )
            raise FieldError("hf_config", message)
    for key, what in UNMODELLED.items():
        if key not in reads and _turned_on(config, key):
            message = (
                f"{path}: '{key}' ({what}) changes the cache or the parameter count in a way "
                "the calculator does not count yet: refused, not counted as dense"
            )
            raise FieldError("hf_config", message)


#: What MXFP4 checkpoints (GPT-OSS) keep unquantised: all but the routed experts anyway.
_MXFP4_EXEMPT = {
    "model.layers.*.self_attn",
    "model.layers.*.mlp.router",
    "model.embed_tokens",
    "lm_head",
}


def _quantization(quantized: Any, path: Path) -> dict[str, Any]:
    """The weight_quantization fields of a quantization_config: fp8 with block scales, MXFP4
    experts, GPTQ or AWQ (the LM head exempt at most); any other method, format or
    exemption is refused by name."""
    if not isinstance(quantized, dict):  # a review found "fp8" read as the method, then a crash
        shown = one_line(json.dumps(quantized), 80)
        raise FieldError("hf_config", f"{path}: quantization_config is an object, not {shown}")
    method = quantized.get("quant_method")
    if method not in ("fp8", "mxfp4", "gptq", "awq"):
        message = f"{path}: weights quantized by {method!r} are not counted (fp8 with block "
        message += "scales, MXFP4 experts, GPTQ and AWQ are): refused, not counted as bf16"
        raise FieldError("hf_config", message)
    exempt = quantized.get("modules_to_not_convert") or []
    if not isinstance(exempt, list) or not all(isinstance(name, str) for name in exempt):
        message = f"{path}: quantization_config.modules_to_not_convert is a list of module "
        raise FieldError("hf_config", message + f"names, not {one_line(repr(exempt), 80)}")
    known = _MXFP4_EXEMPT if method == "mxfp4" else {"lm_head"}
    unknown = [name for name in exempt if name not in known]
    if unknown:
        message = f"{path}: quantization_config.modules_to_not_convert names {unknown[0]!r}, "
        raise FieldError("hf_config", message + "which the calculator cannot place: refused")
    if method == "mxfp4":
        return {"method": "mxfp4", "block": [1, 32], "exempt": exempt}
    if method in ("gptq", "awq"):
        return {**_integer_weights(method, quantized, path), "exempt": exempt}
    block = quantized.get("weight_block_size") or [128, 128]
    return {"method": "fp8", "block": block, "exempt": exempt}


def _integer_weights(method: str, quantized: dict[str, Any], path: Path) -> dict[str, Any]:
    """GPTQ (4 or 8 bits, the gptq checkpoint format) or AWQ (4 bits, the GEMM layout)."""
    bits = quantized.get("bits", quantized.get("w_bit", 4))
    group = quantized.get("group_size", quantized.get("q_group_size", 128))
    layout = str(quantized.get("checkpoint_format") or quantized.get("version") or "").lower()
    allowed = {"gptq": ((4, 8), ("", "gptq", "gptq_v2")), "awq": ((4,), ("", "gemm"))}[method]
    if not _integer(bits) or not _integer(group):
        message = f"{path}: quantization_config's bits and group size are whole numbers, not "
        raise FieldError("hf_config", message + one_line(f"{bits!r} and {group!r}", 80))
    if bits not in allowed[0] or layout not in allowed[1]:
        message = f"{path}: {method} weights of {bits} bits in the {layout or 'default'} "
        raise FieldError("hf_config", message + "layout are not counted: refused")
    fields = {"method": method, "bits": bits, "group_size": None if group == -1 else group}
    if method == "awq":
        zero_point = quantized.get("zero_point", True)
        if not isinstance(zero_point, bool):  # "false" would be true (a review)
            shown = one_line(json.dumps(zero_point), 80)
            message = f"{path}: quantization_config.zero_point is true or false, not {shown}"
            raise FieldError("hf_config", message)
        fields["zero_point"] = zero_point
    return fields


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _model_type(config: dict[str, Any], path: Path) -> str:
    """The config's model_type, or the one its keys name without doubt (Huginn's and Ouro's
    own keys, or an ``architectures`` entry); otherwise refused: Llama, Mistral, Gemma and
    Command-R configs share their keys and count them differently."""
    kind = config.get("model_type")
    if kind is not None:
        return kind
    if "n_layers_in_recurrent_block" in config:
        return "huginn_raven"
    if "total_ut_steps" in config:
        return "ouro"
    named = {ARCHITECTURES.get(a) for a in config.get("architectures") or []} - {None}
    if len(named) == 1:
        return named.pop()
    raise FieldError(
        "hf_config",
        f"{path}: no model_type, and its keys do not say which layout it is (a Llama, "
        "Mistral, Gemma, Pythia or Command-R config shares them and counts them "
        'differently): add "model_type" to the config',
    )


def _layout(kind: str, path: Path):
    """The reader of the layout of ``kind`` and the UNMODELLED keys it reads."""
    if kind in LAYOUTS:
        return LAYOUTS[kind]
    if kind in REFUSED:
        message = f"{path}: model_type {kind!r} is not counted yet: it needs {REFUSED[kind]}"
        raise FieldError("hf_config", message)
    known = ", ".join(sorted(LAYOUTS))
    raise FieldError(
        "hf_config",
        f"{path}: model_type {kind!r} has a layout the calculator "
        f"does not know (it reads {known}): give the model's "
        "fields in the spec instead",
    )


def _turned_on(config: dict[str, Any], key: str) -> bool:
    """Whether ``key`` is in ``config`` with a value that turns its feature on."""
    value = config.get(key)
    if key == "sliding_window" and config.get("use_sliding_window") is False:
        return False  # Qwen2 keeps a window size it does not use
    if key == "layer_types" and isinstance(value, list):
        return any(kind != "full_attention" for kind in value)
    return value not in (None, 0, False, [], {}, "")
