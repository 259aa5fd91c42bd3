"""Objects in a notebook (issue 30, item 2): a result iterates and indexes by name; specs,
predictions, results, sweeps, claims and reports render as Markdown and HTML tables with every
cell escaped; results, sweeps and reports turn into tidy DataFrames when pandas is there (and
say how to get it when it is not); a report loads from its run folder or its file."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from conftest import ROOT, SPECS

import infoflow
from infoflow.core.errors import SpecError
from infoflow.core.results import Prediction, Result
from infoflow.retrieval.sweep import sweep


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


def test_a_spec_table_escapes_what_the_user_wrote() -> None:
    """A spec's rows are its fields as written: a sweep key with | and a tag stays in its
    cell, as text."""
    spec = infoflow.load_spec(SPECS / "retrieval" / "pairwise-min.json")
    odd = spec.model_copy(update={"sweep": {"a|b<i>x</i>": [1]}})
    row = next(line for line in odd._repr_markdown_().splitlines() if line.startswith("| sweep"))
    assert row == "| sweep.a\\|b&lt;i>x&lt;/i> | [1] |"
    assert "<i>" not in odd._repr_html_() and "&lt;i&gt;x&lt;/i&gt;" in odd._repr_html_()


def test_to_dataframe_needs_pandas_and_says_so(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ModuleNotFoundError, match="pip install pandas"):
        hostile().to_dataframe()


def test_to_dataframe_has_one_row_per_prediction() -> None:
    pytest.importorskip("pandas")
    frame = infoflow.predict(SPECS / "looped_kv" / "ouro-1.4b.json").to_dataframe()
    assert list(frame.columns) == ["name", "value", "unit", "bound", "provenance", "note"]
    assert frame.set_index("name").loc["kv_cache_bytes", "value"] == 3221225472


REPORT = ROOT / "docs" / "results" / "2026-12-03-retrieval-cpu-suite"


def notebook_objects() -> dict[str, Any]:
    """One of each object a notebook shows: spec, prediction, result, sweep, claim, report."""
    spec = infoflow.load_spec(infoflow.specs.path("retrieval/pairwise-min.json"))
    result = infoflow.predict(spec)
    report = infoflow.load_report(REPORT)
    return {
        "spec": spec,
        "prediction": result["cost_exponent"],
        "result": result,
        "sweep": sweep(spec),
        "claim": report.claims[0],
        "report": report,
    }


def test_every_notebook_object_renders_as_a_table_with_its_numbers() -> None:
    shown = {name: (o._repr_markdown_(), o._repr_html_()) for name, o in notebook_objects().items()}
    for name, (markdown, page) in shown.items():
        assert markdown.splitlines()[2].startswith("| "), name  # the header row
        assert page.startswith("<table><caption>") and page.count("<tr") >= 2, name
    assert "| architecture.embed\\_dim | 64 |" in shown["spec"][0]  # no emphasis from a _
    assert "| 1 |  | estimate | reconstruction:exponent\\_floor |" in shown["prediction"][0]
    assert "| 1 | 64 | 3 | 1e+06 | 1 | 4096 | False | True |" in shown["sweep"][0]
    assert shown["sweep"][0].startswith("**sweep: 8 points**")
    assert "| refuted | efficient |" in shown["claim"][0]
    assert shown["report"][0].count("\n| ") == 1 + 50  # header and one row per claim
    assert "engineering: 5 confirmed, 2 refuted, 1 inconclusive" in shown["report"][0]
    assert '"median": 0.1342' in shown["claim"][0]  # floats shown to 4 digits


def test_sweeps_and_reports_are_tidy_dataframes() -> None:
    pytest.importorskip("pandas")
    objects = notebook_objects()
    points = objects["sweep"].to_dataframe()
    assert list(points.columns[:3]) == ["architecture.layers", "seq_len", "cost_exponent"]
    assert len(points) == 8 and points["efficient"].dtype == bool
    one_layer = points[points["architecture.layers"] == 1].set_index("seq_len")
    assert one_layer["cost_exponent"].to_dict() == {8: 1.0, 16: 1.0, 32: 1.0, 64: 3.0}
    claims = objects["report"].to_dataframe()
    assert list(claims.columns) == [
        "spec",
        "id",
        "kind",
        "claim",
        "verdict",
        "predicted",
        "measured",
        "tolerance",
        "reason",
    ]
    assert len(claims) == 50 and claims["verdict"].value_counts()["confirmed"] == 21
    assert set(claims["spec"]) == set(objects["report"].spec_names())
    assert repr(objects["report"]).startswith("Report(scale='smoke', specs=[intrinsic-dimension")
    assert (
        objects["report"].section("triangle")["claims"][0]["id"]
        == claims.set_index("spec").loc["triangle", "id"].iloc[0]
    )


@pytest.mark.parametrize("name", ["prediction", "sweep", "claim", "report"])
def test_every_dataframe_needs_pandas_and_says_so(name, monkeypatch) -> None:
    made = notebook_objects()[name]
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ModuleNotFoundError, match="pip install pandas"):
        made.to_dataframe()


def test_a_report_is_read_from_its_folder_or_file_and_a_bad_one_is_named(tmp_path) -> None:
    assert (
        infoflow.load_report(REPORT / "report.json").rows() == infoflow.load_report(REPORT).rows()
    )
    data = json.loads((REPORT / "report.json").read_text())
    data["specs"][1]["claims"][2]["verdict"] = "maybe"
    (tmp_path / "report.json").write_text(json.dumps(data))
    with pytest.raises(SpecError) as error:
        infoflow.load_report(tmp_path)
    assert error.value.source == str(tmp_path / "report.json")
    assert error.value.field == "specs[1].claims[2].verdict"
    del data["specs"]
    (tmp_path / "report.json").write_text(json.dumps(data))
    with pytest.raises(SpecError, match="a report is an object with a list of specs"):
        infoflow.load_report(tmp_path / "report.json")
    with pytest.raises(SpecError, match="report not found"):
        infoflow.load_report(tmp_path / "nowhere")


def test_a_report_object_of_no_report_or_an_older_shape_is_a_spec_error() -> None:
    """Report({"a": 1}) raised KeyError at its repr, a path TypeError; an older looped_kv
    report's figures() raised KeyError 'dims' (an audit, 2026-12-07)."""
    for data in ({"a": 1}, "docs/results/x", {"specs": [{"name": "s", "claims": [{}]}]}):
        with pytest.raises(SpecError, match="<report>: field 'specs"):
            infoflow.Report(data)
    pytest.importorskip("torch")
    pytest.importorskip("matplotlib")
    older = infoflow.load_report(ROOT / "docs/results/2026-11-29-looped-kv-smoke-cpu")
    with pytest.raises(SpecError, match="cannot draw the looped_kv plots: its records lack 'dims'"):
        older.figures()
