"""Inputs that used to give a wrong number labelled exact (issue 27), each now exact or
refused: fp8 weights (the cache keeps the compute dtype; the weights count their block scales
and unquantised embeddings and head), keys a config leaves out, a config without model_type,
tensor parallelism beyond the KV heads, weights that do not fit the device."""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction

import pytest
from conftest import LOOPED_KV, refused

import infoflow

CONFIGS = LOOPED_KV / "hf_configs"
FP8 = {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}


#: AWQ weights whose zero point is written as a string.
AWQ_ZERO = {"quant_method": "awq", "bits": 4, "zero_point": "false"}


def config(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


def counted(tmp_path, data: dict, **serving) -> infoflow.Result:
    (tmp_path / "config.json").write_text(json.dumps(data))
    spec = {
        "kind": "looped_kv",
        "model": {"hf_config": str(tmp_path / "config.json")},
        "serving": {"context_tokens": 4096, **serving},
    }
    return infoflow.predict(spec)


def test_fp8_weights_keep_the_compute_dtype_for_the_cache(tmp_path) -> None:
    """DeepSeek-V3's released config: fp8 weights, a bf16 cache (70,272 B a token, as
    transformers keeps it), unless the serving options make the cache fp8."""
    data = config("deepseek-v3")
    assert FP8.items() <= data["quantization_config"].items()  # as released
    bf16 = counted(tmp_path, {k: v for k, v in data.items() if k != "quantization_config"})
    fp8 = counted(tmp_path, data)
    assert fp8.spec.model.dtype == "bfloat16"
    assert fp8["kv_bytes_per_token"].value == bf16["kv_bytes_per_token"].value == 61 * 576 * 2
    assert fp8["weight_bytes"].value < bf16["weight_bytes"].value
    cached_fp8 = counted(tmp_path, {**data, "quantization_config": FP8}, cache_dtype="float8")
    assert 2 * cached_fp8["kv_bytes_per_token"].value == bf16["kv_bytes_per_token"].value


def _fp8_bytes_of(model, block: int = 128) -> int:
    """The bytes of transformers' model with every linear weight of the decoder layers in fp8
    with a float32 scale per block (its fused experts, [experts, rows, columns], per expert),
    the rest (embeddings, LM head, norms, routers) in bf16."""
    import torch

    fp8 = scales = 0
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and name != "lm_head":
            rows, cols = module.weight.shape
            fp8 += rows * cols
            scales += math.ceil(rows / block) * math.ceil(cols / block)
    for _, parameter in model.named_parameters():
        if parameter.dim() == 3:
            experts, rows, cols = parameter.shape
            fp8 += parameter.numel()
            scales += experts * math.ceil(rows / block) * math.ceil(cols / block)
    total = sum(p.numel() for p in model.parameters())
    total += sum(b.numel() for key, b in model.named_buffers() if key in model.state_dict())
    return fp8 + 4 * scales + 2 * (total - fp8)


SMALL = {
    "hidden_size": 256,
    "intermediate_size": 320,  # not a multiple of the block: ceil
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 512,
}
SMALL_DEEPSEEK = {
    **SMALL,
    "num_key_value_heads": 4,
    "moe_intermediate_size": 128,  # transformers fuses gate and up: whole blocks either way
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "first_k_dense_replace": 1,
    "n_group": 1,
    "topk_group": 1,
    "kv_lora_rank": 128,
    "q_lora_rank": 192,
    "qk_rope_head_dim": 32,
    "qk_nope_head_dim": 64,
    "v_head_dim": 64,
}


@pytest.mark.parametrize(
    ("name", "small"), [("llama-3-8b", SMALL), ("deepseek-v3", SMALL_DEEPSEEK)]
)
def test_fp8_weights_count_block_scales_and_unquantised_embeddings(tmp_path, name, small) -> None:
    """The fp8 Llama used to count every parameter in one byte (0.884x)."""
    pytest.importorskip("transformers", reason="the reference is transformers' model")
    import transformers_reference as reference

    data = {**config(name), **small}
    result = counted(tmp_path, {**data, "quantization_config": FP8})
    assert result["weight_bytes"].value == _fp8_bytes_of(reference.meta_model(data))
    assert "float32 scales (one per 128x128 block)" in result["weight_bytes"].note


@pytest.mark.parametrize("method", ["bitsandbytes", "compressed-tensors", "fbgemm_fp8", "hqq"])
def test_other_quantised_weights_are_refused_by_method(tmp_path, method) -> None:
    data = {**config("llama-3-8b"), "quantization_config": {"quant_method": method, "bits": 4}}
    (tmp_path / "config.json").write_text(json.dumps(data))
    line = refused("predict", str(tmp_path / "config.json"))
    assert f"weights quantized by {method!r} are not counted" in line


def test_an_fp8_exemption_the_calculator_cannot_place_is_refused(tmp_path) -> None:
    quantized = {**FP8, "modules_to_not_convert": ["model.layers.0.mlp"]}
    (tmp_path / "config.json").write_text(
        json.dumps({**config("llama-3-8b"), "quantization_config": quantized})
    )
    assert "'model.layers.0.mlp', which the calculator cannot place" in refused(
        "predict", str(tmp_path / "config.json")
    )


#: Keys whose default differs between model types (transformers' config classes).
DEFAULTED = (
    "num_key_value_heads",
    "head_dim",
    "tie_word_embeddings",
    "sliding_window",
    "intermediate_size",
)
#: The shipped configs with a key of DEFAULTED to drop (gpt2 and falcon have none; Huginn and
#: Ouro are read by their own models, not transformers' defaults): a case that dropped none
#: checked nothing (a review).
SHIPPED = sorted(
    p.stem
    for p in CONFIGS.glob("*.json")
    if config(p.stem).get("model_type") not in (None, "huginn_raven", "ouro")
    and any(key in config(p.stem) for key in DEFAULTED)
)


@pytest.mark.parametrize("name", SHIPPED)
def test_keys_left_out_take_transformers_default_for_the_model_type(tmp_path, name) -> None:
    """Mistral and Mixtral default to 8 KV heads (a config without the key used to be read as
    one KV head per query head: the cache 4x); Qwen3 and Gemma to their own head widths.
    Each key dropped in turn: the calculator's model and transformers' agree, or the
    calculator refuses what transformers builds inconsistently (more KV heads than heads), or
    an MLP width whose transformers default belongs to another model (Llama's 11008)."""
    pytest.importorskip("transformers", reason="the defaults are transformers' own")
    import transformers_reference as reference

    for key in DEFAULTED:
        data = {k: v for k, v in config(name).items() if k != key}
        if key not in config(name):
            continue
        expected = reference.config_of(data)
        try:
            result = counted(tmp_path, data)
        except infoflow.SpecError as exc:
            if "lacks the key 'intermediate_size'" in str(exc):
                continue  # refused: transformers' default is another model's width
            assert expected.num_attention_heads % expected.num_key_value_heads, (key, exc)
            continue
        model = result.spec.model
        built = reference.parameters(reference.meta_model(data))
        assert result["model_parameters"].value == built, key
        if not model.latent_attention and "falcon" not in name:
            heads = expected.num_attention_heads
            assert model.kv_heads == getattr(expected, "num_key_value_heads", heads), key
            width = getattr(expected, "head_dim", None) or expected.hidden_size // heads
            assert model.head_dim == width, key
        assert model.tie_embeddings == expected.tie_word_embeddings, key
        window = getattr(expected, "sliding_window", None) if model.sliding_window else None
        if model.window_kind == "chunked":
            window = expected.attention_chunk_size
        assert model.sliding_window == window, key


#: The shipped configs that set their KV heads (a looped model's reader is not transformers').
WITH_KV_HEADS = [
    name
    for name in SHIPPED
    if "num_key_value_heads" in config(name)
    and config(name)["model_type"] not in ("huginn_raven", "ouro")
]


@pytest.mark.parametrize("name", WITH_KV_HEADS)
def test_kv_heads_left_out_take_transformers_default_whatever_the_heads(tmp_path, name) -> None:
    """Gemma and Qwen2-MoE default to 16 KV heads, not one per query head (a review,
    2026-12-06: gemma-7b and qwen1.5-moe have 16 heads, so dropping the key from them could
    not tell). With the query heads doubled and the KV heads left out, the calculator reads
    the KV heads transformers builds, or refuses."""
    pytest.importorskip("transformers", reason="the defaults are transformers' own")
    import transformers_reference as reference

    data = {k: v for k, v in config(name).items() if k != "num_key_value_heads"}
    data["num_attention_heads"] *= 2  # the head width halves where the config does not set it
    expected = reference.config_of(data)
    try:
        model = counted(tmp_path, data).spec.model
    except infoflow.SpecError as exc:
        assert expected.num_attention_heads % expected.num_key_value_heads, exc
        return
    if not model.latent_attention:
        assert model.kv_heads == expected.num_key_value_heads
    built = reference.parameters(reference.meta_model(data))
    assert counted(tmp_path, data)["model_parameters"].value == built


@pytest.mark.parametrize(
    ("name", "architecture"),
    [
        ("gemma-7b", "GemmaForCausalLM"),
        ("pythia-160m", "GPTNeoXForCausalLM"),
        ("command-r-v01", "CohereForCausalLM"),
    ],
)
def test_a_config_without_model_type_is_refused_unless_it_names_its_layout(
    tmp_path, name, architecture
) -> None:
    """Read as Llama, these counted 1.09x, 1.28x and 1.06x their parameters, "exact"."""
    data = {k: v for k, v in config(name).items() if k != "model_type"}
    (tmp_path / "config.json").write_text(json.dumps(data))
    assert "no model_type, and its keys do not say which layout" in refused(
        "predict", str(tmp_path / "config.json")
    )
    named = counted(tmp_path, {**data, "architectures": [architecture]})
    typed = counted(tmp_path, config(name))
    assert named["model_parameters"].value == typed["model_parameters"].value
    assert named["kv_bytes_per_token"].value == typed["kv_bytes_per_token"].value


def test_tensor_parallel_beyond_the_kv_heads_is_an_upper_bound_with_copies_counted(
    tmp_path,
) -> None:
    """Llama-3-8B has 8 KV heads: on 16 devices each is kept twice; the budget, which does
    not subtract the weights every device repeats, is an upper bound."""
    one = counted(tmp_path, config("llama-3-8b"), device="h200")
    assert one["cache_budget_bytes"].bound == "exact"
    sixteen = counted(tmp_path, config("llama-3-8b"), device="h200", tensor_parallel=16)
    budget = sixteen["cache_budget_bytes"]
    assert budget.bound == "upper" and "not subtracted" in budget.note
    assert budget.value == math.floor(16 * 141 * 10**9 * 0.9 - sixteen["weight_bytes"].value)
    per_sequence = sixteen["kv_cache_bytes"].value
    assert sixteen["max_batch"].value == budget.value // (2 * per_sequence)
    assert "each KV head kept 2 times" in sixteen["max_batch"].note


def test_weights_that_do_not_fit_say_so_and_give_no_capacity(tmp_path) -> None:
    """DeepSeek-V3 on one H200: 673 GB of fp8 weights (as released); it used to print a 0 B
    budget and max batch 0, "exact"."""
    result = counted(tmp_path, config("deepseek-v3"), device="h200")
    fits = result["fits_device"]
    weights = result["weight_bytes"].value
    assert fits.value is False
    assert f"weights {weights:,} B" in fits.note and f"> memory {141 * 9 * 10**8:,} B" in fits.note
    assert not {"cache_budget_bytes", "max_batch", "max_context_tokens"} & set(result.predictions)
    sixteen = counted(tmp_path, config("deepseek-v3"), device="h200", tensor_parallel=16)
    assert sixteen["fits_device"].value is True and sixteen["max_batch"].value > 0


def test_predict_takes_a_config_json_without_a_spec(tmp_path) -> None:
    """The direct entry point: a config (or its folder), serving options on the command line;
    a plain decoder's rows are a plain decoder's (no codec rows, no looped provenance)."""
    from conftest import run_cli

    path = CONFIGS / "llama-3-8b.json"
    proc = run_cli("predict", str(path), "--context", "8192", "--batch", "4", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    predictions = json.loads(proc.stdout)["predictions"]
    per_token = predictions["kv_bytes_per_token"]["value"]
    assert predictions["kv_cache_bytes"]["value"] == 8192 * per_token
    assert predictions["kv_cache_bytes_batch"]["value"] == 4 * 8192 * per_token
    assert not [name for name in predictions if "compress" in name or "codec" in name]
    assert predictions["kv_bytes_per_token"]["provenance"] == "standard:kv-cache"
    assert not [p for p in predictions.values() if "O'Neill" in p["note"]]
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(path.read_text())
    table = run_cli("predict", str(tmp_path / "model"), "--device", "h200", "--tp", "2")
    assert table.returncode == 0 and "max_batch" in table.stdout
    assert "compression" not in table.stdout and "codec" not in table.stdout
    # the library reads the same files the same way (serving fields as overrides)
    library = infoflow.load_spec(path, ["serving.context_tokens=8192", "serving.batch=4"])
    assert infoflow.predict(library).to_json()["predictions"] == predictions
    folder = infoflow.predict(tmp_path / "model")
    assert folder["kv_bytes_per_token"].value == per_token
    with pytest.raises(infoflow.SpecError, match=r"field 'model\.hf_config'"):
        infoflow.load_spec(_write(tmp_path, {"model_type": "llama", "hidden_size": 64}))


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda tmp: tmp / "absent.json", "absent.json: spec file not found"),
        (lambda tmp: tmp, "is a directory, not a spec file, and holds no config.json"),
        (
            lambda tmp: _write(tmp, {"model_type": "llama", "hidden_size": 64}),
            "config.json: field 'model.hf_config'",
        ),
        (lambda tmp: _write(tmp, [1, 2]), "a spec must be a JSON object"),
    ],
    ids=["missing", "folder", "key", "not-an-object"],
)
def test_a_bad_config_is_one_line_naming_the_file(tmp_path, make, words) -> None:
    assert words in refused("predict", str(make(tmp_path)))


