"""The run folder a validation writes: the lock one process holds while it runs, and what
the folder may hold (only files the run wrote, never a link)."""

from __future__ import annotations

import datetime as dt
import fcntl
import os
import socket
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from infoflow.core.errors import SpecError


@contextmanager
def locked(folder: Path, database: str | None = None) -> Iterator[None]:
    """Hold ``folder/.lock`` for the duration: a second process that asks for it gets a
    SpecError naming the holder. The lock dies with its process (even with SIGKILL), so a
    killed run leaves nothing to clean up. A lock file that is a link, or that has another
    name elsewhere (a hard link), is refused, never opened for writing; so is a run folder
    holding either, a folder that is itself a link, and, given the run's ``database``, a
    folder holding files but no database (:func:`check_out`)."""
    check_out(folder, database)  # before the lock is written (a review found it left behind)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SpecError(str(folder), [(None, f"cannot use it as --out ({exc.strerror})")]) from None
    try:
        descriptor = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        if (folder / ".lock").is_symlink():
            raise SpecError(str(folder / ".lock"), [(None, _LINK)]) from None
        raise SpecError(str(folder), [(None, f"cannot use it as --out ({exc.strerror})")]) from None
    handle = os.fdopen(descriptor, "r+")
    if not _own_file(os.fstat(descriptor)):
        handle.close()
        raise SpecError(str(folder / ".lock"), [(None, _LINK)])
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = handle.read().strip() or "another process"
        handle.close()
        raise SpecError(
            str(folder), [(None, f"in use by {holder}: wait for it to end, or pick another --out")]
        ) from None
    try:
        handle.truncate()
        since = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        handle.write(f"process {os.getpid()} on {socket.gethostname()} since {since}\n")
        handle.flush()
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


_LINK = (
    "a link, or a file with another name elsewhere: a run folder holds only files the run "
    "wrote, and infoflow writes through no link; remove it"
)


def check_out(folder: Path, database: str | None = None) -> None:
    """What :func:`locked` refuses before it writes anything (a caller that speaks first, as
    the CLI's resume note, checks so too): a folder that is a link (every file would be
    written where it points: a review), one holding a link (:func:`check_run_folder`),
    given the run's ``database`` one no run wrote (:func:`check_run_owned`), and one this
    process may not read (the API raised PermissionError: a review)."""
    try:
        _check_out(folder, database)
    except PermissionError as exc:
        why = f"cannot use it as --out ({exc.strerror}: {exc.filename})"
        raise SpecError(str(folder), [(None, why)]) from None


def _check_out(folder: Path, database: str | None) -> None:
    if folder.is_symlink():
        raise SpecError(str(folder), [(None, _LINK)])
    existing = next(p for p in (folder, *folder.parents) if p.exists() or p == p.parent)
    if not existing.is_dir():  # a file, or a path under one (a review)
        raise SpecError(str(folder), [(None, f"cannot use it as --out ({existing} is a file)")])
    if existing == folder:  # no run's first: a clone's root is that, not its .git's links
        if database is not None:
            check_run_owned(folder, database)
        check_run_folder(folder)


def check_run_folder(folder: Path) -> None:
    """Refuse (SpecError naming the path) a run folder that holds a symbolic link, or a file
    with a second name (a hard link), anywhere inside: writing the run's files through it
    would write somewhere else."""
    for root, directories, files in os.walk(folder, followlinks=False):
        for name in [*directories, *files]:
            path = Path(root) / name
            if not _own_file(path.lstat()):
                raise SpecError(str(path), [(None, _LINK)])


def check_run_owned(folder: Path, database: str) -> None:
    """Refuse (SpecError naming ``folder`` and a file) a folder that holds files but no
    ``database``: no run wrote it, and a run would write over its files of the names a run
    writes (report.md, report.json; a review, 2026-12-06). Files under hidden names
    (``.gitkeep``, the lock, anything in a hidden folder) are not counted, nor are folders
    holding no other: a run writes over none of them."""
    if (folder / database).exists() or (folder / database).is_symlink():  # a link: named next
        return
    found = sorted({path.relative_to(folder).parts[0] for path in _visible_files(folder)})
    if found:
        named = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        why = (
            f"holds {named} but no {database}: no validate run wrote it, and a run would write "
            "its reports there; pick a new or empty --out, or an earlier run's folder"
        )
        raise SpecError(str(folder), [(None, why)])


def _visible_files(folder: Path) -> Iterator[Path]:
    """Every file inside ``folder`` none of whose names (nor its folders') starts with a dot."""
    for root, directories, files in os.walk(folder):
        directories[:] = [d for d in directories if not d.startswith(".")]
        yield from (Path(root) / name for name in files if not name.startswith("."))


def _own_file(info: os.stat_result) -> bool:
    """Not a link, and a regular file with one name (or a directory)."""
    if stat.S_ISDIR(info.st_mode):
        return True
    return stat.S_ISREG(info.st_mode) and info.st_nlink == 1
