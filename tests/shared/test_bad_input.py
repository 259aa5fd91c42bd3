"""Bad input is exit 2 and one line, never a traceback and never a hang: files that are not
specs, JSON beyond the bounds, bad options, bad inputs of each family's readers; outputs
that parse and cannot be hijacked."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from conftest import LOOPED_KV, ROOT, SPECS, no_hang, refused, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import infoflow
from infoflow.cli import app
from infoflow.core.errors import SpecError
from infoflow.core.files import MAX_DEPTH, write_cache, write_text, write_with

OURO = str(LOOPED_KV / "ouro-1.4b.json")


def test_files_that_are_not_specs_are_refused_promptly(tmp_path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # opening it would wait for a writer forever
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:
        handle.truncate(17 * 2**20)  # sparse: no disk used
    cases = {
        fifo: "not a regular file",
        Path("/dev/zero"): "not a regular file",
        tmp_path: "is a directory",
        big: "a spec file is at most 16 MiB",
        tmp_path / "absent.json": "spec file not found",
    }
    with no_hang(60):
        for path, message in cases.items():
            assert message in refused("predict", str(path)), path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000, "nested deeper than"),
        ('{"kind": "looped_kv", "a": ' + "[" * 40 + "]" * 40 + "}", f"deeper than {MAX_DEPTH}"),
        ('{"kind": "looped_kv", "x": NaN}', "line 1, column 28: NaN is not a number JSON"),
        ('{"kind": "looped_kv", "x": -Infinity}', "-Infinity is not a number JSON allows"),
        # placed as invalid JSON is (a review: no place was named), a string's NaN skipped
        ('{"kind": "looped_kv",\n"y": "NaN",\n "x": Infinity}', "line 3, column 7: Infinity"),
        ('{"kind": "looped_kv", "x": ' + "9" * 5000 + "}", "beyond any sensible size"),
        (
            '{"kind": "looped_kv", "serving": {"context_tokens": 99999999999999999999}}',
            "field 'serving.context_tokens': 1e+20 is beyond any sensible size",
        ),
        ('{"kind": "looped_kv", "serving": {"context_tokens": 1e999}}', "not a finite number"),
        ('{"kind": "looped_kv", "a\\nb": 1}', "field 'a\\nb': unknown field"),
        ('{"kind": "icl_markov", "states": 3, "states": 5}', 'the key "states" is given twice'),
        (
            '{"kind": "retrieval", "architecture": {"layers": 1, "heads": 1}, "target": "'
            + "y" * 100_000
            + '"}',
            "field 'target'",
        ),
        ('["not", "an", "object"]', "a spec must be a JSON object"),
    ],
    ids=[
        "deep",
        "depth-bound",
        "nan",
        "infinity",
        "placed",
        "digits",
        "huge-int",
        "overflow",
        "newline-key",
        "repeated-key",
        "long-string",
        "array",
    ],
)
def test_json_beyond_the_bounds_is_refused_in_one_line(tmp_path, text, message) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(text)
    line = refused("predict", str(spec))
    assert message in line and len(line) < 1000


@pytest.mark.parametrize("command", [["predict"], ["plan", "--no-pilot"], ["validate"]])
def test_a_lone_surrogate_is_refused_naming_the_field(tmp_path, command) -> None:
    """JSON's \\ud800 escape alone is no text: plan and validate wrote it into a report and
    failed with a traceback (a review, 2026-12-06)."""
    spec = json.loads((SPECS / "retrieval" / "kth-largest.json").read_text())
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec | {"description": "X"}).replace('"X"', '"a\\ud800"'))
    line = refused(*command, str(path))
    assert "field 'description': holds a lone UTF-16 surrogate" in line
    path.write_text(json.dumps(spec | {"X": 1}).replace('"X"', '"\\udc00"'))
    assert 'the key "\\udc00" holds a lone UTF-16 surrogate' in refused(*command, str(path))
    line = refused(*command, str(SPECS / "retrieval" / "kth-largest.json"), "--set", "a=b\udcff")
    assert "not text (undecodable bytes)" in line


def test_undecodable_bytes_are_refused(tmp_path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_bytes(b'{"kind": "\xff\xfe"}')
    assert "cannot read the spec file" in refused("predict", str(spec))


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("serving.context_tokens=NaN", "field 'serving.context_tokens': unreadable number"),
        ("serving.context_tokens=1e400", "inf is not a finite number"),
        ("serving.memory_budget_gib=inf", "'serving.memory_budget_gib': the string \"inf\""),
        ("serving.usable_fraction=nan", "'serving.usable_fraction': the string \"nan\", where a"),
        ("serving.context_tokens='64'", "'serving.context_tokens': the string \"'64'\", where a"),
        ("serving.context_tokens=" + "9" * 30, "beyond any sensible size"),
        ("serving.memory_budget_gib=1e300", "memory_budget_gib': 1e+300 is beyond any sensible"),
        ("serving.device_memory_gib=-1e17", "device_memory_gib': -1e+17 is beyond any sensible"),
        ("serving.context_tokens=[" + "[" * 50 + "]" * 51, "nested deeper"),
        ("noequals", "expected key.path=value"),
        ("serving..x=1", "expected key.path=value"),
        ("sweep.sweep=[1]", "field 'sweep.sweep': a sweep cannot vary the kind or the sweep"),
    ],
)
def test_overrides_beyond_the_bounds_are_refused(override, message) -> None:
    assert message in refused("predict", OURO, "--set", override)


def test_a_size_given_twice_in_a_list_of_runs_is_refused() -> None:
    race = str(SPECS / "icl_markov" / "race-c3.json")
    message = "field 'race.chains': 16 given more than once"
    assert message in refused("predict", race, "--set", "race.chains=[16, 23, 16]")


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("target=kth_largest((dot(q, x[t]) for t in T), k=17)", "k = 17 exceeds T = 16"),
        (
            "target=kth_largest((dot(q, x[t]) for t in T), k=10000000000)",
            "k must be an integer from 1 to 1,000,000,000",
        ),
        ("architecture.layers=1000000", "field 'architecture.layers': Input should be less than"),
        ("architecture.heads=[5000]", "field 'architecture.heads': at most 4096 heads in a layer"),
        ('sweep={"target": ["garbage("]}', 'sweep point target="garbage("'),
    ],
)
def test_sizes_no_planner_can_handle_are_refused_by_every_command(override, message) -> None:
    kth = str(SPECS / "retrieval" / "kth-largest.json")
    with no_hang(120):
        for command in ("predict", "explain", "graph"):
            assert message in refused(command, kth, "--set", "sweep=null", "--set", override)


def test_usage_errors_are_one_line_too() -> None:
    for args in (["predict"], ["predict", "-f", "bogus", OURO], ["--bogus"]):
        proc = run_cli(*args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, args
        assert proc.stderr.startswith("error: ")
        assert proc.stderr.endswith(f"(see infoflow{' predict' * (args[0] == 'predict')} --help)\n")


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--steps", "0", "--steps: must be from 1 to 1,000,000,000 (got 0)"),
        ("--seeds", "-2", "--seeds: must be from 1 to 1,000 (got -2)"),
        ("--seeds", str(10**12), "--seeds: must be from 1 to 1,000"),
        ("--gpus-per-group", "0", "--gpus-per-group: must be in (0, 1024]"),
    ],
)
def test_validate_options_are_checked_before_anything_runs(tmp_path, option, value, message):
    out = tmp_path / "out"
    assert message in refused("validate", OURO, option, value, "--out", str(out), "--quiet")
    assert not out.exists()


@pytest.mark.parametrize(
    ("spec", "override", "message"),
    [
        ("icl_markov/decoder-c3.json", "calibration=/dev/zero", "/dev/zero is not a regular file"),
        ("looped_kv/tiny-looped.json", "model.checkpoint=/dev/zero", "/dev/zero is not a folder"),
        ("icl_markov/decoder-c3.json", "calibration=/absent.json", "file not found: /absent.json"),
    ],
)
def test_a_path_that_is_not_what_the_field_wants_says_so(spec, override, message) -> None:
    """/dev/zero was "not found" (a review, 2026-12-06)."""
    assert message in refused("predict", str(SPECS / spec), "--set", override)


def test_an_hf_config_that_is_not_a_file_names_the_field(tmp_path) -> None:
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"kind": "looped_kv", "model": {"hf_config": "config.json"}}))
    with no_hang(60):
        line = refused("predict", str(spec))
    assert "field 'model.hf_config'" in line and "not a regular file" in line


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda c: c["exponents"]["memorization"].update(value=-0.7),
            "exponents.memorization.value",
        ),
        (lambda c: c["capacity"].update(value=0), "capacity.value"),
        (lambda c: c["anchors"][0]["final_boundary"].update(low=100.0), "low <= value <= high"),
        (
            lambda c: c["anchors"][0]["settings"].update(context_len=0),
            "settings.context_len must be a positive number",
        ),
        (lambda c: c["transient_scale"].update(stderr=-1.0), "transient_scale.stderr"),
        (
            lambda c: c["exponents"]["transient"].update(value=25.0),
            "an exponent is between 0.05 and 20",
        ),
        (
            lambda c: next(a for a in c["anchors"] if a.get("tau_2gen"))["tau_2gen"].update(
                value=1e15
            ),
            "less than or equal to",
        ),
        (
            lambda c: next(a for a in c["anchors"] if a.get("tau_2gen"))["tau_2gen"].update(
                value=1e308
            ),
            "tau_2gen.value': 1e+308 is beyond any sensible size",
        ),
        (lambda c: c["anchors"][0]["settings"].pop("context_len"), "settings lacks context_len"),
    ],
    ids=[
        "negative-exponent",
        "zero-capacity",
        "bracket",
        "zero-setting",
        "negative-stderr",
        "huge-exponent",
        "huge-time",
        "absurd-time",
        "missing-setting",
    ],
)
def test_absurd_calibration_constants_are_refused_where_read(tmp_path, change, message) -> None:
    from infoflow.icl_markov.calibration import SHIPPED

    data = json.loads(SHIPPED.read_text())
    change(data)
    (tmp_path / "calibration.json").write_text(json.dumps(data))
    park = json.loads((SPECS / "icl_markov" / "park2025.json").read_text())
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({**park, "calibration": "calibration.json"}))
    line = refused("predict", str(spec), "--set", "sweep=null", "--set", f"chains={2**50}")
    assert message in line and "calibration.json" in line


def test_a_prediction_that_overflows_is_refused_naming_the_spec(monkeypatch) -> None:
    from infoflow.icl_markov import predict

    def overflows(spec, source):
        raise OverflowError("(34, 'Numerical result out of range')")

    monkeypatch.setattr(predict, "_predict", overflows)
    line = refused("predict", str(SPECS / "icl_markov" / "park2025.json"), "--set", "sweep=null")
    assert "park2025.json: the working forms give no finite number" in line
    assert line.endswith("(an overflow)") and "OverflowError" not in line  # words, not Python's


def test_calibrate_refuses_reports_it_cannot_read(tmp_path) -> None:
    assert "report not found" in refused("calibrate", "icl_markov", str(tmp_path))
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"specs": [{"kind": "icl_markov", "groups": [{"name": "g"}]}]}))
    line = refused("calibrate", "icl_markov", str(report))
    assert "field 'started': Field required" in line
    report.write_text("{")
    assert "invalid JSON" in refused("calibrate", "icl_markov", str(report))


def test_calibrate_refuses_a_run_given_twice(tmp_path) -> None:
    """A run given twice (or a copy of it) counted its groups twice: the exponent's error
    shrank by sqrt(2) (a fresh-user audit, 2026-12-07)."""
    run = ROOT / "docs" / "results" / "2026-11-29-icl-smoke-cpu-seed0"
    line = refused("calibrate", "icl_markov", str(run), str(run / "report.json"))
    assert line.endswith("report.json: given twice: its groups would count twice")
    copy = tmp_path / "report.json"
    copy.write_bytes((run / "report.json").read_bytes())
    line = refused("calibrate", "icl_markov", str(run), str(copy))
    assert f"error: {copy}: the same run as {run / 'report.json'} (started " in line
    other = json.loads((run.parent / "2026-11-29-icl-smoke-cpu-seed1" / "report.json").read_text())
    other["started"] = json.loads(copy.read_text())["started"]  # another seed, the same second
    copy.write_text(json.dumps(other))
    assert (
        run_cli(
            "calibrate", "icl_markov", str(run), str(copy), "--out", str(tmp_path / "c.json")
        ).returncode
        == 0
    )


def test_calibrate_writes_over_a_calibration_file_only(tmp_path) -> None:
    """`calibrate icl_markov RUN --out RUN/report.json` wrote the calibration over the report
    it read (a spec too): refused, the file untouched; a calibration file is updated."""
    real = ROOT / "docs" / "results" / "2026-11-29-icl-smoke-cpu-seed0" / "report.json"
    report = tmp_path / "report.json"
    report.write_bytes(real.read_bytes())
    line = refused("calibrate", "icl_markov", str(report), "--out", str(report))
    assert line == (
        f"error: --out: {report} is a validate report, not a calibration file: will not "
        "write over it; name a new file"
    )
    assert report.read_bytes() == real.read_bytes()
    spec = tmp_path / "spec.json"
    spec.write_text((SPECS / "icl_markov" / "k2-c5.json").read_text())
    line = refused("calibrate", "icl_markov", str(report), "--out", str(spec))
    assert line.startswith(f"error: --out: {spec} is not a calibration file (")
    assert spec.read_text() == (SPECS / "icl_markov" / "k2-c5.json").read_text()
    line = refused("calibrate", "icl_markov", str(report), "--base", str(report))
    assert line.endswith(
        "report.json: a validate report, not a calibration file: infoflow "
        "calibrate icl_markov makes one from it"
    )
    calibration = tmp_path / "calibration.json"
    for _ in range(2):  # written, then written over
        done = run_cli("calibrate", "icl_markov", str(report), "--out", str(calibration))
        assert done.returncode == 0, done.stderr
    assert json.loads(calibration.read_text())["format"] == 1
    empty = tmp_path / "made-by-mktemp.json"
    empty.touch()
    assert run_cli("calibrate", "icl_markov", str(report), "--out", str(empty)).returncode == 0


@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        (("measurement", "tau_2gen", "checkpoint_ratio"), 0, "greater than 0"),
        (("setting",), 5, "should be an object"),
        (("setting", "training"), None, "should be an object"),
        (("setting", "training", "steps"), "1500", "valid integer"),
        (
            ("measurement", "per_k", "x"),
            {"outcome": "memorization", "memorized_at": 10, "transient_duration": None},
            "its keys are numbers of chains",
        ),
        (("measurement", "per_k", "1", "memorized_at"), [10], "valid"),
        (("measurement", "k1_star"), {"low": 16}, "Field required"),
    ],
)
def test_calibrate_names_the_damaged_field_of_a_report(tmp_path, path, value, words) -> None:
    """A damaged report quoted Python's exception from deep in the fit ("TypeError: 'int'
    object is not subscriptable", "ZeroDivisionError"); it names the field now."""
    real = ROOT / "docs" / "results" / "2026-11-29-icl-smoke-cpu-seed0" / "report.json"
    damaged = json.loads(real.read_text())
    inner = damaged["specs"][0]["groups"][0]
    for key in path[:-1]:
        inner = inner[key]
    inner[path[-1]] = value
    report = tmp_path / "report.json"
    report.write_text(json.dumps(damaged))
    line = refused("calibrate", "icl_markov", str(report))
    located = "specs.0.groups.0." + ".".join(path[:-1] if path[-1] == "x" else path)
    assert f"field '{located}" in line and words in line and "Error" not in line
    assert ".int'" not in line and ".float'" not in line  # pydantic's union tags left out