def test_a_bad_serving_option_names_the_field(tmp_path) -> None:
    line = refused("predict", str(CONFIGS / "gpt2.json"), "--cache-dtype", "int9")
    assert "gpt2.json: field '--cache-dtype (serving.cache_dtype)'" in line


def _write(folder, data) -> str:
    (folder / "config.json").write_text(json.dumps(data))
    return folder / "config.json"


def test_mxfp4_experts_count_four_bits_and_a_scale_per_32(tmp_path) -> None:
    """GPT-OSS's released weights: the routed experts in MXFP4 (16 bytes of numbers and one
    scale byte per block of 32), attention, router, embeddings and head in bf16."""
    pytest.importorskip("transformers", reason="the reference is transformers' model")
    import transformers_reference as reference

    small = {**SMALL, "intermediate_size": 96, "num_local_experts": 4, "num_experts_per_tok": 2}
    data = {**config("gpt-oss-20b"), **small, "head_dim": 64, "layer_types": None}
    model = reference.meta_model(data)
    experts = sum(p.numel() for p in model.parameters() if p.dim() == 3)
    total = reference.parameters(model)
    result = counted(tmp_path, data)
    assert result.spec.model.weight_quantization.method == "mxfp4"
    assert result["weight_bytes"].value == experts // 32 * 17 + 2 * (total - experts)
    assert result["model_parameters"].value == total


