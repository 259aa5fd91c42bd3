"""The results database: one SQLite file, readable with any SQL tool (the lock that keeps
a second process out of the folder is :mod:`~infoflow.validators.folder`).

Tables: ``runs`` (settings, device, times), ``groups`` (ensembles trained together, the
identity that names each, whether they finished), ``members`` (each model's config),
``metrics`` (every measurement a family records, by name, member and step: a retrieval
member's ``train:loss`` and ``eval:nmse``, an icl_markov member's KLs), ``claims`` (by their
id: what was predicted, what was measured, the verdict). Writes are keyed, so a
resumed run that records a step again replaces the row with the same values. A finished
group carries the SHA-256 of its rows (``groups.digest``), checked when the database is
opened again (:meth:`Store.verify`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from infoflow.core.errors import SpecError
from infoflow.validators.claims import Claim
from infoflow.validators.identity import differences
from infoflow.validators.store_digest import add_digests, group_digest, matches, orphaned
from infoflow.validators.store_schema import SCHEMA, not_ours


def recorded_settings(path: Path) -> dict[str, Any]:
    """The settings the run in database ``path`` was started with, read without writing ({}
    when there is none, or it cannot be read: :meth:`Store.verify` says why later)."""
    if not path.is_file():
        return {}
    try:
        db = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            row = db.execute("SELECT settings FROM runs ORDER BY id LIMIT 1").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return {}
    settings = _loads(row[0]) if row else None
    return settings if isinstance(settings, dict) else {}


def _loads(text: object) -> object:
    try:
        return json.loads(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _seed(config: object) -> int | None:
    """The seed a member's recorded configuration names, if any."""
    member = _loads(config)
    return member.get("seed") if isinstance(member, dict) else None


def _full(error: Exception) -> str:
    """The message for a full disk ('' for any other error)."""
    if "full" not in str(error).lower():
        return ""
    return (
        "the disk is full: free some space, then run again with --resume (what was written is kept)"
    )


