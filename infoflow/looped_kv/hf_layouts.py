"""The layouts the calculator reads, by ``model_type``: the reader (:mod:`hf_families`,
:mod:`hf_experts`) and the refusable keys (``hf_config.UNMODELLED``) it reads."""

from __future__ import annotations

from infoflow.looped_kv.hf_experts import (
    _deepseek,
    _gpt_oss,
    _jamba,
    _llama4,
    _mixtral,
    _olmoe,
    _phimoe,
    _qwen2_moe,
    _qwen3_moe,
)
from infoflow.looped_kv.hf_families import (
    _cohere,
    _falcon,
    _gemma,
    _gpt2,
    _gpt_neox,
    _huginn,
    _llama_like,
    _olmo2,
    _qwen3,
    _starcoder2,
    _windowed,
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
    "llama": (_llama_like, set()),
    "ouro": (_llama_like, set()),
    "mistral": (_windowed, _WINDOW_KEYS),
    "qwen2": (_windowed, _WINDOW_KEYS),
    "phi3": (_windowed, _WINDOW_KEYS),
    "qwen3": (_qwen3, _WINDOW_KEYS),
    "qwen3_moe": (_qwen3_moe, _WINDOW_KEYS | _QWEN_MOE_KEYS),
    "gemma": (_gemma, set()),
    "gemma2": (_gemma, _WINDOW_KEYS),
    "gemma3_text": (_gemma, _WINDOW_KEYS),
    "olmo2": (_olmo2, set()),
    "olmoe": (_olmoe, {"num_experts", "num_experts_per_tok"}),
    "cohere": (_cohere, set()),
    "gpt2": (_gpt2, set()),
    "gpt_neox": (_gpt_neox, set()),
    "starcoder2": (_starcoder2, _WINDOW_KEYS),
    "falcon": (_falcon, {"multi_query"}),
    "mixtral": (_mixtral, {"num_local_experts", "num_experts_per_tok", *_WINDOW_KEYS}),
    "deepseek_v2": (_deepseek, _DEEPSEEK_KEYS),
    "deepseek_v3": (_deepseek, _DEEPSEEK_KEYS),
    "llama4_text": (_llama4, _LLAMA4_KEYS),
    "gpt_oss": (_gpt_oss, {"num_local_experts", "num_experts_per_tok", *_WINDOW_KEYS}),
    "jamba": (_jamba, _JAMBA_KEYS),
    "qwen2_moe": (_qwen2_moe, _WINDOW_KEYS | _QWEN_MOE_KEYS | {"shared_expert_intermediate_size"}),
    "phimoe": (_phimoe, {"num_local_experts", "num_experts_per_tok", *_WINDOW_KEYS}),
    "huginn_raven": (_huginn, set()),
}
