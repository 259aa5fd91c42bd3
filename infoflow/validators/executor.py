"""Where the jobs train: in this process (``local``, the default) or as Ray tasks (``ray``),
one task per job, whatever its family.

A Ray task trains its job with a :class:`~infoflow.validators.store.Recorder` in place of
the database and returns what it recorded; checkpoints go to the run's ``checkpoints``
folder, which every worker must reach (the machine's disk for a local cluster, a shared
file system on a real one). A worker that dies is retried by Ray (``max_retries``); the
retry resumes from the job's last checkpoint, whose records it restores, so it returns what
an uninterrupted run would. The driver alone writes the database: it replays the returned
records, so the judge stage reads the same store whichever executor trained.
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

import torch

from infoflow.core.errors import SpecError, install_hint
from infoflow.core.text import one_line
from infoflow.families import family
from infoflow.validators.ensemble import deterministic
from infoflow.validators.protocol import Context, Job
from infoflow.validators.store import Recorder


def train_local(jobs: list[Job], context: Context) -> None:
    """Train ``jobs`` one after another in this process (a job that stops early counts
    its remaining steps as done)."""
    for job in jobs:
        train_job(job, context)
        if context.progress:
            context.progress(job.name, job.steps, job.steps)


def train_job(job: Job, context: Context) -> None:
    """Train ``job`` with its family's validator, deterministically on a CPU (see
    :func:`~infoflow.validators.ensemble.deterministic`)."""
    validator = family(job.kind).load_validator()
    with deterministic(context.device):
        validator.train(job, context)


def train_one(job: Job, device: str, checkpoints: str, compile: bool = False) -> list:
    """The Ray task: train ``job`` to the end, away from the database, and return its
    records. The worker's process id goes to ``checkpoints/JOB.pid`` (to find, or kill, the
    process that trains a job)."""
    folder = Path(checkpoints)
    (folder / f"{job.name}.pid").write_text(str(os.getpid()))
    recorder = Recorder()
    train_job(job, Context(torch.device(device), recorder, folder, compile=compile))
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
    try:
        ray.init(
            address=address, ignore_reinit_error=True, include_dashboard=False, log_to_driver=False
        )
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as error:
        where = f"the Ray cluster at {address}" if address else "a Ray cluster"
        if not address and os.environ.get("RAY_ADDRESS"):
            where = f"the Ray cluster that RAY_ADDRESS names ({os.environ['RAY_ADDRESS']})"
        reason = one_line(error, 200)
        raise SpecError("--address", [(None, f"cannot reach {where}: {reason}")]) from None
    resources = {"num_gpus": gpus_per_group} if context.device.type == "cuda" else {"num_cpus": 1}
    remote = ray.remote(max_retries=3)(train_one).options(**resources)
    try:
        device, folder = str(context.device), str(context.checkpoints)
        pending = {remote.remote(job, device, folder, context.compile): job for job in jobs}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            job = pending.pop(done[0])
            recorder = Recorder()
            recorder.restore(_result(ray, done[0]))
            recorder.replay(context.store)
            if context.progress:
                context.progress(job.name, job.steps, job.steps)
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
