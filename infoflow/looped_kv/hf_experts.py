"""Hugging Face config -> ``looped_kv`` model fields, for the mixtures of experts: Mixtral,
Qwen3-MoE, OLMoE, DeepSeek-V2/V3 (with latent attention), Llama-4 (chunked attention, a
shared expert, interleaved MoE layers) and GPT-OSS (attention sinks, experts with biases,
alternating windows). The dense part of each is read as in :mod:`hf_families`."""

from __future__ import annotations

from infoflow.core.errors import FieldError
from infoflow.looped_kv.hf_families import Config, llama_like, per_layer, qwen3, windowed, windows


def mixtral(config: Config) -> Config:
    """Mixtral: every layer's MLP is a mixture of SwiGLU experts of intermediate_size."""
    experts = {"routed": config["num_local_experts"], "per_token": config["num_experts_per_tok"]}
    return {**windowed(config), "experts": experts}


def deepseek(config: Config) -> Config:
    """DeepSeek-V2/V3: routed and shared experts after dense first layers, and multi-head
    latent attention; V3's router carries a correction bias per expert (a stored tensor)."""
    dense, layers = config["first_k_dense_replace"], config["num_hidden_layers"]
    if dense >= layers:
        message = f"'first_k_dense_replace' is {dense}, not below 'num_hidden_layers' {layers}"
        raise FieldError("hf_config", message + ": no layer would hold the experts")
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
    fields = {**llama_like(config), "experts": experts, "latent_attention": latent}
    return {**fields, "mtp_layers": config.get("num_nextn_predict_layers") or 0}


def qwen3_moe(config: Config) -> Config:
    """Qwen3-MoE: Qwen3's attention; layer i is an MoE layer unless listed in mlp_only_layers,
    when (i + 1) is a multiple of decoder_sparse_step; no shared expert, no router bias."""
    layers, step = config["num_hidden_layers"], config["decoder_sparse_step"]
    dense = set(config.get("mlp_only_layers") or [])
    experts = {
        "routed": config["num_experts"],
        "per_token": config["num_experts_per_tok"],
        "width": config["moe_intermediate_size"],
    }
    if dense or step != 1:  # else every layer: no list
        experts["layers"] = per_layer(layers, lambda i: i not in dense and (i + 1) % step == 0)
    return {**qwen3(config), "experts": experts}


def olmoe(config: Config) -> Config:
    """OLMoE: OLMo-2's q/k norms before the residual, every layer a mixture of SwiGLU experts
    of intermediate_size, no shared expert."""
    experts = {"routed": config["num_experts"], "per_token": config["num_experts_per_tok"]}
    return {**llama_like(config), "qk_norm": "full", "experts": experts}


def llama4(config: Config) -> Config:
    """Llama-4 (text): MoE layers (moe_layers, or every interleave_moe_layer_step-th) with a
    shared expert and routed experts of intermediate_size, dense layers of
    intermediate_size_mlp; chunked attention on the layers layer_types marks (by default
    the RoPE layers: all but every fourth); the q/k L2 norm holds no parameters."""
    layers, step = config["num_hidden_layers"], config.get("interleave_moe_layer_step") or 1
    listed = config.get("moe_layers")
    every = set(listed or ())
    moe = (lambda i: (i + 1) % step == 0) if listed is None else (lambda i: i in every)
    experts = {
        "routed": config["num_local_experts"],
        "per_token": config["num_experts_per_tok"],
        "shared": 1,
        "width": config["intermediate_size"],
        "layers": per_layer(layers, moe),
    }
    fields = {**llama_like(config), "intermediate_size": config["intermediate_size_mlp"]}
    types = config.get("layer_types") or _llama4_types(config, layers)
    unknown = sorted(set(types) - {"full_attention", "chunked_attention"})
    if unknown:
        raise FieldError("hf_config", f"layer_types holds {unknown[0]!r} beside chunked layers")
    chunk = config.get("attention_chunk_size")
    fields["experts"] = experts
    if chunk and "chunked_attention" in types:
        marks = [kind == "chunked_attention" for kind in types]
        fields.update(sliding_window=chunk, window_layers=marks, window_kind="chunked")
    return fields