# ---- outputs -----------------------------------------------------------------------------


def _strict(text: str):
    def refuse(name):
        raise AssertionError(f"{name} in JSON output")

    return json.loads(text, parse_constant=refuse)


def test_json_output_is_strict_a_non_finite_value_is_null_with_a_reason() -> None:
    triangle = str(SPECS / "retrieval" / "triangle-center.json")
    result = CliRunner().invoke(
        app, ["predict", "-f", "json", triangle, "--set", "sweep=null", "--set", f"seq_len={2**50}"]
    )
    assert result.exit_code == 0, result.output
    cost = _strict(result.stdout)["predictions"]["param_cost"]
    assert cost["value"] is None and "beyond a float (null in JSON)" in cost["note"]
    position = str(SPECS / "retrieval" / "specific-position.json")
    result = CliRunner().invoke(
        app,
        [
            "predict",
            "-f",
            "json",
            position,
            "--set",
            "sweep=null",
            "--set",
            "architecture.positional_encoding=false",
        ],
    )
    alpha = _strict(result.stdout)["predictions"]["cost_exponent"]  # oo: no model represents it
    assert alpha["value"] is None and "Infinite here (null in JSON)" in alpha["note"]


def test_markdown_text_is_literal() -> None:
    from infoflow.core.text import markdown_code, markdown_text

    assert markdown_text("a | b \\| c") == "a \\| b \\\\\\| c"  # no cell can end early
    assert markdown_text("![x](http://evil/t.png) [a][b]") == "![x\\](http://evil/t.png) [a\\][b]"
    assert markdown_text("&lt;b&gt; <img src=x> a & b, K <= 5") == (
        "&amp;lt;b&amp;gt; &lt;img src=x> a & b, K <= 5"
    )
    assert markdown_text("# title", starts_line=True) == "\\# title"
    assert "\n" not in markdown_text("x\n# y")
    assert markdown_code("a`b") == "`` a`b ``"


