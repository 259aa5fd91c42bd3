"""The looped_kv validator's pictures are Figures built from a report section (issue 30,
item 2): the codec's errors and the spectra, named as its ``plot`` writes them."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

from matplotlib.figure import Figure

from infoflow.validators.looped_kv import plots

SECTION = {
    "name": "tiny",
    "measured": {
        "methods": {
            "cache": {"1": {"attention_error": 0.0, "kl": 1e-8}},
            "lla": {
                "2": {"attention_error": 0.01, "kl": 1e-3},
                "4": {"attention_error": 0.1, "kl": 1e-2},
            },
        },
        "dims": {"loop": 8, "head": 4},
        "spectra": {which: {"loop": [0.5, 0.8, 1.0], "head": [0.7, 1.0]} for which in ("K", "V")},
    },
}


def test_the_codec_is_a_line_per_method_against_rho() -> None:
    figure = plots.codec_figure(SECTION)
    assert isinstance(figure, Figure)
    assert [ax.get_title() for ax in figure.axes] == ["tiny: attention error", "tiny: kl"]
    cache, lla = figure.axes[0].get_lines()
    assert list(cache.get_ydata()) == [1e-9]  # an exact copy drawn at the floor of a log axis
    assert list(lla.get_xdata()) == [2.0, 4.0] and list(lla.get_ydata()) == [0.01, 0.1]


def test_the_seeds_range_is_shaded_where_several_were_measured() -> None:
    def cell(low, high):
        return {"median": low, "low": low, "high": high, "seeds": 3}

    spread = {
        "lla": {
            rho: {"attention_error": cell(e, 2 * e), "kl": cell(e / 10, e / 5)}
            for rho, e in (("2", 0.01), ("4", 0.1))
        }
    }
    figure = plots.codec_figure(SECTION | {"over_seeds": spread})
    (band,) = figure.axes[0].collections  # lla's band; the single-rho cache has none
    top = band.get_paths()[0].vertices[:, 1].max()
    assert top == pytest.approx(0.2)
    assert not plots.codec_figure(SECTION).axes[0].collections


def test_the_spectra_put_each_rank_at_its_rho() -> None:
    figure = plots.spectra_figure(SECTION)
    loop, head = figure.axes[1].get_lines()
    assert list(loop.get_xdata()) == [8.0, 4.0, 8 / 3] and list(head.get_xdata()) == [4.0, 2.0]
    assert figure.axes[1].get_title() == "V: the V vectors with one axis folded in"


def test_the_figures_are_named_as_the_report_names_the_files(tmp_path) -> None:
    figures = plots.figures([SECTION, SECTION | {"name": "other"}])
    names = ["tiny-codec.png", "tiny-spectra.png", "other-codec.png", "other-spectra.png"]
    assert list(figures) == names and list(tmp_path.iterdir()) == []
    assert [path.name for path in plots.plot(tmp_path, [SECTION])] == names[:2]


def test_a_diverged_value_is_left_out_of_the_codec_plot() -> None:
    """report.json holds a NaN as null: the line skips it rather than the plot failing."""
    import copy
    import math

    section = copy.deepcopy(SECTION)
    section["measured"]["methods"]["lla"]["4"]["kl"] = None
    kl = plots.codec_figure(section).axes[1].get_lines()[1]
    assert kl.get_ydata()[0] == 1e-3 and math.isnan(kl.get_ydata()[1])
