"""Hugging Face config (its keys, defaults filled) -> ``looped_kv`` model fields, per layout.

Each reader maps one family's keys onto the model's fields: the looped layouts (Ouro, Huginn),
Llama-like decoders with their variations (biases, q/k norms, sandwich or single norms,
LayerNorms, GELU MLPs, learned positions, tied embeddings), sliding windows by the family's
own per-layer pattern, and mixtures of experts. Fused projections (Phi-3's qkv and gate_up,
GPT-2's c_attn, GPT-NeoX's and Falcon's query_key_value) hold as many numbers as separate ones;
partial rotary, parallel residuals and logit soft-capping hold none: they read as the same
fields. The mixtures of experts are read in :mod:`hf_experts`; :mod:`hf_layouts` lists
the readers by ``model_type``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from infoflow.core.errors import FieldError

Config = dict[str, Any]
#: A layout that differs layer by layer is listed a layer an entry up to this many layers
#: (they answer in about a second); a uniform one (every layer windowed, every n-th an MoE
#: layer) is counted in closed form at any number.
MAX_LISTED_LAYERS = 100_000


def per_layer(layers: int, mark: Callable[[int], Any]) -> list[Any]:
    """``mark(i)`` for every layer ``i``; a FieldError above :data:`MAX_LISTED_LAYERS`."""
    if layers > MAX_LISTED_LAYERS:
        message = f"'num_hidden_layers' is {layers:,}: a layout that differs layer by layer is "
        message += f"listed a layer an entry, up to {MAX_LISTED_LAYERS:,} layers"
        raise FieldError("hf_config", message)
    return [mark(i) for i in range(layers)]


#: Model types whose transformers code (5.25) builds no attention bias whatever
#: ``attention_bias`` says (a review counted the key's biases on Mistral); Qwen2 has q/k/v
#: biases always.
_NO_ATTENTION_BIAS = {"mistral", "phi3", "mixtral", "jamba"}
#: Model types whose code reads ``mlp_bias`` (Llama's; Ouro is read as Llama): elsewhere the
#: key is ignored, as the model ignores it.
_MLP_BIAS = {"llama", "ouro", "deepseek_v2", None}


def llama_like(config: Config) -> Config:
    """Ouro-style (total_ut_steps) or a plain decoder (T = 1)."""
    looped = "total_ut_steps" in config
    kind = config.get("model_type")
    if looped and kind not in (None, "ouro"):
        message = f"'total_ut_steps' is Ouro's loop count, and model_type {kind!r} does not loop"
        raise FieldError("hf_config", message + ': set "model_type": "ouro", or drop the key')
    if kind == "ouro" and not looped:  # read as one loop, its cache was 4x too small (an audit)
        message = "model_type 'ouro' loops 'total_ut_steps' times, and the config leaves it out"
        raise FieldError("hf_config", message + " (Ouro-1.4B and 2.6B: 4): add the key")
    _one_loop_key(config, "total_ut_steps", "mean_recurrence")
    if kind == "qwen2":
        bias = "qkv"  # always, whatever attention_bias says
    elif config.get("attention_bias") and kind not in _NO_ATTENTION_BIAS:
        bias = "qkvo"  # Llama's attention_bias puts a bias on all four projections
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
        "mlp_bias": bool(config.get("mlp_bias", False)) and kind in _MLP_BIAS,
        "norms_per_layer": 4 if looped else 2,
        "exit_gate": looped,
    }


def _one_loop_key(config: Config, own: str, other: str) -> None:
    """Refuse the other family's loop count beside this one's: which one loops is unknown."""
    if own in config and other in config:
        message = f"both {own!r} ({config[own]}) and {other!r} ({config[other]}) give a loop "
        raise FieldError("hf_config", message + f"count; this layout reads {own!r}: drop the other")


def huginn(config: Config) -> Config:
    _one_loop_key(config, "mean_recurrence", "total_ut_steps")
    parts = ("n_layers_in_prelude", "n_layers_in_recurrent_block", "n_layers_in_coda")
    physical = sum(config[key] for key in parts)
    if config.get("n_layers", physical) != physical:
        message = f"'n_layers' is {config['n_layers']}, not the {physical} of {', '.join(parts)}"
        raise FieldError("hf_config", message)
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


#: How each family places its windows when the config gives no ``layer_types``: on every
#: layer, from ``max_window_layers`` on (Qwen), on even layers (Gemma-2), on all but every
#: ``sliding_window_pattern``-th (Gemma-3).
_STYLES = {"qwen2": "qwen", "qwen3": "qwen", "qwen3_moe": "qwen", "qwen2_moe": "qwen"}
_STYLES["gemma2"] = "gemma2"
_STYLES |= {"gemma3_text": "gemma3", "gpt_oss": "gemma2"}


def windows(config: Config, fields: Config) -> Config:
    """``fields`` plus the sliding window and the layers it applies to, as transformers reads
    the config of its model type."""
    layers, style = config["num_hidden_layers"], _STYLES.get(config.get("model_type"), "all")
    window, types = config.get("sliding_window"), config.get("layer_types")
    if style == "qwen" and not config.get("use_sliding_window"):
        window = None
    if types is not None:
        if len(types) != layers:  # a review: [] dropped the windows, 2 blamed model.window_layers
            message = f"layer_types holds {len(types)} entries for the config's {layers} layers"
            raise FieldError("hf_config", message)
        unknown = sorted(set(types) - {"full_attention", "sliding_attention"})
        if unknown:
            message = f"layer_types holds {unknown[0]!r}, a kind of attention the calculator "
            raise FieldError("hf_config", message + "does not count")
        marks = [kind == "sliding_attention" for kind in types]
        if any(marks) and (window is None or style == "all"):
            message = "layer_types marks windowed layers that this layout does not window "
            raise FieldError("hf_config", message + "as marked: refused")
    elif window is None or style == "all":  # no window, or every layer's (no list needed)
        return fields if window is None else {**fields, "sliding_window": window}
    elif style == "qwen":
        marks = per_layer(layers, lambda i: i >= config.get("max_window_layers", 0))
    elif style == "gemma2":
        marks = per_layer(layers, lambda i: i % 2 == 0)
    else:
        pattern = config.get("sliding_window_pattern") or 6
        marks = per_layer(layers, lambda i: (i + 1) % pattern != 0)
    if window is None or not any(marks):
        return fields
    return {**fields, "sliding_window": window, "window_layers": marks}


def windowed(config: Config) -> Config:
    """Llama-like fields plus the sliding window (Mistral, Qwen2, Phi-3)."""
    return windows(config, llama_like(config))


def qwen3(config: Config) -> Config:
    """Qwen3: Qwen2's layout with a bias only where attention_bias says, and an RMSNorm on
    every query and key head."""
    fields = llama_like(config)
    return windows(config, {**fields, "qk_norm": "head"})


def gemma(config: Config) -> Config:
    """Gemma (1): tied embeddings, 256-wide heads; Gemma-2 and Gemma-3 add a norm after the
    attention and after the MLP (four a layer) and windows on some layers; Gemma-3 adds an
    RMSNorm on every query and key head. Soft-capping and the embedding scale hold no
    parameters."""
    fields, kind = llama_like(config), config.get("model_type")
    if kind == "gemma":
        return fields
    fields["norms_per_layer"] = 4
    if kind == "gemma3_text":
        fields["qk_norm"] = "head"
    return windows(config, fields)


def olmo2(config: Config) -> Config:
    """OLMo-2: norms after attention and MLP (two a layer), and RMSNorms over all queries
    (n_q * head_dim) and all keys (n_kv * head_dim)."""
    return {**llama_like(config), "qk_norm": "full"}


def cohere(config: Config) -> Config:
    """Command-R: one LayerNorm without bias a layer (attention and MLP in parallel), tied
    embeddings; Command-R+ adds LayerNorms over all query and key heads (use_qk_norm)."""
    fields = {**llama_like(config), "norm": "layernorm_no_bias", "norms_per_layer": 1}
    if config.get("use_qk_norm"):
        fields["qk_norm"] = "full"
    return fields


def _gelu_decoder(config: Config, **keys: str) -> Config:
    """A GELU MLP decoder with LayerNorms (GPT-2, GPT-NeoX, StarCoder2, Falcon), its keys
    named by ``keys`` where they differ from Llama's."""
    key = {"hidden_size": "hidden_size", "layers": "num_hidden_layers"}
    key |= {"heads": "num_attention_heads", "vocab_size": "vocab_size", **keys}
    hidden = config[key["hidden_size"]]
    width = config.get(key.get("intermediate_size", "intermediate_size")) or 4 * hidden
    return {
        "hidden_size": hidden,
        "layers": config[key["layers"]],
        "loops": 1,
        "heads": config[key["heads"]],
        "kv_heads": config.get("num_key_value_heads"),
        "intermediate_size": width,
        "vocab_size": config[key["vocab_size"]],
        "tie_embeddings": bool(config.get("tie_word_embeddings", False)),
        "mlp": "gelu",
        "mlp_bias": True,
        "attention_bias": "qkvo",
        "norm": "layernorm",
        "norms_per_layer": 2,
    }


