"""The shape of the house, held by tests: families never import each other; the theory
never imports the command line, the renderer, the validators or torch; the ground floor
imports nothing above it; nothing outside the registry and the families dispatches on a kind;
the formatter decides the layout (a ``# fmt: skip`` only with its reason); modules and
functions stay small and documented. (That a test not marked slow stays fast is held by
tests/conftest.py, which fails the run when one takes more than ``FAST_LIMIT`` seconds.)"""

from __future__ import annotations

import ast
import re
import tokenize
from pathlib import Path

import pytest
from conftest import ROOT

from infoflow.checks import PACKAGE, foreign_imports, imported
from infoflow.families import FAMILIES

#: Where the formatter is switched off, and the reason that must follow on the same line.
FORMATTER_OFF = re.compile(r"#\s*fmt:\s*(skip|off)\b(.*)")


@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_no_family_imports_another(kind) -> None:
    assert foreign_imports(kind) == []


@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_the_theory_imports_no_cli_renderer_validator_or_torch(kind) -> None:
    above = ("infoflow.cli", "infoflow.render", "infoflow.validators", "torch")
    modules = sorted((PACKAGE / kind).rglob("*.py"))
    assert modules
    for path in modules:
        for name in imported(path):
            assert not any(name == a or name.startswith(a + ".") for a in above), (
                f"{path.relative_to(ROOT)} imports {name}"
            )


def test_the_ground_floor_imports_nothing_above_it() -> None:
    modules = sorted((PACKAGE / "core").rglob("*.py"))
    assert len(modules) >= 7
    for path in modules:
        for name in imported(path):
            if name == "infoflow" or name.startswith("infoflow."):
                assert name.startswith("infoflow.core"), f"{path.relative_to(ROOT)} imports {name}"


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


def _imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module:
        return [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return []


def test_no_dispatch_on_a_kind_outside_the_registry_and_the_families() -> None:
    """Shared modules neither import a family's code nor compare with a kind's name."""
    owned = [f"infoflow.{k}" for k in FAMILIES] + [f"infoflow.validators.{k}" for k in FAMILIES]
    assert len(_shared_modules()) >= 15
    for path in _shared_modules():
        where = path.relative_to(ROOT)
        for node in ast.walk(ast.parse(path.read_text())):
            for name in _imported(node):
                assert not any(name == o or name.startswith(o + ".") for o in owned), (
                    f"{where} imports {name}"
                )
            if isinstance(node, ast.Constant) and node.value in FAMILIES:
                raise AssertionError(f"{where}:{node.lineno}: {node.value!r}")


def test_modules_and_functions_stay_small_and_documented() -> None:
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        where = path.relative_to(ROOT)
        assert len(text.splitlines()) <= 400, f"{where}: over 400 lines"
        tree = ast.parse(text)
        assert ast.get_docstring(tree), f"{where}: no module docstring"
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                assert length <= 60, f"{where}: {node.name} is {length} lines"