def test_deepseek_v3_mtp_layer_is_reported_apart_as_engines_load_it(tmp_path) -> None:
    """The released config has one multi-token-prediction module: transformers does not build
    it and vLLM loads it only for speculative decoding, so the model's count stays
    transformers' and the module is reported apart; together they make the published 685B."""
    released = config("deepseek-v3")
    assert released["num_nextn_predict_layers"] == 1
    result = counted(tmp_path, released)
    without = counted(tmp_path, {**released, "num_nextn_predict_layers": 0})
    assert "mtp_parameters" not in without.predictions
    assert result["model_parameters"].value == without["model_parameters"].value
    total = result["model_parameters"].value + result["mtp_parameters"].value
    assert total == pytest.approx(685e9, rel=1e-3)
    assert "speculative decoding" in result["mtp_parameters"].note


def test_weights_stored_in_fp8_by_the_spec_keep_a_bf16_cache() -> None:
    spec = infoflow.load_spec(LOOPED_KV / "ouro-1.4b.json", ["model.dtype=float8"])
    assert spec.cache_dtype == "bfloat16" and spec.cache_element_bytes == 2


def test_a_batch_that_does_not_fit_says_so(tmp_path) -> None:
    """Qwen3-0.6B at 32k tokens on an L4 (24 GB): 16 sequences take 56 GiB of cache."""
    data = config("qwen3-0.6b")
    many = counted(tmp_path, data, context_tokens=32768, device="l4", batch=16)
    memory = many["serving_memory_bytes"].value
    assert memory == many["weight_bytes"].value + 16 * many["kv_cache_bytes"].value
    assert many["batch_fits_device"].value is False and many["max_batch"].value < 16
    assert many.messages == (many["batch_fits_device"].note,)
    few = counted(tmp_path, data, context_tokens=32768, device="l4", batch=4)
    assert few["batch_fits_device"].value is True and few.messages == ()
    assert few["batch_fits_device"].bound == "estimate"  # activations are not counted


