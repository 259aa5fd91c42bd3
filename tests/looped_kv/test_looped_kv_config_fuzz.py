"""A model's config.json of any value types (issue 29, item 3): the calculator answers, or
refuses with its one documented error (SpecError, one line naming the model's field), never a
traceback or a hang; a boolean key holding anything but a boolean is always refused."""

from __future__ import annotations

import json

import pytest
from conftest import LOOPED_KV, no_hang
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import infoflow
from infoflow.core.errors import SpecError
from infoflow.looped_kv.hf_config import BOOLEANS, INTEGERS, LAYOUTS, NOT_NULL, UNMODELLED

CONFIGS = ["llama-3-8b", "mixtral-8x7b", "gemma-2-2b", "qwen3-30b-a3b", "deepseek-v3", "jamba-v0.1"]
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**12), max_value=10**12)
    | st.sampled_from([0, 1, 10**9, 10**30, 2**63])
    | st.floats(allow_nan=True, allow_infinity=False)
    | st.sampled_from(["false", "true", "8", "", "auto", "full_attention"])
)
VALUES = (
    SCALARS
    | st.lists(SCALARS, max_size=4)
    | st.dictionaries(st.text(max_size=5), SCALARS, max_size=2)
)


def _keys(name: str) -> list[str]:
    return sorted({*json.loads((LOOPED_KV / "hf_configs" / f"{name}.json").read_text()), *INTEGERS})


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data(), name=st.sampled_from(CONFIGS))
def test_any_config_value_is_counted_or_refused_in_one_line(tmp_path, data, name) -> None:
    config = json.loads((LOOPED_KV / "hf_configs" / f"{name}.json").read_text())
    changes = data.draw(
        st.dictionaries(st.sampled_from(_keys(name)), VALUES, min_size=1, max_size=3)
    )
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, **changes}))
    spec = {
        "kind": "looped_kv",
        "model": {"hf_config": str(path)},
        "serving": {"context_tokens": 4096},
    }
    wrong_boolean = any(
        k in BOOLEANS and not isinstance(v, bool | None) for k, v in changes.items()
    )
    wrong_integer = any(
        k in INTEGERS and v is not None and not (type(v) is int and v >= 0)
        for k, v in changes.items()
    )
    reads = LAYOUTS[config["model_type"]][1]  # a null key the layout never reads is not read
    wrong_null = any(
        k in NOT_NULL and v is None and (k not in UNMODELLED or k in reads)
        for k, v in changes.items()
    )
    with no_hang(120):
        try:
            result = infoflow.predict(spec)
        except SpecError as error:
            assert "\n" not in str(error) and "field 'model" in str(error), str(error)
            return
    assert not (wrong_boolean or wrong_integer or wrong_null), changes
    assert result["model_parameters"].value > 0


def test_a_null_key_the_layout_does_not_read_is_not_refused(tmp_path) -> None:
    """A dense config carrying a null MoE key: transformers never reads it (a review)."""
    config = json.loads((LOOPED_KV / "hf_configs" / "llama-3-8b.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "num_experts_per_tok": None}))
    spec = {"kind": "looped_kv", "model": {"hf_config": str(path)}}
    assert infoflow.predict({**spec, "serving": {"context_tokens": 4096}})


@pytest.mark.parametrize(
    ("name", "key", "value", "said"),
    [  # a review, 2026-12-07: each was counted, exit 0, with a wrong number
        ("jamba-v0.1", "mamba_proj_bias", "false", "not true or false"),
        ("qwen1.5-moe-a2.7b", "qkv_bias", "false", "not true or false"),
        ("phi-3.5-moe", "lm_head_bias", "false", "not true or false"),
        ("deepseek-v3", "n_shared_experts", [], "not a whole number 0 or more"),
        ("deepseek-v3", "num_nextn_predict_layers", [], "not a whole number 0 or more"),
        ("deepseek-v3", "moe_intermediate_size", None, "is null, where a number belongs"),
        ("llama-4-scout-17b-16e", "intermediate_size", None, "is null, where a number belongs"),
        ("llama-4-scout-17b-16e", "interleave_moe_layer_step", 1.5, "not a whole number"),
        ("jamba-v0.1", "num_experts", -1, "not a whole number 0 or more"),
        ("gpt-oss-20b", "layer_types", [], "layer_types holds 0 entries for the config's 24"),
        ("huginn-0125", "padded_vocab_size", [], "not a whole number 0 or more"),
    ],
)
def test_a_value_transformers_would_not_read_is_refused(tmp_path, name, key, value, said):
    config = json.loads((LOOPED_KV / "hf_configs" / f"{name}.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, key: value}))
    spec = {"kind": "looped_kv", "model": {"hf_config": str(path)}}
    with pytest.raises(SpecError, match=r"field 'model\.hf_config'") as error:
        infoflow.predict(spec)
    assert said in str(error.value)
