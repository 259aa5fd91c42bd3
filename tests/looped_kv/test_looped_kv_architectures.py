"""The calculator on the decoders people serve: dense (MHA, GQA), sliding windows, mixtures of
experts and multi-head latent attention, read from config.json files written from the
published configs (specs/looped_kv/hf_configs), against plain numbers here and, where
transformers is installed, against its own count on the meta device."""

from __future__ import annotations

import json

import pytest
from conftest import LOOPED_KV, refused, run_cli

import infoflow

CONFIGS = LOOPED_KV / "hf_configs"
MIB = 2**20

#: Parameters (transformers' count on the meta device, 2026-11-30, transformers 5.24) and
#: bf16/fp16 cache bytes per token (the latent and the RoPE key for latent attention).
EXPECTED = {
    "llama-2-7b": (6_738_415_616, 524_288),
    "llama-3-8b": (8_030_261_248, 131_072),
    "tinyllama-1.1b": (1_100_048_384, 22_528),
    "mistral-7b-v0.1": (7_241_732_096, 131_072),
    "qwen2-0.5b": (494_032_768, 12_288),
    "qwen2-7b": (7_615_616_512, 57_344),
    "mixtral-8x7b": (46_702_792_704, 131_072),
    "mixtral-8x22b": (140_630_071_296, 229_376),
    "deepseek-v2-lite": (15_706_484_224, 31_104),
    "deepseek-v2": (235_741_434_880, 69_120),
    "deepseek-v3": (671_026_419_200, 70_272),
}
#: Active parameters per token as the model cards give them (rounded there).
PUBLISHED_ACTIVE = {
    "mixtral-8x7b": 12.9e9,
    "mixtral-8x22b": 39e9,
    "deepseek-v2": 21e9,
    "deepseek-v3": 37e9,
}


def _predict(name: str, **serving):
    spec = {
        "kind": "looped_kv",
        "model": {"hf_config": str(CONFIGS / f"{name}.json")},
        "serving": {"context_tokens": 1, **serving},
    }
    return infoflow.predict(spec)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_counts_match_the_published_models(name) -> None:
    params, per_token = EXPECTED[name]
    result = _predict(name)
    assert result["model_parameters"].value == params
    assert result["kv_bytes_per_token"].value == per_token
    if name in PUBLISHED_ACTIVE:
        assert result["active_parameters"].value == pytest.approx(PUBLISHED_ACTIVE[name], rel=0.02)


def test_latent_attention_caches_the_latent_and_the_rope_key() -> None:
    """DeepSeek-V2 (paper, section 2.1): (d_c + d_h^R) l = (512 + 64) * 60 numbers a token."""
    result = _predict("deepseek-v2")
    assert result["kv_bytes_per_token"].value == (512 + 64) * 60 * 2
    assert str(result["kv_bytes_per_token"].expression) == "R*bytes*(c_kv + d_rope)"
    assert result["kv_bytes_per_token"].provenance == "standard:deepseek-v2"


def test_a_window_caps_what_a_layer_keeps() -> None:
    """Mistral-7B-v0.1: every layer keeps the last 4,096 tokens, 4 KiB a token and layer."""
    short, long = _predict("mistral-7b-v0.1"), _predict("mistral-7b-v0.1", context_tokens=8192)
    assert short["kv_cache_bytes"].value == 32 * 4096
    assert long["kv_cache_bytes"].value == 32 * 4096 * 4096 == 512 * MIB
    roomy = _predict("mistral-7b-v0.1", context_tokens=8192, memory_budget_gib=1)
    assert roomy["max_context_tokens"].value is None  # every layer windowed: unbounded
    from infoflow.render import format_value

    assert format_value(roomy["max_context_tokens"]) == "Unbounded"  # a table's cell
    assert roomy["max_batch"].value == 2
    tight = _predict("mistral-7b-v0.1", context_tokens=8192, memory_budget_gib=0.25)
    assert tight["max_context_tokens"].value == 2048


