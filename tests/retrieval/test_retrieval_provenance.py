"""Every provenance tag agrees with one table, docs/retrieval.md's "Provenance" (issue 28,
item 4): each row's example carries its tag and bound, every prediction of every bundled
spec is a row, and ``paper:`` tags are exactly the rules the theory note calls stated."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import infoflow
from infoflow.retrieval.derive import derive
from infoflow.retrieval.explain import explain
from infoflow.spec import expand, load_spec

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "retrieval.md"


def table() -> list[dict[str, str]]:
    """The rows between the table's markers, as dicts by column."""
    text = DOC.read_text()
    body = text.split("<!-- provenance-table -->")[1].split("<!-- end provenance-table -->")[0]
    lines = [line for line in body.strip().splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = []
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


ROWS = table()


def example(row: dict[str, str]):
    """The row's spec: its target, on its architecture (d = 4)."""
    architecture = {"embed_dim": 64, "positional_encoding": False}
    spec = {"kind": "retrieval", "target": row["target"].strip("`"), "input_dim": 4}
    spec["seq_len"] = 64
    for item in row["architecture"].split(";"):
        name, _, value = item.strip().partition(" ")
        if name == "heads":
            heads = [int(h) for h in re.findall(r"\d+", value)]
            architecture |= {"heads": heads, "layers": len(heads)}
        elif name == "PE":
            architecture["positional_encoding"] = True
        elif name == "E":
            architecture["embed_dim"] = int(value)
        elif name == "T":
            spec["seq_len"] = int(value)
        else:
            spec["options"] = {name: value}
    return load_spec({**spec, "architecture": architecture})


def test_the_table_covers_every_kind_of_place_a_tag_is_shown() -> None:
    assert len(ROWS) >= 20
    assert {row["where"] for row in ROWS} >= {"cost_exponent", "term", "explain"}
    for row in ROWS:
        stated = row["theory note"] == "stated"
        assert stated == row["tag"].startswith("paper:"), row["tag"]
        assert row["bound"] in ("exact", "upper", "lower", "estimate"), row


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['tag']}:{r['where']}" for r in ROWS])
def test_each_rule_carries_its_tag_and_bound(row) -> None:
    spec = example(row)
    where, tag, bound = row["where"], row["tag"], row["bound"]
    if where == "explain":
        assert re.search(rf"\[[^\]]*{re.escape(tag)}", explain(spec)), tag
    elif where == "term":
        found = [(t.provenance, t.bound) for t in derive(spec).terms]
        assert (tag, bound) in found, found
    else:
        prediction = infoflow.predict(spec).predictions[where]
        assert (prediction.provenance, prediction.bound) == (tag, bound)


def bundled() -> list[Path]:
    return sorted((ROOT / "specs" / "retrieval").rglob("*.json"))


@pytest.mark.parametrize("path", bundled(), ids=lambda p: p.name)
def test_every_bundled_prediction_is_a_row_of_the_table(path) -> None:
    """At every point of the spec's sweep."""
    pairs = {(row["tag"], row["bound"]) for row in ROWS}
    tags = {row["tag"] for row in ROWS}
    for _, point in expand(load_spec(path), path.parent, str(path)):
        for name, prediction in infoflow.predict(point).predictions.items():
            if name == "bottleneck":  # the words of the term that sets the exponent
                assert prediction.provenance in tags, (name, prediction.provenance)
            else:
                assert (prediction.provenance, prediction.bound) in pairs, (name, prediction)


@pytest.mark.parametrize(
    ("seq_len", "provenance", "bound"),
    [(8, "reconstruction:exponent_floor", "estimate"), (64, "paper:theorem-2", "lower")],
)
def test_the_exponent_is_credited_to_the_term_that_sets_it(seq_len, provenance, bound) -> None:
    """At T = 8 Theorem 2's term for one head (5/33 at E = 32) is under the floor, which sets
    the exponent 1: it was labelled the theorem's lower bound (a review). The bottleneck
    stays the theorem's term, the one that grows with T."""
    spec = load_spec(DOC.parent.parent / "specs" / "retrieval" / "kth-largest.json")
    spec = spec.model_copy(update={"seq_len": seq_len, "sweep": None})
    result = infoflow.predict(spec)
    cost = result["cost_exponent"]
    assert (cost.provenance, cost.bound) == (provenance, bound)
    assert result["param_cost"].provenance == provenance
    assert result["bottleneck"].provenance == "paper:theorem-2"
    assert ("is 0.152, under it" in cost.note) is (seq_len == 8)
