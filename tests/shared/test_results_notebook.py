"""Results in a notebook (issue 30, item 2 in part): a result iterates and indexes by name,
renders as Markdown and HTML with every cell escaped, and turns into a DataFrame when pandas
is there (and says how to get it when it is not)."""

from __future__ import annotations

import sys

import pytest
from conftest import SPECS

import infoflow
from infoflow.core.results import Prediction, Result


def test_a_result_reads_like_a_mapping_of_its_predictions() -> None:
    result = infoflow.predict(SPECS / "retrieval" / "pairwise-min.json")
    names = list(result)
    assert names[:2] == ["comparison_order", "comparison_dimension"] and len(result) == len(names)
    assert result["min_heads"].value == [1, 1]
    assert [row["name"] for row in result.rows()] == names
    assert result.rows()[3]["value"] == result[names[3]].to_json()["value"]


def hostile() -> Result:
    spec = infoflow.load_spec(SPECS / "retrieval" / "pairwise-min.json")
    odd = Prediction("a | b <script>alert(1)</script> *bold*", "x", "exact", "p", 'say "hi"')
    return Result("retrieval", spec, {"odd": odd, "n": Prediction(3, "", "exact", "q")})


def test_markdown_and_html_escape_every_cell() -> None:
    markdown = hostile()._repr_markdown_()
    row = next(line for line in markdown.splitlines() if line.startswith("| odd"))
    assert row.count(" | ") == 4  # five cells: the | in the value is escaped
    assert "\\|" in row and "&lt;script>alert(1)&lt;/script>" in row and "<script" not in row
    page = hostile()._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert 'title="say &quot;hi&quot;"' in page and page.count("<tr") == 3


def test_to_dataframe_needs_pandas_and_says_so(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ModuleNotFoundError, match="pip install pandas"):
        hostile().to_dataframe()


def test_to_dataframe_has_one_row_per_prediction() -> None:
    pytest.importorskip("pandas")
    frame = infoflow.predict(SPECS / "looped_kv" / "ouro-1.4b.json").to_dataframe()
    assert list(frame.columns) == ["name", "value", "unit", "bound", "provenance", "note"]
    assert frame.set_index("name").loc["kv_cache_bytes", "value"] == 3221225472
