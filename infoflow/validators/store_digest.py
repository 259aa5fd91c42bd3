"""A finished group's digest in the results database: the SHA-256 of what it recorded
(its metric rows, training seconds and member rows), written when it finishes and checked
whenever the database is opened again (:meth:`~infoflow.validators.store.Store.verify`).
Version 2 (prefix ``v2:``) covers the member rows; a digest without a prefix is version 1
(metrics and seconds) and is checked as such. Rows stored under a group that has no record
(:func:`orphaned`) are refused before the group is recorded again."""

from __future__ import annotations

import hashlib
import json
import sqlite3

#: The digest's version: its prefix (a digest without one is version 1, metrics alone).
DIGEST = "v2:"


def group_digest(
    db: sqlite3.Connection, name: str, seconds: float | None, version: str = DIGEST
) -> str:
    """SHA-256 of group ``name``'s metric rows (every member, step and value, exactly as
    stored), its training seconds and (from version 2) its member rows."""
    rows = db.execute(
        "SELECT member, step, metric, value FROM metrics WHERE group_name = ? "
        "ORDER BY member, step, metric",
        (name,),
    ).fetchall()
    content: list = [seconds, rows]
    if version == DIGEST:
        members = db.execute(
            "SELECT member, label, config FROM members WHERE group_name = ? "
            "ORDER BY member, label, config",
            (name,),
        ).fetchall()
        content.append(members)
    text = json.dumps(content, default=str)
    return version + hashlib.sha256(text.encode()).hexdigest()


def matches(db: sqlite3.Connection, name: str, seconds: float | None, digest: object) -> bool:
    """Whether ``digest`` is group ``name``'s, in the version it was written in."""
    version = DIGEST if isinstance(digest, str) and digest.startswith(DIGEST) else ""
    return digest == group_digest(db, name, seconds, version)


def add_digests(db: sqlite3.Connection) -> None:
    """A database an infoflow before digests wrote gains the column, and its finished
    groups their digest as they stand now (edits made before this version go unseen)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(groups)")}
    if "digest" in columns:
        return
    with db:
        db.execute("ALTER TABLE groups ADD COLUMN digest TEXT")
        done = db.execute("SELECT name, seconds FROM groups WHERE done = 1").fetchall()
        for name, seconds in done:
            digest = group_digest(db, name, seconds)
            db.execute("UPDATE groups SET digest = ? WHERE name = ?", (digest, name))


def orphaned(db: sqlite3.Connection, name: str) -> bool:
    """Group ``name`` has no record, but member or metric rows stored under its name."""
    if db.execute("SELECT 1 FROM groups WHERE name = ?", (name,)).fetchone():
        return False
    return any(
        db.execute(f"SELECT 1 FROM {table} WHERE group_name = ? LIMIT 1", (name,)).fetchone()
        for table in ("members", "metrics")
    )
