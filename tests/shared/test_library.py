"""`import infoflow` as a library: what a notebook user does with specs and results (a
spec's own dump loads again, sweeps expand, a result's values are the caller's to change)."""

from __future__ import annotations

import json
import pickle
import re

import pytest
from conftest import SPECS

import infoflow
from infoflow.core.errors import SpecError


@pytest.mark.parametrize(
    "path", sorted(p.relative_to(SPECS).as_posix() for p in SPECS.glob("*/*.json"))
)
def test_a_results_spec_loads_again_to_the_same_predictions(path, monkeypatch) -> None:
    """The spec as a result gives it back (every default filled in) validates and predicts
    the same: a check that refuses a default it was not given would break every sweep. (A
    dict's relative paths are read from the working directory: the spec's folder here.)"""
    result = infoflow.predict(SPECS / path)
    spec = result.to_json()["spec"]
    monkeypatch.chdir((SPECS / path).parent)
    again = infoflow.predict(infoflow.load_spec({**spec, "sweep": None}), source=result.source)
    assert again.to_json()["predictions"] == result.to_json()["predictions"]


def test_a_path_is_named_by_the_callers_source_where_given() -> None:
    """predict(path, source=...) named the result by the path, not the caller's source."""
    path = SPECS / "retrieval" / "pairwise-min.json"
    assert infoflow.predict(path, source="mine").source == "mine"
    assert infoflow.predict(path).source == str(path)


def test_a_looped_sweep_expands() -> None:
    sweep = 'sweep={"serving.context_tokens": [4096, 8192]}'
    spec = infoflow.load_spec(SPECS / "looped_kv" / "ouro-1.4b-h200.json", [sweep])
    points = infoflow.expand(spec)
    assert [p.serving.context_tokens for _, p in points] == [4096, 8192]


def test_a_returned_list_is_the_callers_to_change() -> None:
    """Changing a phase sequence a result returned leaves the next prediction as it was (it
    was the table the predictor reads, so final_phase changed with it)."""
    path = SPECS / "icl_markov" / "smoke-c3.json"
    first = infoflow.predict(path)
    expected = (first["phase_sequence"].value.copy(), first["final_phase"].value)
    first["phase_sequence"].value.pop(0)
    again = infoflow.predict(path)
    assert (again["phase_sequence"].value, again["final_phase"].value) == expected


def test_overrides_passed_to_predict_are_an_error_not_ignored() -> None:
    """predict takes a spec; overrides go to load_spec (a list in predict's second place
    used to be read as the spec's name, and the overrides were dropped)."""
    with pytest.raises(TypeError):
        infoflow.predict(SPECS / "looped_kv" / "ouro-1.4b-h200.json", ["codec.r_k=96"])


def test_a_description_says_what_the_overrides_changed() -> None:
    """A spec's description is written for its file: with --set it says what changed (under
    a table computed with d = 8 it said "d = 4"), in what is shown, not in the spec's data
    (a cache key or a JSON dump would change with the overrides' order); an override that
    changes nothing is not listed; a --set of the description itself stands as given."""
    from infoflow.render import to_markdown

    path = SPECS / "retrieval" / "pairwise-min.json"
    written = infoflow.load_spec(path)
    assert "d = 4" in written.description and written.described() == written.description
    spec = infoflow.load_spec(path, ["input_dim=8", " sweep=null", "seq_len=64"])
    assert spec.description == written.description  # the data: the file's text
    assert spec.changed == ("input_dim=8", "sweep=null")  # seq_len is the file's 64 already
    assert spec.described() == f"{written.description} (Changed since it was written: " + (
        "input_dim=8, sweep=null.)"
    )
    assert "(Changed since it was written: input\\_dim=8, sweep=null.)" in to_markdown(
        infoflow.predict(spec)
    )
    looped = SPECS / "looped_kv" / "ouro-1.4b.json"  # what --device h200 sets
    as_device = [f"serving.{f}" for f in ("device=h200", "device_memory_gib=null")]
    as_device += ["serving.memory_budget_gib=null"]  # the file has no device_memory_gib
    changed = ("serving.device=h200", "serving.memory_budget_gib=null")
    assert infoflow.load_spec(looped, as_device).changed == changed
    cut = infoflow.load_spec(path, ["seq_len=64"])  # the file's base value, out of the sweep
    assert cut.changed == ("seq_len=64",) and "seq_len" not in cut.sweep
    swept = infoflow.load_spec(path, ["input_dim=8"])
    assert {point.changed for _, point in infoflow.expand(swept)} == {("input_dim=8",)}
    mine = infoflow.load_spec(path, ["description=mine", "input_dim=8"])
    assert mine.described() == "mine" and not mine.changed
    undescribed = json.loads(path.read_text())
    del undescribed["description"]
    assert infoflow.load_spec(undescribed, ["seq_len=16"]).described() is None


