"""The registry of families: every kind is complete (predictor, validator, docs, specs),
nothing outside the registry and the family packages dispatches on a kind, an unknown kind
is an error everywhere, and a toy fourth family goes end to end through `predict` and
`validate` with only its own module and one registry entry."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from infoflow import families
from infoflow.core.errors import SpecError
from infoflow.families import FAMILIES, Family, family

PACKAGE = ROOT / "infoflow"
PROTOCOL = ("scale", "plan", "train", "judge", "describe", "markdown", "plot")


@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_every_registered_kind_is_complete(kind) -> None:
    f = FAMILIES[kind]
    model = f.spec_model()
    assert model.model_fields["kind"].annotation.__args__ == (kind,)  # the spec's literal
    assert callable(f.predictor())
    assert set(f.commands) <= set(families.EXTRA_COMMANDS)
    assert all(callable(f.command(name)) for name in f.commands)
    if f.validator is None:
        assert f.not_validated, f"{kind}: no validator and no reason"
    else:
        pytest.importorskip("torch")
        validator = f.load_validator()
        assert validator.kind == kind
        assert all(callable(getattr(validator, name)) for name in PROTOCOL)
    assert (ROOT / f.docs).is_file() and f.docs == f"docs/{kind}.md"
    specs = sorted((ROOT / f.specs).glob("*.json"))
    assert specs, f"{kind}: no bundled specs in {f.specs}"
    assert all(json.loads(p.read_text())["kind"] == kind for p in specs)
    assert (PACKAGE / kind).is_dir() and (PACKAGE / "validators" / kind).is_dir()


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


def test_an_unknown_kind_is_an_error_everywhere(tmp_path) -> None:
    import infoflow

    with pytest.raises(SpecError, match="unknown kind 'nope'"):
        family("nope")
    with pytest.raises(SpecError, match="unknown kind 'nope'"):
        infoflow.load_spec({"kind": "nope"})
    with pytest.raises(SpecError, match="unknown kind 'nope'"):
        infoflow.spec_schema("nope")
    pytest.importorskip("torch")
    from infoflow.validators.executor import train_local
    from infoflow.validators.protocol import Job
    from infoflow.validators.report import markdown

    with pytest.raises(SpecError, match="unknown kind 'nope'"):
        train_local([Job("nope", "x", object(), 1)], None)
    report = {
        "settings": {},
        "summary": {},
        "scale": "smoke",
        "device": "cpu",
        "started": "",
        "finished": "",
        "skipped": [],
        "specs": [{"kind": "nope", "name": "x"}],
    }
    with pytest.raises(SpecError, match="unknown kind 'nope'"):
        markdown(report)


def test_a_family_without_a_validator_is_listed_with_its_reason(monkeypatch, tmp_path) -> None:
    pytest.importorskip("torch")
    from infoflow.validators.run import Options, plan

    entry = FAMILIES["looped_kv"]
    monkeypatch.setitem(
        FAMILIES,
        "looped_kv",
        Family(
            kind=entry.kind,
            spec=entry.spec,
            predict=entry.predict,
            not_validated="switched off in this test",
        ),
    )
    with pytest.raises(SpecError, match="not validated: switched off in this test"):
        family("looped_kv").load_validator()
    spec = ROOT / "specs" / "looped_kv" / "tiny-looped.json"
    planned = plan([spec], Options(out=tmp_path))
    assert planned.skipped == [{"spec": str(spec), "reason": "switched off in this test"}]


# ---- a toy fourth family (tests/conftest.py) ----------------------------------------------


def test_a_toy_family_goes_through_predict_and_validate(toy) -> None:
    pytest.importorskip("torch")
    from infoflow.cli import app

    runner = CliRunner()
    predicted = runner.invoke(app, ["predict", "-f", "json", str(toy / "right.json")])
    assert predicted.exit_code == 0, predicted.output
    assert json.loads(predicted.output)["predictions"]["double"]["value"] == 6
    schema = json.loads(runner.invoke(app, ["schema"]).output)
    assert "toy" in schema["discriminator"]["mapping"]

    out = toy / "run"
    specs = [str(toy / f"{name}.json") for name in ("right", "wrong", "negative")]
    ran = runner.invoke(app, ["validate", *specs, "--out", str(out), "--quiet", "--device", "cpu"])
    assert ran.exit_code == 0, ran.output
    report = json.loads((out / "report.json").read_text())
    verdicts = {spec["name"]: spec["claims"][0]["verdict"] for spec in report["specs"]}
    assert verdicts == {"right": "confirmed", "wrong": "refuted"}
    assert report["skipped"] == [{"spec": specs[2], "reason": "n must not be negative here"}]
    assert report["settings"] == {"toy": {"name": "smoke", "steps": 1}}
    assert "Toy: 1 step." in (out / "report.md").read_text()
    assert (out / "toy.txt").read_text() == "2"
    strict = runner.invoke(
        app,
        [
            "validate",
            *specs[:2],
            "--out",
            str(toy / "again"),
            "--quiet",
            "--device",
            "cpu",
            "--strict",
        ],
    )
    assert strict.exit_code == 1
