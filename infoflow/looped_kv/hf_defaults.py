"""What a Hugging Face config means when it leaves a key out, and what it is when it leaves
out ``model_type``.

- :data:`DEFAULTS`: per ``model_type``, the value transformers' config class takes for a key
  the file omits (transformers 5.24), for the keys whose absence changes a count (KV heads,
  head width, tied embeddings, windows, experts). The tests read the same keys from
  transformers' own config classes and compare.
- :data:`ARCHITECTURES`: the ``architectures`` entries that name one layout, so a config
  without ``model_type`` is read only when it says what it is.
- :data:`REFUSED`: model types the calculator knows of but does not count, with the feature
  that is missing.
"""

from __future__ import annotations

_QWEN_WINDOWS = {"use_sliding_window": False, "sliding_window": 4096, "max_window_layers": 28}
_GEMMA = {"tie_word_embeddings": True, "head_dim": 256}

DEFAULTS: dict[str, dict[str, object]] = {
    "mistral": {"sliding_window": 4096, "num_key_value_heads": 8},
    "mixtral": {"num_key_value_heads": 8},
    "qwen2": {**_QWEN_WINDOWS, "num_key_value_heads": 32},
    "qwen3": {**_QWEN_WINDOWS, "num_key_value_heads": 32, "head_dim": 128},
    "qwen3_moe": {
        **_QWEN_WINDOWS,
        "num_key_value_heads": 4,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 768,
    },
    "gemma": {**_GEMMA, "num_key_value_heads": 16},
    "gemma2": {**_GEMMA, "num_key_value_heads": 4, "sliding_window": 4096},
    "gemma3_text": {
        **_GEMMA,
        "num_key_value_heads": 4,
        "sliding_window": 4096,
        "sliding_window_pattern": 6,
    },
    "starcoder2": {
        "num_key_value_heads": 2,
        "tie_word_embeddings": True,
        "use_bias": True,
        "intermediate_size": 12288,
    },
    "cohere": {"tie_word_embeddings": True, "use_qk_norm": False},
    "gpt2": {"tie_word_embeddings": True, "n_positions": 1024},
    "gpt_neox": {"attention_bias": True, "intermediate_size": 24576},
    "falcon": {
        "tie_word_embeddings": True,
        "multi_query": True,
        "new_decoder_architecture": False,
        "parallel_attn": True,
        "bias": False,
    },
    "olmoe": {"num_experts": 64, "num_experts_per_tok": 8},
    "qwen2_moe": {
        **_QWEN_WINDOWS,
        "num_key_value_heads": 16,
        "qkv_bias": True,
        "num_experts": 60,
        "num_experts_per_tok": 4,
        "moe_intermediate_size": 1408,
        "shared_expert_intermediate_size": 5632,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
    },
    "phimoe": {
        "num_key_value_heads": 8,
        "num_local_experts": 16,
        "num_experts_per_tok": 2,
        "attention_bias": False,
        "lm_head_bias": False,
    },
    "jamba": {
        "num_key_value_heads": 8,
        "num_experts": 16,
        "num_experts_per_tok": 2,
        "attn_layer_period": 8,
        "attn_layer_offset": 4,
        "expert_layer_period": 2,
        "expert_layer_offset": 1,
        "mamba_d_state": 16,
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "mamba_dt_rank": "auto",
        "mamba_conv_bias": True,
        "mamba_proj_bias": False,
    },
    "gpt_oss": {
        "num_key_value_heads": 8,
        "head_dim": 64,
        "sliding_window": 128,
        "attention_bias": True,
        "num_local_experts": 128,
        "num_experts_per_tok": 4,
    },
    "llama4_text": {
        "num_key_value_heads": 8,
        "head_dim": 128,
        "attention_chunk_size": 8192,
        "interleave_moe_layer_step": 1,
        "num_local_experts": 16,
        "num_experts_per_tok": 1,
        "intermediate_size_mlp": 16384,
    },
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

#: ``architectures`` entries -> the model_type they name (configs without ``model_type``).
ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "MixtralForCausalLM": "mixtral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "GemmaForCausalLM": "gemma",
    "Gemma2ForCausalLM": "gemma2",
    "Gemma3ForCausalLM": "gemma3_text",
    "Phi3ForCausalLM": "phi3",
    "Olmo2ForCausalLM": "olmo2",
    "OlmoeForCausalLM": "olmoe",
    "GPT2LMHeadModel": "gpt2",
    "GPTNeoXForCausalLM": "gpt_neox",
    "Starcoder2ForCausalLM": "starcoder2",
    "CohereForCausalLM": "cohere",
    "FalconForCausalLM": "falcon",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "GptOssForCausalLM": "gpt_oss",
    "JambaForCausalLM": "jamba",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "PhimoeForCausalLM": "phimoe",
}

#: Model types known and not counted, with what the calculator would need to count them.
REFUSED = {
    "llama4": "a vision encoder: give its text_config as a config of its own (model_type "
    "llama4_text)",
    "gemma3": "a vision tower: give its text_config as a config of its own (model_type "
    "gemma3_text)",
}
