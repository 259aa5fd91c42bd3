"""The results database: one SQLite file per output folder, readable with any SQL tool.

Tables: ``runs`` (settings, device, times), ``groups`` (ensembles trained together and
whether they finished), ``members`` (each model's config), ``curves`` (its loss and NMSE over
steps), ``metrics`` (any named metric over steps), ``claims`` (what was predicted, what was
measured, the verdict). Writes are keyed, so a resumed run that records a step again
replaces the row with the same values.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from infoflow.validators.claims import Claim

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, started TEXT, finished TEXT, scale TEXT, device TEXT,
    settings TEXT
);
CREATE TABLE IF NOT EXISTS groups (
    name TEXT PRIMARY KEY, spec TEXT, settings TEXT, done INTEGER DEFAULT 0, seconds REAL
);
CREATE TABLE IF NOT EXISTS members (
    group_name TEXT, member INTEGER, label TEXT, config TEXT, final_nmse REAL,
    PRIMARY KEY (group_name, member)
);
CREATE TABLE IF NOT EXISTS curves (
    group_name TEXT, member INTEGER, step INTEGER, train_loss REAL, eval_nmse REAL,
    PRIMARY KEY (group_name, member, step)
);
CREATE TABLE IF NOT EXISTS metrics (
    group_name TEXT, member INTEGER, step INTEGER, metric TEXT, value REAL,
    PRIMARY KEY (group_name, member, step, metric)
);
CREATE TABLE IF NOT EXISTS claims (
    spec TEXT, claim TEXT, predicted TEXT, measured TEXT, tolerance TEXT, verdict TEXT,
    reason TEXT, PRIMARY KEY (spec, claim)
);
"""


class Store:
    """A thin wrapper over the run's SQLite database."""

    rows: tuple = ()  # the database keeps what is recorded: checkpoints need not

    def __init__(self, path: Path):
        self.db = sqlite3.connect(path)
        self.db.executescript(SCHEMA)

    def restore(self, rows) -> None:
        """Nothing to restore: the database already holds what was recorded."""

    def close(self) -> None:
        self.db.close()

    def start_run(self, started: str, scale: str, device: str, settings: dict[str, Any]) -> None:
        with self.db:
            self.db.execute(
                "INSERT INTO runs (started, scale, device, settings) VALUES (?, ?, ?, ?)",
                (started, scale, device, json.dumps(settings)),
            )

    def first_started(self) -> str:
        """When the run began (the first start, for a resumed run)."""
        return self.db.execute("SELECT started FROM runs ORDER BY id LIMIT 1").fetchone()[0]

    def finish_run(self, finished: str) -> None:
        with self.db:
            self.db.execute(
                "UPDATE runs SET finished = ? WHERE id = (SELECT MAX(id) FROM runs)", (finished,)
            )

    def add_group(self, name: str, spec: str, settings: dict, members: list[dict]) -> None:
        with self.db:
            self.db.execute(
                "INSERT OR IGNORE INTO groups (name, spec, settings) VALUES (?, ?, ?)",
                (name, spec, json.dumps(settings)),
            )
            for i, member in enumerate(members):
                self.db.execute(
                    "INSERT OR IGNORE INTO members (group_name, member, label, config) "
                    "VALUES (?, ?, ?, ?)",
                    (name, i, member["label"], json.dumps(member)),
                )

    def record_curves(self, name: str, step: int, losses: list[float], nmse: list[float]) -> None:
        with self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO curves VALUES (?, ?, ?, ?, ?)",
                [
                    (name, i, step, loss, value)
                    for i, (loss, value) in enumerate(zip(losses, nmse, strict=True))
                ],
            )

    def record_metrics(self, name: str, step: int, metrics: list[dict[str, float]]) -> None:
        """Named metrics of every member of group ``name`` at ``step``."""
        with self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO metrics VALUES (?, ?, ?, ?, ?)",
                [(name, i, step, key, value)
                 for i, row in enumerate(metrics) for key, value in row.items()],
            )  # fmt: skip

    def metrics(self, name: str) -> dict[int, dict[int, dict[str, float]]]:
        """Group ``name``'s metrics as {member: {step: {metric: value}}}."""
        out: dict[int, dict[int, dict[str, float]]] = {}
        rows = self.db.execute(
            "SELECT member, step, metric, value FROM metrics WHERE group_name = ? "
            "ORDER BY member, step", (name,),
        )  # fmt: skip
        for member, step, metric, value in rows:
            out.setdefault(member, {}).setdefault(step, {})[metric] = value
        return out

    def group_done(self, name: str) -> bool:
        row = self.db.execute("SELECT done FROM groups WHERE name = ?", (name,)).fetchone()
        return bool(row and row[0])

    def seconds(self, name: str) -> float | None:
        """How long group ``name`` trained (None before it finished)."""
        row = self.db.execute("SELECT seconds FROM groups WHERE name = ?", (name,)).fetchone()
        return row[0] if row else None

    def finish_group(self, name: str, final: list[float], seconds: float) -> None:
        with self.db:
            for i, value in enumerate(final):
                self.db.execute(
                    "UPDATE members SET final_nmse = ? WHERE group_name = ? AND member = ?",
                    (value, name, i),
                )
            self.db.execute(
                "UPDATE groups SET done = 1, seconds = ? WHERE name = ?", (seconds, name)
            )

    def final_values(self, name: str) -> list[float]:
        """Group ``name``'s final value per member (NMSE for retrieval), in member order."""
        rows = self.db.execute(
            "SELECT final_nmse FROM members WHERE group_name = ? ORDER BY member", (name,)
        )
        return [value for (value,) in rows]

    def record_claim(self, spec: str, claim: Claim) -> None:
        row = claim.to_json()
        with self.db:
            self.db.execute(
                "INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?, ?, ?)",
                (spec, row["claim"], json.dumps(row["predicted"]), json.dumps(row["measured"]),
                 row["tolerance"], row["verdict"], row["reason"]),
            )  # fmt: skip


class Recorder:
    """Stands in for the :class:`Store` where a group trains away from the database (a Ray
    worker): it keeps what the training records, as rows that travel inside the group's
    checkpoints (a retried worker restores them) and back to the driver, which alone
    writes the database (:meth:`replay`)."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, tuple]] = []

    def record_curves(self, *args) -> None:
        self.rows.append(("record_curves", args))

    def record_metrics(self, *args) -> None:
        self.rows.append(("record_metrics", args))

    def finish_group(self, *args) -> None:
        self.rows.append(("finish_group", args))

    def restore(self, rows) -> None:
        self.rows = [(method, tuple(args)) for method, args in rows]

    def replay(self, store: Store) -> None:
        for method, args in self.rows:
            getattr(store, method)(*args)
