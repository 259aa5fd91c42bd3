"""Every documented limit answers promptly (issue 29, item 5): above it, exit 2 in one line
naming the field; at it or below, an answer. Counts and sizes are asserted, never times (the
fast loop's guard holds each test to 10 CPU s)."""

from __future__ import annotations

import json

import pytest
from conftest import LOOPED_KV, run_cli

import infoflow
from infoflow.looped_kv.hf_families import MAX_LISTED_LAYERS

BILLION = 10**9


def _config(tmp_path, name: str, **changes) -> str:
    data = json.loads((LOOPED_KV / "hf_configs" / f"{name}.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**data, **changes}))
    return str(tmp_path / "config.json")


def _spec(path: str) -> dict:
    return {"kind": "looped_kv", "model": {"hf_config": path}, "serving": {"context_tokens": 4096}}


@pytest.mark.parametrize("name", ["mixtral-8x7b", "deepseek-v3", "mistral-7b-v0.1", "qwen2-7b"])
def test_uniform_layouts_count_a_billion_layers_in_closed_form(tmp_path, name) -> None:
    """Experts on every (or every n-th) layer and a window on every layer are not listed a
    layer an entry: a billion layers are counted, with the MoE layers and windows in full."""
    path = _config(tmp_path, name, num_hidden_layers=BILLION)
    model = infoflow.load_spec(_spec(path)).model
    assert model.layers == BILLION and model.window_layers is None
    if model.experts:
        assert model.experts.layers is None
        dense = model.experts.dense_layers
        assert model.experts.moe_layers(BILLION) == BILLION - dense
    result = infoflow.predict(_spec(path))
    assert result["model_parameters"].value > BILLION * model.hidden_size**2


@pytest.mark.parametrize("name", ["gemma-2-2b", "llama-4-scout-17b-16e", "jamba-v0.1"])
def test_layouts_listed_per_layer_are_refused_above_their_limit(tmp_path, name) -> None:
    """Windows or experts that differ layer by layer are listed up to MAX_LISTED_LAYERS
    layers; above, exit 2 in one line naming the config and the key."""
    path = _config(tmp_path, name, num_hidden_layers=MAX_LISTED_LAYERS + 1)
    done = run_cli("predict", path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert path in done.stderr and "'num_hidden_layers' is 100,001" in done.stderr


def test_a_layout_listed_per_layer_answers_at_its_limit(tmp_path) -> None:
    """Gemma-2 at MAX_LISTED_LAYERS layers: every other layer windowed, counted."""
    path = _config(tmp_path, "gemma-2-2b", num_hidden_layers=MAX_LISTED_LAYERS)
    model = infoflow.load_spec(_spec(path)).model
    assert sum(model.window_layers) == MAX_LISTED_LAYERS // 2
