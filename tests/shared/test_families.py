"""The registry of families: every kind is complete (predictor, validator, docs, specs),
nothing outside the registry and the family packages dispatches on a kind, an unknown kind
is an error everywhere, and a toy fourth family goes end to end through `predict` and
`validate` with only its own module and one registry entry."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from infoflow.checks import FamilyCheckError, check_family
from infoflow.core.errors import SpecError
from infoflow.families import FAMILIES, Family, family

PACKAGE = ROOT / "infoflow"


@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_every_registered_kind_is_complete(kind) -> None:
    """check_family's checks, the validator planning two bundled specs (every spec: the slow
    test below), and the family's packages where the registry expects them."""
    assert check_family(kind, plans=2) == []  # torch is installed: nothing left unchecked
    f = FAMILIES[kind]
    assert (ROOT / f.docs).is_file() and f.docs == f"docs/{kind}.md"
    assert (PACKAGE / kind).is_dir() and (PACKAGE / "validators" / kind).is_dir()


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_every_bundled_spec_of_a_kind_is_planned_into_groups(kind) -> None:
    assert check_family(kind) == []


def test_check_family_reports_what_a_family_gets_wrong(toy, monkeypatch) -> None:
    """The toy family has no docs page and no specs folder, and broken copies of it predict
    a name that is not snake_case or lack a method of the validator protocol."""
    with pytest.raises(FamilyCheckError) as found:
        check_family("toy")
    assert found.value.problems == [
        "no docs page (docs/<kind>.md)",
        "no bundled specs folder (specs/<kind>)",
    ]
    (toy / "specs" / "toy").mkdir(parents=True)
    (toy / "docs").mkdir()
    (toy / "docs" / "toy.md").write_text("# toy")
    (toy / "specs" / "toy" / "one.json").write_text(json.dumps({"kind": "toy", "n": 2}))
    entry = FAMILIES["toy"]
    monkeypatch.setitem(
        FAMILIES, "toy", Family(**{**vars(entry), "docs": "docs/toy.md", "specs": "specs/toy"})
    )
    assert check_family("toy", root=toy) == []  # complete now
    import toy_family

    good = toy_family.predict

    def bad_predict(spec, source=None):
        result = good(spec, source)
        return type(result)("toy", spec, {"Double": result["double"]}, source)

    monkeypatch.setattr(toy_family, "predict", bad_predict)
    with pytest.raises(FamilyCheckError, match="'Double' is not a snake_case name"):
        check_family("toy", root=toy)
    monkeypatch.setattr(toy_family, "predict", good)
    # every method of the protocol is checked (the list left out figures: a review)
    monkeypatch.delattr(toy_family.ToyValidator, "figures")
    with pytest.raises(FamilyCheckError, match=r"the validator lacks \['figures'\]"):
        check_family("toy", root=toy)
    monkeypatch.setattr(toy_family.ToyValidator, "figures", lambda self, s: {}, raising=False)
    monkeypatch.delattr(toy_family.ToyValidator, "run_options")  # the protocol's attributes too
    with pytest.raises(FamilyCheckError, match=r"the validator lacks \['run_options'\]"):
        check_family("toy", root=toy)


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
        "by_kind": {},
        "scale": "smoke",
        "device": "cpu",
        "started": "",
        "finished": "",
        "skipped": [],
        "specs": [{"kind": "nope", "name": "x"}],
    }
    with pytest.raises(SpecError, match="unknown kind 'nope'"):
        markdown(report)


def test_a_family_without_a_validator_is_listed_with_its_reason(monkeypatch, toy) -> None:
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
    planned = plan([spec, toy / "right.json"], Options(out=toy / "run"))
    assert planned.skipped == [{"spec": str(spec), "reason": "switched off in this test"}]
    assert len(planned.experiments) == 1
    # Nothing left to run: refused as bad input, naming the file and why (as plan does).
    with pytest.raises(SpecError, match=r"tiny-looped\.json: cannot be validated: switched off"):
        plan([spec], Options(out=toy / "alone"))


def test_validate_says_when_a_family_does_not_use_budget_or_compile(toy) -> None:
    """--budget and --compile size and compile retrieval only: another family's spec trains
    at its scale's settings, and validate says so (it ignored them silently, a review)."""
    pytest.importorskip("torch")
    from infoflow.validators.protocol import ignored_options
    from infoflow.validators.run import Options, plan

    given = Options(out=toy / "run", budget=60.0, compile=True)
    planned = plan([toy / "right.json", toy / "wrong.json"], given)
    validators = [validator for validator, _ in planned.experiments]
    assert ignored_options(validators, 60.0, True) == [  # once for the family
        "note: toy does not use --budget or --compile: its specs train at the scale's settings "
        "(`infoflow plan` estimates their time; --steps and --seeds change it)"
    ]
    assert ignored_options(validators, None, False) == []
    from infoflow.cli import app

    args = ["validate", str(toy / "right.json"), "--out", str(toy / "run"), "--device", "cpu"]
    ran = CliRunner().invoke(app, [*args, "--budget", "1m"])
    assert ran.exit_code == 0 and "note: toy does not use --budget: its" in ran.stderr, ran.output
    refused = CliRunner().invoke(app, [*args, "--budget", "1m"])  # the folder holds a run
    assert refused.exit_code == 2 and "does not use" not in refused.stderr, refused.stderr
    resumed = CliRunner().invoke(app, [*args, "--resume", "--quiet", "--budget", "1m"])
    assert resumed.exit_code == 0 and "does not use" not in resumed.stderr  # --quiet
    assert json.loads((toy / "run" / "report.json").read_text())["overrides"] == []
    retrieval, looped = (family(k).load_validator() for k in ("retrieval", "looped_kv"))
    assert ignored_options([retrieval], 60.0, True) == []
    (note,) = ignored_options([retrieval, looped], None, True)
    assert note.startswith("note: looped_kv does not use --compile:")


def test_the_report_says_which_set_values_every_spec_was_read_with(toy) -> None:
    """A run's specs are not their files' under --set: report.json and report.md say so."""
    pytest.importorskip("torch")
    from infoflow.cli import app

    out = toy / "run"
    args = ["validate", str(toy / "right.json"), "--out", str(out), "--device", "cpu", "--quiet"]
    ran = CliRunner().invoke(app, [*args, "--set", "n=4", "--set", "off_by_one=true"])
    assert ran.exit_code == 0, ran.output
    assert json.loads((out / "report.json").read_text())["overrides"] == ["n=4", "off_by_one=true"]
    assert (
        "Every spec read with `--set n=4`, `--set off_by_one=true`."
        in (out / "report.md").read_text()
    )


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
    import torch

    from infoflow.validators.threads import cpu_model

    environment = report["environment"]  # what the numbers' last bits depend on
    assert environment["threads"] == torch.get_num_threads() >= 1
    assert environment["torch"] == torch.__version__
    assert (
        environment["cpu"] == cpu_model() and environment["cpu"] in (out / "report.md").read_text()
    )
    header = f"(torch {torch.__version__} on {environment['threads']} threads, "
    assert header in (out / "report.md").read_text()
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
    refused = runner.invoke(app, ["validate", specs[2], "--out", str(toy / "none"), "--quiet"])
    assert refused.exit_code == 2 and "n must not be negative here" in refused.output