def test_the_terminal_table_prints_no_control_characters(tmp_path) -> None:
    spec = json.loads(Path(OURO).read_text())
    spec["model"]["name"] = "Evil\x1b]0;pwned\x07\x1b[2J"
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(spec))
    result = CliRunner().invoke(app, ["predict", str(path)])
    assert result.exit_code == 0 and "\x1b" not in result.stdout and "\x07" not in result.stdout


def test_latex_and_markdown_escape_what_a_user_wrote(tmp_path) -> None:
    spec = json.loads(Path(OURO).read_text())
    spec["model"]["name"] = "Evil\n\\input{/etc/passwd}\n# heading | <script>"
    spec["description"] = "# not a heading\n| not a row"
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(spec))
    for format in ("latex", "markdown"):
        result = CliRunner().invoke(app, ["predict", "-f", format, str(path)])
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        assert not any(line.startswith(("\\input", "# ", "| not")) for line in lines), format
        assert format == "latex" or "<script>" not in result.stdout


def test_a_write_that_fails_leaves_the_old_file_whole(tmp_path) -> None:
    path = tmp_path / "report.json"
    write_text(path, "old\n")

    def half(temporary: Path) -> None:
        temporary.write_text("half a rep")
        raise OSError(28, "No space left on device")

    with pytest.raises(SpecError, match="No space left on device"):
        write_with(path, half)
    assert path.read_text() == "old\n" and sorted(tmp_path.iterdir()) == [path]
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for in_the_way in (tmp_path, fifo):  # never replaced, never opened
        with pytest.raises(SpecError, match="not a regular file: will not write over it"):
            write_text(in_the_way, "x")
    assert fifo.is_fifo()
    link = tmp_path / "link.json"
    link.symlink_to(path)
    write_text(link, "through the link\n")
    assert link.is_symlink() and path.read_text() == "through the link\n"
    with pytest.raises(SpecError, match="cannot write it"):
        write_text(tmp_path / "no-such-folder" / "x.json", "x")


