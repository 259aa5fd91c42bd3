"""Retrieval's pictures are Figures built from report data (issue 30, item 2): the ladders
of a run's sections and the compile sweep, each saved only by its writer."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("torch")  # the compile sweep builds witnesses

from matplotlib.figure import Figure

from infoflow.validators.retrieval import plots
from infoflow.validators.retrieval.compile_report import plot_sweep, sweep_figure
from infoflow.validators.retrieval.exponents import Ladder

LADDER = Ladder([10, 20, 40, 80], [[0.5], [0.4], [0.3], [0.2]]).to_json()


def _section(name: str, ladder: dict | None) -> dict:
    model = {"label": "heads [1]", "ladder": ladder, "predicted_efficient": False}
    return {
        "name": name,
        "models": [model],
        "floors": {"8": {"shortcut": 0.5, "learns_below": 0.1}},
    }


def test_the_ladders_are_one_panel_per_section_with_a_ladder(tmp_path) -> None:
    sections = [_section("a", LADDER), _section("b", None), _section("c", LADDER)]
    figure = plots.ladders_figure(sections)
    assert isinstance(figure, Figure)
    titles = [ax.get_title() for ax in figure.axes if ax.axison]
    assert titles == ["a", "c"] and len(figure.axes) == 2
    assert figure.axes[0].get_lines()[-1].get_ydata()[0] == 0.1  # the learns-below line
    assert list(plots.figures(sections)) == ["ladders.png"]
    assert plots.ladders_figure([_section("b", None)]) is None
    assert plots.figures([_section("b", None)]) == {} and list(tmp_path.iterdir()) == []
    assert plots.plot(tmp_path, sections) == [tmp_path / "ladders.png"]


def test_a_panel_of_several_t_draws_each_ts_thresholds_named_by_it() -> None:
    """T = 8's model was drawn under T = 32's "learns below" alone (unnamed), and looked as if
    it learned, though its own threshold was lower (an audit, 2026-12-07)."""
    section = _section("a", LADDER)
    section["floors"] = {
        "32": {"shortcut": 0.454, "learns_below": 0.113},
        "8": {"shortcut": 0.282, "learns_below": 0.0705},
    }
    lines = plots.ladders_figure([section]).axes[0].get_lines()
    drawn = {line.get_label(): line.get_ydata()[0] for line in lines}
    assert drawn["learns below (T=8)"] == 0.0705 and drawn["learns below (T=32)"] == 0.113
    assert drawn["pooling shortcut (T=8)"] == 0.282 and "learns below" not in drawn


def test_a_witness_ladder_that_measures_no_exponent_is_drawn_without_a_slope() -> None:
    """A witness too narrow for its narrowest width has three rungs and measures no slope:
    drawn, unlabelled by a slope (its None stopped the whole figure, a review)."""
    three = Ladder([2000, 4000, 8000], [[1e-2] * 2, [2.5e-3] * 2, [6.25e-4] * 2]).to_json()
    four = Ladder([1000, *three["sizes"]], [[4e-2] * 2, *three["nmse"]]).to_json()
    section = _section("a", LADDER)
    section["witnesses"] = [{"model": "w3", "ladder": three}, {"model": "w4", "ladder": four}]
    labels = [line.get_label() for line in plots.ladders_figure([section]).axes[0].get_lines()]
    assert "witness w3" in labels and "witness w4 (slope -2.00)" in labels


def test_the_report_counts_measured_seeds_only_for_a_trained_ladder() -> None:
    """report.md's slope says how many seeds measured one, except for a model not trained
    on this device (no NMSE at any rung: "0 of 3 seeds measured" said nothing true)."""
    from infoflow.validators.retrieval.report import _slope

    sizes = [1000, 2000, 4000, 8000]
    untrained = Ladder(sizes, [[None] * 3 for _ in sizes]).to_json()
    assert _slope(untrained) == "-"
    lost = Ladder(sizes, [[None, 0.5, 0.5], [0.4] * 3, [0.3] * 3, [0.2] * 3]).to_json()
    assert _slope(lost).endswith(" (2 of 3 seeds measured)")


def test_the_sweep_is_a_figure_with_the_engines_rate(tmp_path) -> None:
    result = {
        "beta": [{"beta": b, "nmse": 1 / b} for b in (1.0, 10.0, 100.0)],
        "engine_alpha": 1,
        "width": [{"decoder_parameters": 100 * w, "nmse": w**-4.0} for w in (8, 16, 32)],
        "measured_alpha": 0.5,
    }
    figure = sweep_figure(result, "spec $x$")
    assert isinstance(figure, Figure) and figure.get_suptitle() == "spec $x$"
    labels = [t.get_text() for t in figure.axes[1].get_legend().get_texts()]
    assert labels == ["witness (alpha 0.5)", "engine's rate (alpha 1)"]
    assert list(figure.axes[1].get_lines()[1].get_ydata()) == pytest.approx(
        [8**-4, 8**-4 / 4, 8**-4 / 16]
    )  # slope -2/alpha
    assert len(sweep_figure(result | {"width": []}, "s").axes) == 1
    assert list(tmp_path.iterdir()) == []
    assert plot_sweep(result, tmp_path / "sweep.svg", "s").read_text().startswith("<?xml")


def test_a_model_compile_refused_is_a_list_after_the_table_naming_it() -> None:
    """The refusal followed the models table with no blank line (Markdown read it as two more
    rows) and named no model (an audit, 2026-12-07)."""
    md = pytest.importorskip("markdown")

    from infoflow.validators.retrieval.report import _witnesses

    refused = {"model": "heads [1, 1], T=8, E=8", "refused": "the circuit needs 11 channels"}
    table = ["| a | b |", "|---|---|", "| 1 | 2 |"]
    text = "\n".join([*table, *_witnesses([refused])])
    assert "- not compiled: heads [1, 1], T=8, E=8: the circuit needs 11 channels" in text
    html = md.markdown(text, extensions=["tables"])
    assert html.count("<tr>") == 2 and "<li>not compiled" in html