def test_windows_on_some_layers_cap_only_those(tmp_path) -> None:
    data = json.loads((CONFIGS / "qwen2-7b.json").read_text())
    data.update(use_sliding_window=True, sliding_window=4096, max_window_layers=14)
    (tmp_path / "config.json").write_text(json.dumps(data))
    spec = {
        "kind": "looped_kv",
        "model": {"hf_config": str(tmp_path / "config.json")},
        "serving": {"context_tokens": 10_000, "memory_budget_gib": 4},
    }
    result = infoflow.predict(spec)
    per_layer = 2 * 2 * 4 * 128  # K and V, bf16, 4 KV heads of 128
    assert result.spec.model.window_layers == [False] * 14 + [True] * 14
    assert result["kv_cache_bytes"].value == per_layer * (14 * 10_000 + 14 * 4096)
    budget = 4 * 2**30  # 14 full layers grow with N, 14 windowed ones stop at 4,096
    assert result["max_context_tokens"].value == (budget - 14 * per_layer * 4096) // (
        14 * per_layer
    )


@pytest.mark.parametrize(
    ("dtype", "per_token"),
    [("int8", 524_288 // 2 * (1 + 4 / 64)), ("int4", 524_288 // 2 * (0.5 + 4 / 64))],
)
def test_integer_caches_count_their_scales(dtype, per_token) -> None:
    """Llama-2-7B, 2 * 32 heads * 128 * 32 layers numbers a token, an fp16 scale and zero
    point per group of 64."""
    result = _predict("llama-2-7b", cache_dtype=dtype)
    assert result["kv_bytes_per_token"].value == per_token
    assert f"{dtype} with an fp16 scale" in result["kv_bytes_per_token"].note


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"serving": {"context_tokens": 1, "cache_dtype": "int4", "cache_group_size": 48}},
            "field 'serving.cache_group_size': 48 does not divide the cached vector (128)",
        ),
        (
            {"codec": {"variant": "per_head", "r_k": 32, "r_v": 32}},
            "field 'codec.variant': a codec on latent attention, windowed, Mamba or expert",
        ),
        (
            {"model": {"hf_config": str(CONFIGS / "mixtral-8x7b.json"), "loops": 4}},
            "field 'model.experts': modelled for plain decoders only",
        ),
        (
            {
                "model": {"hf_config": str(CONFIGS / "mixtral-8x7b.json")},
                "codec": {"variant": "final_loop"},
            },
            "field 'codec.variant': a codec on latent attention, windowed, Mamba or expert",
        ),
        (
            {
                "model": {"hf_config": str(CONFIGS / "llama-3-8b.json")},
                "codec": {"variant": "head_axis", "r_k": 8, "r_v": 8},
            },
            "field 'codec.variant': the codecs compress the loop axis (head_axis is their "
            "control at matched bytes), and this model does not loop (model.loops 1)",
        ),
    ],
    ids=["group", "codec-on-latents", "looped-experts", "codec-on-experts", "codec-unlooped"],
)
def test_what_is_not_modelled_is_refused(tmp_path, change, message) -> None:
    name = "llama-2-7b" if "cache_group_size" in json.dumps(change) else "deepseek-v2"
    spec = {
        "kind": "looped_kv",
        "model": {"hf_config": str(CONFIGS / f"{name}.json")},
        "serving": {"context_tokens": 1},
        **change,
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    assert message in refused("predict", str(tmp_path / "spec.json"))


@pytest.mark.parametrize("key", ["tie_word_embeddings", "mlp_bias", "attention_bias"])
def test_a_boolean_written_as_a_string_is_refused_not_read_as_true(tmp_path, key) -> None:
    """Llama-3-8B's config has all three false; the string "false" used to count as true
    (7,504,924,672 parameters for tied embeddings instead of 8,030,261,248)."""
    config = json.loads((CONFIGS / "llama-3-8b.json").read_text())
    spec = {
        "kind": "looped_kv",
        "model": {"hf_config": str(tmp_path / "config.json")},
        "serving": {"context_tokens": 1},
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    (tmp_path / "config.json").write_text(json.dumps({**config, key: "false"}))
    assert f"'{key}' is 'false', not true or false" in refused(
        "predict", str(tmp_path / "spec.json")
    )
    (tmp_path / "config.json").write_text(json.dumps({**config, key: False}))
    counted = infoflow.predict(infoflow.load_spec(tmp_path / "spec.json"))
    assert counted["model_parameters"].value == 8_030_261_248


def _meta_model(transformers, torch, model_type: str, fields: dict):
    config = transformers.AutoConfig.for_model(model_type, **fields)
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(config)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_transformers_counts_the_same(name) -> None:
    """transformers' own model, built on the meta device: the same parameters (its stored
    buffers included: DeepSeek-V3's router bias); for the models without latent attention
    (test_looped_kv_families compares those on shrunk copies), the same cache
    after a prefill of 6,000 tokens (Mixtral's attention is Mistral's: its experts route by
    data, which the meta device cannot run)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    data = json.loads((CONFIGS / f"{name}.json").read_text())
    fields = {k: v for k, v in data.items() if k not in ("model_type", "torch_dtype")}
    model = _meta_model(transformers, torch, data["model_type"], fields)
    stored = model.state_dict()
    counted = sum(p.numel() for p in model.parameters())
    counted += sum(b.numel() for key, b in model.named_buffers() if key in stored)
    assert counted == EXPECTED[name][0]
    if "kv_lora_rank" in data:
        return
    if "num_local_experts" in data:
        del fields["num_local_experts"], fields["num_experts_per_tok"]
        model = _meta_model(transformers, torch, "mistral", fields)
    tokens = 6000
    ids = torch.zeros(1, tokens, dtype=torch.long, device="meta")
    with torch.no_grad():
        cache = model(input_ids=ids).past_key_values
    numbers = sum(layer.keys.numel() + layer.values.numel() for layer in cache.layers)
    result = _predict(name, context_tokens=tokens)
    spec = result.spec.model
    if spec.sliding_window and tokens >= spec.sliding_window:
        # transformers keeps W - 1 tokens of a windowed layer between steps and W during one;
        # the calculator counts the peak: one token more in every windowed layer
        windowed = sum(spec.window_layers or [True] * spec.layers)
        numbers += result["kv_bytes_per_token"].value // 2 * windowed // spec.layers  # bf16
    assert 2 * numbers == result["kv_cache_bytes"].value


def _counted(tmp_path, config: dict, **serving):
    (tmp_path / "config.json").write_text(json.dumps(config))
    spec = {
        "kind": "looped_kv",
        "model": {"hf_config": str(tmp_path / "config.json")},
        "serving": {"context_tokens": 8192, **serving},
    }
    return infoflow.predict(spec)


def test_keys_a_config_leaves_out_take_transformers_defaults(tmp_path) -> None:
    """Qwen2 windows nothing unless use_sliding_window, then 4,096 tokens from layer 28 on
    (none of Qwen2-7B's 28); Mistral windows 4,096 tokens; DeepSeek-V2's query rank is 1,536
    and it has 2 shared experts."""
    qwen = json.loads((CONFIGS / "qwen2-7b.json").read_text())
    for key in ("use_sliding_window", "sliding_window", "max_window_layers"):
        del qwen[key]
    assert _counted(tmp_path, {**qwen, "max_window_layers": 14}).spec.model.sliding_window is None
    assert (
        _counted(tmp_path, {**qwen, "use_sliding_window": True}).spec.model.sliding_window is None
    )
    half = _counted(tmp_path, {**qwen, "use_sliding_window": True, "max_window_layers": 14})
    assert half.spec.model.sliding_window == 4096
    assert half.spec.model.window_layers == [False] * 14 + [True] * 14
    mistral = json.loads((CONFIGS / "mistral-7b-v0.1.json").read_text())
    del mistral["sliding_window"]
    assert _counted(tmp_path, mistral).spec.model.sliding_window == 4096
    deepseek = json.loads((CONFIGS / "deepseek-v2.json").read_text())
    del deepseek["q_lora_rank"], deepseek["n_shared_experts"]
    assert _counted(tmp_path, deepseek)["model_parameters"].value == EXPECTED["deepseek-v2"][0]


def test_tensor_parallel_copies_only_what_cannot_be_split(tmp_path) -> None:
    """Mistral-7B has 8 KV heads: on 16 devices each is kept twice, so a full window no longer
    fits 0.75 GiB, and the context is bounded again."""
    one = _predict("mistral-7b-v0.1", context_tokens=8192, memory_budget_gib=0.75)
    assert one["max_context_tokens"].value is None  # a 512 MiB window fits
    sixteen = _predict(
        "mistral-7b-v0.1", context_tokens=8192, memory_budget_gib=0.75, tensor_parallel=16
    )
    assert sixteen["max_batch"].value == 0 and sixteen["max_context_tokens"].value == 3072
    assert "each KV head kept 2 times" in sixteen["max_batch"].note


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        ("llama-3-8b", {"total_ut_steps": 4}, "'total_ut_steps' is Ouro's loop count, and "),
        ("qwen3-0.6b", {"total_ut_steps": 4}, "model_type 'qwen3' does not loop"),
        ("ouro-1.4b", {"mean_recurrence": 8}, "both 'total_ut_steps' (4) and 'mean_recurrence'"),
        ("huginn-0125", {"total_ut_steps": 4}, "this layout reads 'mean_recurrence'"),
        ("huginn-0125", {"n_layers": 10}, "'n_layers' is 10, not the 8 of n_layers_in_prelude"),
        (
            "deepseek-v2-lite",
            {"first_k_dense_replace": 100},
            "'first_k_dense_replace' is 100, not below 'num_hidden_layers' 27",
        ),
        ("ouro-1.4b", {"total_ut_steps": "4"}, "'total_ut_steps' is '4', not a whole number"),
        ("ouro-1.4b", {"total_ut_steps": None}, "'total_ut_steps' is null, where a number"),
    ],
)
def test_config_keys_that_contradict_each_other_are_refused_by_name(
    tmp_path, name, change, message
) -> None:
    """A loop key of another layout, two loop counts, a layer count that is not the sum of
    its parts, experts that no layer holds: refused, never one of them silently; a value of
    the wrong type is named by its config key, not by the model field it would fill."""
    config = {**json.loads((CONFIGS / f"{name}.json").read_text()), **change}
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert message in refused("predict", str(tmp_path / "config.json"))


def test_an_ouro_config_without_its_loop_count_is_refused(tmp_path) -> None:
    """Without total_ut_steps an Ouro config was read as a one-loop Llama: its cache 4x too
    small and its norms and exit gate gone, the mistake the theory note says other tools
    make (a fresh-user audit, 2026-12-07)."""
    config = json.loads((CONFIGS / "ouro-1.4b.json").read_text())
    del config["total_ut_steps"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    line = refused("predict", str(tmp_path / "config.json"))
    assert "model_type 'ouro' loops 'total_ut_steps' times, and the config leaves it out" in line


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("serving.cache_group_size=32", "only an int8 or int4 cache has groups, not bfloat16"),
        ("serving.block_size=32", "'serving.block_size': pages are vLLM's, not the peak"),
    ],
)
def test_a_serving_field_the_setting_would_ignore_is_refused(override, message) -> None:
    """Given explicitly where nothing reads it (groups of a bf16 cache, pages of the peak
    engine), a field is refused rather than silently dropped; defaults are never refused."""
    assert message in refused("predict", str(LOOPED_KV / "ouro-1.4b-h200.json"), "--set", override)
    paged = ["--set", "serving.engine=vllm", "--set", "serving.block_size=32"]
    assert "max_batch" in run_cli("predict", str(LOOPED_KV / "ouro-1.4b-h200.json"), *paged).stdout


@pytest.mark.parametrize("override", ["serving.usable_fraction=0.8", "serving.overhead_gib=2"])
def test_a_device_share_beside_a_direct_budget_is_refused(override) -> None:
    """usable_fraction and overhead_gib divide a device's memory; memory_budget_gib is all
    the cache's, so beside it they were ignored without a word. With a device they apply."""
    message = "read only with a device's memory (device or device_memory_gib); memory_budget_gib"
    assert message in refused("predict", str(LOOPED_KV / "looped-d256.json"), "--set", override)
    with_device = run_cli("predict", str(LOOPED_KV / "huginn-3.5b.json"), "--set", override)
    assert with_device.returncode == 0 and "max_batch" in with_device.stdout
