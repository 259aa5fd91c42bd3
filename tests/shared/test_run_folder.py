"""A run's identity is its content, and its folder is guarded: a group is named by what
determines its trained models, a resumed run never uses a model trained for something else,
one process at a time writes a folder, and whatever is damaged in it is exit 2 and one
line."""

from __future__ import annotations

import json
import os
import pickle
import signal
import sqlite3
import struct
import subprocess
import sys
import time
import warnings
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from conftest import LOOPED_KV, SPECS, interrupt_and_resume, refused, run_cli  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

import infoflow  # noqa: E402
from infoflow.cli import app  # noqa: E402
from infoflow.core.errors import SpecError  # noqa: E402
from infoflow.validators.ensemble import Checkpoint  # noqa: E402
from infoflow.validators.folder import locked  # noqa: E402
from infoflow.validators.protocol import CannotValidate  # noqa: E402
from infoflow.validators.retrieval.experiment import SCALES, Design  # noqa: E402
from infoflow.validators.retrieval.experiment import plan as plan_retrieval  # noqa: E402
from infoflow.validators.run import DATABASE, Options, plan, validate  # noqa: E402
from infoflow.validators.store import Store  # noqa: E402


def _validate(*args: str):
    return CliRunner().invoke(app, ["validate", *args, "--quiet", "--device", "cpu"])


# ---- identity ------------------------------------------------------------------------------

SPECS_OF = {
    "retrieval": SPECS / "retrieval" / "specific-position.json",
    "icl_markov": SPECS / "icl_markov" / "smoke-c3.json",
    "looped_kv": LOOPED_KV / "tiny-looped.json",
}


def _names(spec, tmp_path, **options) -> list[str]:
    """The jobs' names of ``spec``'s plan (without retrieval's pilot, which trains: 12 s of
    the test's 13 once the fixed step-time model let a design fit)."""
    planned = plan([spec], Options(out=tmp_path, pilot=False, **options))
    return [job.name for job in planned.jobs]


@pytest.mark.parametrize("kind", sorted(SPECS_OF))
def test_a_group_is_named_by_what_determines_its_models(kind, tmp_path) -> None:
    spec = SPECS_OF[kind]
    base = _names(spec, tmp_path)
    assert base and base == _names(spec, tmp_path)  # the same content, the same names
    assert set(base).isdisjoint(_names(spec, tmp_path, steps=7))
    changed = {
        "retrieval": "data.std=2.0",
        "icl_markov": "training.lr=0.002",
        "looped_kv": "model.intermediate_size=128",
    }[kind]
    assert set(base).isdisjoint(_names(spec, tmp_path, overrides=(changed,)))
    if kind != "looped_kv":  # one model, no seeds
        assert set(base).isdisjoint(_names(spec, tmp_path, seeds=5))  # not a default


