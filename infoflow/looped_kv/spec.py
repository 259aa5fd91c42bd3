"""The ``looped_kv`` spec: a looped (weight-tied) decoder, a KV-cache codec, a serving setting.

Architecture fields follow the paper's notation (theory note ``looped_kv.md``): ``layers`` is
R, the core layers run ``loops`` (T) times; ``prelude_layers`` (P) and ``coda_layers`` (C) run
once. A model may instead name a Hugging Face ``config.json`` in ``hf_config``; fields given
next to it override what the file says.
"""

from __future__ import annotations

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

from infoflow.errors import FieldError
from infoflow.looped_kv.hf_config import read_hf_config
from infoflow.spec_base import SpecBase, StrictModel, existing_path

DType = Literal["bfloat16", "float16", "float32", "float8"]

#: Bytes per element of each dtype.
DTYPE_BYTES: dict[str, int] = {"float32": 4, "bfloat16": 2, "float16": 2, "float8": 1}


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
        return self


class Codec(StrictModel):
    """How the looped part of the cache is stored."""

    variant: Literal["none", "per_head", "2d", "final_loop"] = Field(
        "none",
        description="none: full cache; per_head: one latent per token, core layer and KV head "
        "(LLA); 2d: one latent per token and core layer for all KV heads (LLA-2D); "
        "final_loop: keep only the last loop's K/V (a control).",
    )
    r_k: PositiveInt | None = Field(None, description="Key latent rank (per_head and 2d).")
    r_v: PositiveInt | None = Field(None, description="Value latent rank (per_head and 2d).")


class Serving(StrictModel):
    """The serving setting: sequence length and the memory the cache may use."""

    context_tokens: PositiveInt
    generated_tokens: NonNegativeInt = 0
    cache_dtype: DType | None = Field(None, description="KV-cache dtype; default: model.dtype.")
    memory_budget_gib: PositiveFloat | None = Field(
        None, description="Memory for the KV cache, given directly (GiB)."
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
        if self.memory_budget_gib is not None and self.device_memory_gib is not None:
            raise FieldError(
                "memory_budget_gib", "give either memory_budget_gib or device_memory_gib, not both"
            )
        return self

    @property
    def sequence_tokens(self) -> int:
        """Tokens cached per sequence at the end of generation."""
        return self.context_tokens + self.generated_tokens


class LoopedKVSpec(SpecBase):
    """KV cache of a looped model and its cross-loop latent compression."""

    kind: Literal["looped_kv"]
    model: LoopedModel
    codec: Codec = Codec()
    serving: Serving

    @model_validator(mode="after")
    def _check_ranks(self) -> LoopedKVSpec:
        codec, model = self.codec, self.model
        uses_ranks = codec.variant in ("per_head", "2d")
        for name in ("r_k", "r_v"):
            rank = getattr(codec, name)
            if uses_ranks and rank is None:
                raise FieldError(f"codec.{name}", f"required by the {codec.variant} codec")
            if not uses_ranks and rank is not None:
                raise FieldError(
                    f"codec.{name}",
                    f"only the per_head and 2d codecs take ranks, not {codec.variant}",
                )
            if rank is None:
                continue
            limit, formula = model.loops * model.head_dim, "T*head_dim"
            if codec.variant == "2d":
                limit, formula = limit * model.kv_heads, "T*head_dim*kv_heads"
            if rank > limit:
                raise FieldError(
                    f"codec.{name}",
                    f"rank {rank} exceeds the dimension of what it compresses, {formula} = {limit}",
                )
        return self