def test_a_read_only_folder_is_told_as_the_write_that_failed(tmp_path, monkeypatch) -> None:
    def refused_write(temporary: Path) -> None:
        raise OSError(30, "Read-only file system")

    def unlink(self, missing_ok=False) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(Path, "unlink", unlink)  # the cleanup fails as well
    with pytest.raises(SpecError, match="cannot write it \\(Read-only file system\\)"):
        write_with(tmp_path / "x.json", refused_write)


def test_a_cache_folder_that_cannot_hold_the_cache_is_a_warning(tmp_path, capsys) -> None:
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("a file where the cache folder belongs\n")
    write_cache(not_a_folder / "steptime.json", "{}")
    assert "warning: cannot cache" in capsys.readouterr().err
    assert not_a_folder.read_text() == "a file where the cache folder belongs\n"


# ---- the contract under fuzzing ----------------------------------------------------------

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
    st.sampled_from(
        [
            "x[1]",
            "min(dot(x[s], x[t]) for s in T for t in T)",
            "bfloat16",
            "per_head",
            "uniform",
            "nope.json",
            "../../etc/passwd",
        ]
    ),
)
FIELDS = st.sampled_from(
    [
        "seq_len",
        "input_dim",
        "target",
        "architecture",
        "params",
        "sweep",
        "model",
        "codec",
        "serving",
        "states",
        "chains",
        "context_len",
        "training",
        "options",
        "epsilon",
        "heads",
        "layers",
        "r_k",
        "hf_config",
        "calibration",
        "unknown",
    ]
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(FIELDS, inner, max_size=4),
    max_leaves=12,
)


