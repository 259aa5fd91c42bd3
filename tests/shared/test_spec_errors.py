"""Bad input exits 2 with one message naming the file and the field, and no traceback."""

from __future__ import annotations

import json

import pytest
from conftest import LOOPED_KV, run_cli

import infoflow

H200 = LOOPED_KV / "ouro-1.4b-h200.json"


def _spec() -> dict:
    return json.loads(H200.read_text())


def _with(path: list[str], value) -> dict:
    spec = _spec()
    node = spec
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return spec


def _without(path: list[str]) -> dict:
    spec = _spec()
    node = spec
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return spec


CASES = {
    # name: (file content, field expected in the message or None, words expected)
    "invalid-json": ('{"kind": "looped_kv",', None, "invalid JSON at line 1"),
    "not-an-object": ("[1, 2]", None, "JSON object"),
    "missing-kind": (_without(["kind"]), "kind", "missing"),
    "unknown-kind": (_with(["kind"], "looped_kvv"), "kind", "unknown kind 'looped_kvv'"),
    "missing-field": (_without(["model", "loops"]), "model.loops", "required"),
    "unknown-field": (
        _with(["serving", "contex_tokens"], 1),
        "serving.contex_tokens",
        "context_tokens",
    ),
    "negative-rank": (_with(["codec", "r_k"], -3), "codec.r_k", "greater than 0"),
    "rank-above-T-dhead": (_with(["codec", "r_v"], 513), "codec.r_v", "T*head_dim = 512"),
    "rank-above-2d-limit": (
        _with(["codec"], {"variant": "2d", "r_k": 8193, "r_v": 8}),
        "codec.r_k",
        "T*head_dim*kv_heads = 8192",
    ),
    "missing-rank": (_with(["codec"], {"variant": "per_head", "r_k": 8}), "codec.r_v", "required"),
    "two-budgets": (
        _with(["serving", "device_memory_gib"], 80),
        "serving.memory_budget_gib",
        "not memory_budget_gib and device_memory_gib",
    ),
    "bad-hf-config": (
        _with(["model"], {"hf_config": "nowhere/config.json"}),
        "model.hf_config",
        "not found",
    ),
    "kv-heads": (_with(["model", "kv_heads"], 5), "model.kv_heads", "does not divide"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_spec_file_exits_2_naming_file_and_field(tmp_path, name) -> None:
    content, field, words = CASES[name]
    path = tmp_path / f"{name}.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    proc = run_cli("predict", str(path))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert str(path) in proc.stderr
    if field:
        assert f"field '{field}'" in proc.stderr
    assert words in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1  # one paragraph


def test_missing_file_exits_2(tmp_path) -> None:
    proc = run_cli("predict", str(tmp_path / "absent.json"))
    assert proc.returncode == 2
    assert "absent.json: spec file not found" in proc.stderr and "Traceback" not in proc.stderr


def test_bad_override_exits_2() -> None:
    proc = run_cli("predict", str(H200), "--set", "codec.r_k")
    assert proc.returncode == 2 and "expected key.path=value" in proc.stderr


def test_library_raises_spec_error_with_field() -> None:
    with pytest.raises(infoflow.SpecError) as caught:
        infoflow.load_spec(_with(["codec", "r_k"], 0))
    assert caught.value.field == "codec.r_k" and caught.value.source == "<dict>"


def test_every_problem_is_reported() -> None:
    with pytest.raises(infoflow.SpecError) as caught:
        infoflow.load_spec({"kind": "looped_kv", "model": {"name": "x"}, "serving": {}})
    fields = {field for field, _ in caught.value.problems}
    assert {"model.hidden_size", "model.loops", "serving.context_tokens"} <= fields