def gpt2(config: Config) -> Config:
    """GPT-2: fused c_attn and c_proj with biases, learned absolute positions (n_positions),
    an MLP of n_inner (default 4 * n_embd), tied embeddings."""
    fields = _gelu_decoder(
        config, hidden_size="n_embd", layers="n_layer", heads="n_head", intermediate_size="n_inner"
    )
    return {**fields, "positions": config["n_positions"]}


def gpt_neox(config: Config) -> Config:
    """GPT-NeoX / Pythia: fused query_key_value, biases where attention_bias says (on all
    four), an untied embed_out without bias; partial rotary and the parallel residual hold no
    parameters."""
    fields = _gelu_decoder(config)
    return {**fields, "attention_bias": "qkvo" if config.get("attention_bias") else "none"}


def starcoder2(config: Config) -> Config:
    """StarCoder2: biases on every projection when use_bias, LayerNorms, a window on every
    layer."""
    fields = _gelu_decoder(config)
    bias = bool(config.get("use_bias"))
    fields.update(attention_bias="qkvo" if bias else "none", mlp_bias=bias)
    return windows(config, fields)


def falcon(config: Config) -> Config:
    """Falcon: one fused query_key_value for the query heads and one K/V head (multi_query),
    or num_kv_heads of them (new_decoder_architecture); biases when bias; one LayerNorm a
    layer in parallel attention (two in the new architecture, or when sequential)."""
    fields = _gelu_decoder(config, intermediate_size="ffn_hidden_size")
    heads, new = config["num_attention_heads"], config.get("new_decoder_architecture")
    if config.get("alibi"):
        raise FieldError("hf_config", "Falcon with ALiBi positions is not counted: refused")
    kv_heads = config.get("num_kv_heads") or heads if new else 1 if config["multi_query"] else heads
    parallel = config.get("parallel_attn", True)
    two = new and (config.get("num_ln_in_parallel_attn") or 2) == 2
    bias = bool(config.get("bias"))
    fields.update(attention_bias="qkvo" if bias else "none", mlp_bias=bias, kv_heads=kv_heads)
    broadcast = bool(new) and kv_heads < heads  # transformers caches every query head's copy
    return {**fields, "norms_per_layer": 2 if two or not parallel else 1, "kv_broadcast": broadcast}
