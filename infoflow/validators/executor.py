"""Where the jobs train: in this process (``local``, the default) or as Ray tasks (``ray``),
one task per job, whatever its family.

A Ray task trains its job with a :class:`~infoflow.validators.store.Recorder` in place of
the database and returns what it recorded; checkpoints go to the run's ``checkpoints``
folder, which every worker must reach (the machine's disk for a local cluster, a shared
file system on a real one). A worker that dies is retried by Ray (``max_retries``); the
retry resumes from the job's last checkpoint, whose records it restores, so it returns what
an uninterrupted run would. The driver alone writes the database: it replays the returned
records, so the judge stage reads the same store whichever executor trained. A task notes
its progress in the same folder; the driver reads the notes every ``NOTE_EVERY`` seconds for
the display.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import signal
import socket
import threading
import time
from pathlib import Path

import torch

from infoflow.core.errors import SpecError, install_hint
from infoflow.core.files import TEMPORARY
from infoflow.core.text import one_line
from infoflow.families import family
from infoflow.validators.ensemble import deterministic
from infoflow.validators.protocol import Context, Job, Progress
from infoflow.validators.store import Recorder


def train_local(jobs: list[Job], context: Context) -> None:
    """Train ``jobs`` one after another in this process (a job that stops early counts
    its remaining steps as done, not toward the rate)."""
    for job in jobs:
        train_job(job, context)
        if context.progress:
            context.progress.finish(job.name, job.steps)


def train_job(job: Job, context: Context) -> None:
    """Train ``job`` with its family's validator, deterministically on a CPU (see
    :func:`~infoflow.validators.ensemble.deterministic`)."""
    validator = family(job.kind).load_validator()
    with deterministic(context.device):
        validator.train(job, context)


#: Seconds between two progress notes of a Ray task, and between two reads of the driver.
NOTE_EVERY = 2.0


class ProgressNote:
    """A Ray task's progress callback: the first step this attempt trained, the last step,
    the total, the last mean loss and the speed, as JSON in ``checkpoints/JOB.progress``
    (replaced whole), at most every ``NOTE_EVERY`` seconds, at the group's last step and at
    :meth:`flush`; the driver reads it (:func:`report_notes`). A note that cannot be written
    is skipped: the display's side channel never stops a task."""

    def __init__(self, path: Path) -> None:
        self.path, self.written, self.note = path, -math.inf, None

    def __call__(
        self, group: str, step: int, total: int, loss: float | None = None, speed: str = ""
    ) -> None:
        last = self.note or {"first": step, "loss": None}
        self.note = {
            "first": last["first"],
            "step": step,
            "total": total,
            "loss": last["loss"] if loss is None else loss,
            "speed": speed,
        }
        if step >= total or time.monotonic() - self.written >= NOTE_EVERY:
            self.flush()

    def flush(self) -> None:
        """Write the last step heard now (a group that stops early ends below its total)."""
        if self.note is None:
            return
        self.written = time.monotonic()
        part = self.path.with_name(f"{TEMPORARY}{self.path.name}")  # a killed writer's: removed
        with contextlib.suppress(OSError):
            part.write_text(json.dumps(self.note))
            os.replace(part, self.path)

    def phase(self, name: str, detail: str = "", total: int = 0) -> None:
        """A task has no phases of its own."""

    def finish(self, group: str, steps: int) -> None:
        """A group's end is the driver's to report."""


