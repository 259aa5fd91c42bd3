"""A package's basics on the command line: the verbosity flags of every command, shell
completion, and install hints that work from a clone as from an install."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from conftest import SPECS, TEST_STEP_TIME, infoflow_cmd, run_cli, run_process
from typer.testing import CliRunner

import infoflow
from infoflow.cli import app
from infoflow.core.errors import install_hint

ROOT = Path(__file__).resolve().parents[2]
OURO = str(SPECS / "looped_kv" / "ouro-1.4b-h200.json")
INDUCTION = str(SPECS / "retrieval" / "induction-head.json")
COMMANDS = sorted(command.name or command.callback.__name__ for command in app.registered_commands)


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_verbose_and_quiet(command: str) -> None:
    result = invoke(command, "--help")
    assert result.exit_code == 0, result.output
    text = re.sub(r"\x1b\[[0-9;]*m", "", result.output)
    for flag in ("--verbose", "-v", "--quiet", "-q"):
        assert re.search(rf"(?<![\w-]){flag}(?![\w-])", text), (command, flag)


@pytest.mark.parametrize(
    "args",
    [
        ["predict", INDUCTION],
        ["sweep", str(SPECS / "retrieval" / "kth-largest.json")],
        ["explain", INDUCTION],
        ["graph", INDUCTION],
        ["compare", OURO],
        ["schema", "retrieval"],
        ["calibrate", "icl_markov", str(ROOT / "docs" / "results" / "2026-12-02-icl-k2-c5-cpu")],
    ],
)
def test_verbose_times_a_command_and_quiet_prints_results_only(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # calibrate writes calibration.json here
    plain, verbose, quiet = invoke(*args), invoke(*args, "-v"), invoke(*args, "--quiet")
    assert plain.exit_code == verbose.exit_code == quiet.exit_code == 0, plain.output
    assert re.fullmatch(rf"infoflow {args[0]}: \d+\.\d\d s\n", verbose.stderr), verbose.stderr
    assert plain.stderr == quiet.stderr == ""
    assert verbose.stdout.startswith(quiet.stdout[:40]) and quiet.stdout


def test_predict_quiet_drops_the_notes_and_verbose_adds_each_prediction_s_note() -> None:
    plain, verbose = invoke("predict", INDUCTION), invoke("predict", INDUCTION, "--verbose")
    quiet = invoke("predict", INDUCTION, "-q")
    assert "choices made here" in plain.stdout and "choices made" not in quiet.stdout
    assert "comparison_order" in quiet.stdout
    assert "note" not in plain.stdout.split("\n")[2] and "note" in verbose.stdout.split("\n")[2]
    assert "beta1:" in verbose.stdout and "beta1:" not in plain.stdout


def test_quiet_plot_writes_without_a_word(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "capacity.png"
    result = invoke("plot", OURO, "--out", str(out), "-q")
    assert result.exit_code == 0, result.output
    assert out.stat().st_size > 0 and result.output == ""


def test_verbose_and_quiet_together_is_bad_input() -> None:
    proc = run_cli("predict", INDUCTION, "-v", "-q")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "--verbose and --quiet exclude each other" in proc.stderr.splitlines()[-1]


def test_bash_completion_script_and_completions() -> None:
    # the shell named, not detected from the parent process (which CI's need not be)
    named = {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    proc = run_cli("--show-completion", "bash", env=named)
    assert proc.returncode == 0, proc.stderr
    assert "complete -o default -F _infoflow_completion infoflow" in proc.stdout
    assert "_INFOFLOW_COMPLETE=complete_bash" in proc.stdout
    words = {"_INFOFLOW_COMPLETE": "complete_bash", "COMP_WORDS": "infoflow pre", "COMP_CWORD": "1"}
    assert run_cli(env=words).stdout.split() == ["predict"]
    words.update(COMP_WORDS="infoflow sweep x --format j", COMP_CWORD="4")
    assert run_cli(env=words).stdout.split() == ["json", "jsonl"]


def test_install_hints_work_from_a_clone_and_from_an_install() -> None:
    hint = install_hint("matplotlib", "validate")
    assert (
        hint == "pip install matplotlib (or, in a clone of infoflow: pip install -e '.[validate]')"
    )
    texts = [*ROOT.glob("infoflow/**/*.py"), ROOT / "README.md", *ROOT.glob("docs/*.md")]
    for path in texts:
        for line in path.read_text().splitlines():
            # an extra of a package named infoflow, which a clone does not install
            assert not re.search(r"pip install '?infoflow\[", line), (path, line)


def test_a_missing_optional_dependency_is_named_with_its_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    for module in ("matplotlib.pyplot", "matplotlib.figure", "matplotlib.text"):
        monkeypatch.setitem(sys.modules, module, None)
    result = invoke("plot", OURO, "--out", "never.png")
    assert result.exit_code == 2
    assert "plot needs matplotlib: pip install matplotlib" in result.stderr
    assert "pip install -e '.[validate]'" in result.stderr
    shown = invoke("plot", "--help").output
    assert "Needs matplotlib" in " ".join(re.findall(r"\w+", shown))
    assert "'.[validate]'" in shown  # the help's markup ate "[validate]" (a review)


def test_set_on_a_swept_field_fixes_it_and_keeps_the_other_axes() -> None:
    """pairwise-min.json sweeps layers over [1, 2] and T over [8, 16, 32, 64]: `--set
    seq_len=12` gives T = 12 at both layer counts (it was ignored, the sweep's four T
    printed; a review found it), and fixing the last swept field leaves one point."""
    spec = str(SPECS / "retrieval" / "pairwise-min.json")
    result = invoke("predict", spec, "--set", "seq_len=12", "--format", "json")
    assert result.exit_code == 0, result.output
    points = json.loads(result.output)
    assert [p["spec"]["seq_len"] for p in points] == [12, 12]
    assert [p["spec"]["architecture"]["layers"] for p in points] == [1, 2]
    both = ["--set", "seq_len=12", "--set", "architecture.layers=2", "--format", "json"]
    one = json.loads(invoke("predict", spec, *both).output)
    assert isinstance(one, dict) and one["spec"]["architecture"]["layers"] == 2


def test_set_sweep_of_a_nested_field_sweeps_its_dotted_path() -> None:
    """`--set sweep.architecture.layers=[1, 3]` replaces the file's axis of that dotted path
    and keeps the other (it built {"architecture": {"layers": ...}}: "Input should be a
    valid list")."""
    spec = str(SPECS / "retrieval" / "pairwise-min.json")
    result = invoke("predict", spec, "--set", "sweep.architecture.layers=[1, 3]", "-f", "json")
    assert result.exit_code == 0, result.output
    points = json.loads(result.output)
    assert [p["spec"]["architecture"]["layers"] for p in points] == [1] * 4 + [3] * 4
    changed = infoflow.load_spec(spec, overrides=["sweep.architecture.layers=[1, 3]"]).changed
    assert changed == ("sweep.architecture.layers=[1, 3]",)  # the description's caveat says so
    assert sorted({p["spec"]["seq_len"] for p in points}) == [8, 16, 32, 64]


def test_set_on_an_object_fixes_the_swept_fields_inside_it() -> None:
    spec = str(SPECS / "retrieval" / "pairwise-min.json")
    arch = 'architecture={"layers": 2, "heads": 1, "embed_dim": 32}'
    points = json.loads(invoke("predict", spec, "--set", arch, "--format", "json").output)
    assert {p["spec"]["architecture"]["layers"] for p in points} == {2}
    assert [p["spec"]["seq_len"] for p in points] == [8, 16, 32, 64]


def test_set_inside_a_swept_object_sets_it_in_each_swept_value(tmp_path) -> None:
    """The sweep takes whole codecs; `--set codec.r_k=32` sets r_k in each (the sweep's own
    r_k = 96 won while the caption said codec.r_k=32 was applied: an audit, 2026-12-07); a
    swept value that is not an object is named."""
    data = json.loads((SPECS / "looped_kv" / "ouro-1.4b-h200.json").read_text())
    codecs = [{"variant": v, "r_k": 96, "r_v": 160} for v in ("per_head", "2d")]
    (tmp_path / "codecs.json").write_text(json.dumps({**data, "sweep": {"codec": codecs}}))
    spec = str(tmp_path / "codecs.json")
    points = json.loads(invoke("predict", spec, "--set", "codec.r_k=32", "-f", "json").output)
    assert [p["spec"]["codec"]["r_k"] for p in points] == [32, 32]
    assert [p["spec"]["codec"]["variant"] for p in points] == ["per_head", "2d"]
    base = data["codec"]["r_k"]  # the base's own value changes the swept ones: captioned
    assert infoflow.load_spec(spec, [f"codec.r_k={base}"]).changed == (f"codec.r_k={base}",)
    (tmp_path / "odd.json").write_text(json.dumps({**data, "sweep": {"codec": [codecs[0], 3]}}))
    refused = invoke("predict", str(tmp_path / "odd.json"), "--set", "codec.r_k=32")
    assert refused.exit_code == 2 and "sweep.codec[1]" in refused.output


def test_progress_notes_are_silent_under_quiet_only(capsys) -> None:
    import typer

    from infoflow.core.notes import LEVEL, progress_note

    progress_note("outside a command")
    with typer.Context(typer.main.get_command(app)) as ctx:
        ctx.meta[LEVEL] = -1
        progress_note("quiet")
        ctx.meta[LEVEL] = 1
        progress_note("verbose")
    assert capsys.readouterr().err == "outside a command\nverbose\n"


def test_plan_quiet_does_not_say_it_measures_the_step_time(tmp_path, monkeypatch) -> None:
    """A plan that measures the step time (an empty cache) says so, and not under --quiet
    (the note printed there until 2026-12-07, as a pilot's did). The measurement itself
    answers the tests' fixed model (test_retrieval_design.py measures a real one)."""
    from infoflow.validators import steptime

    fixed = steptime.StepTime(**{"device_type": "cpu", "name": "test", **TEST_STEP_TIME})
    monkeypatch.setattr(steptime, "measure", lambda device, probes=None: fixed)
    spec = str(SPECS / "looped_kv" / "looped-d256.json")
    monkeypatch.setenv("INFOFLOW_CACHE", str(tmp_path / "quiet"))
    quiet = invoke("plan", spec, "--quiet")
    monkeypatch.setenv("INFOFLOW_CACHE", str(tmp_path / "plain"))
    plain = invoke("plan", spec)
    assert quiet.exit_code == plain.exit_code == 0, plain.output
    assert "measuring the cpu step time" in plain.stderr
    assert "measuring" not in quiet.stderr and "about" in quiet.stdout


@pytest.mark.parametrize("format", ["table", "jsonl"])
def test_a_pipe_closed_early_ends_the_command_by_sigpipe_without_a_word(format: str) -> None:
    """``infoflow predict ... | head -c 1``: the reader stops; the command dies of SIGPIPE as
    ``cat`` would (141 in a shell), not exit 1 with a traceback or rich's silent 1."""
    import signal
    import subprocess

    specs = sorted(str(p) for p in SPECS.glob("*/*.json"))  # 0.8 MB: past a pipe's buffer
    with subprocess.Popen(
        [*infoflow_cmd(), "predict", *specs, "-f", format],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdout.read(1)
        process.stdout.close()
        stderr = process.stderr.read().decode()
        code = process.wait(timeout=600)
    assert code == -signal.SIGPIPE, (code, stderr)
    assert "Traceback" not in stderr and "Error" not in stderr, stderr


@pytest.mark.slow  # four fresh interpreters
@pytest.mark.parametrize("command", ["predict", "plan", "validate", "compile"])
def test_the_console_script_refuses_a_missing_spec_in_one_line(command, tmp_path) -> None:
    """The installed script in a process of its own (run_cli runs the same main() in the
    test's process, where a warning or a line printed at import would not show): exit 2, one
    line on stderr naming the file, nothing on stdout."""
    missing = tmp_path / "missing.json"
    proc = run_process(command, str(missing))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"error: {missing}: spec file not found\n"