SLOW_IS_FINE = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


@settings(max_examples=80, deadline=None, suppress_health_check=SLOW_IS_FINE)
@given(
    kind=st.sampled_from(["looped_kv", "retrieval", "icl_markov", "nope", 3]),
    fields=st.dictionaries(FIELDS, VALUES, max_size=6),
    override=st.one_of(st.none(), st.tuples(FIELDS, st.text(max_size=20))),
)
def test_the_loader_and_cli_answer_0_or_2_never_a_traceback(tmp_path, kind, fields, override):
    spec = tmp_path / "fuzz.json"
    spec.write_text(json.dumps({"kind": kind, **fields}))
    args = ["predict", "-f", "json", str(spec)]
    if override:
        args += ["--set", f"{override[0]}={override[1]}"]
    with no_hang(120):
        result = CliRunner().invoke(app, args)
    assert result.exit_code in (0, 2), (result.exit_code, result.exception, args, fields)
    if result.exit_code == 2:
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    else:
        _strict(result.stdout)


LIBRARY_INPUTS = st.one_of(
    VALUES,
    st.builds(
        lambda kind, fields: {"kind": kind, **fields},
        st.sampled_from(["looped_kv", "retrieval", "icl_markov", "nope", 3]),
        st.dictionaries(FIELDS, VALUES | st.floats() | st.integers(), max_size=6),
    ),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(),
    st.binary(max_size=8),
    st.lists(st.integers(), max_size=3),
)


@settings(max_examples=80, deadline=None, suppress_health_check=SLOW_IS_FINE)
@given(
    source=LIBRARY_INPUTS,
    overrides=st.one_of(
        st.just(()), st.lists(st.text(max_size=12), max_size=2), st.text(max_size=5), st.integers()
    ),
)
def test_the_library_raises_only_its_documented_error(source, overrides) -> None:
    """Issue 29, item 3: load_spec and predict hold a dict to a file's bounds and answer a
    bad argument of any type with SpecError."""
    with no_hang(120):
        for call in (
            lambda: infoflow.load_spec(source, overrides),
            lambda: infoflow.predict(source),
        ):
            try:
                call()
            except SpecError as error:
                assert "\n" not in str(error)