class Store:
    """A thin wrapper over the run's SQLite database."""

    rows: tuple = ()  # the database keeps what is recorded: checkpoints need not

    def __init__(self, path: Path):
        """Open (or create) the database at ``path``; a damaged one, or one from an older
        infoflow, is a SpecError naming it."""
        self.path = path
        try:
            self.db = sqlite3.connect(path)
            (check,) = self.db.execute("PRAGMA quick_check").fetchone()
            if check != "ok":
                raise sqlite3.DatabaseError(check)
            problem = not_ours(self.db)  # read before anything is written
            if problem is None:
                self.db.executescript(SCHEMA)
                add_digests(self.db)
        except sqlite3.Error as exc:
            message = f"damaged results database ({exc}): move it away, or pick another --out"
            raise SpecError(str(path), [(None, _full(exc) or message)]) from None
        if problem:
            self.db.close()
            raise SpecError(str(path), [(None, f"{problem}: pick another --out")])

    def restore(self, rows) -> None:
        """Nothing to restore: the database already holds what was recorded."""

    def close(self) -> None:
        self.db.close()

    def start_run(self, started: str, scale: str, device: str, settings: dict[str, Any]) -> None:
        with self.writing():
            self.db.execute(
                "INSERT INTO runs (started, scale, device, settings) VALUES (?, ?, ?, ?)",
                (started, scale, device, json.dumps(settings)),
            )

    def first_started(self) -> str:
        """When the run began (the first start, for a resumed run)."""
        return self.db.execute("SELECT started FROM runs ORDER BY id LIMIT 1").fetchone()[0]

    def last_finished(self) -> str | None:
        """When the latest invocation that trained ran to its end (None before any did; a
        re-report, which trains nothing, records no end)."""
        row = self.db.execute("SELECT MAX(finished) FROM runs").fetchone()
        return row[0]

    def finish_run(self, finished: str) -> None:
        with self.writing():
            self.db.execute(
                "UPDATE runs SET finished = ? WHERE id = (SELECT MAX(id) FROM runs)", (finished,)
            )

    def add_group(
        self,
        name: str,
        spec: str,
        settings: dict,
        members: list[dict],
        identity: dict,
        device: str = "cpu",
    ) -> None:
        """Record a group (once) and the device type it trains on. Members or metrics stored
        under its name without its record (a damaged folder), a group of that name recorded
        with another identity, or one unfinished and training on another device type, is a
        SpecError that says what is wrong: it is never trained on."""
        text = json.dumps(identity, sort_keys=True, default=str)
        with self.writing():
            if orphaned(self.db, name):
                message = (
                    "its measurements are stored without its record (edited, or damaged): "
                    "delete the folder, or pick another --out"
                )
                raise SpecError(f"{self.path}: group {name}", [(None, message)])
            self.db.execute(
                "INSERT OR IGNORE INTO groups (name, spec, settings, identity, device) "
                "VALUES (?, ?, ?, ?, ?)",
                (name, spec, json.dumps(settings), text, device),
            )
            stored, trained_on, done = self.db.execute(
                "SELECT identity, device, done FROM groups WHERE name = ?", (name,)
            ).fetchone()
            if stored != text:
                differs = "; ".join(differences(_loads(stored), identity)) or "its identity"
                raise SpecError(
                    name,
                    [
                        (
                            None,
                            f"this group was trained for other settings "
                            f"({differs}): pick another --out",
                        )
                    ],
                )
            if not done and trained_on != device:
                raise SpecError(
                    name,
                    [
                        (
                            None,
                            f"this group has trained on {trained_on} so far: "
                            f"resume it with --device {trained_on}, or pick "
                            "another --out",
                        )
                    ],
                )
            self._record_members(name, members)

    def _record_members(self, name: str, members: list[dict]) -> None:
        """Record group ``name``'s members (once); a SpecError where the stored ones are not
        the ones it trains (a member's index nulled made it two: a fuzz, a traceback)."""
        for i, member in enumerate(members):
            self.db.execute(
                "INSERT OR IGNORE INTO members (group_name, member, label, config) "
                "VALUES (?, ?, ?, ?)",
                (name, i, member["label"], json.dumps(member)),
            )
        query = "SELECT member FROM members WHERE group_name = ?"
        stored = [m for (m,) in self.db.execute(query, (name,))]
        if len(stored) != len(members) or set(stored) != set(range(len(members))):
            message = (
                "its stored members are not the ones it trains (edited, or damaged): "
                "delete the folder, or pick another --out"
            )
            raise SpecError(f"{self.path}: group {name}", [(None, message)])

    def identities(self) -> dict[str, tuple[str, dict]]:
        """Every recorded group's experiment and identity, by name (a group whose identity
        cannot be read is a SpecError)."""
        out = {}
        for name, spec, identity in self.db.execute("SELECT name, spec, identity FROM groups"):
            try:
                out[name] = (spec, json.loads(identity))
            except (TypeError, ValueError):
                raise SpecError(
                    name, [(None, "its recorded identity is unreadable: pick another --out")]
                ) from None
        return out

    def record_metrics(self, name: str, step: int, metrics: list[dict[str, float]]) -> None:
        """Named metrics of every member of group ``name`` at ``step``."""
        with self.writing():
            self.db.executemany(
                "INSERT OR REPLACE INTO metrics VALUES (?, ?, ?, ?, ?)",
                [
                    (name, i, step, key, value)
                    for i, row in enumerate(metrics)
                    for key, value in row.items()
                ],
            )

    def metrics(self, name: str) -> dict[int, dict[int, dict[str, float]]]:
        """Group ``name``'s metrics as {member: {step: {metric: value}}}."""
        out: dict[int, dict[int, dict[str, float]]] = {}
        rows = self.db.execute(
            "SELECT member, step, metric, value FROM metrics WHERE group_name = ? "
            "AND member >= 0 ORDER BY member, step",
            (name,),
        )
        for member, step, metric, value in rows:
            out.setdefault(member, {}).setdefault(step, {})[metric] = value
        return out

    def metric_rows(self) -> list[tuple[str, str, int | None, int, str, float]]:
        """Every member's metrics in long form: (group, member's label, its seed or None,
        step, metric, value), by group, member, step and metric."""
        rows = self.db.execute(
            "SELECT m.group_name, b.label, b.config, m.step, m.metric, m.value FROM metrics m "
            "JOIN members b ON b.group_name = m.group_name AND b.member = m.member "
            "WHERE m.member >= 0 ORDER BY m.group_name, m.member, m.step, m.metric"
        )
        return [
            (group, label, _seed(config), step, metric, value)
            for group, label, config, step, metric, value in rows
        ]

    def record_throughput(self, name: str, rates: dict[str, float | str | None]) -> None:
        """Group ``name``'s training speed (see :mod:`~infoflow.validators.throughput`),
        kept among the metrics as member -1."""
        with self.writing():
            self.db.executemany(
                "INSERT OR REPLACE INTO metrics VALUES (?, -1, 0, ?, ?)",
                [(name, key, value) for key, value in rates.items()],
            )

    def throughput(self, name: str) -> dict[str, float | str | None]:
        """What :meth:`record_throughput` kept for group ``name`` ({} for none)."""
        rows = self.db.execute(
            "SELECT metric, value FROM metrics WHERE group_name = ? AND member = -1", (name,)
        )
        return dict(rows.fetchall())

    def group_done(self, name: str) -> bool:
        row = self.db.execute("SELECT done FROM groups WHERE name = ?", (name,)).fetchone()
        return bool(row and row[0])

    def seconds(self, name: str) -> float | None:
        """How long group ``name`` trained (None before it finished)."""
        row = self.db.execute("SELECT seconds FROM groups WHERE name = ?", (name,)).fetchone()
        return row[0] if row else None

    def finish_group(self, name: str, seconds: float) -> None:
        """Mark group ``name`` finished, after ``seconds`` of training, with the digest of
        what it recorded."""
        with self.writing():
            self.db.execute(
                "UPDATE groups SET done = 1, seconds = ?, digest = ? WHERE name = ?",
                (seconds, group_digest(self.db, name, seconds), name),
            )

    @contextmanager
    def writing(self) -> Iterator[None]:
        """One transaction; a full disk is a SpecError that says so."""
        try:
            with self.db:
                yield
        except sqlite3.OperationalError as exc:
            if _full(exc):
                raise SpecError(str(self.path), [(None, _full(exc))]) from None
            raise

    def verify(self) -> None:
        """Refuse (a SpecError naming the group) a finished group whose stored measurements
        are not what it recorded: a member's value that is not a number (the throughput rows,
        member -1, hold text too), or rows that no longer match the digest written when it
        finished (edited, or damaged)."""
        rows = self.db.execute("SELECT name, seconds, digest FROM groups WHERE done = 1")
        for name, seconds, digest in rows.fetchall():
            strange = self.db.execute(
                "SELECT metric FROM metrics WHERE group_name = ? AND member >= 0 AND value IS "
                "NOT NULL AND typeof(value) NOT IN ('real', 'integer') LIMIT 1",
                (name,),
            ).fetchone()
            if strange:
                why = f"a stored {strange[0]} is not a number"
            elif not matches(self.db, name, seconds, digest):
                why = "its stored measurements do not match the digest written when it finished"
            else:
                continue
            message = f"{why} (edited, or damaged): delete the folder, or pick another --out"
            raise SpecError(f"{self.path}: group {name}", [(None, message)])

    def last_values(self, name: str, metric: str) -> list[float | None]:
        """Each member's last recorded ``metric`` in group ``name``, in member order (None
        for a member that recorded none)."""
        rows = self.db.execute(
            "SELECT m.member, (SELECT value FROM metrics AS v WHERE v.group_name = m.group_name "
            "AND v.member = m.member AND v.metric = ? ORDER BY v.step DESC LIMIT 1) "
            "FROM members AS m WHERE m.group_name = ? ORDER BY m.member",
            (metric, name),
        )
        return [value for _, value in rows]

    def record_claims(self, spec: str, claims: tuple[Claim, ...]) -> None:
        """``spec``'s claims, in place of any it had (a resumed run judged by other rules kept
        claims whose ids the rules no longer make)."""
        rows = [claim.to_json() for claim in claims]
        with self.writing():
            self.db.execute("DELETE FROM claims WHERE spec = ?", (spec,))
            self.db.executemany(
                "INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        spec,
                        row["id"],
                        row["claim"],
                        json.dumps(row["predicted"]),
                        json.dumps(row["measured"]),
                        row["tolerance"],
                        row["verdict"],
                        row["reason"],
                    )
                    for row in rows
                ],
            )


class Recorder:
    """Stands in for the :class:`Store` where a group trains away from the database (a Ray
    worker): it keeps what the training records, as rows that travel inside the group's
    checkpoints (a retried worker restores them) and back to the driver, which alone
    writes the database (:meth:`replay`)."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, tuple]] = []

    def record_metrics(self, *args) -> None:
        self.rows.append(("record_metrics", args))

    def record_throughput(self, *args) -> None:
        self.rows.append(("record_throughput", args))

    def finish_group(self, *args) -> None:
        self.rows.append(("finish_group", args))

    def restore(self, rows) -> None:
        self.rows = [(method, tuple(args)) for method, args in rows]

    def replay(self, store: Store) -> None:
        for method, args in self.rows:
            getattr(store, method)(*args)
