"""The looped_kv calculator against the paper's figures and published parameter counts."""

from __future__ import annotations

import json
import sys

import pytest
import sympy
from conftest import LOOPED_KV, refused

import infoflow
from infoflow.looped_kv import formulas as F

KIB, GIB = 2**10, 2**30
OURO_14B = LOOPED_KV / "ouro-1.4b.json"


def test_ouro_1_4b_full_cache_matches_paper() -> None:
    result = infoflow.predict(OURO_14B)
    assert result["kv_bytes_per_token"].value == 768 * KIB
    assert result["kv_cache_bytes"].value == 3 * GIB  # one 4,096-token sequence


def test_ouro_1_4b_cache_at_one_million_tokens() -> None:
    spec = infoflow.load_spec(OURO_14B, ["serving.context_tokens=1048576"])
    assert infoflow.predict(spec)["kv_cache_bytes"].value == 768 * GIB


@pytest.mark.parametrize("path", sorted(LOOPED_KV.glob("ouro-*-*x.json")), ids=lambda p: p.stem)
def test_bundled_ratio_specs_give_paper_rho(path) -> None:
    """rho = 1024/(r_k + r_v) per head, 16x that for 2D; the file name states the ratio."""
    result = infoflow.predict(path)
    codec = result.spec.codec
    per_head = sympy.Rational(1024, codec.r_k + codec.r_v)
    expected = per_head if codec.variant == "per_head" else 16 * per_head
    assert result["compression_ratio"].value == pytest.approx(float(expected), rel=1e-12)
    stated = float(path.stem.rsplit("-", 1)[1].rstrip("x"))
    assert result["compression_ratio"].value == pytest.approx(stated, rel=0.005)  # 3 digits


def test_h200_capacity_setting() -> None:
    """108 GiB of cache in steps of 32: 32 sequences uncompressed, 768 at 21.3x."""
    result = infoflow.predict(LOOPED_KV / "ouro-1.4b-h200.json")
    assert result["compression_ratio"].value == pytest.approx(1024 / 48)
    assert result["max_batch"].value == 32
    assert result["max_batch_compressed"].value == 768
    # the step is in the unit: 0 beside "batch fits" read as a contradiction (a review)
    assert result["max_batch"].unit == "sequences (steps of 32)"
    plain = infoflow.load_spec(LOOPED_KV / "ouro-1.4b.json", ["serving.batch_step=null"])
    assert infoflow.predict(plain)["max_batch"].unit == "sequences"


def test_final_loop_reuse_is_4x_on_ouro() -> None:
    result = infoflow.predict(LOOPED_KV / "ouro-1.4b-final-loop.json")
    assert result["compression_ratio"].value == 4
    assert result["codec_parameters"].value == 0


def test_ouro_parameter_count_is_exact() -> None:
    """24 layers of (attention 4*2048^2, SwiGLU 3*2048*5632, 4 RMSNorms), two 49,152-row
    embeddings, a final norm and the early-exit gate Linear(2048, 1)."""
    layer = 4 * 2048**2 + 3 * 2048 * 5632 + 4 * 2048
    expected = 24 * layer + 2 * 49152 * 2048 + 2048 + 2049
    result = infoflow.predict(OURO_14B)
    assert result["model_parameters"].value == expected == 1_434_652_673
    assert result["weight_bytes"].value == 2 * expected


def test_ouro_hf_config_reads_like_the_explicit_spec() -> None:
    from_config = infoflow.load_spec(LOOPED_KV / "ouro-1.4b-hf-config.json").model
    explicit = infoflow.load_spec(OURO_14B).model
    assert from_config.model_dump(exclude={"hf_config"}) == explicit.model_dump(
        exclude={"hf_config"}
    )


def test_huginn_config_layout() -> None:
    result = infoflow.predict(LOOPED_KV / "huginn-3.5b.json")
    model = result.spec.model
    assert (model.prelude_layers, model.layers, model.coda_layers, model.loops) == (2, 4, 2, 32)
    assert (model.kv_heads, model.head_dim) == (55, 96)
    # 2 bytes * 2 (K, V) * 55 heads * 96 * (2 + 32*4 + 2) layers' worth of cache
    assert result["kv_bytes_per_token"].value == 2 * 2 * 55 * 96 * 132
    # prelude and coda stay uncompressed, so the whole cache shrinks less than the loop part
    assert result["compression_ratio"].value == 32
    assert result["whole_cache_ratio"].value == pytest.approx(132 / (4 + 4))