def test_a_dict_is_held_to_the_bounds_of_a_file() -> None:
    deep: dict = {}
    inner = deep
    for _ in range(5000):
        inner["a"] = inner = {}
    base = {"kind": "retrieval", "target": "x[1][0]", "architecture": {"layers": 1, "heads": 1}}
    with pytest.raises(SpecError, match=f"nested deeper than {MAX_DEPTH} levels"):
        infoflow.load_spec({**base, "description": deep})
    with pytest.raises(SpecError, match="an integer of about 5001 digits is beyond any sensible"):
        infoflow.load_spec({**base, "seq_len": 10**5000})
    with pytest.raises(SpecError, match="not float"):
        infoflow.predict(1.5)


BUNDLED = sorted(SPECS.glob("*/*.json"))
PATHS = st.sampled_from(
    [
        "seq_len",
        "input_dim",
        "epsilon",
        "target",
        "params.D",
        "architecture.layers",
        "architecture.heads",
        "architecture.embed_dim",
        "data.std",
        "data.norm_clamp",
        "options.kth_cost",
        "model.layers",
        "model.loops",
        "model.heads",
        "model.kv_heads",
        "model.head_dim",
        "model.hidden_size",
        "model.vocab_size",
        "codec.variant",
        "codec.r_k",
        "codec.r_v",
        "serving.context_tokens",
        "serving.batch",
        "serving.memory_budget_gib",
        "serving.cache_dtype",
        "states",
        "chains",
        "context_len",
        "dirichlet_alpha",
        "model.d_model",
        "model.mlp_width",
        "training.steps",
        "training.lr",
        "seed",
        "sweep",
    ]
)
RAW = st.one_of(
    st.integers(min_value=-(2**60), max_value=2**60).map(str),
    st.floats(allow_nan=False).map(repr),
    st.sampled_from(
        ["0", "-1", "1e308", "[]", "[0]", "{}", "null", "true", '"x"', "[1, 2, 3]", "1.5", "2**10"]
    ),
    st.text(max_size=12),
)


@settings(max_examples=120, deadline=None, suppress_health_check=SLOW_IS_FINE)
@given(spec=st.sampled_from(BUNDLED), overrides=st.lists(st.tuples(PATHS, RAW), max_size=3))
def test_bundled_specs_with_any_overrides_answer_0_or_2(spec, overrides) -> None:
    args = ["predict", "-f", "json", str(spec), "--set", "sweep=null"]
    for path, raw in overrides:
        args += ["--set", f"{path}={raw}"]
    with no_hang(120):
        result = CliRunner().invoke(app, args)
    assert result.exit_code in (0, 2), (result.exit_code, result.exception, args)
    if result.exit_code == 2:
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    else:
        _strict(result.stdout)


@pytest.mark.parametrize(
    ("spec", "setting", "message"),
    [
        ("retrieval/pairwise-min.json", "architecture.layers=true", "'architecture.layers'"),
        ("retrieval/pairwise-min.json", "seq_len=true", "'seq_len'"),
        ("looped_kv/ouro-1.4b.json", "serving.context_tokens=false", "'serving.context_tokens'"),
    ],
)
def test_a_boolean_where_a_number_belongs_is_refused(spec, setting, message) -> None:
    """pydantic would read true as 1: the spec layer refuses it, naming the field."""
    line = refused("predict", str(SPECS / spec), "--set", setting, "--set", "sweep=null")
    assert f"field {message}: a boolean, where a number belongs" in line


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("params.D=true", "'params.D': a boolean"),
        ('params.D="3"', "'params.D': the string \"3\""),
        ("architecture.heads=[true,true]", "'architecture.heads.0': a boolean"),
        ('architecture.heads=[2,"1"]', "'architecture.heads.1': the string \"1\""),
        ('architecture.heads="1"', "'architecture.heads': the string \"1\""),
        ("data.norm_clamp=[true, 4.0]", "'data.norm_clamp.0': a boolean"),  # a tuple
        ('data.norm_clamp=[0.2, "4"]', "'data.norm_clamp.1': the string \"4\""),
    ],
)
def test_a_boolean_or_string_inside_a_list_or_dict_of_numbers_is_refused(setting, message):
    """A fresh-user audit (2026-12-07): params.D=true planned D = 1, heads ["1", 2] as
    [1, 2]; the entries of a list or a dict of numbers are checked as a number is."""
    spec = str(SPECS / "retrieval/intrinsic-dimension-D2.json")
    line = refused("predict", spec, "--set", setting, "--set", "sweep=null")
    assert f"field {message}, where a number belongs" in line