def test_a_hybrid_model_keeps_a_constant_state_per_sequence(tmp_path) -> None:
    """Jamba: 4 attention layers of 32 grow with the context, 28 Mamba layers keep their
    convolution and SSM states (8,192 channels of 4 + 16 numbers) whatever it is."""
    data = config("jamba-v0.1")
    short, long = (
        counted(tmp_path, data, context_tokens=n, memory_budget_gib=8) for n in (1024, 4096)
    )
    state = short["ssm_state_bytes"].value
    assert state == long["ssm_state_bytes"].value == 2 * 28 * 8192 * (4 + 16)
    per_token = short["kv_bytes_per_token"].value
    assert per_token == 2 * 2 * 8 * 128 * 4
    assert long["kv_cache_bytes"].value == 4096 * per_token + state
    assert long["max_context_tokens"].value == (8 * 2**30 - state) // per_token
    quantised = counted(tmp_path, data, context_tokens=1024, cache_dtype="int4")
    assert quantised["ssm_state_bytes"].value == state  # K and V only (it was 0.28x: a review)
    assert quantised["kv_bytes_per_token"].value == 2 * Fraction(9, 16) * 8 * 128 * 4
    (tmp_path / "config.json").write_text(json.dumps(data))
    line = refused("predict", str(tmp_path / "config.json"), "--tp", "16", "--device", "h200")
    assert "field '--tp (serving.tensor_parallel)'" in line


