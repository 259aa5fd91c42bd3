"""Run-folder tampering, fuzzed (issue 29, done means): whatever is done to a finished run's
folder (any cell of its digested tables set to any value, a table dropped, a file truncated,
overwritten or replaced by a folder or a link), ``validate --resume`` answers 0 with a report
or 2 in one line, never a traceback, and writes through no link."""

from __future__ import annotations

import contextlib
import sqlite3
import uuid

import pytest

pytest.importorskip("torch")

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from infoflow.cli import app

FILES = ["results.sqlite", "report.json", "report.md", ".lock"]
#: The tables whose rows a finished group's digest covers (runs and claims are not: a
#: resumed run adds its own row to runs and judges every claim again).
DIGESTED = ("groups", "metrics", "members")
VALUES = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.binary(max_size=8),
)
EDITS = st.one_of(
    st.tuples(st.just("cell"), st.integers(0, 10**6), st.integers(0, 10**6), VALUES),
    st.tuples(st.just("drop"), st.integers(0, 10**6)),
    st.tuples(
        st.just("file"),
        st.sampled_from(FILES),
        st.sampled_from(["truncate", "garbage", "folder", "link"]),
    ),
)


def _validate(*args: str):
    return CliRunner().invoke(app, ["validate", *args, "--quiet", "--device", "cpu"])


def _tamper(out, edit, victim) -> None:
    if edit[0] == "file":
        _, name, how = edit
        path = out / name
        if path.is_dir():
            return
        path.unlink(missing_ok=True)
        if how == "truncate":
            path.write_bytes(b"")
        elif how == "garbage":
            path.write_bytes(b"\x00garbage\xff" * 50)
        elif how == "folder":
            path.mkdir()
        else:
            path.symlink_to(victim)
        return
    with contextlib.suppress(sqlite3.Error):  # a file an earlier edit replaced: no edit
        _edit_database(out / "results.sqlite", edit)


def _edit_database(path, edit) -> None:
    database = sqlite3.connect(path)
    tables = [t for (t,) in database.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    tables = [t for t in tables if t in DIGESTED]
    if not tables:
        return
    table = tables[edit[1] % len(tables)]
    with database:
        if edit[0] == "drop":
            database.execute(f"DROP TABLE {table}")
        else:
            columns = [c[1] for c in database.execute(f"PRAGMA table_info({table})")]
            rows = [r for (r,) in database.execute(f"SELECT rowid FROM {table}")]
            if rows:
                column = columns[edit[2] % len(columns)]
                row = rows[edit[2] % len(rows)]
                update = f"UPDATE {table} SET {column} = ? WHERE rowid = ?"
                database.execute(update, (edit[3], row))
    database.close()


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(edits=st.lists(EDITS, min_size=1, max_size=2))
@example(edits=[("drop", 0), ("cell", 0, 1, None)])  # groups dropped, a member's index nulled
@example(edits=[("cell", 0, 5, None), ("cell", 1, 1, None)])  # not done, a member's index nulled
@pytest.mark.slow  # two validate runs an example (52 CPU s in CI, 2026-12-07)
def test_any_tampering_is_resumed_or_refused_in_one_line(toy, edits) -> None:
    spec, out = str(toy / "right.json"), toy / uuid.uuid4().hex
    victim = toy / f"{out.name}-notes.txt"
    victim.write_text("a user's file\n")
    assert _validate(spec, "--out", str(out)).exit_code == 0
    for edit in edits:
        _tamper(out, edit, victim)
    result = _validate(spec, "--out", str(out), "--resume")
    assert result.exit_code in (0, 2), (edits, result.exception)
    if result.exit_code == 2:
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, edits
    else:
        assert (out / "report.json").stat().st_size > 0
    assert victim.read_text() == "a user's file\n", edits
