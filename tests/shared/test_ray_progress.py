"""Progress from Ray tasks: each task notes its step in the checkpoints folder and the
driver passes the notes on to the display while the tasks train (it heard a group only
when the group finished, so the ETA counted a whole group as one step)."""

from __future__ import annotations

import io
import json
import sys
import types

import pytest
from rich.console import Console

pytest.importorskip("torch")

import torch

import infoflow.validators.executor as executor
from infoflow.validators.protocol import Context, Job
from infoflow.validators.store import Recorder


class Heard:
    """A progress callback that keeps what it heard (not a list: an empty one is false)."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def __call__(self, group, step, total, loss=None, speed="") -> None:
        self.calls.append((group, step, total, loss, speed))

    def phase(self, name, detail="", total=0) -> None:
        self.calls.append(("phase", name))

    def finish(self, group, steps) -> None:
        self.calls.append(("finish", group, steps))


def _job(name: str, steps: int = 10) -> Job:
    return Job("icl_markov", "x", types.SimpleNamespace(name=name), steps)


def test_a_note_is_written_at_the_first_step_then_at_most_every_few_seconds(
    tmp_path, monkeypatch
) -> None:
    now = [100.0]
    monkeypatch.setattr(executor.time, "monotonic", lambda: now[0])
    note = executor.ProgressNote(tmp_path / "g.progress")

    def read() -> dict:
        return json.loads((tmp_path / "g.progress").read_text())

    note("g", 1, 10, None, "5 tok/s")
    assert read() == {"first": 1, "step": 1, "total": 10, "loss": None, "speed": "5 tok/s"}
    now[0] += 1.0
    note("g", 2, 10, 0.7, "6 tok/s")  # too soon: not written, its loss kept
    assert read()["step"] == 1
    now[0] += executor.NOTE_EVERY
    note("g", 3, 10, None, "7 tok/s")
    assert read() == {"first": 1, "step": 3, "total": 10, "loss": 0.7, "speed": "7 tok/s"}
    note("g", 10, 10, 0.5, "8 tok/s")  # the last step: written at once
    assert read() == {"first": 1, "step": 10, "total": 10, "loss": 0.5, "speed": "8 tok/s"}
    assert [p.name for p in tmp_path.iterdir()] == ["g.progress"]  # no part file left


def test_a_group_that_stops_early_notes_its_last_step_at_the_end(tmp_path) -> None:
    """A retrieval group whose members all stopped ends below its total: the task flushes
    its last step (with its loss) when training returns; a note that cannot be written (a
    folder gone) is skipped, never an error in the task."""
    note = executor.ProgressNote(tmp_path / "g.progress")
    note("g", 801, 1000, None, "s")
    note("g", 950, 1000, 0.00105, "s")  # within the interval: held back
    assert json.loads((tmp_path / "g.progress").read_text())["step"] == 801
    note.flush()
    assert json.loads((tmp_path / "g.progress").read_text())["loss"] == 0.00105
    gone = executor.ProgressNote(tmp_path / "missing" / "g.progress")
    gone("g", 1, 10, None, "s")
    gone.flush()
    assert not (tmp_path / "missing").exists()


def _note(folder, name: str, **note) -> None:
    (folder / f"{name}.progress").write_text(json.dumps({"loss": None, "speed": "", **note}))


def test_the_driver_passes_on_changed_notes_and_skips_unreadable_ones(tmp_path) -> None:
    heard, seen = Heard(), {}
    jobs = [_job("a"), _job("b"), _job("c")]
    _note(tmp_path, "a", first=4, step=4, total=10, loss=0.5)
    (tmp_path / "b.progress").write_text('{"first": 1, "step": 2, "tot')  # half written
    executor.report_notes(jobs, tmp_path, heard, seen)  # c: no note yet
    executor.report_notes(jobs, tmp_path, heard, seen)  # nothing new
    assert heard.calls == [("a", 4, 10, 0.5, "")]
    _note(tmp_path, "b", first=1, step=2, total=10, speed="s")
    executor.report_notes(jobs, tmp_path, heard, seen)
    assert heard.calls[1:] == [("b", 1, 10, None, "s"), ("b", 2, 10, None, "s")]


def test_steps_trained_between_two_reads_count_toward_the_rate(tmp_path, monkeypatch) -> None:
    """A task first heard at step 201 (its notes of steps 1 to 200 overwritten before a
    read) and a retry from step 150's checkpoint: the display's steps taken are every step
    trained, its steps done where the group is."""
    import infoflow.cli.progress as shown
    from infoflow.cli.progress import progress

    now = [0.0]
    monkeypatch.setattr(shown.time, "monotonic", lambda: now[0])
    seen: dict = {}
    with progress(False, Console(file=io.StringIO())) as display:
        display.phase("training", total=1000)
        _note(tmp_path, "g", first=1, step=201, total=1000)
        executor.report_notes([_job("g")], tmp_path, display, seen)
        assert (display.state.done, display.state.timed) == (201, 201)
        _note(tmp_path, "g", first=151, step=180, total=1000)  # the retry
        executor.report_notes([_job("g")], tmp_path, display, seen)
        assert (display.state.done, display.state.timed) == (180, 231)


def test_train_on_ray_reports_steps_while_its_tasks_train(tmp_path, monkeypatch) -> None:
    """A stand-in for Ray whose task notes step 4 of 10, then finishes between two reads: the
    display hears steps 1 and 4, the last note and the group's end; a note an earlier run
    left is not reported."""
    _note(tmp_path, "g", first=1, step=9, total=10, loss=1.0)
    note, waits = executor.ProgressNote(tmp_path / "g.progress"), []

    class Remote:
        def options(self, **resources):
            return self

        def remote(self, job, device, folder, compile):
            return "ref"

    def wait(refs, num_returns, timeout):
        waits.append(timeout)
        if len(waits) == 1:  # the task waits for a worker: no note of its own yet
            return [], refs
        if len(waits) == 2:  # the task is training: it has noted step 4
            note("g", 1, 10, None, "9 tok/s")
            note("g", 4, 10, 0.25, "9 tok/s")
            note.flush()
            return [], refs
        note("g", 10, 10, 0.125, "8 tok/s")  # it finished between two reads
        return refs, []

    fake = types.SimpleNamespace(
        init=lambda **kwargs: None,
        remote=lambda **kwargs: lambda function: Remote(),
        wait=wait,
        get=lambda reference: Recorder().rows,
        shutdown=lambda: None,
    )
    monkeypatch.setitem(sys.modules, "ray", fake)
    heard = Heard()
    context = Context(torch.device("cpu"), Recorder(), tmp_path, heard)
    executor.train_on_ray([_job("g")], context, None, 0)
    assert waits == [executor.NOTE_EVERY] * 3
    assert heard.calls == [
        ("g", 1, 10, None, "9 tok/s"),
        ("g", 4, 10, 0.25, "9 tok/s"),
        ("g", 10, 10, 0.125, "8 tok/s"),  # its last note, read before the task is popped
        ("finish", "g", 10),
    ]
