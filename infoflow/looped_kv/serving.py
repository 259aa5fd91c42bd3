"""The ``looped_kv`` serving setting: the context, the cache dtype, the memory the cache may
use (a budget, a device preset, tensor parallelism) and the batch to size."""

from __future__ import annotations

from fractions import Fraction
from typing import Literal

from pydantic import (
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    model_validator,
)

from infoflow.core.errors import FieldError
from infoflow.core.spec_base import StrictModel

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


class Serving(StrictModel):
    """The serving setting: sequence length and the memory the cache may use."""

    context_tokens: PositiveInt
    generated_tokens: NonNegativeInt = 0
    cache_dtype: CacheDType | None = Field(
        None,
        description="KV-cache dtype; default: model.dtype (bfloat16 for float8 weights). int8 "
        "and int4 carry an fp16 scale and zero point per group of cache_group_size numbers.",
    )
    cache_group_size: PositiveInt = Field(
        64, description="Numbers per quantization group of an int8 or int4 cache."
    )
    cache_residual_tokens: NonNegativeInt = Field(
        0,
        description="An int8 or int4 cache keeps up to this many of a sequence's latest "
        "tokens in the model's dtype before quantising them (transformers' QuantizedCache "
        "residual_length, 128 there); 0: none.",
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
    engine: Literal["peak", "transformers", "vllm"] = Field(
        "peak",
        description="How the cache is allocated: peak (what a decoding step holds: a window "
        "of W tokens); transformers (its cache between steps: W - 1 tokens a windowed "
        "layer); vllm (paged: every sequence takes whole blocks of block_size tokens in "
        "every layer; windows and Mamba states, which vLLM pages per layer type, are refused).",
    )
    block_size: PositiveInt = Field(16, description="Tokens a page holds (engine vllm).")
    batch: PositiveInt | None = Field(
        None, description="Sequences served at once: the cache and memory they take."
    )
    batch_step: PositiveInt | None = Field(
        None, description="Round capacities down to a multiple of this (papers use grids)."
    )

    @model_validator(mode="after")
    def _pages_for_vllm(self) -> Serving:
        """``block_size`` is vLLM's page: another size for another engine would be ignored
        (the default is what every spec carries once dumped, so it is not refused)."""
        default = type(self).model_fields["block_size"].default
        if self.block_size != default and self.engine != "vllm":
            raise FieldError("block_size", f"pages are vLLM's, not the {self.engine} engine's")
        return self

    @model_validator(mode="after")
    def _device_shares_with_a_device(self) -> Serving:
        """``usable_fraction`` and ``overhead_gib`` share a device's memory: beside a direct
        budget (all of it the cache's) or no memory at all they would be ignored."""
        if self.device is None and self.device_memory_gib is None:
            fields = type(self).model_fields
            for name in ("usable_fraction", "overhead_gib"):
                if getattr(self, name) != fields[name].default:
                    message = "read only with a device's memory (device or device_memory_gib)"
                    if self.memory_budget_gib is not None:
                        message += "; memory_budget_gib is all the cache's"
                    raise FieldError(name, message)
        return self

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

    @property
    def cached_tokens(self) -> int:
        """The token slots a sequence holds: its tokens, rounded up to whole pages (vllm)."""
        tokens = self.sequence_tokens
        if self.engine == "vllm":
            return -(-tokens // self.block_size) * self.block_size
        return tokens
