"""The docs site (mkdocs.yml): README.md and docs/ build strictly, so a broken link, a
missing page or a bad anchor fails the suite."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_docs_site_builds_strictly(tmp_path: Path) -> None:
    for module in ("mkdocs", "material"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (the docs extra: pip install -e '.[docs]')")
    site = tmp_path / "site"
    argv = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    home = (site / "index.html").read_text()
    assert "--format jsonl" in home  # the README is the home page
    assert 'href="retrieval/#speed"' in home  # its docs/ links point into the site
    for page in ("retrieval", "looped_kv", "icl_markov", "notebooks", "validate", "cluster"):
        assert (site / page / "index.html").is_file()


def test_the_results_index_links_every_result() -> None:
    """docs/results.md names every committed result page (a run, a re-judge, a
    pre-registration) and every helper script under docs/results/, and every link it has
    resolves: the index cannot fall behind a new result unseen."""
    docs = ROOT / "docs"
    index = (docs / "results.md").read_text()
    linked = set(re.findall(r"\]\((results/[^)#\s]+)\)", index))
    committed = {
        f"results/{p.name}"
        for p in (docs / "results").iterdir()
        if p.is_file() and p.suffix in (".md", ".py")
    }
    assert committed - linked == set(), "results not in docs/results.md"
    assert [link for link in linked if not (docs / link).exists()] == []


def test_every_committed_report_renders_again() -> None:
    """Every report.json under docs/results since the renovation of 2026-12-01 (claims
    counted by kind) renders its report.md with today's code (the member-level pilot of
    2026-12-04 was a KeyError: a review); every one, older ones too, loads as a Report."""
    import infoflow
    from infoflow.validators.report import markdown

    reports = sorted((ROOT / "docs" / "results").glob("**/report.json"))
    renovated = [json.loads(path.read_text()) for path in reports]
    renovated = [data for data in renovated if "by_kind" in data]
    assert len(reports) > 50 and len(renovated) > 40
    for data in renovated:
        assert markdown(data).startswith("# infoflow validate"), data["started"]
    for path in reports:
        report = infoflow.load_report(path)
        assert report.rows() and report.notes()[0].startswith("Verdicts by kind"), path
