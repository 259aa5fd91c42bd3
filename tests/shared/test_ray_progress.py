"""Progress from Ray tasks: each task notes its step in the checkpoints folder and the
driver passes the notes on to the display while the tasks train (it heard a group only
when the group finished, so the ETA counted a whole group as one step)."""

from __future__ import annotations

import json
import sys
import types

import pytest

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
    assert read() == {"step": 1, "total": 10, "loss": None, "speed": "5 tok/s"}
    now[0] += 1.0
    note("g", 2, 10, 0.7, "6 tok/s")  # too soon: not written, its loss kept
    assert read()["step"] == 1
    now[0] += executor.NOTE_EVERY
    note("g", 3, 10, None, "7 tok/s")
    assert read() == {"step": 3, "total": 10, "loss": 0.7, "speed": "7 tok/s"}
    note("g", 10, 10, 0.5, "8 tok/s")  # the last step: written at once
    assert read() == {"step": 10, "total": 10, "loss": 0.5, "speed": "8 tok/s"}
    assert [p.name for p in tmp_path.iterdir()] == ["g.progress"]  # no part file left


def test_the_driver_passes_on_changed_notes_and_skips_unreadable_ones(tmp_path) -> None:
    heard, seen = Heard(), {}
    jobs = [_job("a"), _job("b"), _job("c")]
    (tmp_path / "a.progress").write_text(
        json.dumps({"step": 4, "total": 10, "loss": 0.5, "speed": ""})
    )
    (tmp_path / "b.progress").write_text('{"step": 2, "tot')  # half written
    executor.report_notes(jobs, tmp_path, heard, seen)  # c: no note yet
    executor.report_notes(jobs, tmp_path, heard, seen)  # nothing new
    assert heard.calls == [("a", 4, 10, 0.5, "")]
    (tmp_path / "b.progress").write_text(
        json.dumps({"step": 2, "total": 10, "loss": None, "speed": "s"})
    )
    executor.report_notes(jobs, tmp_path, heard, seen)
    assert heard.calls[1:] == [("b", 2, 10, None, "s")]


def test_train_on_ray_reports_steps_while_its_tasks_train(tmp_path, monkeypatch) -> None:
    """A stand-in for Ray whose task notes step 4 of 10 before it finishes: the display hears
    step 4 and then the group's end; a note an earlier run left is not reported."""
    (tmp_path / "g.progress").write_text(
        json.dumps({"step": 9, "total": 10, "loss": 1, "speed": ""})
    )
    waits = []

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
            note = executor.ProgressNote(tmp_path / "g.progress")
            note("g", 4, 10, 0.25, "9 tok/s")
            return [], refs
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
    assert heard.calls == [("g", 4, 10, 0.25, "9 tok/s"), ("g", 10, 10, None, "")]
