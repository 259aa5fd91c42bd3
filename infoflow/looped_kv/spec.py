"""The ``looped_kv`` spec: a looped (weight-tied) decoder, a KV-cache codec, a serving setting.

Architecture fields follow the paper's notation (theory note ``looped_kv.md``): ``layers`` is
R, the core layers run ``loops`` (T) times; ``prelude_layers`` (P) and ``coda_layers`` (C) run
once. A model may instead name a Hugging Face ``config.json`` in ``hf_config``; fields given
next to it override what the file says.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Literal

from pydantic import (
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    NonNegativeInt,
    PositiveInt,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from infoflow.core.errors import FieldError
from infoflow.core.spec_base import SpecBase, StrictModel, existing_path, fill_derived
from infoflow.core.text import one_line
from infoflow.looped_kv.hf_config import read_hf_config
from infoflow.looped_kv.parts import Experts, LatentAttention, MambaLayers, WeightQuantization
from infoflow.looped_kv.serving import DEVICES, QUANTIZED, CacheDType, Serving

__all__ = [
    "DEVICES",
    "DTYPE_BYTES",
    "QUANTIZED",
    "CacheDType",
    "Codec",
    "Experts",
    "LatentAttention",
    "LoopedKVSpec",
    "LoopedModel",
    "MambaLayers",
    "Serving",
    "WeightQuantization",
    "rank_limit",
]

DType = Literal["bfloat16", "float16", "float32", "float8"]
#: The codecs that keep latents, with ranks r_k and r_v.
RANKED = ("per_head", "2d", "head_axis")

#: Bytes per element of each dtype.
DTYPE_BYTES: dict[str, int] = {"float32": 4, "bfloat16": 2, "float16": 2, "float8": 1}


def _required_unless_hf_config(schema: dict) -> None:
    """In the JSON Schema: the model's required fields, unless ``hf_config`` supplies them."""
    required = schema.pop("required", [])
    schema["anyOf"] = [{"required": ["hf_config"]}, {"required": required}]


