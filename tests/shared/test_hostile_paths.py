"""Inputs a review (2026-12-06) found ending in a traceback: paths no file can have, a link
loop, and values inside specs and configs the readers did not expect. Each is exit 2 with
one line naming what was wrong, or, where a sensible answer exists, that answer."""

from __future__ import annotations

import json

import pytest
from conftest import LOOPED_KV, SPECS, refused, run_cli

import infoflow

LONG = "a" * 5000  # longer than any file name (ENAMETOOLONG)
OURO = str(LOOPED_KV / "ouro-1.4b.json")
TINY = str(LOOPED_KV / "tiny-looped.json")
PAIRWISE = str(SPECS / "retrieval" / "pairwise-min.json")


def _one_error_line(proc) -> str:
    """The one line of a command that must exit 2 without a traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-500:])
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-500:]
    return lines[0]


@pytest.mark.parametrize(
    "args",
    [
        ("predict", f"{LONG}.json"),
        ("plan", f"{LONG}.json"),
        ("plot", OURO, "--out", f"{LONG}.png"),
        ("compile", PAIRWISE, "--out", LONG),
        ("validate", OURO, "--out", LONG),
    ],
    ids=["predict", "plan", "plot-out", "compile-out", "validate-out"],
)
def test_a_path_too_long_for_any_file_is_bad_input(tmp_path, args) -> None:
    line = _one_error_line(run_cli(*args))
    assert "File name too long" in line and len(line) < 400  # the path shortened


def test_the_library_refuses_a_path_too_long_and_a_link_loop_in_its_words(tmp_path) -> None:
    with pytest.raises(infoflow.SpecError, match="File name too long"):
        infoflow.load_spec(LONG)
    (tmp_path / "one").symlink_to(tmp_path / "two")
    (tmp_path / "two").symlink_to(tmp_path / "one")
    line = _one_error_line(run_cli("validate", str(tmp_path / "one"), "--out", str(tmp_path)))
    assert "one" in line
    spec = json.loads((SPECS / "icl_markov" / "smoke-c3.json").read_text())
    with pytest.raises(infoflow.SpecError, match="calibration"):
        infoflow.load_spec({**spec, "calibration": f"{LONG}.json"})


def test_a_kth_value_beyond_the_planned_ranks_is_refused_with_t_symbolic(tmp_path) -> None:
    """Checked with the spec where seq_len is given; without it, predict raised TargetError."""
    target = "kth_largest((dot(q, x[t]) for t in T), k=100001)"
    spec = {"kind": "retrieval", "target": target, "architecture": {"layers": 1, "heads": 1}}
    (tmp_path / "k.json").write_text(json.dumps(spec))
    for command in ("predict", "explain"):
        line = refused(command, str(tmp_path / "k.json"))
        assert "field 'target'" in line and "the engine plans ranks up to 100,000" in line


#: A Llama config to add a damaged quantization_config to.
LLAMA = {
    "model_type": "llama",
    "hidden_size": 256,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 512,
    "vocab_size": 1000,
    "num_hidden_layers": 2,
}


@pytest.mark.parametrize(
    ("quantized", "words"),
    [
        ({"quant_method": "fp8", "modules_to_not_convert": 5}, "is a list of module names"),
        ({"quant_method": "fp8", "modules_to_not_convert": [[1]]}, "is a list of module names"),
        ({"quant_method": "gptq", "bits": [4]}, "bits and group size are whole numbers"),
        ({"quant_method": "gptq", "bits": True}, "bits and group size are whole numbers"),
    ],
)
def test_a_damaged_quantization_config_is_refused_by_name(tmp_path, quantized, words) -> None:
    (tmp_path / "config.json").write_text(json.dumps({**LLAMA, "quantization_config": quantized}))
    assert words in refused("predict", str(tmp_path / "config.json"))


@pytest.mark.parametrize(
    ("placement", "words"),
    [
        ({"attn_layer_offset": 8}, "no layer holds attention"),
        ({"attn_layer_offset": -1}, "'attn_layer_offset' is -1, not a whole number 0 or more"),
        ({"attn_layer_period": 0}, "'attn_layer_period' is 0: a period is at least 1"),
        ({"expert_layer_period": 0}, "'expert_layer_period' is 0: a period is at least 1"),
    ],
)
def test_a_jamba_with_no_attention_layer_is_refused(tmp_path, placement, words) -> None:
    """With a budget its longest context divided by zero bytes a token."""
    config = json.loads((LOOPED_KV / "hf_configs" / "jamba-v0.1.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, **placement}))
    assert words in refused("predict", str(tmp_path / "config.json"), "--device", "h200")


def test_plot_refuses_a_budget_no_sequence_fits_and_writes_through_a_link(tmp_path) -> None:
    """Nothing to draw on a log axis was a matplotlib ValueError; a link named .png whose
    target has no suffix was written as format 'tmp'."""
    out = str(tmp_path / "o.png")
    line = refused("plot", TINY, "--out", out, "--set", "serving.memory_budget_gib=0.00001")
    assert "no sequence of 1,024 tokens or more fits the budget" in line
    (tmp_path / "target").write_text("")
    (tmp_path / "shown.png").symlink_to(tmp_path / "target")
    from typer.testing import CliRunner

    from infoflow.cli import app

    result = CliRunner().invoke(app, ["plot", TINY, "--out", str(tmp_path / "shown.png")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "target").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_library_says_what_it_takes_in_a_spec_error() -> None:
    """A dict key that is not a string, and arguments of another type, raised
    AttributeError or TypeError where load_spec and its neighbours promise a SpecError."""
    spec = json.loads((LOOPED_KV / "tiny-looped.json").read_text())
    calls = [
        (lambda: infoflow.load_spec({**spec, 5: 1}), "has the key 5: a key is a string"),
        (lambda: infoflow.load_spec({**spec, "serving": {None: 1}}), "field 'serving'"),
        (lambda: infoflow.expand(spec), "expand takes a loaded spec (load_spec), not a dict"),
        (lambda: infoflow.load_report(5), "a report is a run folder or its path, not int"),
        (lambda: infoflow.specs.path(None), "a bundled spec's name is a string, not NoneType"),
    ]
    for call, words in calls:
        with pytest.raises(infoflow.SpecError) as error:
            call()
        assert words in str(error.value)


def test_calibrate_names_a_report_whose_specs_are_not_sections(tmp_path) -> None:
    """It said "(AttributeError: 'int' object has no attribute 'get')"."""
    (tmp_path / "report.json").write_text(json.dumps({"specs": [5, None, "x"]}))
    line = refused("calibrate", "icl_markov", str(tmp_path / "report.json"))
    assert "field 'specs': not an infoflow validate report" in line and "Error" not in line


def test_a_predict_whose_output_would_be_gigabytes_is_refused_after_its_first_point(
    tmp_path,
) -> None:
    """A k-th value of rank 100,000 lists its minimal architecture layer by layer (0.6 MB of
    predictions a point): 10,000 points would take 21 minutes and write 6 GB (a review)."""
    target = "kth_largest((dot(q, x[t]) for t in T), k=100000)"
    spec = {
        "kind": "retrieval",
        "target": target,
        "input_dim": 4,
        "architecture": {"layers": 1, "heads": 1, "embed_dim": 32},
        "sweep": {"epsilon": [10 ** -(i / 100) for i in range(1, 501)]},
    }
    (tmp_path / "big.json").write_text(json.dumps(spec))
    line = refused("predict", str(tmp_path / "big.json"), "--format", "jsonl")
    assert "500 points of about" in line and "more than the 256 MiB a predict writes" in line
