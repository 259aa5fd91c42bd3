"""A finished run always ends in its plots (issue 29, item 6): each family's plots of a stored
report whose every measured number is NaN or infinite (a target of zero variance) and whose
every name holds mathtext are drawn, empty log axes drawn linear. Every plot is a Figure
first (issue 30, item 2): a family's ``figures`` are what its ``plot`` writes, a report's
``figures()`` gathers them, and nothing in infoflow touches pyplot or the backend."""

from __future__ import annotations

import json
import math
import re
import sys

import pytest
from conftest import ROOT

matplotlib = pytest.importorskip("matplotlib")
pytest.importorskip("torch")

from matplotlib.figure import Figure  # noqa: E402

import infoflow  # noqa: E402
from infoflow.families import family  # noqa: E402

#: What would take pyplot's global state or set the user's backend.
PYPLOT = re.compile(r"matplotlib\.pyplot|import pyplot|pylab|matplotlib\.use\(|import use\b")

REPORTS = {
    "icl_markov": "2026-11-30-icl-smoke-cpu-3seeds",
    "looped_kv": "2026-12-02-looped-kv-cpu",
    "retrieval": "2026-12-03-retrieval-cpu-suite",
}


def _poisoned(value, number: float, key: str | None = None):
    """``value`` with every float replaced by ``number`` and every name given mathtext."""
    if isinstance(value, dict):
        return {k: _poisoned(v, number, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_poisoned(v, number) for v in value]
    if isinstance(value, float):
        return number
    if isinstance(value, str) and key in ("name", "label", "group", "spec"):
        return value + " $\\frac{$"
    return value


@pytest.mark.parametrize("number", [math.nan, math.inf])
@pytest.mark.parametrize("kind", list(REPORTS))
def test_every_familys_plots_draw_names_and_numbers_that_cannot_be_drawn(
    tmp_path, kind, number
) -> None:
    report = json.loads((ROOT / "docs" / "results" / REPORTS[kind] / "report.json").read_text())
    sections = [s for s in report["specs"] if s["kind"] == kind]
    assert sections
    validator = family(kind).load_validator()
    written = validator.plot(tmp_path, _poisoned(sections, number))
    assert written and all(path.read_bytes()[:4] == b"\x89PNG" for path in written)
    assert [path.name for path in written] == list(validator.figures(_poisoned(sections, number)))


def test_no_module_takes_pyplot_or_sets_the_backend() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in sorted((ROOT / "infoflow").rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if PYPLOT.search(line)
    ]
    assert found == []
    assert PYPLOT.search("import matplotlib.pyplot as plt") and PYPLOT.search("matplotlib.use(")


def test_a_report_gives_its_plots_as_figures_without_pyplot() -> None:
    backend = matplotlib.get_backend()
    names = {}
    for kind, folder in REPORTS.items():
        figures = infoflow.load_report(ROOT / "docs" / "results" / folder).figures()
        assert figures and all(isinstance(f, Figure) for f in figures.values())
        names[kind] = sorted(name.rsplit("-", 1)[-1] for name in figures)
    assert names == {
        "icl_markov": ["kl.png", "phases.png", "positions.png"],
        "looped_kv": ["codec.png", "spectra.png"],
        "retrieval": ["ladders.png"],
    }
    assert matplotlib.get_backend() == backend
    pyplot = sys.modules.get("matplotlib.pyplot")
    assert pyplot is None or not pyplot.get_fignums()


def test_the_capacity_plot_writes_names_as_text_and_log_ticks_as_powers(tmp_path) -> None:
    """A model name with $ is drawn as written; the log axes' 10^k ticks keep mathtext (a
    plot that turned it off for every text drew them as $\\mathdefault{10^{3}}$)."""
    from infoflow.looped_kv.capacity import plot

    spec = infoflow.load_spec(ROOT / "specs" / "looped_kv" / "ouro-1.4b-h200.json")
    named = spec.model_copy(update={"model": spec.model.model_copy(update={"name": "a $b"})})
    fig = plot(named, tmp_path / "capacity.png")
    (ax,) = fig.axes
    assert ax.title.get_parse_math() is False and "a $b" in ax.get_title()
    ticks = [*ax.get_xticklabels(), *ax.get_yticklabels()]
    assert ticks and all(label.get_parse_math() for label in ticks)
