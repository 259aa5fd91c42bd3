"""Parts of a ``looped_kv`` model beyond a dense decoder: a mixture of experts, multi-head
latent attention, and weights stored quantised."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, NonNegativeInt, PositiveInt, model_validator

from infoflow.core.errors import FieldError
from infoflow.core.spec_base import StrictModel


class Experts(StrictModel):
    """A mixture of experts in place of the MLP (Mixtral, DeepSeek): SwiGLU experts."""

    routed: PositiveInt = Field(description="Routed experts in an MoE layer.")
    per_token: PositiveInt = Field(description="Routed experts each token uses (top-k).")
    shared: NonNegativeInt = Field(0, description="Shared experts every token uses.")
    width: PositiveInt | None = Field(
        None, description="An expert's intermediate size; default: the model's."
    )
    dense_layers: NonNegativeInt = Field(
        0, description="The first layers keep a dense MLP (first_k_dense_replace)."
    )
    every: PositiveInt = Field(1, description="After those, every n-th layer is MoE.")
    router_bias: bool = Field(
        False, description="A bias per expert in the router (DeepSeek-V3's correction bias)."
    )
    shared_width: PositiveInt | None = Field(
        None,
        description="The shared expert MLP's intermediate size (Qwen2-MoE's "
        "shared_expert_intermediate_size); default: shared * width.",
    )
    shared_gate: bool = Field(
        False, description="A Linear(hidden, 1) gating the shared expert (Qwen2-MoE)."
    )
    bias: bool = Field(
        False,
        description="Each routed expert's projections carry biases (GPT-OSS: 2 * width + "
        "hidden numbers an expert).",
    )
    layers: list[bool] | None = Field(
        None,
        description="Per layer, whether it is an MoE layer (Qwen3-MoE's decoder_sparse_step "
        "and mlp_only_layers); overrides dense_layers and every.",
    )

    @model_validator(mode="after")
    def _top_k(self) -> Experts:
        if self.per_token > self.routed:
            raise FieldError("per_token", f"{self.per_token} of only {self.routed} experts")
        return self

    def moe_layers(self, layers: int) -> int:
        """How many of ``layers`` layers are MoE layers."""
        if self.layers is not None:
            return sum(self.layers)
        first = -(-self.dense_layers // self.every) * self.every  # the first MoE layer
        return max(0, -(-(layers - first) // self.every))


class LatentAttention(StrictModel):
    """Multi-head latent attention (DeepSeek-V2/V3): keys and values come from a compressed
    latent, which the cache holds with the decoupled RoPE key, shared by all heads."""

    kv_rank: PositiveInt = Field(description="The latent's size (kv_lora_rank).")
    q_rank: PositiveInt | None = Field(
        None, description="The query's low rank (q_lora_rank); none: a full query projection."
    )
    rope_dim: PositiveInt = Field(description="The decoupled RoPE key (qk_rope_head_dim).")
    nope_dim: PositiveInt = Field(description="Per head, the key without RoPE (qk_nope_head_dim).")
    v_dim: PositiveInt = Field(description="Per head, the value (v_head_dim).")


class WeightQuantization(StrictModel):
    """Weights stored quantised, as the checkpoint's ``quantization_config`` says: fp8 (e4m3)
    linear weights with one float32 scale per block (DeepSeek-V3's and transformers'
    fine-grained fp8), MXFP4 routed-expert weights (GPT-OSS: 4 bits a number and a one-byte
    scale per 32 along the input), or GPTQ and AWQ linear weights (4 or 8 bits packed in
    int32, an fp16 scale and a packed zero point per group of group_size inputs, and GPTQ's
    int32 g_idx per input); embeddings, the LM head, norms, routers and the modules the config
    exempts stay in the model's dtype."""

    method: Literal["fp8", "mxfp4", "gptq", "awq"] = "fp8"
    bits: Literal[4, 8] = Field(4, description="Bits a number (GPTQ, AWQ).")
    group_size: PositiveInt | None = Field(
        128, description="Inputs sharing a scale (GPTQ, AWQ); none: the whole input."
    )
    zero_point: bool = Field(True, description="AWQ stores packed zero points.")
    block: tuple[PositiveInt, PositiveInt] = Field(
        (128, 128),
        description="Rows and columns of a weight that share one scale (fp8; MXFP4: 1 x 32).",
    )
    exempt: list[str] = Field(
        default_factory=list,
        description="Modules kept unquantised (modules_to_not_convert); only names the "
        "calculator knows to be unquantised anyway are accepted.",
    )


class MambaLayers(StrictModel):
    """Mamba mixers in place of attention on some layers (Jamba): each keeps, per sequence, a
    constant state: the convolution's last d_conv inputs and the SSM state, d_inner numbers
    each wide, whatever the context."""

    layers: list[bool] = Field(description="Per layer, whether its mixer is Mamba.")
    d_state: PositiveInt = Field(description="SSM state per channel (mamba_d_state).")
    d_conv: PositiveInt = Field(description="Convolution width (mamba_d_conv).")
    d_inner: PositiveInt = Field(description="Channels: mamba_expand * hidden_size.")
    dt_rank: PositiveInt = Field(description="Rank of the step projection (mamba_dt_rank).")
    conv_bias: bool = True
    proj_bias: bool = False
    inner_norms: bool = Field(
        True, description="RMSNorms on the step, B and C (Jamba's dt/b/c layernorms)."
    )
