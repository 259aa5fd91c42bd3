"""Load an Ouro-style Hugging Face checkpoint from a local folder into a
:class:`~infoflow.validators.looped_kv.model.LoopedDecoder` (style ``ouro``), so that the K/V
measurements run on a real looped model.

The folder holds ``config.json`` (Ouro's keys: ``total_ut_steps`` loops over
``num_hidden_layers`` layers) and the weights as ``*.safetensors`` (one file or shards), with
Ouro's names (``model.layers.{i}.self_attn.q_proj.weight``, ...). Only the ``safetensors``
package is needed (the ``hf`` extra), not ``transformers``: the model's own code is remote
code that is not installed here. The forward follows Ouro's modeling code as published
(sandwich norms, the final norm after every loop, SwiGLU, grouped-query attention,
rotate-half RoPE); the early-exit gate is read and not used (every loop runs).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from infoflow.core.errors import SpecError, install_hint
from infoflow.core.files import read_json
from infoflow.validators.looped_kv.model import LoopedConfig, LoopedDecoder

#: Ouro's per-layer weight names -> ours (the layer index is inserted).
LAYER_WEIGHTS = {
    "self_attn.q_proj.weight": "q_proj.weight",
    "self_attn.k_proj.weight": "k_proj.weight",
    "self_attn.v_proj.weight": "v_proj.weight",
    "self_attn.o_proj.weight": "o_proj.weight",
    "mlp.gate_proj.weight": "gate_proj.weight",
    "mlp.up_proj.weight": "up_proj.weight",
    "mlp.down_proj.weight": "down_proj.weight",
    "input_layernorm.weight": "input_layernorm.weight",
    "input_layernorm_2.weight": "input_layernorm_2.weight",
    "post_attention_layernorm.weight": "post_attention_layernorm.weight",
    "post_attention_layernorm_2.weight": "post_attention_layernorm_2.weight",
}
IGNORED = ("model.early_exit_gate.weight", "model.early_exit_gate.bias")


def config_from(data: dict, max_len: int = 4096) -> LoopedConfig:
    """A looped config from an Ouro config.json (RoPE scaling: linear only; another kind is a
    ValueError, never ignored)."""
    heads = data["num_attention_heads"]
    rope = data.get("rope_parameters") or {}  # transformers 5 writes RoPE settings here
    scaling = data.get("rope_scaling") or rope
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind not in ("default", "linear"):
        raise ValueError(f"rope_scaling of type {kind!r} is not modelled (linear only)")
    theta = rope.get("rope_theta", data.get("rope_theta", 10000.0))
    return LoopedConfig(
        vocab=data["vocab_size"],
        d_model=data["hidden_size"],
        heads=heads,
        prelude=0,
        core=data["num_hidden_layers"],
        loops=data.get("total_ut_steps", 4),
        coda=0,
        mlp_width=data["intermediate_size"],
        max_len=max_len,
        kv_heads=data.get("num_key_value_heads", heads),
        style="ouro",
        rope_theta=theta,
        norm_eps=data.get("rms_norm_eps", 1e-6),
        head_size=data.get("head_dim"),
        rope_scale=float(scaling.get("factor", 1.0)) if kind == "linear" else 1.0,
    )


def load_ouro(folder: str | Path) -> LoopedDecoder:
    """The checkpoint in ``folder`` as a LoopedDecoder; whatever is wrong with the folder
    (a missing or unreadable config or weights file, missing or unknown weights, shapes
    that do not fit the config) is a SpecError naming it (exit code 2 from the CLI)."""
    folder = Path(folder)
    try:
        from safetensors.torch import load_file
    except ModuleNotFoundError:
        raise SpecError(
            str(folder),
            [
                (
                    None,
                    f"reading a checkpoint needs safetensors: {install_hint('safetensors', 'hf')}",
                )
            ],
        ) from None
    config_file, shards = folder / "config.json", sorted(folder.glob("*.safetensors"))
    if not config_file.is_file() or not shards:
        raise SpecError(str(folder), [(None, "expected config.json and *.safetensors here")])
    data = read_json(config_file, "config file")
    try:
        model = LoopedDecoder(config_from(data))
        state = {}
        for shard in shards:
            state.update(load_file(shard))
        model.load_state_dict(_ours(state, model.config.core))
    except KeyError as exc:
        raise SpecError(
            str(folder), [(None, f"no {exc.args[0]!r} in its config or weights")]
        ) from None
    except Exception as exc:  # a damaged file, a shape that does not fit the config
        reason = f"{type(exc).__name__}: {exc}"
        raise SpecError(
            str(folder), [(None, f"not a readable Ouro checkpoint ({reason})")]
        ) from None
    return model.eval()


def _ours(state: dict, layers: int) -> dict:
    """Ouro's weight names -> ours (KeyError for a missing one, ValueError for extras)."""
    ours = {
        "embed.weight": state.pop("model.embed_tokens.weight"),
        "norm.weight": state.pop("model.norm.weight"),
    }
    head = state.pop("lm_head.weight", None)
    ours["unembed.weight"] = head if head is not None else ours["embed.weight"]  # tied
    for i in range(layers):
        for theirs, mine in LAYER_WEIGHTS.items():
            ours[f"core.{i}.{mine}"] = state.pop(f"model.layers.{i}.{theirs}")
    unused = sorted(set(state) - set(IGNORED))
    if unused:
        raise ValueError(f"weights this loader does not know: {unused[:5]}")
    return ours


def save_ouro(model: LoopedDecoder, folder: str | Path) -> None:
    """Write ``model`` (style ``ouro``) as an Ouro checkpoint folder: the inverse of
    :func:`load_ouro` (tests and users make tiny checkpoints with it)."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    c = model.config
    state = {
        "model.embed_tokens.weight": model.embed.weight,
        "model.norm.weight": model.norm.weight,
        "lm_head.weight": model.unembed.weight,
        "model.early_exit_gate.weight": torch.zeros(1, c.d_model),
        "model.early_exit_gate.bias": torch.zeros(1),
    }
    for i, block in enumerate(model.core):
        mine = dict(block.named_parameters())
        for theirs, name in LAYER_WEIGHTS.items():
            state[f"model.layers.{i}.{theirs}"] = mine[name]
    save_file({k: v.detach().contiguous() for k, v in state.items()}, folder / "model.safetensors")
    config = {
        "model_type": "ouro",
        "architectures": ["OuroForCausalLM"],
        "hidden_size": c.d_model,
        "num_hidden_layers": c.core,
        "num_attention_heads": c.heads,
        "num_key_value_heads": c.kv,
        "head_dim": c.head_dim,
        "intermediate_size": c.mlp_width,
        "vocab_size": c.vocab,
        "total_ut_steps": c.loops,
        "rope_theta": c.rope_theta,
        "rms_norm_eps": c.norm_eps,
        "rope_scaling": (
            {"rope_type": "linear", "factor": c.rope_scale} if c.rope_scale != 1.0 else None
        ),
        "tie_word_embeddings": False,
        "hidden_act": "silu",
        "torch_dtype": "float32",
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