def test_a_result_reads_as_a_mapping() -> None:
    """docs/notebooks.md: a result is a mapping of names to predictions."""
    result = infoflow.predict(SPECS / "retrieval" / "pairwise-min.json")
    as_dict = dict(result)
    assert list(as_dict) == list(result) and as_dict["min_heads"] is result["min_heads"]
    assert "min_heads" in result and result.get("absent") is None
    assert dict(result.items()) == as_dict and len(result.keys()) == len(result)
    with pytest.raises(KeyError, match=r"no prediction of this retrieval result .*min_heads"):
        result["absent"]


def test_a_loaded_spec_cannot_be_changed_past_its_validation() -> None:
    """A spec is frozen once validated: an assignment would skip every check (a negative
    length predicted without a word); a changed spec is loaded again, from a dict or with
    overrides. The fields a model derives are still filled in."""
    spec = infoflow.load_spec(SPECS / "looped_kv" / "ouro-1.4b-h200.json")
    with pytest.raises(ValueError, match="frozen"):
        spec.serving.context_tokens = -1
    with pytest.raises(ValueError, match="frozen"):
        spec.model.loops = 0
    overrides = ["model.head_dim=null", "model.kv_heads=null"]
    derived = infoflow.load_spec(SPECS / "looped_kv" / "looped-d256.json", overrides).model
    assert (derived.head_dim, derived.kv_heads) == (256 // 4, 4)


def test_every_bundled_result_pickles_with_its_formulas() -> None:
    """A result goes to another process (multiprocessing, Ray) whole: looped_kv's formulas
    were closures over the spec, which pickle refused."""
    for name in infoflow.specs.names():
        result = infoflow.predict(infoflow.specs.path(name))
        again = pickle.loads(pickle.dumps(result))
        assert again.to_json() == result.to_json(), name
        for key, prediction in result.items():
            assert again[key].expression == prediction.expression, (name, key)


def test_a_sweep_reads_relative_paths_from_the_specs_folder(tmp_path, monkeypatch) -> None:
    """A spec remembers the folder it was loaded from: expanding it from another working
    directory finds a swept config file beside the spec (it looked in the working
    directory)."""
    (tmp_path / "configs").mkdir()
    config = SPECS / "looped_kv" / "hf_configs" / "ouro-1.4b.json"
    (tmp_path / "configs" / "a.json").write_text(config.read_text())
    spec = {
        "kind": "looped_kv",
        "model": {"hf_config": "configs/a.json"},
        "serving": {"context_tokens": 4096, "memory_budget_gib": 80},
        "sweep": {"model.hf_config": ["configs/a.json"], "serving.context_tokens": [1, 2]},
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    loaded = infoflow.load_spec(tmp_path / "spec.json")
    monkeypatch.chdir(SPECS)
    assert loaded.base_dir == tmp_path.resolve()
    points = infoflow.expand(loaded)
    assert [p.serving.context_tokens for _, p in points] == [1, 2]
    assert pickle.loads(pickle.dumps(loaded)).base_dir == loaded.base_dir


def test_the_modules_example_runs_anywhere_and_dir_lists_the_public_api(
    tmp_path, monkeypatch, capsys
) -> None:
    """A fresh-user audit (2026-12-07): the docstring's example read a relative path that
    exists only in a clone's root, and dir(infoflow) (tab completion) hid the lazy names."""
    example = [line[4:] for line in infoflow.__doc__.splitlines() if line.startswith("    ")]
    printed = next(line for line in example if line.startswith("print("))
    monkeypatch.chdir(tmp_path)
    exec("\n".join(example), {})  # the module's own documentation, run as written
    assert capsys.readouterr().out.strip() == printed.split("# ")[1]
    assert set(infoflow.__all__) <= set(dir(infoflow)) and "import_module" not in dir(infoflow)


@pytest.mark.parametrize(
    ("sweep", "message"),
    [
        ({"seqlen": [8, 64]}, "field 'seqlen': unknown field; did you mean 'seq_len'?"),
        ({"seq_len": []}, "every sweep entry needs at least one value"),
        ({"kind": ["looped_kv"]}, "a sweep cannot vary the kind or the sweep"),
    ],
)
def test_load_spec_checks_the_sweep_as_the_cli_does(tmp_path, sweep, message) -> None:
    """The library loaded and predicted these, which the CLI refuses; the error names the
    file (it named <spec> when expand found it later: an audit, 2026-12-07)."""
    data = {
        "kind": "retrieval",
        "target": "max(dot(q, x[t]) for t in T)",
        "architecture": {"layers": 1, "heads": 1},
        "seq_len": 16,
        "sweep": sweep,
    }
    (tmp_path / "s.json").write_text(json.dumps(data))
    for source in (data, tmp_path / "s.json"):
        with pytest.raises(SpecError, match=re.escape(message)) as found:
            infoflow.predict(source)
        assert str(found.value).startswith("<dict>" if source is data else str(source))


def test_a_spec_changed_in_place_is_checked_again_by_predict() -> None:
    """The model is frozen, its lists and dicts are not: heads [2, 2, 5] for two layers was
    predicted (alpha 1), D = 0 raised a raw TargetError (an audit, 2026-12-07)."""
    path = SPECS / "retrieval" / "intrinsic-dimension-D2.json"
    spec = infoflow.load_spec(path, ["sweep=null"])
    assert not spec.changed_in_place()
    spec.architecture.heads.append(5)
    with pytest.raises(SpecError, match=re.escape("'architecture.heads': 3 entries for 2")):
        infoflow.predict(spec)
    spec = infoflow.load_spec(path, ["sweep=null"])
    spec.params["D"] = 0
    with pytest.raises(SpecError, match="field 'target'"):
        infoflow.predict(spec)
    spec = infoflow.load_spec(path, ["sweep=null"])
    assert infoflow.predict(spec)["cost_exponent"].value == 1  # heads [2, 2]
    spec.architecture.heads[0] = 1  # still a spec: predicted as changed, one head short
    assert infoflow.predict(spec)["cost_exponent"].value > 1
    with pytest.raises(SpecError, match="field 'seq_len'"):  # pydantic's copy: unchecked
        infoflow.predict(spec.model_copy(update={"seq_len": -3}))
    data = {**json.loads(path.read_text()), "sweep": None}
    changed = infoflow.load_spec(data)
    changed.params["D"] = 3  # equal to the spec loaded so, as before the check (a review)
    assert changed == infoflow.load_spec({**data, "params": {**data["params"], "D": 3}})
    assert changed != infoflow.load_spec(data)


def test_the_helpers_take_paths_and_name_a_wrong_argument() -> None:
    """capacity.plot and sweep took only a loaded spec (AttributeError on a path), plot on a
    retrieval spec raised AttributeError, a bad image format named --out from Python, and
    construction.load wanted a Path (an audit, 2026-12-07)."""
    pytest.importorskip("matplotlib")
    from infoflow.looped_kv import capacity
    from infoflow.retrieval.sweep import sweep

    assert capacity.plot(str(SPECS / "looped_kv" / "ouro-1.4b-h200.json")) is not None
    assert len(sweep(SPECS / "retrieval" / "pairwise-min.json").rows()) == 8
    with pytest.raises(SpecError, match=r"capacity.plot takes a looped_kv spec .* not retrieval"):
        capacity.plot(infoflow.load_spec(SPECS / "retrieval" / "pairwise-min.json"))
    with pytest.raises(SpecError, match=r"sweep takes a retrieval spec .* not int"):
        sweep(3)
    with pytest.raises(SpecError, match=r"^x\.xyz: not an image format"):
        capacity.plot(SPECS / "looped_kv" / "ouro-1.4b-h200.json", "x.xyz")
    looped = str(SPECS / "looped_kv" / "ouro-1.4b.json")  # a path names the errors (a review)
    with pytest.raises(SpecError, match=f"^{re.escape(looped)}: sweep takes a retrieval spec"):
        sweep(looped)