def report_notes(jobs: list[Job], folder: Path, progress: Progress, heard: dict) -> None:
    """Pass on to ``progress`` each job's progress note that changed since the last read
    (``heard``: job name -> the attempt's first step and the step last passed on); an
    attempt heard for the first time starts at its first step, so the steps it trained
    between two reads count toward the rate. A note half written is read next time."""
    for job in jobs:
        try:
            note = json.loads((folder / f"{job.name}.progress").read_text())
            first, step, total = note["first"], note["step"], note["total"]
            loss, speed = note["loss"], note["speed"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        before = heard.get(job.name, (None, None))
        if before == (first, step):
            continue
        heard[job.name] = (first, step)
        if before[0] != first and first != step:  # a new attempt (a task, or its retry)
            progress(job.name, first, total, None, speed)
        progress(job.name, step, total, loss, speed)


def train_one(job: Job, device: str, checkpoints: str, compile: bool = False) -> list:
    """The Ray task: train ``job`` to the end, away from the database, and return its
    records. The worker's process id goes to ``checkpoints/JOB.pid`` (to find, or kill, the
    process that trains a job), its progress to ``checkpoints/JOB.progress``."""
    folder = Path(checkpoints)
    (folder / f"{job.name}.pid").write_text(str(os.getpid()))
    recorder = Recorder()
    note = ProgressNote(folder / f"{job.name}.progress")
    train_job(job, Context(torch.device(device), recorder, folder, note, compile=compile))
    note.flush()
    return recorder.rows


def reachable(address: str | None, seconds: float = 10.0) -> None:
    """A SpecError naming ``--address`` when nothing listens at its ``host:port`` (``ray://``
    too): Ray itself retries an unreachable cluster for minutes (a review's run waited 437 s
    at 127.0.0.1:1). Ray's own words (``auto``, ``local``) are left to Ray."""
    found = re.fullmatch(r"(?:ray://)?\[?([^\]\s]+?)\]?:(\d+)", address or "")
    if found is None:
        return
    try:
        socket.create_connection((found[1], int(found[2])), timeout=seconds).close()
    except (OSError, ValueError) as error:
        why = f"nothing answers at {found[1]}:{found[2]} ({one_line(error, 120)})"
        message = f"cannot reach the Ray cluster at {address}: {why}"
        raise SpecError("--address", [(None, message)]) from None


def train_on_ray(
    jobs: list[Job], context: Context, address: str | None, gpus_per_group: float
) -> None:
    """Train ``jobs`` as Ray tasks and replay what they recorded into ``context.store``.
    Without ``address``, Ray's own rule: the cluster ``RAY_ADDRESS`` names, else the last
    one ``ray start`` started on this machine, else a new local one."""
    try:
        import ray
    except ModuleNotFoundError:
        hint = install_hint("ray", "ray")
        raise SpecError("--executor ray", [(None, f"Ray is not installed: {hint}")]) from None
    if not jobs:
        return
    reachable(address)
    previous = signal.getsignal(signal.SIGTERM)  # ray.init puts sys.exit there
    try:
        ray.init(  # Ray's warnings only on stderr, not its INFO lines among validate's
            address=address,
            ignore_reinit_error=True,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.WARNING,
        )
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as error:
        where = f"the Ray cluster at {address}" if address else "a Ray cluster"
        if not address and os.environ.get("RAY_ADDRESS"):
            where = f"the Ray cluster that RAY_ADDRESS names ({os.environ['RAY_ADDRESS']})"
        reason = one_line(error, 200)
        raise SpecError("--address", [(None, f"cannot reach {where}: {reason}")]) from None
    if previous is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, previous)  # validate's: the line that says how to go on
    resources = {"num_gpus": gpus_per_group} if context.device.type == "cuda" else {"num_cpus": 1}
    remote = ray.remote(max_retries=3)(train_one).options(**resources)
    for job in jobs:  # an earlier run's notes would report steps this one has not trained
        (context.checkpoints / f"{job.name}.progress").unlink(missing_ok=True)
    try:
        device, folder = str(context.device), str(context.checkpoints)
        pending = {remote.remote(job, device, folder, context.compile): job for job in jobs}
        heard: dict[str, tuple[int, int]] = {}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1, timeout=NOTE_EVERY)
            if context.progress:
                report_notes(list(pending.values()), context.checkpoints, context.progress, heard)
            if not done:
                continue
            job = pending.pop(done[0])
            recorder = Recorder()
            recorder.restore(_result(ray, done[0]))
            recorder.replay(context.store)
            if context.progress:
                context.progress.finish(job.name, job.steps)
    finally:
        if address is None:  # the cluster this run started or found: disconnect
            ray.shutdown()


def _result(ray, reference) -> list:
    """A finished task's records; a task that refused its input (a SpecError: a damaged
    checkpoint, say) is that SpecError here, not Ray's wrapping of it."""
    try:
        return ray.get(reference)
    except Exception as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, SpecError):
            raise SpecError(cause.source, cause.problems) from None
        raise
