"""The CLI through its real entry point: output contracts, formats, overrides, start-up."""

from __future__ import annotations

import json

import pytest
from conftest import LOOPED_KV, SPECS, run_cli

import infoflow

REQUIRED = {
    "kv_bytes_per_token",
    "kv_bytes_per_token_compressed",
    "compression_ratio",
    "whole_cache_ratio",
    "kv_cache_bytes",
    "kv_cache_bytes_compressed",
    "model_parameters",
    "weight_bytes",
    "codec_parameters",
    "max_batch",
    "max_batch_compressed",
}
CODEC = {name for name in REQUIRED if "compress" in name or name.endswith("_ratio")}
CODEC.add("codec_parameters")


def test_predict_json_contract_on_every_bundled_spec() -> None:
    paths = sorted(SPECS.glob("*/*.json"))
    proc = run_cli("predict", "--format", "json", *map(str, paths))
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    points = sum(len(infoflow.expand(infoflow.load_spec(p), p.parent)) for p in paths)
    assert isinstance(results, list) and len(results) == points > len(paths)
    for result in results:
        assert {"infoflow_version", "kind", "spec", "predictions"} <= result.keys()
        assert result["spec"]["kind"] == result["kind"]
        if result["kind"] == "looped_kv":
            model = result["spec"]["model"]
            looped = model["loops"] > 1 or result["spec"]["codec"]["variant"] != "none"
            required = REQUIRED if looped else REQUIRED - CODEC  # a plain decoder: no codec rows
            assert result["predictions"].keys() >= required
        for name, prediction in result["predictions"].items():
            assert name.isidentifier() and name == name.lower()
            assert {"value", "unit", "bound", "provenance"} <= prediction.keys()
            assert prediction["bound"] in {"exact", "upper", "lower", "estimate"}
            assert prediction["provenance"]
            if "expression" in prediction:
                assert prediction["latex"]


def test_one_spec_gives_one_object() -> None:
    proc = run_cli("predict", "-f", "json", str(LOOPED_KV / "ouro-1.4b.json"))
    result = json.loads(proc.stdout)
    assert result["predictions"]["kv_bytes_per_token"]["value"] == 786432
    assert result["predictions"]["kv_bytes_per_token"]["expression"] == (
        "2*bytes*d_head*n_kv*(C + P + R*T)"
    )


def test_set_overrides_scan_ratios() -> None:
    spec = str(LOOPED_KV / "ouro-1.4b-h200.json")
    values = []
    for total in (256, 512):
        proc = run_cli(
            "predict",
            "-f",
            "json",
            spec,
            "--set",
            f"codec.r_k={total // 2}",
            "--set",
            f"codec.r_v={total // 2}",
        )
        assert proc.returncode == 0, proc.stderr
        values.append(json.loads(proc.stdout)["predictions"]["compression_ratio"]["value"])
    assert values == [4, 2]


def test_table_uses_binary_units() -> None:
    proc = run_cli("predict", str(LOOPED_KV / "ouro-1.4b-h200.json"))
    assert proc.returncode == 0, proc.stderr
    assert "768 KiB/token" in proc.stdout and "3 GiB" in proc.stdout
    assert "21.33x" in proc.stdout and "768 sequences" in proc.stdout


def test_markdown_table() -> None:
    proc = run_cli("predict", "-f", "markdown", str(LOOPED_KV / "ouro-1.4b.json"))
    assert proc.returncode == 0
    assert "| `kv_cache_bytes` | 3 GiB (3,221,225,472 B) | exact | derived |" in proc.stdout


def test_schema_lists_kinds_and_forbids_extra_fields() -> None:
    proc = run_cli("schema")
    schema = json.loads(proc.stdout)
    assert {"looped_kv", "retrieval"} <= schema["discriminator"]["mapping"].keys()
    one = json.loads(run_cli("schema", "looped_kv").stdout)
    assert one["additionalProperties"] is False
    assert {"model", "codec", "serving"} <= one["properties"].keys()


def test_every_bundled_spec_is_valid_under_the_published_schema(tmp_path) -> None:
    """Issue 30, item 4: an editor pointed at `infoflow schema` accepts what infoflow does
    (a model read from its hf_config too), and a spec may name the schema in "$schema"."""
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(json.loads(run_cli("schema").stdout))
    bundled = [p for p in sorted(SPECS.rglob("*.json")) if "hf_configs" not in p.parts]
    assert len(bundled) > 40
    for path in bundled:
        errors = [e.message[-120:] for e in validator.iter_errors(json.loads(path.read_text()))]
        assert not errors, (path, errors)
    assert list(validator.iter_errors({"kind": "retrieval", "target": 3}))  # it can refuse
    spec = json.loads((SPECS / "retrieval" / "pairwise-min.json").read_text())
    named = tmp_path / "named.json"
    named.write_text(json.dumps({"$schema": "../schema.json", **spec}))
    assert infoflow.load_spec(named).kind == "retrieval"
    assert not list(validator.iter_errors(json.loads(named.read_text())))
    named.write_text(json.dumps({"$schema": 3, **spec}))
    assert run_cli("predict", str(named)).returncode == 2


def test_help_imports_neither_sympy_nor_torch() -> None:
    proc = run_cli("--help", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert proc.returncode == 0 and "predict" in proc.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()}
    assert "typer" in imported  # the import log is really there
    assert not {m for m in imported if m.split(".")[0] in {"sympy", "torch", "pydantic"}}


def test_version() -> None:
    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("infoflow ")
