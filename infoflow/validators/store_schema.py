"""What the results database holds (its tables, the columns this version reads), and
whether a file is one this infoflow may write into (:mod:`~infoflow.validators.store`)."""

from __future__ import annotations

import sqlite3

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, started TEXT, finished TEXT, scale TEXT, device TEXT,
    settings TEXT
);
CREATE TABLE IF NOT EXISTS groups (
    name TEXT PRIMARY KEY, spec TEXT, settings TEXT, identity TEXT, device TEXT,
    done INTEGER DEFAULT 0, seconds REAL, digest TEXT
);
CREATE TABLE IF NOT EXISTS members (
    group_name TEXT, member INTEGER, label TEXT, config TEXT,
    PRIMARY KEY (group_name, member)
);
CREATE TABLE IF NOT EXISTS metrics (
    group_name TEXT, member INTEGER, step INTEGER, metric TEXT, value REAL,
    PRIMARY KEY (group_name, member, step, metric)
);
CREATE TABLE IF NOT EXISTS claims (
    spec TEXT, id TEXT, claim TEXT, predicted TEXT, measured TEXT, tolerance TEXT,
    verdict TEXT, reason TEXT, PRIMARY KEY (spec, id)
);
"""


#: The columns this version reads, by table: a database that lacks one is refused.
COLUMNS = {
    "runs": {"id", "started", "finished", "scale", "device", "settings"},
    "groups": {"name", "spec", "settings", "identity", "device", "done", "seconds", "digest"},
    "members": {"group_name", "member", "label", "config"},
    "metrics": {"group_name", "member", "step", "metric", "value"},
    "claims": {"spec", "id", "claim", "predicted", "measured", "tolerance", "verdict", "reason"},
}


#: Tables an older infoflow wrote and this one no longer does.
RETIRED = {"curves"}


def not_ours(db: sqlite3.Connection) -> str | None:
    """Why ``db`` is no database this infoflow may write into: a table no infoflow run writes
    (another program's file gained infoflow's tables: a review), or one of infoflow's
    lacking a column this version reads (the digest, which older runs lack, is added)."""
    found = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    tables = [name for (name,) in found if not name.startswith("sqlite_")]
    foreign = [name for name in tables if name not in COLUMNS]
    if foreign and set(foreign) <= RETIRED:
        return f"a results database of an older infoflow (its table {foreign[0]} is retired)"
    if foreign:
        return f"a database no infoflow run wrote (it holds the table {foreign[0]})"
    for table in tables:  # infoflow's own names only, here
        columns = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        missing = ", ".join(sorted(COLUMNS[table] - columns - {"digest"}))
        if missing:
            return f"not a results database of this infoflow (table {table} lacks {missing})"
    return None