def _llama4_types(config: Config, layers: int) -> list[str]:
    """Llama-4's layer types as transformers derives them: chunked where ``no_rope_layers``
    holds 1 (a RoPE layer), else full; without the list, all but every
    ``no_rope_layer_interval``-th layer (4) is chunked."""
    rope = config.get("no_rope_layers")
    if not rope:
        interval = config.get("no_rope_layer_interval") or 4
        rope = [int((i + 1) % interval != 0) for i in range(layers)]
    if len(rope) != layers or any(flag not in (0, 1) or isinstance(flag, bool) for flag in rope):
        raise FieldError("hf_config", f"no_rope_layers must be {layers} flags, 0 or 1")
    return ["chunked_attention" if flag else "full_attention" for flag in rope]


def gpt_oss(config: Config) -> Config:
    """GPT-OSS: every layer a mixture of experts of intermediate_size whose projections and
    router carry biases, a learned sink per query head, biases on the attention
    projections, windows on the layers layer_types marks (by default every other one)."""
    experts = {
        "routed": config["num_local_experts"],
        "per_token": config["num_experts_per_tok"],
        "router_bias": True,
        "bias": True,
    }
    fields = {**llama_like(config), "attention_sinks": True, "experts": experts}
    return windows(config, fields)


def jamba(config: Config) -> Config:
    """Jamba: attention on layer i when i % attn_layer_period == attn_layer_offset, a Mamba
    mixer elsewhere; experts on layer i when i % expert_layer_period == expert_layer_offset
    (and num_experts > 1), a dense MLP elsewhere; no router bias, no shared expert."""
    layers, hidden = config["num_hidden_layers"], config["hidden_size"]
    period, offset = config["attn_layer_period"], config["attn_layer_offset"]
    rank = config["mamba_dt_rank"]
    for key in ("attn_layer_period", "expert_layer_period"):
        if config[key] < 1:  # a layer i holds it where i % period == offset
            raise FieldError("hf_config", f"'{key}' is {config[key]}: a period is at least 1")
    if all(i % period != offset for i in range(min(layers, period))):  # a review: 1/0
        message = f"no layer holds attention (attn_layer_offset {offset}, attn_layer_period "
        message += f"{period}, {layers} layers): a model with no attention is not counted"
        raise FieldError("hf_config", message)
    mamba = {
        "layers": per_layer(layers, lambda i: i % period != offset),
        "d_state": config["mamba_d_state"],
        "d_conv": config["mamba_d_conv"],
        "d_inner": config["mamba_expand"] * hidden,
        "dt_rank": -(-hidden // 16) if rank == "auto" else rank,
        "conv_bias": bool(config["mamba_conv_bias"]),
        "proj_bias": bool(config["mamba_proj_bias"]),
    }
    fields = {**llama_like(config), "mamba": mamba}
    if config["num_experts"] > 1:
        period, offset = config["expert_layer_period"], config["expert_layer_offset"]
        fields["experts"] = {
            "routed": config["num_experts"],
            "per_token": config["num_experts_per_tok"],
            "layers": per_layer(layers, lambda i: i % period == offset),
        }
    return fields


def qwen2_moe(config: Config) -> Config:
    """Qwen2-MoE: Qwen3-MoE's layer pattern with Qwen2's attention (q/k/v biases when
    qkv_bias, no q/k norms), and a shared expert of shared_expert_intermediate_size with a
    sigmoid gate (a Linear(hidden, 1))."""
    fields = qwen3_moe(config)
    fields["experts"].update(
        shared_width=config["shared_expert_intermediate_size"], shared_gate=True
    )
    bias = "qkv" if config.get("qkv_bias") else "none"
    return {**fields, "qk_norm": "none", "attention_bias": bias}


def phimoe(config: Config) -> Config:
    """Phi-3.5-MoE: LayerNorms with biases, biases on the attention projections when
    attention_bias, a biased LM head when lm_head_bias, every layer a mixture of SwiGLU
    experts of intermediate_size, a window on every layer."""
    experts = {"routed": config["num_local_experts"], "per_token": config["num_experts_per_tok"]}
    fields = {**llama_like(config), "norm": "layernorm", "experts": experts}
    fields["head_bias"] = bool(config.get("lm_head_bias"))
    return windows(config, fields)
