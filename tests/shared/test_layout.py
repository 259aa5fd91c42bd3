"""The shape of the house, held by tests: families never import each other; the theory never
imports the command line, the renderer, the validators or torch (not even through another
module); the ground floor imports nothing above it; nothing outside the registry and the
families dispatches on a kind; the formatter decides the layout (a ``# fmt: skip`` only with
its reason); modules and functions stay small and documented; a test not marked slow stays
fast (tests/fast_loop.py). Each rule is also shown to fail on a module that breaks it."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest
from conftest import ROOT

from infoflow.checks import PACKAGE, foreign_imports, imported
from infoflow.families import FAMILIES

#: Where the formatter is switched off, and the reason that must follow on the same line.
FORMATTER_OFF = re.compile(r"#\s*fmt:\s*(skip|off)\b(.*)")
#: What the theory (everything outside infoflow/validators/) never imports.
ABOVE_THE_THEORY = ("infoflow.cli", "infoflow.render", "infoflow.validators", "torch")


def breaking(paths: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    """``module imports name`` for every import in ``paths`` of a module in ``forbidden``
    (or inside one)."""
    return [
        f"{path.name} imports {name}"
        for path in paths
        for name in imported(path)
        if any(name == f or name.startswith(f + ".") for f in forbidden)
    ]


@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_no_family_imports_another(kind) -> None:
    assert foreign_imports(kind) == []


@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_the_theory_imports_no_cli_renderer_validator_or_torch(kind) -> None:
    modules = sorted((PACKAGE / kind).rglob("*.py"))
    assert modules and breaking(modules, ABOVE_THE_THEORY) == []


@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_the_theory_loads_no_cli_renderer_validator_or_torch(kind) -> None:
    """Importing every module of a family's theory (and what they import in turn) loads
    none of them."""
    names = [
        ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts)
        for p in sorted((PACKAGE / kind).rglob("*.py"))
    ]
    code = (
        "import importlib, json, sys\n"
        f"for name in {names!r}: importlib.import_module(name.removesuffix('.__init__'))\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert [
        m for m in loaded if any(m == a or m.startswith(a + ".") for a in ABOVE_THE_THEORY)
    ] == []


def test_the_ground_floor_imports_nothing_above_it() -> None:
    modules = sorted((PACKAGE / "core").rglob("*.py"))
    assert len(modules) >= 7
    above = tuple(f"infoflow.{p.stem}" for p in PACKAGE.iterdir() if p.name != "core")
    assert breaking(modules, (*above, "infoflow.__init__")) == []
    assert all(name != "infoflow" for p in modules for name in imported(p))


def test_the_import_rules_fail_on_modules_that_break_them(tmp_path) -> None:
    """What the guards above read, on modules written to break them: absolute and relative
    imports, at the top and inside a function."""
    folder = PACKAGE / "core"  # ``imported`` resolves relative imports against the package
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import torch\nfrom infoflow.render import to_json\n"
        "def f():\n    from infoflow.validators import run\n"
    )
    assert breaking([bad], ABOVE_THE_THEORY) == [
        "bad.py imports torch",
        "bad.py imports infoflow.render",
        "bad.py imports infoflow.render.to_json",
        "bad.py imports infoflow.validators",
        "bad.py imports infoflow.validators.run",
    ]
    relative = folder / "_relative_import_probe.py"
    relative.write_text("from ..cli import app\nfrom . import text\n")
    try:
        assert imported(relative) == [
            "infoflow.cli",
            "infoflow.cli.app",
            "infoflow.core",
            "infoflow.core.text",
        ]
    finally:
        relative.unlink()


def test_the_formatter_is_switched_off_only_with_a_reason() -> None:
    files = [
        p
        for folder in ("infoflow", "tests", "bench", "specs", "docs")
        for p in sorted((ROOT / folder).rglob("*.py"))
    ]
    assert len(files) > 100
    for path in files:
        for number, comment in _comments(path):
            assert _has_reason(comment), f"{path.relative_to(ROOT)}:{number}: no reason given"


def _comments(path: Path) -> list[tuple[int, str]]:
    """Every comment of a Python file, with its line number."""
    with path.open("rb") as handle:
        tokens = tokenize.tokenize(handle.readline)
        return [(t.start[0], t.string) for t in tokens if t.type == tokenize.COMMENT]


def _has_reason(comment: str) -> bool:
    """A comment that switches the formatter off says why (ten characters at least)."""
    found = FORMATTER_OFF.search(comment)
    return not found or len(found.group(2).strip(" -:;,.()")) >= 10


def test_a_reason_is_what_lets_the_formatter_off() -> None:
    """The guard above can fail: a bare marker has no reason, a marker with one passes."""
    assert _has_reason("# fmt: skip - the rows read as a matrix")
    assert not _has_reason("# fmt: skip")
    assert not _has_reason("#fmt: off")
    assert _has_reason("# a comment about the formatter")


def _shared_modules() -> list[Path]:
    """Every module outside the family packages, the registry excepted."""
    family_dirs = {PACKAGE / kind for kind in FAMILIES} | {
        PACKAGE / "validators" / kind for kind in FAMILIES
    }
    return [
        path
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "families.py" and not any(d in path.parents for d in family_dirs)
    ]


def test_no_dispatch_on_a_kind_outside_the_registry_and_the_families() -> None:
    """Shared modules neither import a family's code nor compare with a kind's name."""
    owned = tuple(f"infoflow.{k}" for k in FAMILIES) + tuple(
        f"infoflow.validators.{k}" for k in FAMILIES
    )
    assert len(_shared_modules()) >= 15
    assert breaking(_shared_modules(), owned) == []
    for path in _shared_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in FAMILIES:
                raise AssertionError(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")


def test_modules_and_functions_stay_small_and_documented() -> None:
    """Package modules: at most 400 lines, with a docstring; every function of the package,
    the benchmarks and the spec generators: at most 60 lines."""
    scripts = sorted((ROOT / "bench").glob("*.py")) + sorted((ROOT / "specs").rglob("*.py"))
    for path in [*sorted(PACKAGE.rglob("*.py")), *scripts]:
        text = path.read_text()
        where = path.relative_to(ROOT)
        tree = ast.parse(text)
        if PACKAGE in path.parents:
            assert len(text.splitlines()) <= 400, f"{where}: over 400 lines"
            assert ast.get_docstring(tree), f"{where}: no module docstring"
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                assert length <= 60, f"{where}: {node.name} is {length} lines"


@pytest.mark.parametrize("workers", [(), ("-p", "xdist.plugin", "-n", "2")], ids=["", "xdist"])
def test_a_test_not_marked_slow_over_the_limit_fails_the_run(pytester, monkeypatch, workers):
    """The fast-loop guard (tests/fast_loop.py), in a run of its own, and in two xdist workers
    as CI runs the suite: a test that burns more CPU than the limit fails the run unless it is
    marked slow."""
    monkeypatch.setenv("INFOFLOW_FAST_LIMIT", "0.3")
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "tests"))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeini("[pytest]\nmarkers =\n    slow: trains\n")
    pytester.makepyfile(
        burn="import time\n\ndef burn():\n    end = time.process_time() + 0.6\n"
        "    while time.process_time() < end:\n        pass\n",
        test_marked="import pytest\nfrom burn import burn\n\n@pytest.mark.slow\n"
        "def test_busy_but_marked():\n    burn()\n\ndef test_quick():\n    pass\n",
    )
    assert pytester.runpytest_subprocess("-p", "fast_loop", *workers).ret == 0
    pytester.makepyfile(test_busy="from burn import burn\n\ndef test_busy():\n    burn()\n")
    result = pytester.runpytest_subprocess("-p", "fast_loop", *workers)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*TOO SLOW for the fast loop: test_busy.py::test_busy*"])