def test_two_specs_of_one_file_name_are_two_experiments(tmp_path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for folder, lr in ((a, 0.003), (b, 0.001)):
        folder.mkdir()
        data = json.loads(SPECS_OF["icl_markov"].read_text())
        data["training"]["lr"] = lr
        (folder / "tiny.json").write_text(json.dumps(data))
    planned = plan([a / "tiny.json", b / "tiny.json", a / "tiny.json"], Options(out=tmp_path))
    names = [e.name for _, e in planned.experiments]  # the same file twice is one experiment
    assert len(set(names)) == 2 and all(name.startswith("tiny-") for name in names)
    assert len({job.name for job in planned.jobs}) == len(planned.jobs) == 2
    swapped = plan([b / "tiny.json", a / "tiny.json"], Options(out=tmp_path))
    assert [e.name for _, e in swapped.experiments] == names[::-1]  # order does not rename


def test_two_files_of_one_spec_in_one_folder_are_one_experiment(tmp_path, monkeypatch) -> None:
    """A copy of a spec beside it trained both alike (a review, 2026-12-06): the one whose path
    sorts first is planned, the other listed as skipped, naming it, whatever the order given
    or the order of the keys; a copy that an override makes differ is planned too."""
    text = SPECS_OF["icl_markov"].read_text()
    for name in ("tiny.json", "copy.json"):
        (tmp_path / name).write_text(text)
    files = [tmp_path / "tiny.json", tmp_path / "copy.json"]
    planned = plan(files, Options(out=tmp_path / "run"))
    assert [e.name for _, e in planned.experiments] == ["copy"]  # the path sorting first
    (skipped,) = planned.skipped
    assert skipped["spec"] == str(files[0]) and f"the same spec as {files[1]}" in skipped["reason"]
    swapped = plan(files[::-1], Options(out=tmp_path / "run"))  # the order renames nothing
    assert [e.name for _, e in swapped.experiments] == ["copy"]
    planned = CliRunner().invoke(app, ["plan", *map(str, files), "--device", "cpu"])
    assert planned.exit_code == 0 and planned.stdout.count("at scale smoke") == 1
    assert f"{files[0]}: the same spec as {files[1]} (one folder): planned once" in planned.stdout
    monkeypatch.chdir(tmp_path)  # however a path is typed, the same copy is kept (a review)
    typed = plan([Path("tiny.json"), files[1]], Options(out=tmp_path / "run"))
    assert [e.name for _, e in typed.experiments] == ["copy"]
    data = json.loads(text)
    (tmp_path / "copy.json").write_text(json.dumps(dict(reversed(data.items()))))
    assert len(plan(files, Options(out=tmp_path / "run")).experiments) == 1  # any key order
    data["training"]["lr"] *= 2
    (tmp_path / "copy.json").write_text(json.dumps(data))
    assert len(plan(files, Options(out=tmp_path / "run")).experiments) == 2


def test_a_copy_of_a_spec_that_cannot_be_validated_leads_with_the_reason(toy) -> None:
    """Nothing to run: the refusal's first reason is the spec's own, not the copy's note."""
    (toy / "a-copy.json").write_text((toy / "negative.json").read_text())
    with pytest.raises(SpecError) as refusal:
        plan([toy / "negative.json", toy / "a-copy.json"], Options(out=toy / "run"))
    first, second = (message for _, message in refusal.value.problems)
    assert "the same spec" not in first and "cannot be validated either" in second


def test_a_group_recorded_with_another_identity_is_refused(tmp_path) -> None:
    store = Store(tmp_path / "results.sqlite")
    store.add_group("g-1", "spec", {}, [{"label": "m"}], {"steps": 100, "lr": 0.1})
    store.add_group("g-1", "spec", {}, [{"label": "m"}], {"steps": 100, "lr": 0.1})  # again
    with pytest.raises(SpecError, match="steps: 100 -> 200"):
        store.add_group("g-1", "spec", {}, [{"label": "m"}], {"steps": 200, "lr": 0.1})
    with pytest.raises(SpecError, match="trained on cpu so far: resume it with --device cpu"):
        store.add_group("g-1", "spec", {}, [{"label": "m"}], {"steps": 100, "lr": 0.1}, "cuda")
    store.finish_group("g-1", 1.0)  # a finished group may be judged anywhere
    store.add_group("g-1", "spec", {}, [{"label": "m"}], {"steps": 100, "lr": 0.1}, "cuda")


def test_a_full_disk_is_told_as_a_full_disk(tmp_path) -> None:
    """Issue 29, item 7: not a 'damaged results database'."""
    store = Store(tmp_path / "results.sqlite")
    (pages,) = store.db.execute("PRAGMA page_count").fetchone()
    store.db.execute(f"PRAGMA max_page_count = {pages}")  # no room for one more page
    members = [{"label": f"m{i}", "notes": "x" * 2000} for i in range(200)]
    with pytest.raises(SpecError, match="the disk is full: free some space, then run again"):
        store.add_group("g-1", "spec", {}, members, {"steps": 100, "lr": 0.1})


def test_a_checkpoint_is_read_only_for_its_own_group(tmp_path) -> None:
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    data = torch.Generator()
    mine = Checkpoint(tmp_path / "g.pt", "abc")
    mine.save(model, optimizer, schedule, data.get_state(), 5, [("record_metrics", (1,))])
    assert mine.load(model, optimizer, schedule, data, "cpu") == (5, [("record_metrics", (1,))])
    assert not list(tmp_path.glob(".infoflow-*"))
    with pytest.raises(SpecError, match="written for another group"):
        Checkpoint(mine.path, "other").load_weights(model, "cpu")
    with pytest.raises(SpecError, match="damaged checkpoint"):
        Checkpoint(mine.path, "abc").load_weights(torch.nn.Linear(4, 2), "cpu")  # wrong shapes
    raw = mine.path.read_bytes()
    for damage in (raw[: len(raw) // 2], b"not a checkpoint", b""):
        mine.path.write_bytes(damage)
        with pytest.raises(SpecError, match="damaged checkpoint"):
            mine.load(model, optimizer, schedule, data, "cpu")
    mine.path.unlink()
    mine.path.mkdir()  # a directory where the file belongs
    with pytest.raises(SpecError, match="damaged checkpoint"):
        mine.load(model, optimizer, schedule, data, "cpu")


def test_an_allocation_that_fails_reading_a_checkpoint_is_not_called_damage(
    tmp_path, monkeypatch
) -> None:
    """An out-of-memory error while loading said "damaged checkpoint ...: delete it" of a good
    file (a review); it reaches the command line's out-of-memory message instead."""
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    mine = Checkpoint(tmp_path / "g.pt", "abc")
    mine.save(model, optimizer, schedule, torch.Generator().get_state(), 5, [])

    def fails(*args, **kwargs):
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried 9 GB")

    monkeypatch.setattr(model, "load_state_dict", fails)
    with pytest.raises(RuntimeError, match="can't allocate memory"):
        mine.load(model, optimizer, schedule, torch.Generator(), "cpu")
    with pytest.raises(RuntimeError, match="can't allocate memory"):
        mine.load_weights(model, "cpu")
    monkeypatch.setattr(torch, "load", lambda *a, **k: fails())
    with pytest.raises(RuntimeError, match="can't allocate memory"):
        mine.load_weights(torch.nn.Linear(3, 2), "cpu")


def test_a_resumed_groups_seconds_include_the_runs_before(tmp_path, monkeypatch) -> None:
    """The clock travels with the checkpoint: a group killed after 110 s of training and
    resumed reports its whole time, not only the resumed part's (on a clock the test sets,
    not the machine's)."""
    import time

    now = [1010.0]
    monkeypatch.setattr(time, "perf_counter", lambda: now[0])
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    first = Checkpoint(tmp_path / "g.pt", "abc", earlier=100.0, started=1000.0)
    first.save(model, optimizer, schedule, torch.Generator().get_state(), 5)  # at 110 s
    resumed = Checkpoint(tmp_path / "g.pt", "abc", started=2000.0)
    now[0] = 2005.0
    assert resumed.seconds() == 5.0  # a fresh clock, until it reads the file
    resumed.load(model, optimizer, schedule, torch.Generator(), "cpu")
    assert resumed.earlier == 110.0 and resumed.seconds() == 115.0


class _RunsCode:
    """Pickled, a call of ``os.system`` that would create ``marker``: what a checkpoint from
    elsewhere could hold."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _toy_checkpoint(folder):
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    mine = Checkpoint(folder / "g.pt", "abc")
    mine.save(model, optimizer, schedule, torch.Generator().get_state(), 5)
    return mine, model


def _flip_a_tensor_byte(path) -> None:
    """Flip a bit of the first tensor's bytes in the checkpoint at ``path`` (torch's zip
    records carry no checksum that torch.load checks)."""
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        (record,) = [r for r in archive.infolist() if r.filename.endswith("/data/0")]
    at = record.header_offset  # the local header: 30 bytes, then its name and extra field
    name, extra = struct.unpack("<HH", raw[at + 26 : at + 30])
    raw[at + 30 + name + extra] ^= 1
    path.write_bytes(raw)


def _refused_line(checkpoint, model) -> str:
    """The one-line message of loading ``checkpoint``, which must be refused without a
    warning."""
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        with pytest.raises(SpecError) as refusal:
            checkpoint.load_weights(model, "cpu")
    assert warned == []
    line = str(refusal.value)
    assert "\n" not in line and line.startswith(str(checkpoint.path))
    assert "weights_only" not in line and "torch.load" not in line
    return line


def test_a_checkpoint_whose_content_was_edited_is_refused(tmp_path) -> None:
    mine, model = _toy_checkpoint(tmp_path)
    state = torch.load(mine.path, weights_only=True)
    state["model"]["weight"][0, 0] += 1e-6  # a consistent file, one weight changed
    torch.save(state, mine.path)
    assert "does not match the digest written with it" in _refused_line(mine, model)
    mine, model = _toy_checkpoint(tmp_path)
    _flip_a_tensor_byte(mine.path)
    assert "does not match the digest written with it" in _refused_line(mine, model)
    del state["digest"]
    torch.save(state, mine.path)
    assert "carries no digest of its content" in _refused_line(mine, model)


def test_a_checkpoint_that_could_run_code_is_refused_in_our_words(tmp_path) -> None:
    mine, model = _toy_checkpoint(tmp_path)
    marker = tmp_path / "ran"
    torch.save({"model": _RunsCode(marker)}, mine.path)
    line = _refused_line(mine, model)
    assert "not a checkpoint infoflow wrote: it holds objects other than tensors" in line
    mine.path.write_bytes(pickle.dumps({"model": _RunsCode(marker)}, protocol=4))
    assert "damaged checkpoint (truncated, or not a file torch.save wrote)" in _refused_line(
        mine, model
    )
    assert not marker.exists()  # nothing in either file ran


def test_targets_the_validator_cannot_evaluate_are_refused_before_training() -> None:
    def spec(target: str, seq_len: int):
        architecture = {"layers": 1, "heads": 1}
        return infoflow.load_spec(
            {
                "kind": "retrieval",
                "target": target,
                "seq_len": seq_len,
                "input_dim": 4,
                "architecture": architecture,
            }
        )

    with pytest.raises(CannotValidate, match=r"reads x\[20\], beyond the T = 16"):
        plan_retrieval("p", spec("x[20] + x[1]", 32), SCALES["smoke"], None, Design((16,)))
    quadruple = "min(norm(x[a] + x[b] + x[c] + x[e]) for a in T for b in T for c in T for e in T)"
    with pytest.raises(CannotValidate, match=r"needs about 64.0 GiB per chunk of 256"):
        plan_retrieval("q", spec(quadruple, 64), SCALES["paper"])
    with pytest.raises(CannotValidate, match="cannot be evaluated at T = 16, d = 4"):
        plan_retrieval(
            "k",
            spec("kth_largest((dot(q, x[t]) for t in T), k=20)", 32),
            SCALES["smoke"],
            None,
            Design((16,)),
        )
    with pytest.raises(CannotValidate, match="not a finite number on 100% of sampled inputs"):
        plan_retrieval("e", spec("sqrt(-1 - sqnorm(x[1]))", 16), SCALES["smoke"])
    with pytest.raises(SpecError, match="runs over nothing at T = 16"):  # refused before
        spec("max(x[t][0] for t in T if t < 0)", 16)


# ---- the folder ----------------------------------------------------------------------------


def test_a_second_process_is_kept_out_of_a_running_folder(toy) -> None:
    out = toy / "run"
    with locked(out):
        line = refused("validate", str(toy / "right.json"), "--out", str(out), "--quiet")
    assert "in use by process" in line and "pick another --out" in line
    assert _validate(str(toy / "right.json"), "--out", str(out)).exit_code == 0  # released


def test_a_lock_held_by_another_process_names_it(toy, tmp_path) -> None:
    out = tmp_path / "held"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from infoflow.validators.folder import "
            "locked\nwith locked(Path(sys.argv[1])):\n    print('held', flush=True); "
            "time.sleep(600)",
            str(out),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        line = refused("validate", str(toy / "right.json"), "--out", str(out), "--quiet")
        assert f"in use by process {holder.pid} on " in line
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)
    assert _validate(str(toy / "right.json"), "--out", str(out)).exit_code == 0  # a dead holder


@pytest.mark.parametrize("name", [".lock", "report.md", "checkpoints/x.pt"])
@pytest.mark.parametrize("link", ["symbolic", "hard"])
def test_nothing_is_written_through_a_link_planted_in_the_run_folder(
    toy, tmp_path, name, link
) -> None:
    out = toy / "run"
    victim = tmp_path / "notes.txt"
    victim.write_text("a user's file\n")
    out.mkdir()
    (out / "results.sqlite").touch()  # a run's folder (else: refused as no run's)
    planted = out / name
    planted.parent.mkdir(parents=True, exist_ok=True)
    if link == "symbolic":
        planted.symlink_to(victim)
    else:
        planted.hardlink_to(victim)
    line = refused("validate", str(toy / "right.json"), "--out", str(out), "--quiet")
    assert name.split("/")[-1] in line and "writes through no link" in line
    assert victim.read_text() == "a user's file\n"  # untouched
    assert (out / "results.sqlite").stat().st_size == 0  # refused before anything was written
    if name != ".lock":  # nor the lock (it was left behind, a review)
        assert not (out / ".lock").exists()


def test_a_folder_no_run_wrote_is_refused_as_such_before_its_links_are_named(toy) -> None:
    """--out . in a clone of the repository told the user to remove a file under
    .git/objects (a hard link): a folder no run wrote is refused for that (a fresh-user
    audit, 2026-12-07)."""
    clone = toy / "clone"
    (clone / ".git" / "objects").mkdir(parents=True)
    (clone / "README.md").write_text("a clone\n")
    (clone / ".git" / "objects" / "b1").hardlink_to(clone / "README.md")
    line = refused("validate", str(toy / "right.json"), "--out", str(clone), "--quiet")
    assert "holds README.md but no results.sqlite: no validate run wrote it" in line
    assert ".git" not in line
    (clone / ".git" / "objects" / "b1").unlink()
    (clone / "results.sqlite").symlink_to(clone / "nowhere")  # a dangling link: named as one
    line = refused("validate", str(toy / "right.json"), "--out", str(clone), "--quiet")
    assert "results.sqlite" in line and "writes through no link" in line


def test_an_out_folder_that_is_a_link_is_refused(toy, tmp_path) -> None:
    """--out naming a link to a folder would write every file where it points (a review)."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (toy / "link").symlink_to(victim)
    line = refused("validate", str(toy / "right.json"), "--out", str(toy / "link"), "--quiet")
    assert "writes through no link" in line and not list(victim.iterdir())


def test_an_out_this_process_may_not_read_is_refused_in_our_words(toy, monkeypatch) -> None:
    """The library's validate raised PermissionError from an unreadable --out (a review,
    2026-12-06): a SpecError naming it, before planning. Root reads every folder, so the
    denial is simulated where the check reads (a stat under the folder)."""
    out = toy / "closed"
    out.mkdir()
    stat = Path.stat

    def denied(path: Path, **kwargs):
        if path != out and out in path.parents:
            raise PermissionError(13, "Permission denied", str(path))
        return stat(path, **kwargs)

    monkeypatch.setattr(Path, "stat", denied)
    options = Options(out=out)
    for folder in (out, out / "sub"):
        with pytest.raises(SpecError, match="cannot use it as --out \\(Permission denied"):
            validate([toy / "right.json"], replace(options, out=folder))
    assert list(out.iterdir()) == []


def test_a_database_another_program_wrote_is_not_adopted(toy) -> None:
    """A results.sqlite another program wrote was taken over on --resume, infoflow's tables
    created beside its own, even where one of them shared a name with infoflow's and was
    then refused (two reviews, 2026-12-06): refused before anything is written."""
    out = toy / "foreign"
    out.mkdir()
    for tables in (["notes (x)"], ["runs (id, name)", "invoices (n)"]):
        (out / DATABASE).unlink(missing_ok=True)
        with sqlite3.connect(out / DATABASE) as db:
            for table in tables:
                db.execute(f"CREATE TABLE {table}")
        line = refused("validate", str(toy / "right.json"), "--out", str(out), "--resume")
        assert "a database no infoflow run wrote (it holds the table" in line
        with sqlite3.connect(out / DATABASE) as db:
            found = [r[0] for r in db.execute("SELECT name FROM sqlite_master")]
        assert found == [table.split()[0] for table in tables]
    (out / DATABASE).unlink()
    with sqlite3.connect(out / DATABASE) as db:  # an early infoflow's table, since retired
        db.execute("CREATE TABLE curves (group_name, step)")
    line = refused("validate", str(toy / "right.json"), "--out", str(out), "--resume")
    assert "a results database of an older infoflow (its table curves is retired)" in line


def test_a_folder_no_run_wrote_is_refused_and_left_as_it_was(toy) -> None:
    """A new run into a folder of the user's would write over its report.md (a review,
    2026-12-06): refused, named, also on --resume; a folder holding only hidden files or empty
    folders is used, and an earlier run's resumed."""
    out = toy / "notes"
    out.mkdir()
    (out / "report.md").write_text("my notes\n")
    line = refused("validate", str(toy / "right.json"), "--out", str(out), "--quiet")
    assert "holds report.md but no results.sqlite" in line and "pick a new or empty" in line
    assert sorted(p.name for p in out.iterdir()) == ["report.md"]  # not even a lock
    assert (out / "report.md").read_text() == "my notes\n"
    resumed = refused("validate", str(toy / "right.json"), "--out", str(out), "--resume")
    assert "holds report.md" in resumed  # its one line: no "starting a new one" before it
    (out / "report.md").unlink()
    for kept in (".gitkeep", "empty/sub", "sub/.gitkeep", ".notes/mine.md"):  # a run writes
        (out / kept).parent.mkdir(parents=True, exist_ok=True)  # over none of them (a review)
        (out / kept).mkdir() if kept == "empty/sub" else (out / kept).write_text("")
    assert _validate(str(toy / "right.json"), "--out", str(out)).exit_code == 0
    assert _validate(str(toy / "right.json"), "--out", str(out), "--resume").exit_code == 0


@pytest.mark.parametrize("under", ["", "x"])
def test_a_file_given_as_out_is_refused_in_one_line(toy, under) -> None:
    """A file, or a path under one, is exit 2 in one line, also with --resume (which said
    "starting a new one" first: a review)."""
    (toy / "file").write_text("x\n")
    out = toy / "file" / under if under else toy / "file"
    for more in ([], ["--resume"]):
        line = refused("validate", str(toy / "right.json"), "--out", str(out), *more)
        assert f"cannot use it as --out ({toy / 'file'} is a file)" in line


def test_a_resume_that_trains_nothing_keeps_the_runs_end(toy, monkeypatch) -> None:
    """Re-reporting a finished run later does not stretch it to the hour of the re-report
    (report.json's finished moved to the resume's time: an audit); the database logs each
    re-report's start, and no end (it trained nothing)."""
    import infoflow.validators.run as run

    spec, out = str(toy / "right.json"), toy / "run"
    for day in ("01", "02", "03"):  # a run, then two re-reports (the second moved it: a review)
        monkeypatch.setattr(run, "_now", lambda day=day: f"2026-01-{day}T10:00:00+00:00")
        more = ["--resume"] if day != "01" else []
        assert _validate(spec, "--out", str(out), *more).exit_code == 0
        report = json.loads((out / "report.json").read_text())
        assert (report["started"], report["finished"]) == ("2026-01-01T10:00:00+00:00",) * 2
    logged = sqlite3.connect(out / "results.sqlite").execute("SELECT started, finished FROM runs")
    ends = [(started[:10], finished and finished[:10]) for started, finished in logged]
    assert ends == [("2026-01-01", "2026-01-01"), ("2026-01-02", None), ("2026-01-03", None)]


def test_a_folder_named_like_a_temporary_file_is_left_alone(toy) -> None:
    spec, out = str(toy / "right.json"), toy / "run"
    assert _validate(spec, "--out", str(out)).exit_code == 0
    (out / ".infoflow-notes").mkdir()
    (out / ".infoflow-notes" / "mine.txt").write_text("kept\n")
    assert _validate(spec, "--out", str(out), "--resume").exit_code == 0
    assert (out / ".infoflow-notes" / "mine.txt").read_text() == "kept\n"


def test_edited_measurements_are_refused_on_resume(toy) -> None:
    spec, out = str(toy / "right.json"), toy / "run"
    assert _validate(spec, "--out", str(out)).exit_code == 0
    database = sqlite3.connect(out / "results.sqlite")
    assert _validate(spec, "--out", str(out), "--resume").exit_code == 0  # untouched: fine
    (row, metric) = database.execute(
        "SELECT rowid, metric FROM metrics WHERE member = 0 AND value IS NOT NULL LIMIT 1"
    ).fetchone()
    edit = "UPDATE metrics SET value = ? WHERE rowid = ?"
    with database:
        database.execute(edit, (1e-6, row))
    line = refused("validate", spec, "--out", str(out), "--resume")
    assert "do not match the digest written when it finished" in line and "group " in line
    with database:
        database.execute(edit, ("n/a", row))  # a numeric string would be stored as a REAL
    line = refused("validate", spec, "--out", str(out), "--resume")
    assert f"a stored {metric} is not a number" in line


def test_measurements_without_their_groups_record_are_refused_not_dropped(toy) -> None:
    """A finished group whose record was deleted: resuming would train it again from its
    checkpoint, at the cap already, and judge it on nothing; it is refused instead."""
    spec, out = str(toy / "right.json"), toy / "run"
    assert _validate(spec, "--out", str(out)).exit_code == 0
    database = sqlite3.connect(out / "results.sqlite")
    (name,) = database.execute("SELECT name FROM groups LIMIT 1").fetchone()
    stored = database.execute("SELECT COUNT(*) FROM metrics WHERE group_name = ?", (name,))
    (before,) = stored.fetchone()
    with database:
        database.execute("DELETE FROM groups WHERE name = ?", (name,))
    line = refused("validate", spec, "--out", str(out), "--resume")
    assert f"group {name}" in line and "stored without its record" in line
    count = database.execute("SELECT COUNT(*) FROM metrics WHERE group_name = ?", (name,))
    assert before > 0 and count.fetchone() == (before,)  # nothing was deleted


def test_edited_members_are_refused_and_older_digests_still_read(toy) -> None:
    from infoflow.validators.store_digest import group_digest

    spec, out = str(toy / "right.json"), toy / "run"
    assert _validate(spec, "--out", str(out)).exit_code == 0
    database = sqlite3.connect(out / "results.sqlite")
    (name, seconds) = database.execute("SELECT name, seconds FROM groups LIMIT 1").fetchone()
    with database:  # a digest of version 1 (metrics and seconds alone) is checked as such
        v1 = group_digest(database, name, seconds, "")
        database.execute("UPDATE groups SET digest = ? WHERE name = ?", (v1, name))
    assert _validate(spec, "--out", str(out), "--resume").exit_code == 0
    with database:
        v2 = group_digest(database, name, seconds)
        database.execute("UPDATE groups SET digest = ? WHERE name = ?", (v2, name))
        database.execute("UPDATE members SET member = NULL WHERE member = 0")
    line = refused("validate", spec, "--out", str(out), "--resume")
    assert "do not match the digest written when it finished" in line


def test_a_database_from_before_digests_gains_them(toy) -> None:
    spec, out = str(toy / "right.json"), toy / "run"
    assert _validate(spec, "--out", str(out)).exit_code == 0
    database = sqlite3.connect(out / "results.sqlite")
    with database:
        database.execute("ALTER TABLE groups DROP COLUMN digest")
    database.close()
    assert _validate(spec, "--out", str(out), "--resume").exit_code == 0
    digests = sqlite3.connect(out / "results.sqlite").execute("SELECT digest FROM groups")
    assert all(d.startswith("v2:") and len(d) == 67 for (d,) in digests)


def test_a_damaged_folder_is_refused_in_one_line(toy) -> None:
    spec = str(toy / "right.json")
    out = toy / "run"
    assert _validate(spec, "--out", str(out)).exit_code == 0
    database = out / "results.sqlite"
    whole = database.read_bytes()
    database.write_bytes(whole[: len(whole) // 2])  # truncated
    assert "damaged results database" in refused("validate", spec, "--out", str(out), "--resume")
    database.write_bytes(b"garbage " * 100)
    assert "damaged results database" in refused("validate", spec, "--out", str(out), "--resume")
    database.unlink()
    database.mkdir()  # a directory where the file belongs
    assert "damaged results database" in refused("validate", spec, "--out", str(out), "--resume")
    database.rmdir()
    old = sqlite3.connect(database)
    old.execute(
        "CREATE TABLE groups (name TEXT PRIMARY KEY, spec TEXT, settings TEXT, "
        "done INTEGER DEFAULT 0, seconds REAL)"
    )
    old.commit()
    old.close()
    line = refused("validate", spec, "--out", str(out), "--resume")
    assert "not a results database of this infoflow (table groups lacks device, identity)" in line
    file = toy / "a-file"
    file.write_text("")
    assert "cannot use it as --out" in refused("validate", spec, "--out", str(file))


def test_resume_after_a_change_trains_anew_and_says_what_changed(toy) -> None:
    out = toy / "run"
    spec = toy / "right.json"
    assert _validate(str(spec), "--out", str(out)).exit_code == 0
    (out / "checkpoints" / ".infoflow-123-abcd.tmp.pt").write_text("left by a killed run")
    (out / ".mine.tmp").write_text("a user's file")
    spec.write_text(json.dumps({"kind": "toy", "n": 5}))
    assert _validate(str(spec), "--out", str(out), "--resume").exit_code == 0
    report = json.loads((out / "report.json").read_text())
    assert report["specs"][0]["claims"][0]["measured"] == 10  # trained for n = 5
    (old,) = report["superseded"]
    assert old["differs"] == ["n: 3 -> 5"] and old["replaced_by"] != old["group"]
    assert "Trained earlier for other settings" in (out / "report.md").read_text()
    assert not list((out / "checkpoints").glob(".infoflow-*"))
    assert (out / ".mine.tmp").exists()  # not infoflow's: left alone


def test_a_renamed_spec_reuses_the_models_trained_for_it(toy, monkeypatch) -> None:
    """The same identity under another experiment name (a spec file renamed, or two specs of
    one name) is the same models: the group takes the finished one's measurements and
    checkpoint, trains nothing, and the old group is not listed unused (it was trained again,
    and not listed, until a review). Without the old checkpoint it trains anew."""
    import toy_family

    out = toy / "run"
    assert _validate(str(toy / "right.json"), "--out", str(out)).exit_code == 0
    (first,) = Store(out / DATABASE).identities()
    (out / "checkpoints" / f"{first}.pt").write_bytes(b"the toy's weights")  # it writes none
    trained = []
    monkeypatch.setattr(toy_family.VALIDATOR, "train", lambda job, context: trained.append(job))
    (toy / "renamed.json").write_text((toy / "right.json").read_text())
    result = _validate(str(toy / "renamed.json"), "--out", str(out), "--resume")
    assert result.exit_code == 0, result.output
    assert trained == []
    report = json.loads((out / "report.json").read_text())
    assert report["superseded"] == []
    (claim,) = report["specs"][0]["claims"]
    assert claim["measured"] == 6 and claim["verdict"] == "confirmed"
    store = Store(out / DATABASE)
    (second,) = set(store.identities()) - {first}
    assert store.group_done(second) and (out / "checkpoints" / f"{second}.pt").is_file()
    store.verify()  # the adopted group's digest holds
    for path in (out / "checkpoints").glob("*.pt"):
        path.unlink()
    (toy / "again.json").write_text((toy / "right.json").read_text())
    _validate(str(toy / "again.json"), "--out", str(out), "--resume")
    assert [job.experiment for job in trained] == ["again"]  # nothing to adopt: trained


def test_groups_of_a_spec_this_run_trains_nothing_of_are_listed_unused(tmp_path) -> None:
    from types import SimpleNamespace

    from infoflow.validators.reuse import NOTHING_TRAINED, superseded
    from infoflow.validators.run import Plan

    store = Store(tmp_path / "results.sqlite")
    store.add_group("control-g1", "control", {}, [{"label": "m"}], {"steps": 100})
    store.add_group("other-g1", "other", {}, [{"label": "m"}], {"steps": 100})
    untrained = SimpleNamespace(name="control", jobs=[])  # e.g. cuda only, run on a CPU
    (old,) = superseded(Plan(experiments=[(None, untrained)]), store)  # not "other"'s group
    assert old == {"group": "control-g1", "replaced_by": None, "differs": [NOTHING_TRAINED]}


@pytest.mark.slow
def test_a_damaged_checkpoint_of_a_real_run_is_refused(tmp_path) -> None:
    data = json.loads(SPECS_OF["icl_markov"].read_text())
    spec = tmp_path / "tiny.json"
    spec.write_text(
        json.dumps(
            {
                **data,
                "states": 3,
                "context_len": 16,
                "model": {"layers": 1, "d_model": 16, "heads": 2, "mlp_width": 32},
                "training": {"steps": 12, "batch_size": 8, "lr": 0.003},
                "sweep": {"chains": [1, 4]},
            }
        )
    )
    out = tmp_path / "run"
    args = [str(spec), "--quiet", "--device", "cpu", "--out", str(out), "--no-plots"]
    assert run_cli("validate", *args).returncode == 0
    resumed = run_cli("validate", *args, "--resume", "--steps", "8")  # another budget
    assert resumed.returncode == 0, resumed.stderr
    (old,) = json.loads((out / "report.json").read_text())["superseded"]
    assert "setting.training.steps: 12 -> 8" in old["differs"]
    (checkpoint,) = [p for p in (out / "checkpoints").glob("*.pt") if old["group"] not in p.name]
    written = checkpoint.read_bytes()
    marker = tmp_path / "ran"
    for damage, told in (
        (lambda: checkpoint.write_bytes(written[:1000]), "damaged checkpoint (truncated"),
        (lambda: _flip_a_tensor_byte(checkpoint), "does not match the digest written with it"),
        (lambda: torch.save({"model": _RunsCode(marker)}, checkpoint), "not a checkpoint infoflow"),
        (
            checkpoint.unlink,
            "missing: this finished group's weights were deleted",
        ),  # not "delete it"
    ):
        checkpoint.write_bytes(written)
        damage()
        line = refused("validate", *args, "--resume", "--steps", "8")  # in-process: 2 s less
        assert line.startswith(f"error: {checkpoint}: ") and told in line
        assert "weights_only" not in line
    assert not marker.exists()


def test_a_member_reads_its_own_last_value(tmp_path) -> None:
    """The store's measurements are metrics: each member's last value of one, in member
    order, None for a member that recorded none (never another member's)."""
    store = Store(tmp_path / "results.sqlite")
    rows = [{"label": label} for label in ("a", "b", "c")]
    store.add_group("g-1", "g", {}, rows, {"code": 1})
    store.record_metrics("g-1", 10, [{"eval:nmse": 0.5}, {"eval:nmse": 0.4}, {}])
    store.record_metrics("g-1", 20, [{"eval:nmse": 0.3}, {}, {}])
    store.record_metrics("g-1", 30, [{"train:loss": 9.0}, {}, {}])
    assert store.last_values("g-1", "eval:nmse") == [0.3, 0.4, None]


def test_claims_that_share_an_id_are_kept_apart() -> None:
    from infoflow.validators.claims import Claim, Section

    same = [Claim.judged("k1_star", f"claim {i}", 1, 1, "equal", True) for i in range(3)]
    same = [claim.of_kind("reconstruction") for claim in same]
    ids = [c.id for c in Section("icl_markov", "spec", {}, tuple(same)).claims]
    assert ids == ["k1_star", "k1_star#2", "k1_star#3"]


def test_a_claim_without_a_kind_is_refused_and_kinds_are_tallied_apart() -> None:
    from infoflow.validators.claims import Claim, Section, labelled, tally

    claims = [
        Claim.judged("k1_star", "a", 1, 1, "equal", True),
        Claim.judged("store_bytes:x", "b", 1, 2, "equal", False),
        Claim.undecided("p/final_phase:K=3", "c", 1, None, "equal", "not measured"),
    ]
    with pytest.raises(ValueError, match="has no kind"):
        Section("icl_markov", "spec", {}, tuple(claims))
    kinds = {"k1_star": "reconstruction", "store_bytes": "engineering", "final_phase": "paper"}
    section = Section("icl_markov", "spec", {}, labelled(claims, kinds))
    assert [c.kind for c in section.claims] == ["reconstruction", "engineering", "paper"]
    counts = tally([c.to_json() for c in section.claims])
    assert list(counts) == ["paper", "reconstruction", "engineering"]  # the paper's first
    assert counts["engineering"] == {"confirmed": 0, "refuted": 1, "inconclusive": 0}
    with pytest.raises(ValueError, match="not one of"):
        claims[0].of_kind("folklore")


def test_a_plot_that_fails_is_a_warning_and_the_run_still_ends(tmp_path, capsys) -> None:
    """The report is written before the plots; a plot that raises (here on a section without
    its measurements) is named on stderr and never ends a finished run with a traceback."""
    from infoflow.validators.run import _plot

    _plot("icl_markov", tmp_path, [{"name": "broken", "groups": [{"name": "g"}]}])
    assert "warning: the icl_markov plots were not drawn" in capsys.readouterr().err


def test_a_stored_list_and_a_live_tuple_are_no_difference() -> None:
    """A group's identity read back from the database has lists where the live one has
    tuples (heads (1,)): superseded listed a 3 kB "members: [...] -> [...]" that was none."""
    from infoflow.validators.identity import differences

    old = {"members": [{"heads": [1], "width": 8}], "steps": 60}
    new = {"members": [{"heads": (1,), "width": 8}], "steps": 80}
    assert differences(old, new) == ["steps: 60 -> 80"]
    assert differences({"a": [1, 2]}, {"a": (1, 3)}) == ["a[1]: 2 -> 3"]
    assert differences({"a": [1]}, {"a": (1, 2)}) == ["a: [1] -> [1, 2]"]


@pytest.mark.slow
@pytest.mark.parametrize(("stop", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_run_says_how_to_continue(tmp_path, stop, code) -> None:
    """--resume into a folder with no run says it starts one; Ctrl-C (SIGINT) during
    training exits 130 with the command that continues it, no traceback, and SIGTERM 143
    with the same line (it said nothing: an audit, 2026-12-07); the resumed run then
    finishes. On Ray: tests/shared/test_ray_executor.py (one Ray at a time)."""
    interrupt_and_resume(tmp_path / "run", stop, code)


def test_the_interruption_handler_leaves_sigterm_alone_off_the_main_thread(tmp_path) -> None:
    """signal.signal raises off the main thread (a CliRunner in a thread): there SIGTERM is
    left as it is and Ctrl-C still says how to go on; on the main thread the handler is put
    back after the run (a review, 2026-12-07)."""
    import threading

    import typer

    from infoflow.cli.interrupt import interrupted_says_so

    before = signal.getsignal(signal.SIGTERM)
    with interrupted_says_so(tmp_path):
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before
    caught = []

    def run() -> None:
        try:
            with interrupted_says_so(tmp_path):
                raise KeyboardInterrupt
        except typer.Exit as exc:
            caught.append(exc.exit_code)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert caught == [130]