def test_a_string_for_a_dict_is_not_called_a_misplaced_number_and_bool_lists_hold_bools():
    """A review (2026-12-07): sweep="abc" read "where a number belongs" (a dict or None
    takes no string either); a list of booleans took 1 as true."""
    spec = str(SPECS / "retrieval/intrinsic-dimension-D2.json")
    line = refused("predict", spec, "--set", 'sweep="abc"')
    assert "field 'sweep': Input should be a valid dictionary" in line
    spec = str(SPECS / "looped_kv/ouro-1.4b.json")
    line = refused("predict", spec, "--set", "model.window_layers=[1, true]")
    assert "field 'model.window_layers.0': 1, where a boolean (true or false) belongs" in line


@pytest.mark.parametrize("raw", ['"yes"', "1", '"true"'])
def test_a_string_or_number_where_a_boolean_belongs_is_refused(raw) -> None:
    """pydantic would read "yes" and 1 as true (a CLI fuzz, 2026-12-05): refused, naming the
    field; true and false still read."""
    spec = str(SPECS / "retrieval/pairwise-min.json")
    setting = f"architecture.positional_encoding={raw}"
    line = refused("predict", spec, "--set", setting, "--set", "sweep=null")
    assert "field 'architecture.positional_encoding'" in line
    assert "where a boolean (true or false) belongs" in line
    result = CliRunner().invoke(
        app,
        ["predict", spec, "--set", "architecture.positional_encoding=true", "--set", "sweep=null"],
    )
    assert result.exit_code == 0, result.stderr


def test_a_norm_range_whose_low_end_is_above_its_high_end_is_refused() -> None:
    spec = str(SPECS / "retrieval/pairwise-min.json")
    line = refused("predict", spec, "--set", "data.norm_clamp=[4, 0.2]", "--set", "sweep=null")
    assert "field 'data.norm_clamp': [4, 0.2]: low above high" in line


def test_a_unions_members_are_not_named_as_fields() -> None:
    """heads is a number or a list: a 0 named 'architecture.heads.constrained-int' beside
    'architecture.heads.list[constrained-int]: Input should be a valid list'."""
    path = str(SPECS / "retrieval" / "pairwise-min.json")
    line = refused("predict", path, "--set", "architecture.heads=0", "--set", "sweep=null")
    assert line.endswith("field 'architecture.heads': Input should be greater than 0 (got 0)")
    line = refused("predict", path, "--set", "architecture.heads=[1,0]", "--set", "sweep=null")
    assert line.endswith("field 'architecture.heads.1': Input should be greater than 0 (got 0)")


def test_an_unreachable_ray_cluster_is_one_line(monkeypatch) -> None:
    """Issue 29, item 7: ray.init's failure to connect is exit 2 naming the address."""
    ray = pytest.importorskip("ray")
    from infoflow.validators.executor import train_on_ray

    def unreachable(**kwargs):
        raise ConnectionError(f"Could not find any running Ray instance at {kwargs['address']}\n")

    monkeypatch.setattr(ray, "init", unreachable)
    with socket.socket() as listening:  # something answers there: Ray is asked
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        address = f"127.0.0.1:{listening.getsockname()[1]}"
        with pytest.raises(SpecError, match=rf"cannot reach the Ray cluster at {address}: Could"):
            train_on_ray([object()], None, address, 0)
    # nothing answers now: refused at once (Ray retried for minutes, a review)
    with pytest.raises(SpecError, match=r"nothing answers at 127\.0\.0\.1:\d+") as e:
        train_on_ray([object()], None, address, 0)
    assert "\n" not in str(e.value) and str(e.value).startswith("--address: ")  # the flag
    monkeypatch.setenv("RAY_ADDRESS", "10.8.8.8:6379")  # Ray's default without --address
    with pytest.raises(SpecError, match=r"the Ray cluster that RAY_ADDRESS names \(10\.8\.8\.8"):
        train_on_ray([object()], None, None, 0)


