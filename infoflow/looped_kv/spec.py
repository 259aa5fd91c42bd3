"""The ``looped_kv`` spec: a looped (weight-tied) decoder, a KV-cache codec, a serving setting.

Architecture fields follow the paper's notation (theory note ``looped_kv.md``): ``layers`` is
R, the core layers run ``loops`` (T) times; ``prelude_layers`` (P) and ``coda_layers`` (C) run
once. A model may instead name a Hugging Face ``config.json`` in ``hf_config``; fields given
next to it override what the file says.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Literal

from pydantic import (
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from infoflow.core.errors import FieldError
from infoflow.core.spec_base import SpecBase, StrictModel, existing_path
from infoflow.looped_kv.hf_config import read_hf_config

DType = Literal["bfloat16", "float16", "float32", "float8"]
CacheDType = Literal["bfloat16", "float16", "float32", "float8", "int8", "int4"]
#: Integer cache dtypes and their bits; each group of numbers carries an fp16 scale and zero
#: point (4 bytes).
QUANTIZED = {"int8": 8, "int4": 4}
#: GPU presets: memory per device as the vendor publishes it, in GB (10^9 bytes).
DEVICES = {
    "h200": 141,
    "h100-sxm": 80,
    "h100-nvl": 94,
    "h20": 96,
    "a100-80gb": 80,
    "a100-40gb": 40,
    "l40s": 48,
    "l4": 24,
    "a10g": 24,
    "rtx-4090": 24,
    "rtx-5090": 32,
    "rtx-6000-ada": 48,
    "b200": 180,
    "mi300x": 192,
    "mi325x": 256,
}
DeviceName = Literal[
    "h200",
    "h100-sxm",
    "h100-nvl",
    "h20",
    "a100-80gb",
    "a100-40gb",
    "l40s",
    "l4",
    "a10g",
    "rtx-4090",
    "rtx-5090",
    "rtx-6000-ada",
    "b200",
    "mi300x",
    "mi325x",
]
#: The codecs that keep latents, with ranks r_k and r_v.
RANKED = ("per_head", "2d", "head_axis")

#: Bytes per element of each dtype.
DTYPE_BYTES: dict[str, int] = {"float32": 4, "bfloat16": 2, "float16": 2, "float8": 1}


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

    @model_validator(mode="after")
    def _top_k(self) -> Experts:
        if self.per_token > self.routed:
            raise FieldError("per_token", f"{self.per_token} of only {self.routed} experts")
        return self

    def moe_layers(self, layers: int) -> int:
        """How many of ``layers`` layers are MoE layers."""
        return sum(1 for i in range(self.dense_layers, layers) if i % self.every == 0)


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


class LoopedModel(StrictModel):
    """A decoder whose core block of ``layers`` layers runs ``loops`` times."""

    hf_config: str | None = Field(
        None,
        description="Path to a Hugging Face config.json (Ouro-style, Huginn-style or a plain "
        "decoder), relative to the spec file; the fields below override it.",
    )
    name: str
    hidden_size: PositiveInt
    layers: PositiveInt = Field(description="R: core (looped) layers.")
    prelude_layers: NonNegativeInt = Field(0, description="P: layers run once before the loop.")
    coda_layers: NonNegativeInt = Field(0, description="C: layers run once after the loop.")
    loops: PositiveInt = Field(description="T: how many times the core block runs.")
    heads: PositiveInt
    kv_heads: PositiveInt | None = Field(None, description="KV heads; default: heads (MHA).")
    head_dim: PositiveInt | None = Field(None, description="Default: hidden_size / heads.")
    intermediate_size: PositiveInt
    vocab_size: PositiveInt
    tie_embeddings: bool = False
    mlp: Literal["swiglu", "gelu"] = "swiglu"
    dtype: DType = "bfloat16"
    norm: Literal["rmsnorm", "layernorm"] = Field(
        "rmsnorm", description="rmsnorm has a weight; layernorm a weight and a bias."
    )
    norms_per_layer: NonNegativeInt = Field(
        2, description="2 for pre-norm blocks; 4 for sandwich norms (Ouro, Huginn)."
    )
    attention_bias: Literal["none", "qk", "qkv", "qkvo"] = Field(
        "none", description="Which attention projections carry a bias."
    )
    mlp_bias: bool = False
    loop_adapter: bool = Field(
        False,
        description="A Linear(2*hidden, hidden) that injects the embedding at every loop "
        "(Huginn's recurrent-block adapter).",
    )
    exit_gate: bool = Field(
        False, description="A Linear(hidden, 1) with bias deciding early exit (Ouro)."
    )
    experts: Experts | None = Field(None, description="A mixture of experts (not looped).")
    latent_attention: LatentAttention | None = Field(
        None, description="Multi-head latent attention (not looped)."
    )
    sliding_window: PositiveInt | None = Field(
        None, description="Tokens a windowed layer attends to and caches (not looped)."
    )
    window_layers: list[bool] | None = Field(
        None, description="Per layer, whether it is windowed; default: every layer."
    )
    checkpoint: str | None = Field(
        None,
        description="A local folder with an Ouro-style checkpoint (config.json and "
        "*.safetensors), relative to the spec file: `infoflow validate` measures it instead "
        "of training a small model (needs the hf extra). Predictions do not read it.",
    )

    @field_validator("checkpoint")
    @classmethod
    def _resolve_checkpoint(cls, value: str | None, info: ValidationInfo) -> str | None:
        return existing_path(value, info, "checkpoint folder", folder=True)

    @model_validator(mode="before")
    @classmethod
    def _merge_hf_config(cls, data: object, info: ValidationInfo) -> object:
        if isinstance(data, dict) and data.get("hf_config") is not None:
            if not isinstance(data["hf_config"], str):
                raise FieldError("hf_config", "must be a path (a string)")
            base_dir = Path((info.context or {}).get("base_dir", "."))
            return {**read_hf_config(base_dir / data["hf_config"]), **data}
        return data

    @model_validator(mode="after")
    def _fill_defaults(self) -> LoopedModel:
        if self.kv_heads is None:
            self.kv_heads = self.heads
        if self.heads % self.kv_heads:
            raise FieldError("kv_heads", f"{self.kv_heads} does not divide heads = {self.heads}")
        if self.head_dim is None:
            if self.hidden_size % self.heads:
                raise FieldError(
                    "head_dim",
                    f"not given, and hidden_size {self.hidden_size} is not a multiple of "
                    f"heads {self.heads}: give head_dim",
                )
            self.head_dim = self.hidden_size // self.heads
        self._check_extensions()
        return self

    def _check_extensions(self) -> None:
        """Experts, latent attention and windows are modelled for plain decoders only."""
        extensions = {
            "experts": self.experts,
            "latent_attention": self.latent_attention,
            "sliding_window": self.sliding_window,
        }
        looped = self.loops > 1 or self.prelude_layers or self.coda_layers
        for name, value in extensions.items():
            if value is not None and looped:
                raise FieldError(
                    name, "modelled for plain decoders only (loops 1, no prelude or coda)"
                )
        if self.experts and (self.mlp != "swiglu" or self.mlp_bias):
            raise FieldError("experts", "experts are modelled as SwiGLU MLPs without bias")
        if self.latent_attention and self.attention_bias != "none":
            raise FieldError("latent_attention", "modelled without attention biases")
        if self.window_layers is not None:
            if self.sliding_window is None:
                raise FieldError("window_layers", "needs sliding_window")
            if len(self.window_layers) != self.layers:
                raise FieldError(
                    "window_layers", f"{len(self.window_layers)} entries for {self.layers} layers"
                )


class Codec(StrictModel):
    """How the looped part of the cache is stored."""

    variant: Literal["none", "per_head", "2d", "head_axis", "final_loop"] = Field(
        "none",
        description="none: full cache; per_head: one latent per token, core layer and KV head "
        "(LLA); 2d: one latent per token and core layer for all KV heads and loops (LLA-2D, "
        "LLA and MLA combined); head_axis: one latent per token, core layer and loop for all "
        "KV heads (MLA-style, the paper's control); final_loop: keep only the last loop's "
        "K/V (a control).",
    )
    r_k: PositiveInt | None = Field(None, description="Key latent rank (latent codecs).")
    r_v: PositiveInt | None = Field(None, description="Value latent rank (latent codecs).")


class Serving(StrictModel):
    """The serving setting: sequence length and the memory the cache may use."""

    context_tokens: PositiveInt
    generated_tokens: NonNegativeInt = 0
    cache_dtype: CacheDType | None = Field(
        None,
        description="KV-cache dtype; default: model.dtype. int8 and int4 carry an fp16 "
        "scale and zero point per group of cache_group_size numbers.",
    )
    cache_group_size: PositiveInt = Field(
        64, description="Numbers per quantization group of an int8 or int4 cache."
    )
    memory_budget_gib: PositiveFloat | None = Field(
        None, description="Memory for the KV cache, given directly (GiB)."
    )
    device: DeviceName | None = Field(
        None, description="A GPU preset: its memory as the vendor publishes it (GB) per device."
    )
    tensor_parallel: PositiveInt = Field(
        1,
        description="Devices the model is split over (tensor parallel): their memory adds "
        "up, the weights are split, and a cache shared by all heads is kept on every device.",
    )
    device_memory_gib: PositiveFloat | None = Field(
        None,
        description="Device memory (GiB); the cache gets device * usable_fraction - weights - "
        "codec weights - overhead.",
    )
    usable_fraction: float = Field(0.9, gt=0, le=1)
    overhead_gib: NonNegativeFloat = Field(
        0.0, description="Memory reserved for activations and runtime (GiB)."
    )
    batch_step: PositiveInt | None = Field(
        None, description="Round capacities down to a multiple of this (papers use grids)."
    )

    @model_validator(mode="after")
    def _one_budget(self) -> Serving:
        given = [
            name
            for name in ("memory_budget_gib", "device_memory_gib", "device")
            if getattr(self, name) is not None
        ]
        if len(given) > 1:
            raise FieldError(
                given[0],
                f"give one of memory_budget_gib, device_memory_gib and "
                f"device, not {' and '.join(given)} (set one to null: "
                f"--set serving.{given[0]}=null)",
            )
        return self

    @property
    def device_bytes(self) -> Fraction | None:
        """Memory of one device in bytes (exact), from the preset or device_memory_gib."""
        if self.device is not None:
            return Fraction(DEVICES[self.device] * 10**9)
        if self.device_memory_gib is not None:
            return Fraction(str(self.device_memory_gib)) * 2**30
        return None

    @property
    def sequence_tokens(self) -> int:
        """Tokens cached per sequence at the end of generation."""
        return self.context_tokens + self.generated_tokens


def rank_limit(model: LoopedModel, variant: str) -> tuple[int, str]:
    """The dimension a latent codec compresses (its largest rank), and its formula."""
    if variant == "2d":
        return model.loops * model.head_dim * model.kv_heads, "T*head_dim*kv_heads"
    if variant == "head_axis":
        return model.kv_heads * model.head_dim, "kv_heads*head_dim"
    return model.loops * model.head_dim, "T*head_dim"


class LoopedKVSpec(SpecBase):
    """KV cache of a looped model and its cross-loop latent compression."""

    kind: Literal["looped_kv"]
    model: LoopedModel
    codec: Codec = Codec()
    serving: Serving

    @property
    def cache_element_bytes(self) -> Fraction:
        """Bytes per cached number, quantization scales included (9/16 for int4 in groups of
        64: half a byte, plus 4 bytes per 64 numbers)."""
        dtype = self.serving.cache_dtype or self.model.dtype
        if dtype in QUANTIZED:
            return Fraction(QUANTIZED[dtype], 8) + Fraction(4, self.serving.cache_group_size)
        return Fraction(DTYPE_BYTES[dtype])

    @model_validator(mode="after")
    def _check_cache(self) -> LoopedKVSpec:
        """A codec is modelled on per-head caches only; an integer cache needs vectors made of
        whole groups and no codec."""
        model, dtype = self.model, self.serving.cache_dtype or self.model.dtype
        if self.codec.variant != "none" and (model.latent_attention or model.sliding_window):
            raise FieldError(
                "codec.variant", "a codec on latent attention or windowed layers is not modelled"
            )
        if dtype in QUANTIZED:
            group = self.serving.cache_group_size
            if self.codec.variant != "none":
                raise FieldError("serving.cache_dtype", f"{dtype} with a codec is not modelled")
            vector = model.head_dim
            if model.latent_attention:
                vector = model.latent_attention.kv_rank + model.latent_attention.rope_dim
            if vector % group:
                message = f"{group} does not divide the cached vector ({vector})"
                raise FieldError("serving.cache_group_size", message)
        return self

    @model_validator(mode="after")
    def _check_parallel(self) -> LoopedKVSpec:
        """Tensor parallelism splits the KV heads: one number must divide the other."""
        tp, heads = self.serving.tensor_parallel, self.model.kv_heads
        if tp > 1 and tp % heads and heads % tp:
            message = f"{tp} devices cannot split {heads} KV heads evenly"
            raise FieldError("serving.tensor_parallel", message)
        return self

    @model_validator(mode="after")
    def _check_ranks(self) -> LoopedKVSpec:
        codec, model = self.codec, self.model
        uses_ranks = codec.variant in RANKED
        for name in ("r_k", "r_v"):
            rank = getattr(codec, name)
            if uses_ranks and rank is None:
                raise FieldError(f"codec.{name}", f"required by the {codec.variant} codec")
            if not uses_ranks and rank is not None:
                raise FieldError(
                    f"codec.{name}",
                    f"only the latent codecs ({', '.join(RANKED)}) take ranks, not {codec.variant}",
                )
            if rank is None:
                continue
            limit, formula = rank_limit(model, codec.variant)
            if rank > limit:
                raise FieldError(
                    f"codec.{name}",
                    f"rank {rank} exceeds the dimension of what it compresses, {formula} = {limit}",
                )
        return self
