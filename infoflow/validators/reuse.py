"""The groups an earlier run left in this folder -> what this run does with them (part of the
register stage of :mod:`~infoflow.validators.run`): a finished group of another name with a
group's identity is adopted, its measurements and checkpoint taken over (the same models: a
spec file renamed, or two specs of one name; until a review, 2026-12-06, they were trained
again); one trained for other settings is listed as superseded, not used."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infoflow.core.files import write_with
from infoflow.validators.identity import differences, digest
from infoflow.validators.store import Store
from infoflow.validators.store_digest import group_digest

if TYPE_CHECKING:
    from infoflow.validators.protocol import Job
    from infoflow.validators.run import Plan

NOTHING_TRAINED = "this run trains none of its spec's groups"


def finished_groups(store: Store) -> dict[str, str]:
    """The finished groups of ``store``, by the digest of their identity."""
    return {
        digest(identity): name
        for name, (_, identity) in store.identities().items()
        if store.group_done(name)
    }


def adopt(store: Store, checkpoints: Path, source: str, name: str) -> None:
    """Give group ``name`` (recorded, nothing measured yet) the measurements of ``source``, a
    finished group of the same identity: its checkpoint, its metric rows and training
    seconds; it is then finished, with the digest of what it holds. Without the source's
    checkpoint (deleted) nothing is adopted: the group trains anew."""
    trained = checkpoints / f"{source}.pt"
    if not trained.is_file():
        return
    write_with(checkpoints / f"{name}.pt", lambda temporary: shutil.copyfile(trained, temporary))
    with store.writing():
        store.db.execute(
            "INSERT OR IGNORE INTO metrics SELECT ?, member, step, metric, value "
            "FROM metrics WHERE group_name = ?",
            (name, source),
        )
        seconds = store.seconds(source)
        store.db.execute(
            "UPDATE groups SET done = 1, seconds = ?, digest = ? WHERE name = ?",
            (seconds, group_digest(store.db, name, seconds), name),
        )


def superseded(planned: Plan, store: Store) -> list[dict[str, Any]]:
    """Groups an earlier run in this folder trained for a spec of this run with other
    settings, each with the group of this run that replaces it (of that spec, the closest)
    and what differs, or none where this run trains nothing of that spec (a device its
    ``validation`` leaves out): they were not used. A group this run adopts is used."""
    jobs: dict[str, list[Job]] = {e.name: [] for _, e in planned.experiments}
    for job in planned.jobs:
        jobs[job.experiment].append(job)
    current = {job.name for job in planned.jobs}
    used = {digest(job.group.identity()) for job in planned.jobs}  # under another name too
    out = []
    for name, (experiment, identity) in store.identities().items():
        if name in current or experiment not in jobs or digest(identity) in used:
            continue
        changes = {
            job.name: differences(identity, job.group.identity()) for job in jobs[experiment]
        }
        closest = min(changes, key=lambda job: len(changes[job]), default=None)
        differs = changes[closest] if closest else [NOTHING_TRAINED]
        out.append({"group": name, "replaced_by": closest, "differs": differs})
    return out
