"""A finished run always ends in its plots (issue 29, item 6): each family's plots of a stored
report whose every measured number is NaN or infinite (a target of zero variance) and whose
every name holds mathtext are drawn, empty log axes drawn linear."""

from __future__ import annotations

import json
import math

import pytest
from conftest import ROOT

pytest.importorskip("matplotlib")
pytest.importorskip("torch")

from infoflow.families import family

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
    written = family(kind).load_validator().plot(tmp_path, _poisoned(sections, number))
    assert written and all(path.read_bytes()[:4] == b"\x89PNG" for path in written)
