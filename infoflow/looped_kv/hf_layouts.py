"""The layouts the calculator reads, by ``model_type``: the reader (:mod:`hf_families`,
:mod:`hf_experts`) and the refusable keys (``hf_config.UNMODELLED``) it reads."""

from __future__ import annotations

from infoflow.looped_kv.hf_experts import (
    deepseek,
    gpt_oss,
    jamba,
    llama4,
    mixtral,
    olmoe,
    phimoe,
    qwen2_moe,
    qwen3_moe,
)
from infoflow.looped_kv.hf_families import (
    cohere,
    falcon,
    gemma,
    gpt2,
    gpt_neox,
    huginn,
    llama_like,
    olmo2,
    qwen3,
    starcoder2,
    windowed,
)

_WINDOW_KEYS = {"sliding_window", "layer_types", "sliding_window_pattern"}
_QWEN_MOE_KEYS = {"num_experts", "num_experts_per_tok", "moe_intermediate_size", "mlp_only_layers"}
_DEEPSEEK_KEYS = {
    "n_routed_experts",
    "n_shared_experts",
    "num_experts_per_tok",
    "moe_intermediate_size",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
    "num_nextn_predict_layers",
}
_LLAMA4_KEYS = {"num_local_experts", "num_experts_per_tok", "attention_chunk_size", "layer_types"}
_JAMBA_KEYS = {"num_experts", "num_experts_per_tok", "mamba_d_state", "attn_layer_period"}
#: The layouts read, by model_type: the reader and the UNMODELLED keys it reads.
LAYOUTS = {
    "llama": (llama_like, set()),
    "ouro": (llama_like, set()),
    "mistral": (windowed, _WINDOW_KEYS),
    "qwen2": (windowed, _WINDOW_KEYS),
    "phi3": (windowed, _WINDOW_KEYS),
    "qwen3": (qwen3, _WINDOW_KEYS),
    "qwen3_moe": (qwen3_moe, _WINDOW_KEYS | _QWEN_MOE_KEYS),
    "gemma": (gemma, set()),
    "gemma2": (gemma, _WINDOW_KEYS),
    "gemma3_text": (gemma, _WINDOW_KEYS),
    "olmo2": (olmo2, set()),
    "olmoe": (olmoe, {"num_experts", "num_experts_per_tok"}),
    "cohere": (cohere, set()),
    "gpt2": (gpt2, set()),
    "gpt_neox": (gpt_neox, set()),
    "starcoder2": (starcoder2, _WINDOW_KEYS),
    "falcon": (falcon, {"multi_query"}),
    "mixtral": (mixtral, {"num_local_experts", "num_experts_per_tok", *_WINDOW_KEYS}),
    "deepseek_v2": (deepseek, _DEEPSEEK_KEYS),
    "deepseek_v3": (deepseek, _DEEPSEEK_KEYS),
    "llama4_text": (llama4, _LLAMA4_KEYS),
    "gpt_oss": (gpt_oss, {"num_local_experts", "num_experts_per_tok", *_WINDOW_KEYS}),
    "jamba": (jamba, _JAMBA_KEYS),
    "qwen2_moe": (qwen2_moe, _WINDOW_KEYS | _QWEN_MOE_KEYS | {"shared_expert_intermediate_size"}),
    "phimoe": (phimoe, {"num_local_experts", "num_experts_per_tok", *_WINDOW_KEYS}),
    "huginn_raven": (huginn, set()),
}