def test_engine_vllm_says_a_float32_model_is_served_in_16_bits_by_default(tmp_path) -> None:
    """OLMo-2-1B's config is float32: vLLM's default serves it in 16 bits, so a count in
    float32 says so and how to count the default (half the cache); the other engines, and a
    bfloat16 model, are silent."""
    data = config("olmo-2-1b")
    assert data["torch_dtype"] == "float32"
    served = counted(tmp_path, data, engine="vllm")
    [message] = served.messages
    assert "vLLM serves a float32 checkpoint in 16 bits" in message
    assert "--set model.dtype=bfloat16" in message
    assert not counted(tmp_path, data).messages
    half = counted(tmp_path, {**data, "torch_dtype": "bfloat16"}, engine="vllm")
    assert not half.messages
    assert 2 * half["kv_cache_bytes"].value == served["kv_cache_bytes"].value


def test_engine_vllm_holds_whole_pages_and_refuses_per_layer_type_pages(tmp_path) -> None:
    """vLLM's paged cache: 1,000 tokens take 63 pages of 16 (1,008 slots) in every layer, and
    the largest batch and the longest context count whole pages (the context counted bytes
    per token until a review: 8 tokens fitted where no page did); windows and Mamba states
    it pages per layer type are refused."""
    data = config("llama-3-8b")
    paged = counted(tmp_path, data, context_tokens=1000, memory_budget_gib=1, engine="vllm")
    per_token = paged["kv_bytes_per_token"].value
    assert paged["kv_cache_bytes"].value == 1008 * per_token
    assert paged["max_batch"].value == 2**30 // (1008 * per_token)
    assert paged["max_context_tokens"].value == 2**30 // (16 * per_token) * 16
    tiny = counted(tmp_path, data, context_tokens=8, memory_budget_gib=0.001, engine="vllm")
    assert tiny["max_batch"].value == tiny["max_context_tokens"].value == 0  # a page is 2 MiB
    wide = counted(
        tmp_path, data, context_tokens=1000, engine="vllm", block_size=128, memory_budget_gib=1
    )
    assert wide["kv_cache_bytes"].value == 1024 * per_token
    for name in ("mistral-7b-v0.1", "jamba-v0.1"):
        with pytest.raises(infoflow.SpecError, match="per layer type: not counted"):
            counted(tmp_path, config(name), engine="vllm")
    with pytest.raises(infoflow.SpecError, match="transformers' QuantizedCache's, not vLLM's"):
        counted(tmp_path, data, engine="vllm", cache_dtype="int4", cache_residual_tokens=128)


