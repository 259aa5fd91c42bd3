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


def _retrieval(tmp_path, sweep: dict) -> str:
    spec = {
        "kind": "retrieval",
        "target": "max(dot(x[t], x[T]) for t in T)",
        "input_dim": 4,
        "seq_len": 64,
        "architecture": {"layers": 1, "heads": [1], "embed_dim": 32},
        "sweep": sweep,
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    return str(tmp_path / "spec.json")


def _refused(done, *words: str) -> None:
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    for word in words:
        assert word in done.stderr


def test_predict_expands_a_sweep_up_to_its_limit(tmp_path) -> None:
    """predict expands at most MAX_SWEEP_POINTS points (each predicted in full); above, exit 2
    naming the sweep and pointing at `infoflow sweep`."""
    from infoflow.spec import MAX_SWEEP_POINTS

    over = {"seq_len": list(range(16, 117)), "input_dim": list(range(1, 101))}
    assert len(over["seq_len"]) * len(over["input_dim"]) > MAX_SWEEP_POINTS == 10_000
    _refused(run_cli("predict", _retrieval(tmp_path, over)), "field 'sweep'", "10,000", "sweep")
    spec = infoflow.load_spec(_retrieval(tmp_path, {"seq_len": [16, 32], "input_dim": [1, 2]}))
    assert len(infoflow.expand(spec)) == 4


@pytest.mark.slow  # 6.1 CPU s in an xdist worker (the fast-loop limit is 10)
def test_plan_and_validate_train_sweeps_up_to_their_limit(tmp_path) -> None:
    """plan and validate take at most MAX_TRAINED_POINTS points (exit 2 before any training);
    the spec itself is fine for predict."""
    from infoflow.validators.run import MAX_TRAINED_POINTS

    path = _retrieval(tmp_path, {"seq_len": list(range(16, 16 + MAX_TRAINED_POINTS + 1))})
    _refused(run_cli("plan", path), "field 'sweep'", "33 points", "at most 32")
    out = tmp_path / "run"
    _refused(run_cli("validate", path, "--out", str(out)), "field 'sweep'", "33 points")
    assert not out.exists()


def test_the_sweep_limit_names_sweep_only_for_the_family_it_serves() -> None:
    """The refusal said "use predict or sweep" for every family; only retrieval has sweep."""
    from types import SimpleNamespace

    from infoflow.core.errors import SpecError
    from infoflow.validators.run import check_points

    grid = {"chains": list(range(1, 40))}
    for kind, hint in (("icl_markov", "use predict"), ("retrieval", "use predict or sweep")):
        with pytest.raises(SpecError) as refused:
            check_points(SimpleNamespace(kind=kind, sweep=grid), "s.json")
        assert str(refused.value).endswith(hint)


def test_sweep_is_evaluated_and_printed_a_part_at_a_time(tmp_path) -> None:
    """`sweep.chunks` gives parts of at most `size` points whose concatenation is the whole
    sweep (the CLI prints each as it is evaluated); above MAX_POINTS, exit 2."""
    from infoflow.retrieval.sweep import COLUMNS, MAX_POINTS, chunks, sweep

    grid = {"seq_len": list(range(16, 66)), "architecture.heads": [[1], [2]], "epsilon": [0.1, 0.2]}
    spec = infoflow.load_spec(_retrieval(tmp_path, grid))
    parts = list(chunks(spec, size=64))
    assert [len(p) for p in parts] == [64] * 3 + [8]
    whole = sweep(spec)
    for column in COLUMNS:
        joined = [v for p in parts for v in p.columns[column].tolist()]
        assert joined == whole.columns[column].tolist(), column
    huge = {"seq_len": list(range(16, 1016)), "input_dim": list(range(1, 103))}
    huge["epsilon"] = [0.01 * i for i in range(1, 100)]
    assert MAX_POINTS < 1000 * 102 * 99
    _refused(run_cli("sweep", _retrieval(tmp_path, huge)), "field 'sweep'", "10,000,000")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"seq_len": BILLION}, "seq_len"),
        ({"seq_len": 1025}, "seq_len"),
        ({"architecture": {"layers": 1, "heads": [1], "embed_dim": 20_000}}, "embed_dim"),
    ],
)
def test_compile_refuses_sizes_it_cannot_build_or_measure(tmp_path, change, field) -> None:
    """Compile writes masks position by position and measures the witness on whole sequences:
    above seq_len 1024, or where the measurement needs more than 8 GiB, exit 2 naming the
    field (T = 10^9 looped over every position; E = 20,000 took the machine's memory)."""
    spec = {"kind": "retrieval", "target": "max(dot(q, x[t]) for t in T)", "input_dim": 4}
    spec |= {"seq_len": 8, "architecture": {"layers": 1, "heads": [1], "embed_dim": 32}}
    (tmp_path / "spec.json").write_text(json.dumps(spec | change))
    result = run_cli("compile", str(tmp_path / "spec.json"), "--out", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert field in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_failed_allocation_is_one_line_and_exit_1(monkeypatch, capsys) -> None:
    """torch's CPU allocator failing (a RuntimeError), a GPU's OutOfMemoryError and Python's
    MemoryError end the command with one line, exit 1, no traceback; other errors still
    raise."""
    from infoflow import cli

    failures = [
        RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 9 bytes"),
        type("OutOfMemoryError", (RuntimeError,), {})("CUDA out of memory"),
        MemoryError(),
    ]
    for failure in failures:

        def fail(*args, failure=failure, **kwargs):
            raise failure

        monkeypatch.setattr(cli, "app", fail)
        with pytest.raises(SystemExit) as exit_:
            cli.main()
        assert exit_.value.code == 1
        assert capsys.readouterr().err.startswith("error: out of memory")
    monkeypatch.setattr(cli, "app", lambda **_: (_ for _ in ()).throw(RuntimeError("a bug")))
    with pytest.raises(RuntimeError, match="a bug"):
        cli.main()


def test_compile_measures_long_sequences_in_fewer_at_a_time() -> None:
    """At T = 1024 (compile's longest) and the default MLP width, 128 sequences a forward
    pass would take about 9 GiB: compile measures 64 at a time instead (it refused T = 1024
    at the default width; a review found it), and refuses only what one at a time cannot fit."""
    from infoflow.validators.retrieval import construction

    spec = infoflow.load_spec(
        {
            "kind": "retrieval",
            "target": "max(dot(q, x[t]) for t in T)",
            "input_dim": 4,
            "seq_len": 1024,
            "architecture": {"layers": 1, "heads": [1], "embed_dim": 64},
        }
    )
    assert sum(construction.memory(spec, construction.WIDTH)) > construction.MEMORY
    chunk = construction.chunk_for(spec, construction.WIDTH, "<spec>")
    assert chunk == 64 and sum(construction.memory(spec, construction.WIDTH, chunk)) <= 8 * 2**30