@pytest.mark.parametrize(
    ("config", "params", "kv_per_token"),
    [
        # Llama-2-7B: 6,738,415,616 parameters and 512 KiB of fp16 cache per token, as published.
        (
            {
                "model_type": "llama",
                "hidden_size": 4096,
                "intermediate_size": 11008,
                "num_attention_heads": 32,
                "num_hidden_layers": 32,
                "num_key_value_heads": 32,
                "vocab_size": 32000,
                "tie_word_embeddings": False,
                "torch_dtype": "float16",
            },
            6_738_415_616,
            512 * KIB,
        ),
        # Qwen2-0.5B: 494,032,768 parameters (tied embeddings, q/k/v biases, 2 KV heads).
        (
            {
                "model_type": "qwen2",
                "hidden_size": 896,
                "intermediate_size": 4864,
                "num_attention_heads": 14,
                "num_hidden_layers": 24,
                "num_key_value_heads": 2,
                "vocab_size": 151936,
                "tie_word_embeddings": True,
                "torch_dtype": "bfloat16",
            },
            494_032_768,
            12 * KIB,
        ),
    ],
    ids=["llama-2-7b", "qwen2-0.5b"],
)
def test_plain_decoder_configs_match_published_counts(tmp_path, config, params, kv_per_token):
    (tmp_path / "config.json").write_text(json.dumps(config))
    spec = {
        "kind": "looped_kv",
        "model": {"hf_config": str(tmp_path / "config.json")},
        "serving": {"context_tokens": 1},
    }
    result = infoflow.predict(spec)
    assert result.spec.model.loops == 1
    assert result["model_parameters"].value == params
    assert result["kv_bytes_per_token"].value == kv_per_token
    assert "compression_ratio" not in result.predictions  # no codec rows on a plain decoder
    assert result["kv_bytes_per_token"].provenance == "standard:kv-cache"


def test_values_are_the_formulas_evaluated() -> None:
    """The expression a prediction carries is the one its value came from."""
    result = infoflow.predict(LOOPED_KV / "ouro-1.4b-per-head-4x.json")
    rho, S = result["compression_ratio"].expression, F.symbols()
    assert sympy.simplify(rho - 2 * S.T * S.d_head / (S.r_k + S.r_v)) == 0
    at = {S.T: 4, S.d_head: 128, S.r_k: 96, S.r_v: 160}
    assert float(rho.subs(at)) == result["compression_ratio"].value == 4


def test_device_memory_budget_subtracts_weights_and_codec() -> None:
    result = infoflow.predict(LOOPED_KV / "ouro-1.4b-hf-config.json")
    usable = sympy.Rational("131.3") * sympy.Rational("0.9") * GIB
    full_budget = int(sympy.floor(usable - result["weight_bytes"].value))
    assert result["cache_budget_bytes"].value == full_budget
    assert (
        result["cache_budget_bytes_compressed"].value
        == full_budget - result["codec_weight_bytes"].value
    )
    assert result["max_batch"].value == full_budget // (3 * GIB)


