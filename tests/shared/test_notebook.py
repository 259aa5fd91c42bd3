"""The docs' notebook runs (issue 30, item 2): docs/notebook.ipynb's code cells are executed in
order in one namespace, as Jupyter would (docs/refresh_notebook.py, no kernel needed), every
cell must run, and what each shows must be what the notebook stores; docs/notebooks.md shows
the notebook's real output."""

from __future__ import annotations

import base64
import importlib.util
import json
import re

import pytest
from conftest import ROOT

pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

#: What must match exactly; HTML (pandas' own for a DataFrame) and images are checked present.
EXACT = ("text/plain", "text/markdown")
PAGE = ROOT / "docs" / "notebooks.md"


def _refresh():
    spec = importlib.util.spec_from_file_location("refresh", ROOT / "docs" / "refresh_notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def produced() -> list[list[dict]]:
    return _refresh().execute()


def stored() -> list[list[dict]]:
    cells = json.loads((ROOT / "docs" / "notebook.ipynb").read_text())["cells"]
    return [cell["outputs"] for cell in cells if cell["cell_type"] == "code"]


def test_every_cell_runs_and_shows_what_the_notebook_stores(produced) -> None:
    refresh = "run python docs/refresh_notebook.py"
    assert len(produced) == len(stored()) >= 8
    for number, (now, then) in enumerate(zip(produced, stored(), strict=True), start=1):
        assert [o["output_type"] for o in now] == [o["output_type"] for o in then], number
        for new, old in zip(now, then, strict=True):
            where = f"cell {number}: {refresh}"
            assert new.get("text") == old.get("text"), where
            data, kept = new.get("data", {}), old.get("data", {})
            assert sorted(data) == sorted(kept), where
            assert {m: data[m] for m in EXACT if m in data} == {
                m: kept[m] for m in EXACT if m in kept
            }, where
            if "image/png" in kept:
                assert base64.b64decode(kept["image/png"])[:4] == b"\x89PNG"


def test_the_notebook_shows_tables_a_dataframe_and_a_figure(produced) -> None:
    """What the walk-through is for: a spec and a result as tables, the sweep's exponents
    pivoted (one layer leaves the floor at T = 64, two stay on it), the report's verdicts."""
    shown = [o["data"] for cell in produced for o in cell if "data" in o]
    assert sum("text/markdown" in d and "text/html" in d for d in shown) >= 4
    plain = [d["text/plain"] for d in shown]
    pivot = next(text for text in plain if text.startswith("architecture.layers"))
    assert pivot.splitlines()[-1].split() == ["64", "3.0", "1.0"]
    verdicts = next(text for text in plain if text.startswith("verdict"))
    assert verdicts.splitlines()[2].split() == ["construction", "11", "0", "0"]
    assert plain[-1].startswith("<Figure size 700x420") and "image/png" in shown[-1]


def test_the_docs_page_shows_the_notebooks_real_output(produced) -> None:
    """Every ``text`` block of docs/notebooks.md is an output of the notebook, as run now."""
    texts = [o.get("text") or o["data"]["text/plain"] for cell in produced for o in cell]
    blocks = re.findall(r"```text\n(.*?)```", PAGE.read_text(), re.S)
    assert len(blocks) >= 2
    for block in blocks:
        assert any(block.strip("\n") in text for text in texts), block