def test_a_quantised_cache_counts_its_full_precision_residual(tmp_path) -> None:
    """Llama-3-8B with an int4 cache that keeps its latest 128 tokens in bf16 (transformers'
    QuantizedCache): those cost 131,072 B a token, the rest the int4 bytes and their scales;
    the residual holds up to 128 tokens, so the cache is an upper bound."""
    data = config("llama-3-8b")
    plain = counted(tmp_path, data, cache_dtype="int4")
    result = counted(
        tmp_path, data, cache_dtype="int4", cache_residual_tokens=128, memory_budget_gib=1
    )
    quantised, full = plain["kv_bytes_per_token"].value, 2 * 2 * 32 * 8 * 128
    cache = result["kv_cache_bytes"]
    assert cache.value == 4096 * quantised + 128 * (full - quantised)
    assert cache.bound == "upper" and "kept in bfloat16" in cache.note
    budget = 2**30
    assert result["max_context_tokens"].value == (budget - 128 * (full - quantised)) // quantised
    assert result["max_batch"].value == budget // cache.value
    line = refused(
        "predict", str(CONFIGS / "llama-3-8b.json"), "--set", "serving.cache_residual_tokens=128"
    )
    assert "only an int8 or int4 cache keeps one, not bfloat16" in line


def test_plot_and_compare_take_a_plain_decoder_as_it_is(tmp_path) -> None:
    """A model that does not loop draws one line (its full cache; a model that does not fit
    has no batch: zeros, not drawn) and has no codecs to compare."""
    from infoflow.looped_kv.capacity import capacities

    spec = infoflow.load_spec(
        {
            "kind": "looped_kv",
            "model": {"hf_config": str(CONFIGS / "llama-3-8b.json")},
            "serving": {"context_tokens": 4096, "device": "h200"},
        }
    )
    lines = capacities(spec)
    assert list(lines) == ["none"] and lines["none"][0] > 0
    huge = spec.model_copy(update={"model": spec.model.model_copy(update={"vocab_size": 10**9})})
    assert set(capacities(huge)["none"]) == {0}
    line = refused(
        "compare",
        str(CONFIGS / "llama-3-8b.json"),
        *("--set", "codec.variant=per_head", "--set", "codec.r_k=8", "--set", "codec.r_v=8"),
    )
    assert "and this model does not loop (model.loops 1)" in line
    plain = refused("compare", str(CONFIGS / "llama-3-8b.json"))  # no codec: compare's check
    assert "codecs compress the loop axis, and this model does not loop (loops 1)" in plain


def _integer_bytes_of(model, method: str, bits: int = 4, group: int = 128) -> int:
    """transformers' model with every linear weight of the decoder layers stored as GPTQ's
    QuantLinear (qweight packed along the input, qzeros, fp16 scales, int32 g_idx) or AWQ's
    GEMM layout (qweight and qzeros packed along the output, fp16 scales); the rest in bf16."""
    import torch

    stored = numbers = 0
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and name != "lm_head":
            out, inp = module.weight.shape
            groups, packed_out = math.ceil(inp / group), math.ceil(out * bits / 32)
            if method == "gptq":
                int32 = math.ceil(inp * bits / 32) * out + groups * packed_out + inp
            else:
                int32 = inp * packed_out + groups * packed_out
            stored += 4 * int32 + 2 * groups * out
            numbers += out * inp
    return stored + 2 * (sum(p.numel() for p in model.parameters()) - numbers)