def test_messages_name_what_is_wrong_where_the_user_wrote_it(tmp_path) -> None:
    """A review's list: --beta nan was "at most 1000000"; `t != t` "must compare a bound
    index"; a calibration file that is not JSON named no field; a config's num_key_value_heads
    that does not divide its heads named only the spec's field."""
    kth = str(SPECS / "retrieval" / "kth-largest.json")
    result = CliRunner().invoke(app, ["compile", kth, "--set", "sweep=null", "--beta", "nan"])
    assert result.exit_code == 2 and "must be a number from 0.01 to 1e6 (got nan)" in result.output
    target = "target=max(dot(q, x[t]) for t in T if t != t)"
    line = refused("predict", kth, "--set", "sweep=null", "--set", target)
    assert "t is on both sides and cancels" in line
    (tmp_path / "bad.json").write_text("not json")
    park = str(SPECS / "icl_markov" / "park2025.json")
    line = refused(
        "predict", park, "--set", "sweep=null", "--set", f"calibration={tmp_path}/bad.json"
    )
    assert "field 'calibration': the calibration file" in line and "invalid JSON" in line
    config = json.loads((SPECS / "looped_kv" / "hf_configs" / "qwen3-0.6b.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "num_key_value_heads": 3}))
    line = refused("predict", str(tmp_path / "config.json"))
    assert "num_attention_heads and num_key_value_heads, read from the config" in line


def test_a_spec_with_a_byte_order_mark_is_read(tmp_path) -> None:
    """Windows editors write a UTF-8 BOM: it was refused as invalid JSON."""
    text = (SPECS / "retrieval" / "kth-largest.json").read_text()
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + text.encode())
    result = CliRunner().invoke(app, ["predict", str(tmp_path / "bom.json"), "--set", "sweep=null"])
    assert result.exit_code == 0, result.output


def test_an_option_and_a_set_of_one_field_are_refused_not_one_silently_kept(tmp_path) -> None:
    """--set serving.context_tokens=2048 --context 1024 used 2048 without a word (a review);
    --gpus-per-group without Ray was ignored, as --address is refused."""
    config = str(LOOPED_KV / "hf_configs" / "gpt2.json")
    line = refused("predict", config, "--set", "serving.context_tokens=2048", "--context", "1024")
    assert "--context and --set serving.context_tokens: two values for one field" in line
    spec = str(LOOPED_KV / "ouro-1.4b.json")
    line = refused("predict", spec, "--set", 'serving={"batch": 2}', "--batch", "3")
    assert "--batch and --set serving: two values for one field" in line
    assert run_cli("predict", spec, "--set", "serving.batch=2", "--context", "1024").returncode == 0
    swept = 'sweep={"serving.context_tokens": [4096, 8192]}'  # a sweep of it too (a review)
    assert "two values for one field" in refused(
        "predict", spec, "--context", "1024", "--set", swept
    )
    out = str(tmp_path / "run")
    line = refused("validate", spec, "--gpus-per-group", "0.5", "--out", out)
    assert "--gpus-per-group: sizes each Ray task: add --executor ray" in line


def test_calibrate_names_a_missing_decoder_bracket_end_or_groups(tmp_path) -> None:
    """Fields the fit reads that the first models let default: a KeyError traceback once the
    catch-all was narrowed (a review)."""
    real = ROOT / "docs" / "results" / "2026-12-05-icl-decoder-c3-seeds" / "report.json"
    damaged = json.loads(real.read_text())
    del damaged["specs"][0]["decoders"][0]["seeds"][0]["measurement"]["capacity"]["high"]
    report = tmp_path / "report.json"
    report.write_text(json.dumps(damaged))
    line = refused("calibrate", "icl_markov", str(report))
    assert "field 'specs.0.decoders.0.seeds.0.measurement.capacity.high': Field" in line
    damaged = json.loads(real.read_text())
    del damaged["specs"][0]["groups"]
    report.write_text(json.dumps(damaged))
    assert "field 'specs.0.groups': Field required" in refused(
        "calibrate", "icl_markov", str(report)
    )


def test_a_bad_option_value_names_the_option_and_two_budgets_are_refused() -> None:
    """--device cuda named field 'serving.device'; --device with --budget-gib advised a --set
    (a review)."""
    config = str(LOOPED_KV / "hf_configs" / "qwen3-0.6b.json")
    line = refused("predict", config, "--device", "cuda")
    assert "field '--device (serving.device)': Input should be 'h200'" in line
    line = refused("predict", config, "--device", "h200", "--budget-gib", "10")
    assert "--budget-gib and --device: each gives the cache budget; give one" in line


def test_a_budget_option_beside_another_budget_set_is_refused_up_front() -> None:
    """--budget-gib with --set serving.device advised a --set the next run refused (a review);
    a budget set to null conflicts with nothing."""
    spec = str(LOOPED_KV / "ouro-1.4b.json")
    line = refused("predict", spec, "--budget-gib", "40", "--set", "serving.device=h200")
    assert "--budget-gib and --set serving.device: each gives the cache budget; give one" in line
    swept = 'sweep={"serving.device": ["h200", "h100-sxm"]}'
    assert "each gives the cache budget" in refused(
        "predict", spec, "--budget-gib", "40", "--set", swept
    )
    ok = run_cli("predict", spec, "--budget-gib", "40", "--set", "serving.device=null")
    assert ok.returncode == 0, ok.stderr
