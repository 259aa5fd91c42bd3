"""transformers' own count of a Hugging Face config, for the tests that compare the
calculator with it: the parameters (and stored buffers) of the model built on the meta device,
and the bytes of the cache after a prefill on the CPU (a shrunk config: a few layers of small
width). Imported by the tests only where transformers is installed."""

from __future__ import annotations

from typing import Any

import torch
import transformers

#: Keys that are not the config class's arguments.
_NOT_ARGUMENTS = ("model_type", "torch_dtype", "dtype", "quantization_config")


def config_of(data: dict[str, Any]):
    """transformers' config object for a config.json's contents."""
    fields = {k: v for k, v in data.items() if k not in _NOT_ARGUMENTS}
    return transformers.AutoConfig.for_model(data["model_type"], **fields)


def meta_model(data: dict[str, Any]):
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(config_of(data))


def parameters(model) -> int:
    """Parameters and the buffers the model stores (in its state dict)."""
    stored = model.state_dict()
    counted = sum(p.numel() for p in model.parameters())
    return counted + sum(b.numel() for key, b in model.named_buffers() if key in stored)


def cache_bytes(data: dict[str, Any], tokens: int, dtype=torch.float32) -> int:
    """Bytes of the cache a model in ``dtype`` (float32) keeps after a prefill of ``tokens``
    tokens: the K/V of attention layers, the convolution and recurrent states of Mamba
    layers."""
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config_of(data)).to(dtype).eval()
    ids = torch.randint(0, data.get("vocab_size", 64), (1, tokens))
    with torch.no_grad():
        cache = model(input_ids=ids, use_cache=True).past_key_values
    return sum(_bytes(tensor) for layer in cache.layers for tensor in _tensors(layer))


def _tensors(layer) -> list:
    """The tensors a cache layer holds."""
    held = [getattr(layer, name, None) for name in ("keys", "values")]
    for name in ("conv_states", "recurrent_states"):
        held += list((getattr(layer, name, None) or {}).values())
    return [tensor for tensor in held if isinstance(tensor, torch.Tensor)]


def _bytes(tensor) -> int:
    return tensor.numel() * tensor.element_size()