DENSE = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "vocab_size": 32000,
}


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ({"model_type": "gemma3"}, "it needs a vision tower: give its text_config"),
        ({"attn_layer_period": 8}, "'attn_layer_period' (hybrid layers)"),
        ({"model_type": "llama4"}, "model_type 'llama4' is not counted yet: it needs a vision"),
        ({"model_type": "bloom"}, "model_type 'bloom' has a layout the calculator does not"),
        ({"num_local_experts": 8}, "'num_local_experts' (mixture of experts)"),
        ({"sliding_window": 4096}, "'sliding_window' (sliding-window attention)"),
        (
            {
                "model_type": "mistral",
                "sliding_window": 4096,
                "layer_types": ["chunked_attention"] * 32,
            },
            "'chunked_attention', a kind of",
        ),
        ({"model_type": "mistral", "num_nextn_predict_layers": 1}, "'num_nextn_predict"),
        ({"state_size": 16}, "'state_size' (state-space layers)"),
        ({"cross_attention_layers": [3, 8, 13]}, "'cross_attention_layers' (cross attention)"),
        ({"torch_dtype": "float42"}, "torch_dtype 'float42' is not a dtype the calculator"),
        ({"torch_dtype": "float32", "dtype": "bfloat16"}, "'float32' and dtype 'bfloat16' disag"),
        (
            {"model_type": "gemma3_text", "use_bidirectional_attention": True},
            "'use_bidirectional_attention' (bidirectional attention",
        ),
    ],
    ids=[
        "gemma3-vision",
        "llama-hybrid",
        "llama4-vision",
        "unknown",
        "llama-experts",
        "llama-window",
        "chunked",
        "mtp",
        "state-space",
        "cross-attention",
        "unknown-dtype",
        "two-dtypes",
        "embedding-gemma",
    ],
)
def test_configs_the_calculator_cannot_count_are_refused_by_key(tmp_path, extra, words) -> None:
    (tmp_path / "config.json").write_text(json.dumps({**DENSE, **extra}))
    spec = {
        "kind": "looped_kv",
        "model": {"hf_config": "config.json"},
        "serving": {"context_tokens": 1},
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    line = refused("predict", str(tmp_path / "spec.json"))
    assert "field 'model.hf_config'" in line and words in line


def test_keys_that_turn_nothing_on_are_counted(tmp_path) -> None:
    """Qwen2 keeps a window size it does not use; all-full layer types are dense."""
    config = {
        **DENSE,
        "model_type": "qwen2",
        "sliding_window": 32768,
        "use_sliding_window": False,
        "layer_types": ["full_attention"] * 32,
        "num_local_experts": 0,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "plain.json").write_text(json.dumps({**DENSE, "model_type": "qwen2"}))
    counted = [
        infoflow.predict(
            {
                "kind": "looped_kv",
                "model": {"hf_config": str(path)},
                "serving": {"context_tokens": 1},
            }
        )
        for path in (tmp_path / "config.json", tmp_path / "plain.json")
    ]
    assert counted[0]["kv_bytes_per_token"].value == counted[1]["kv_bytes_per_token"].value
    assert counted[0]["model_parameters"].value == counted[1]["model_parameters"].value


def test_the_head_axis_latent_keeps_one_latent_per_loop() -> None:
    """MLA-style across heads: per token, core layer and loop, (r_k + r_v) numbers; rho =
    2 n_kv d_head / (r_k + r_v), 4x at 1,024 on Ouro-1.4B (16 heads of 128)."""
    overrides = ["codec.variant=head_axis", "codec.r_k=512", "codec.r_v=512"]
    spec = infoflow.load_spec(LOOPED_KV / "ouro-1.4b.json", overrides)
    result = infoflow.predict(spec)
    assert result["compression_ratio"].value == 4
    assert result["kv_bytes_per_token_compressed"].value == 2 * 4 * 24 * 1024
    assert str(result["compression_ratio"].expression) == "2*d_head*n_kv/(r_k + r_v)"
    too_big = ["codec.variant=head_axis", "codec.r_k=4096", "codec.r_v=16"]
    line = refused("predict", str(LOOPED_KV / "ouro-1.4b.json"), *[f"--set={s}" for s in too_big])
    assert "rank 4096 exceeds the dimension of what it compresses, kv_heads*head_dim = 2048" in line


def test_compare_lists_every_codec_at_the_spec_ranks() -> None:
    from typer.testing import CliRunner

    from infoflow.cli import app

    result = CliRunner().invoke(
        app, ["compare", "-f", "json", str(LOOPED_KV / "ouro-1.4b-h200.json")]
    )
    assert result.exit_code == 0, result.output
    rows = {row["variant"]: row for row in json.loads(result.stdout)}
    assert list(rows) == ["none", "final_loop", "head_axis", "per_head", "2d"]
    assert rows["per_head"]["compression_ratio"] == pytest.approx(1024 / 48)
    assert rows["head_axis"]["kv_bytes_per_token_compressed"] == 2 * 4 * 24 * 48  # T loops
    assert rows["2d"]["kv_bytes_per_token_compressed"] == 2 * 24 * 48  # one for all
    assert (
        rows["none"]["max_batch_compressed"] == 32
        and rows["per_head"]["max_batch_compressed"] == 768
    )
    assert refused("compare", str(LOOPED_KV / "ouro-1.4b.json")).endswith(
        "--set codec.r_k=96 --set codec.r_v=160, say"
    )


def test_device_presets_and_tensor_parallel_set_the_budget() -> None:
    """An H200 is 141 GB as NVIDIA publishes it; two of them hold twice that, less the
    weights once; 2 devices split Ouro's 16 KV heads, so the cache is not copied."""
    base = ["serving.memory_budget_gib=null", "serving.device=h200"]
    one = infoflow.predict(infoflow.load_spec(LOOPED_KV / "ouro-1.4b.json", base))
    two = infoflow.predict(
        infoflow.load_spec(LOOPED_KV / "ouro-1.4b.json", [*base, "serving.tensor_parallel=2"])
    )
    weights = one["weight_bytes"].value
    assert one["cache_budget_bytes"].value == int(141 * 10**9 * 0.9) - weights
    assert two["cache_budget_bytes"].value == int(2 * 141 * 10**9 * 0.9) - weights
    assert "2 x h200 (141 GB) memory" in two["cache_budget_bytes"].note
    per_sequence = one["kv_cache_bytes"].value
    assert two["max_batch"].value == (two["cache_budget_bytes"].value // per_sequence) // 32 * 32


def test_a_cache_shared_by_all_heads_is_kept_on_every_device() -> None:
    """LLA-2D keeps one latent for all heads: with 4 devices each keeps it, so capacity is a
    quarter of what the pooled memory would give; per-head LLA splits like the heads."""
    spec = LOOPED_KV / "ouro-1.4b-2d-4x.json"
    base = [
        "serving.memory_budget_gib=null",
        "serving.device=h200",
        "serving.batch_step=null",
        "serving.tensor_parallel=4",
    ]
    result = infoflow.predict(infoflow.load_spec(spec, base))
    budget = result["cache_budget_bytes_compressed"].value
    per_sequence = result["kv_cache_bytes_compressed"].value
    assert result["max_batch_compressed"].value == budget // (4 * per_sequence)
    assert result["max_batch"].value == result["cache_budget_bytes"].value // (
        result["kv_cache_bytes"].value
    )  # the full cache is per head: split, not copied


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["serving.device=h200"],
            "give one of memory_budget_gib, device_memory_gib and device, "
            "not memory_budget_gib and device",
        ),
        (["serving.tensor_parallel=3"], "3 devices cannot split 16 KV heads evenly"),
    ],
)
def test_serving_settings_that_contradict_are_refused(overrides, message) -> None:
    sets = [f"--set={o}" for o in overrides]
    assert message in refused("predict", str(LOOPED_KV / "ouro-1.4b.json"), *sets)