@pytest.mark.parametrize(
    ("quantized", "bits", "group"),
    [
        ({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": True}, 4, 128),
        ({"quant_method": "gptq", "bits": 8, "group_size": -1}, 8, None),
        ({"quant_method": "awq", "bits": 4, "group_size": 64, "version": "GEMM"}, 4, 64),
    ],
    ids=["gptq-4", "gptq-8-whole-rows", "awq-4"],
)
def test_gptq_and_awq_weights_count_their_packing_scales_and_zeros(
    tmp_path, quantized, bits, group
) -> None:
    pytest.importorskip("transformers", reason="the reference is transformers' modules")
    import transformers_reference as reference

    data = {**config("llama-3-8b"), **SMALL}
    result = counted(tmp_path, {**data, "quantization_config": quantized})
    model = reference.meta_model(data)
    expected = _integer_bytes_of(model, quantized["quant_method"], bits, group or 10**9)
    assert result["weight_bytes"].value == expected
    assert result["kv_bytes_per_token"].value == counted(tmp_path, data)["kv_bytes_per_token"].value


@pytest.mark.parametrize(
    ("quantized", "model", "words"),
    [
        ({"quant_method": "gptq", "bits": 3}, "llama-3-8b", "gptq weights of 3 bits"),
        ({"quant_method": "awq", "bits": 4, "version": "gemv"}, "llama-3-8b", "in the gemv"),
        ({"quant_method": "gptq", "bits": 4}, "mixtral-8x7b", "dense, unlooped decoders only"),
    ],
    ids=["gptq-3-bit", "awq-gemv", "gptq-experts"],
)
def test_integer_weights_the_calculator_cannot_place_are_refused(
    tmp_path, quantized, model, words
) -> None:
    (tmp_path / "config.json").write_text(
        json.dumps({**config(model), "quantization_config": quantized})
    )
    assert words in refused("predict", str(tmp_path / "config.json"))


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        ("llama-3-8b", {"model_type": ["llama"]}, "a value of a type or size transformers"),
        ("llama-3-8b", {"hidden_size": "4096"}, "'hidden_size' is '4096', not a whole number"),
        ("llama-3-8b", {"num_hidden_layers": 28.5}, "not a whole number"),
        ("qwen2-7b", {"max_window_layers": "28"}, "'max_window_layers' is '28'"),
        ("qwen3-30b-a3b", {"decoder_sparse_step": 0}, "a value of a type or size"),
        ("qwen3-30b-a3b", {"mlp_only_layers": 3}, "a value of a type or size"),
        # a review (2026-12-07): a traceback, a silent true, and values blamed on the spec
        (
            "ouro-1.4b",
            {"quantization_config": "fp8"},
            'quantization_config is an object, not "fp8"',
        ),
        (
            "llama-3-8b",
            {"quantization_config": AWQ_ZERO},
            'zero_point is true or false, not "false"',
        ),
        ("ouro-1.4b", {"total_ut_steps": 0}, "gives the model's loops = 0: Input should be"),
        ("llama-3-8b", {"num_key_value_heads": 0}, "gives the model's kv_heads = 0"),
        ("deepseek-v3", {"qk_rope_head_dim": None}, "'qk_rope_head_dim' is null"),
        ("huginn-0125", {"padded_vocab_size": "65536"}, "'padded_vocab_size' is '65536', not a"),
    ],
)
def test_a_config_value_of_the_wrong_type_is_refused_naming_the_file(
    tmp_path, name, change, message
) -> None:
    """Issue 29, item 7 (found in review): exit 2 naming the config, never a traceback."""
    with pytest.raises(infoflow.SpecError, match=re.escape(message)) as caught:
        counted(tmp_path, {**config(name), **change})
    assert str(tmp_path / "config.json") in str(caught.value)


