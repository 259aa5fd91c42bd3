"""The docs show real output: every ``$ infoflow ...`` console block and the README's Python
example are run, and what they print must match what the page says they print."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess

import pytest
from conftest import ROOT, infoflow_cmd

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CONSOLE = re.compile(r"```console\n\$ (infoflow [^\n]*)\n(.*?)```", re.S)
PYTHON_WITH_OUTPUT = re.compile(r"```python\n(.*?)```\n\nprints\n\n```text\n(.*?)```", re.S)


def _console_blocks() -> list[tuple[str, str, str]]:
    blocks = []
    for page in PAGES:
        for command, output in CONSOLE.findall(page.read_text()):
            blocks.append((page.name, command, output))
    return blocks


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


#: What makes a block slow: a paper-scale one computes the paper's data (the ICL ceiling reads
#: 512-state test sets); an icl_markov plan computes the ceiling at every K (10.0 CPU s for
#: race-c3-short's in a CI run of 2026-12-08, at the fast loop's limit).
HEAVY = ("--scale paper", "infoflow plan specs/icl_markov/")


def _marked(block: tuple[str, str, str]):
    """A heavy block (:data:`HEAVY`) is slow, out of the fast loop."""
    heavy = any(mark in block[1] for mark in HEAVY)
    return pytest.param(*block, marks=pytest.mark.slow) if heavy else block


@pytest.mark.parametrize(
    ("page", "command", "output"),
    [_marked(block) for block in _console_blocks()],
    ids=lambda v: v if len(v) < 60 else None,
)
def test_console_block_prints_what_the_page_shows(page, command, output) -> None:
    argv = infoflow_cmd() + shlex.split(command)[1:]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    shown = proc.stdout + proc.stderr
    assert _normalise(shown) == _normalise(output), f"{page}: $ {command}"


def test_pages_have_console_blocks() -> None:
    assert len(_console_blocks()) >= 4


def test_readme_has_a_five_line_library_example() -> None:
    examples = PYTHON_WITH_OUTPUT.findall((ROOT / "README.md").read_text())
    assert examples, "the README's library example is missing"
    assert len([line for line in examples[0][0].splitlines() if line.strip()]) <= 5


def _python_blocks() -> list[tuple[str, str, str]]:
    """Each page's Python examples that say what they print (a case per block: a page with
    none made a case that checked nothing, a review)."""
    return [
        (page.name, code, output)
        for page in PAGES
        for code, output in PYTHON_WITH_OUTPUT.findall(page.read_text())
    ]


def test_pages_have_python_examples() -> None:
    assert len({page for page, _, _ in _python_blocks()}) >= 3


@pytest.mark.parametrize(("page", "code", "output"), _python_blocks(), ids=lambda v: None)
def test_python_examples_print_what_the_page_shows(page, code, output) -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.chdir(ROOT):
        exec(compile(code, page, "exec"), {})
    assert _normalise(printed.getvalue()) == _normalise(output), page