class LoopedModel(StrictModel):
    """A decoder whose core block of ``layers`` layers runs ``loops`` times."""

    model_config = ConfigDict(json_schema_extra=_required_unless_hf_config)

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
    norm: Literal["rmsnorm", "layernorm", "layernorm_no_bias"] = Field(
        "rmsnorm",
        description="rmsnorm and layernorm_no_bias (Cohere) have a weight; layernorm a weight "
        "and a bias.",
    )
    norms_per_layer: NonNegativeInt = Field(
        2, description="2 for pre-norm blocks; 4 for sandwich norms (Ouro, Huginn)."
    )
    attention_bias: Literal["none", "qk", "qkv", "qkvo"] = Field(
        "none", description="Which attention projections carry a bias."
    )
    mlp_bias: bool = False
    head_bias: bool = Field(False, description="The LM head carries a bias (Phi-3.5-MoE).")
    qk_norm: Literal["none", "head", "full"] = Field(
        "none",
        description="Norms on queries and keys: head (one weight of head_dim each, Qwen3, "
        "Gemma-3) or full (n_q*head_dim and n_kv*head_dim, OLMo-2, Command-R+).",
    )
    attention_sinks: bool = Field(
        False, description="A learned sink logit per query head and layer (GPT-OSS)."
    )
    mtp_layers: NonNegativeInt = Field(
        0,
        description="Multi-token-prediction modules (DeepSeek-V3's num_nextn_predict_layers): "
        "not loaded for plain serving, reported apart (mtp_parameters).",
    )
    positions: NonNegativeInt = Field(
        0, description="Learned absolute position embeddings (GPT-2's n_positions); 0: none."
    )
    weight_quantization: WeightQuantization | None = Field(
        None, description="Weights stored quantised (fp8 with block scales)."
    )
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
    mamba: MambaLayers | None = Field(
        None, description="Mamba mixers on some layers, with a constant state (not looped)."
    )
    sliding_window: PositiveInt | None = Field(
        None, description="Tokens a windowed layer attends to and caches (not looped)."
    )
    window_layers: list[bool] | None = Field(
        None, description="Per layer, whether it is windowed; default: every layer."
    )
    kv_broadcast: bool = Field(
        False,
        description="transformers broadcasts the KV heads to every query head before caching "
        "them (Falcon's new architecture); engines keep the KV heads.",
    )
    window_kind: Literal["sliding", "chunked"] = Field(
        "sliding",
        description="sliding: a windowed layer keeps the last sliding_window tokens; chunked "
        "(Llama-4): it attends within chunks of sliding_window tokens, and is counted as "
        "keeping up to a chunk (an upper bound on what a chunk-aware engine keeps).",
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

    @model_validator(mode="wrap")
    @classmethod
    def _merge_hf_config(
        cls, data: object, handler: ModelWrapValidatorHandler, info: ValidationInfo
    ) -> LoopedModel:
        """The config's fields under the spec's own; a value the config gave that does not
        pass is blamed on the config file (a review found them blamed on the spec's field)."""
        if not isinstance(data, dict) or data.get("hf_config") is None:
            return handler(data)
        if not isinstance(data["hf_config"], str):
            raise FieldError("hf_config", "must be a path (a string)")
        base_dir = Path((info.context or {}).get("base_dir", "."))
        required = frozenset(n for n, f in cls.model_fields.items() if f.is_required())
        read = read_hf_config(base_dir / data["hf_config"], required)
        try:
            return handler({**read, **data})
        except ValidationError as exc:
            for err in exc.errors():
                cause = err.get("ctx", {}).get("error")
                loc = [str(part) for part in err["loc"]]
                loc += cause.field.split(".") if isinstance(cause, FieldError) else []
                if loc and loc[0] in read and loc[0] not in data:
                    said = f"{data['hf_config']} gives the model's {'.'.join(loc)}"
                    if not isinstance(cause, FieldError):  # else it names the value itself
                        value = one_line(json.dumps(err.get("input")), 80)
                        said, cause = f"{said} = {value}", cause or err["msg"]
                    raise FieldError("hf_config", f"{said}: {cause}") from None
            raise

    @model_validator(mode="after")
    def _fill_defaults(self) -> LoopedModel:
        if self.kv_heads is None:
            fill_derived(self, "kv_heads", self.heads)
        if self.heads % self.kv_heads:
            read = (
                " (num_attention_heads and num_key_value_heads, read from the config; where it "
                "has no num_key_value_heads, transformers' default for its model_type)"
            )
            message = f"{self.kv_heads} does not divide heads = {self.heads}"
            raise FieldError("kv_heads", message + (read if self.hf_config else ""))
        if self.head_dim is None:
            if self.hidden_size % self.heads:
                raise FieldError(
                    "head_dim",
                    f"not given, and hidden_size {self.hidden_size} is not a multiple of "
                    f"heads {self.heads}: give head_dim",
                )
            fill_derived(self, "head_dim", self.hidden_size // self.heads)
        self._check_extensions()
        return self

    def _check_extensions(self) -> None:
        """Experts, latent attention and windows are modelled for plain decoders only."""
        extensions = {
            "experts": self.experts,
            "latent_attention": self.latent_attention,
            "sliding_window": self.sliding_window,
            "mamba": self.mamba,
        }
        looped = self.loops > 1 or self.prelude_layers or self.coda_layers
        for name, value in extensions.items():
            if value is not None and looped:
                raise FieldError(
                    name, "modelled for plain decoders only (loops 1, no prelude or coda)"
                )
        if self.experts and (self.mlp != "swiglu" or self.mlp_bias):
            raise FieldError("experts", "experts are modelled as SwiGLU MLPs without bias")
        if self.mamba and (len(self.mamba.layers) != self.layers or self.sliding_window):
            message = "needs one mark per layer, and no windows (not modelled together)"
            raise FieldError("mamba", message)
        integer = self.weight_quantization and self.weight_quantization.method in ("gptq", "awq")
        if integer and (self.experts or self.latent_attention or self.loops > 1):
            message = "GPTQ and AWQ are counted on dense, unlooped decoders only"
            raise FieldError("weight_quantization", message)
        if self.mamba and (self.weight_quantization or self.latent_attention):
            raise FieldError("mamba", "with quantised weights or latent attention: not modelled")
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
    def compute_dtype(self) -> str:
        """The dtype the model computes in: its own, bf16 for weights stored in fp8."""
        return "bfloat16" if self.model.dtype == "float8" else self.model.dtype

    @property
    def cache_dtype(self) -> str:
        """The cache's dtype: serving.cache_dtype, or the model's compute dtype (the cache is
        written in the dtype the model computes in)."""
        return self.serving.cache_dtype or self.compute_dtype

    @property
    def cache_element_bytes(self) -> Fraction:
        """Bytes per cached number, quantization scales included (9/16 for int4 in groups of
        64: half a byte, plus 4 bytes per 64 numbers)."""
        dtype = self.cache_dtype
        if dtype in QUANTIZED:
            return Fraction(QUANTIZED[dtype], 8) + Fraction(4, self.serving.cache_group_size)
        return Fraction(DTYPE_BYTES[dtype])

    @model_validator(mode="after")
    def _check_cache(self) -> LoopedKVSpec:
        """A codec is modelled on the per-head caches of a model that loops; an integer cache
        needs vectors made of whole groups and no codec."""
        model, dtype = self.model, self.cache_dtype
        if self.codec.variant != "none" and (
            model.latent_attention or model.sliding_window or model.mamba or model.experts
        ):
            raise FieldError(
                "codec.variant",
                "a codec on latent attention, windowed, Mamba or expert layers is not modelled",
            )
        if self.codec.variant != "none" and model.loops == 1:
            raise FieldError(
                "codec.variant",
                "the codecs compress the loop axis (head_axis is their control at matched "
                "bytes), and this model does not loop (model.loops 1): set codec.variant=none",
            )
        self._check_residual(dtype)
        default = type(self.serving).model_fields["cache_group_size"].default
        if dtype not in QUANTIZED and self.serving.cache_group_size != default:
            message = f"only an int8 or int4 cache has groups, not {dtype}"
            raise FieldError("serving.cache_group_size", message)
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

    def _check_residual(self, dtype: str) -> None:
        """A full-precision residual: an integer cache's, on plain K/V layers."""
        if not self.serving.cache_residual_tokens:
            return
        field = "serving.cache_residual_tokens"
        if dtype not in QUANTIZED:
            raise FieldError(field, f"only an int8 or int4 cache keeps one, not {dtype}")
        if self.serving.engine == "vllm":
            raise FieldError(field, "a residual is transformers' QuantizedCache's, not vLLM's")
        model = self.model
        if model.latent_attention or model.sliding_window or model.mamba:
            raise FieldError(field, "with latent attention, windows or Mamba: not modelled")

    @model_validator(mode="after")
    def _check_parallel(self) -> LoopedKVSpec:
        """Tensor parallelism splits the KV heads: one number must divide the other."""
        tp, heads = self.serving.tensor_parallel, self.model.kv_heads
        if tp > 1 and tp % heads and heads % tp:
            message = (
                f"{tp} devices cannot split {heads} KV heads evenly: one count must divide the "
                "other (more devices than KV heads copy each head)"
            )
            raise FieldError("serving.tensor_parallel", message)
        engine, model = self.serving.engine, self.model
        if engine == "vllm" and (model.sliding_window or model.mamba):
            message = "vLLM pages windowed layers and Mamba states per layer type: not counted"
            raise FieldError("serving.engine", message)
        if engine == "transformers" and model.kv_broadcast:
            message = (
                "transformers before 5.25 caches this model's K/V broadcast to every query "
                "head, 5.25 its KV heads: not counted (the default engine, peak, counts the "
                "KV heads)"
            )
            raise FieldError("serving.engine", message)
        if self.model.mamba and tp > heads:
            message = f"more devices than the {heads} KV heads beside Mamba states: not modelled"
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