def test_a_batch_under_an_upper_bound_cache_is_not_called_exact(tmp_path) -> None:
    """Found in review: chunked layers make the cache an upper bound, and so the batch's
    cache, its memory and a 'does not fit' are not exact either."""
    result = counted(tmp_path, config("llama-4-scout-17b-16e"), batch=256, device="h100-sxm")
    assert result["kv_cache_bytes"].bound == "upper"
    assert result["kv_cache_bytes_batch"].bound == "upper"
    assert result["serving_memory_bytes"].bound == "estimate"
    assert result["batch_fits_device"].value is False
    assert result["batch_fits_device"].bound == "estimate"


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        (["--device", "h200"], {"device": "h200", "memory_budget_gib": None}),
        (["--budget-gib", "50"], {"device": None, "memory_budget_gib": 50.0}),
    ],
)
def test_a_budget_option_replaces_the_spec_files_budget(option, expected) -> None:
    """The spec gives memory_budget_gib; --device (or --budget-gib) is another budget, and the
    options override a spec file's serving fields: the one given replaces the one written (it
    was refused as two budgets)."""
    from conftest import run_cli

    spec = str(LOOPED_KV / "ouro-1.4b-h200.json")
    proc = run_cli("predict", spec, *option, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    serving = json.loads(proc.stdout)["spec"]["serving"]
    assert {key: serving[key] for key in expected} == expected


def test_serving_options_on_a_spec_of_another_kind_say_whose_they_are() -> None:
    icl = str(LOOPED_KV.parent / "icl_markov" / "park2025.json")
    line = refused("predict", icl, "--context", "8192", "--tp", "2")
    assert "--context, --tp: options of a looped_kv spec or a model's config" in line
    assert "kind is icl_markov" in line


def test_a_batch_with_a_codec_is_checked_compressed_too_and_against_a_direct_budget() -> None:
    """Ouro-1.4B at 4k, 21.3x: 100 sequences take 300 GiB in full (no fit on an H200) and
    100 x 144 MiB compressed, with the codec's weights (a fit); in the paper's 108 GiB cache
    budget 1,000 sequences fit in neither form."""
    h200 = ["serving.memory_budget_gib=null", "serving.device=h200", "serving.batch=100"]
    on_device = infoflow.predict(infoflow.load_spec(LOOPED_KV / "ouro-1.4b-h200.json", h200))
    compressed = on_device["kv_cache_bytes_batch_compressed"].value
    assert compressed == 100 * on_device["kv_cache_bytes_compressed"].value == 100 * 144 * 2**20
    weights = on_device["weight_bytes"].value + on_device["codec_weight_bytes"].value
    assert on_device["serving_memory_bytes_compressed"].value == weights + compressed
    assert on_device["batch_fits_device"].value is False
    assert on_device["batch_fits_device_compressed"].value is True
    assert on_device.messages == (on_device["batch_fits_device"].note,)
    budget = infoflow.predict(
        infoflow.load_spec(LOOPED_KV / "ouro-1.4b-h200.json", ["serving.batch=1000"])
    )
    assert budget["batch_fits_budget"].value is budget["batch_fits_budget_compressed"].value
    assert budget["batch_fits_budget_compressed"].value is False
    assert "a batch of 1000, compressed, takes 150,994,944,000 B" in budget.messages[1]
    fits = infoflow.load_spec(LOOPED_KV / "ouro-1.4b-h200.json", ["serving.batch=768"])
    assert infoflow.predict(fits)["batch_fits_budget_compressed"].value is True


def test_a_codec_whose_weights_do_not_fit_gives_no_compressed_capacity() -> None:
    """Ouro-1.4B with the 2D codec at 1.33x: 9 GiB of codec weights, 6.33 GiB left on a
    10 GiB device; and an overhead larger than the device is named as the cause."""
    small = ["serving.memory_budget_gib=null", "serving.device_memory_gib=10"]
    result = infoflow.predict(infoflow.load_spec(LOOPED_KV / "ouro-1.4b-2d-1.33x.json", small))
    assert result["fits_device"].value is True and result["max_context_tokens"].value > 0
    codec = result["fits_device_compressed"]
    assert codec.value is False and "the codec's weights 9,664,462,848 B" in codec.note
    assert not {"cache_budget_bytes_compressed", "max_batch_compressed"} & set(result.predictions)
    assert result.messages == (codec.note,)
    overhead = ["serving.memory_budget_gib=null", "serving.device=h200", "serving.overhead_gib=125"]
    full = infoflow.predict(infoflow.load_spec(LOOPED_KV / "ouro-1.4b-h200.json", overhead))
    assert full["fits_device"].value is False
    assert full["fits_device"].note.startswith("the overhead 134,217,728,000 B (125.0 GiB) takes")


@pytest.mark.parametrize(
    ("variant", "tp", "provenance"),
    [
        ("per_head", 1, "paper:summary"),
        ("per_head", 2, "paper:summary"),  # heads split over devices: no copy
        ("2d", 2, "paper:summary, reconstruction:cache_placement"),
        ("head_axis", 1, "derived"),  # the control's bytes are derived, not the paper's
        ("head_axis", 2, "derived, reconstruction:cache_placement"),
    ],
)
def test_a_capacity_names_the_reconstructions_its_bytes_rest_on(variant, tp, provenance):
    """A review (2026-12-07): every capacity read paper:summary, the head-axis control's
    beside its derived bytes, and a latent kept on every device (how engines place a shared
    latent: a reconstruction) was not named."""
    spec = json.loads((LOOPED_KV / "ouro-1.4b-h200.json").read_text())
    spec.pop("sweep", None)
    spec["codec"]["variant"] = variant
    spec["serving"]["tensor_parallel"] = tp
    result = infoflow.predict(spec)
    assert result["max_batch_compressed"].provenance == provenance
    context = result["max_context_tokens_compressed"].provenance
    assert context == "derived" + provenance.partition(",")[1] + provenance.partition(",")[2]
    assert result["max_batch"].provenance == "paper:summary"  # the full cache: split by heads
