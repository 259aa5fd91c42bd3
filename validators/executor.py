"""Where the ensemble groups train: in this process (``local``, the default) or as Ray tasks
(``ray``), one task per group.

A Ray task trains its group with a :class:`~infoflow.validators.store.Recorder` in place of
the database and returns what it recorded; checkpoints go to the run's ``checkpoints``
folder, which every worker must reach (the machine's disk for a local cluster, a shared
file system on a real one). A worker that dies is retried by Ray (``max_retries``); the
retry resumes from the group's last checkpoint, whose records it restores, so it returns
what an uninterrupted run would. The driver alone writes the database: it replays the
returned records, then runs the usual pipeline, which finds every group trained and only
evaluates, measures and reports, so the report is the same whichever executor trained.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from infoflow.validators.icl_train import train_icl_group
from infoflow.validators.store import Recorder, Store
from infoflow.validators.train import train_group

from infoflow.errors import SpecError

EXECUTORS = ("local", "ray")


def train_one(job: tuple, device: str, checkpoints: str) -> list:
    """Train one group (``("retrieval", group, settings)`` or ``("icl_markov", group)``) to
    the end, away from the database; return its records. The worker's process id is written
    to ``checkpoints/GROUP.pid`` (to find, or kill, the process that trains a group)."""
    kind, group, *rest = job
    folder = Path(checkpoints)
    (folder / f"{group.name}.pid").write_text(str(os.getpid()))
    recorder = Recorder()
    if kind == "retrieval":
        train_group(group, rest[0], torch.device(device), recorder, folder)
    else:
        train_icl_group(group, torch.device(device), recorder, folder)
    return recorder.rows


def train_on_ray(jobs: list[tuple], device: torch.device, checkpoints: Path, store: Store,
                 address: str | None, gpus_per_group: float, progress=None) -> None:  # fmt: skip
    """Train ``jobs`` as Ray tasks (a local cluster without ``address``) and replay what
    they recorded into ``store``."""
    try:
        import ray
    except ModuleNotFoundError:
        raise SpecError("--executor ray", [(None, "Ray is not installed: pip install "
                                                  "'infoflow[ray]'")]) from None  # fmt: skip
    if not jobs:
        return
    ray.init(address=address, ignore_reinit_error=True, include_dashboard=False,
             log_to_driver=False)  # fmt: skip
    resources = {"num_gpus": gpus_per_group} if device.type == "cuda" else {"num_cpus": 1}
    remote = ray.remote(max_retries=3)(train_one).options(**resources)
    try:
        pending = {remote.remote(job, str(device), str(checkpoints)): job for job in jobs}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            job = pending.pop(done[0])
            recorder = Recorder()
            recorder.restore(ray.get(done[0]))
            recorder.replay(store)
            if progress:
                steps = job[2].steps if job[0] == "retrieval" else job[1].spec.training.steps
                progress(job[1].name, steps, steps, 0.0)
    finally:
        if address is None:  # the cluster this run started
            ray.shutdown()