def test_the_capacity_plot_draws_what_predict_says(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    from infoflow.looped_kv.capacity import CONTEXTS, capacities

    spec = infoflow.load_spec(LOOPED_KV / "ouro-1.4b-h200.json")
    lines = capacities(spec)
    assert list(lines) == ["none", "final_loop", "head_axis", "per_head", "2d"]
    at_4k = infoflow.predict(spec)  # the spec's own context is 4,096 tokens
    assert lines["per_head"][CONTEXTS.index(4096)] == at_4k["max_batch_compressed"].value == 768
    assert lines["none"][CONTEXTS.index(4096)] == at_4k["max_batch"].value == 32
    from typer.testing import CliRunner

    from infoflow.cli import app

    out = tmp_path / "capacity.png"
    result = CliRunner().invoke(
        app, ["plot", str(LOOPED_KV / "ouro-1.4b-h200.json"), "--out", str(out)]
    )
    assert result.exit_code == 0 and out.read_bytes()[:4] == b"\x89PNG"
    no_budget = ["--set", "serving.memory_budget_gib=null"]
    assert "a capacity needs a budget" in refused(
        "plot", str(LOOPED_KV / "ouro-1.4b.json"), *no_budget
    )


def test_the_capacity_plot_refuses_an_unknown_format_and_draws_any_name(tmp_path) -> None:
    """An extension matplotlib cannot write is exit 2 before drawing; a name with mathtext
    in it ($ signs, unbalanced) is drawn as written."""
    pytest.importorskip("matplotlib")
    spec = str(LOOPED_KV / "ouro-1.4b-h200.json")
    line = refused("plot", spec, "--out", str(tmp_path / "capacity.xyz"))
    assert "not an image format matplotlib writes" in line and "png" in line
    from typer.testing import CliRunner

    from infoflow.cli import app

    out = tmp_path / "named.png"
    name = '--set=model.name="a$\\\\frac{b$ c"'
    result = CliRunner().invoke(app, ["plot", spec, name, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_the_capacity_plot_is_a_figure_that_leaves_the_backend_alone(tmp_path) -> None:
    """In a notebook: a Figure with one line per codec, drawn without pyplot (no figure
    opened there, the user's backend unchanged), saved only when a path is given."""
    matplotlib = pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from infoflow.looped_kv.capacity import CONTEXTS, capacities, plot

    spec = infoflow.load_spec(LOOPED_KV / "ouro-1.4b-h200.json")
    backend = matplotlib.get_backend()
    figure = plot(spec)
    assert isinstance(figure, Figure) and matplotlib.get_backend() == backend
    assert (
        "matplotlib.pyplot" not in sys.modules or not sys.modules["matplotlib.pyplot"].get_fignums()
    )
    lines = figure.axes[0].get_lines()
    assert [line.get_label() for line in lines] == list(capacities(spec))
    assert list(lines[0].get_xdata()) == CONTEXTS and lines[0].get_ydata()[2] == 32  # 4,096
    assert list(tmp_path.iterdir()) == []
    axes = figure.axes[0]  # where a line ends is the budget's and the step's: both named
    assert axes.get_title() == "Ouro-1.4B: serving capacity, a 108 GiB cache budget"
    assert axes.get_ylabel() == "max batch (sequences, in steps of 32)"
    assert isinstance(plot(spec, tmp_path / "c.svg"), Figure)
    assert (tmp_path / "c.svg").read_text().startswith("<?xml")
