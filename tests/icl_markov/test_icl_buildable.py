"""Specs predict accepts but no model can be trained for (issue 29, item 7): refused by the
validator's plan with the field named, exit 2 in one line, before anything trains."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from conftest import run_cli

import infoflow
from infoflow.core.errors import SpecError
from infoflow.validators.icl_markov.experiment import SCALES, plan

TINY = {
    "kind": "icl_markov",
    "states": 3,
    "chains": 4,
    "context_len": 16,
    "model": {"layers": 2, "d_model": 16, "heads": 2, "mlp_width": 32},
    "training": {"steps": 120, "batch_size": 16, "lr": 0.003},
}
RACE = {"chains": [1, 4]}


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"states": 10**6}, "states", "transition matrices would take 29,802.3 GiB"),
        ({"model": {**TINY["model"], "d_model": 2**20}}, "model.d_model", "12,288.0 GiB"),
        ({"chains": 10**9}, "chains", "every K is above the smoke scale's 1,024 chains"),
        ({"model": {**TINY["model"], "layers": 1}, "race": RACE}, "model.layers", "two-layer"),
    ],
)
def test_an_untrainable_spec_is_refused_by_the_plan(changes, field, words) -> None:
    spec = infoflow.load_spec({**TINY, **changes})
    assert infoflow.predict(spec).predictions  # predict answers it
    with pytest.raises(SpecError) as error:
        plan("tiny", spec, SCALES["smoke"])
    assert error.value.problems[0][0] == field and words in str(error.value)


def test_the_same_specs_are_trainable_at_their_sizes() -> None:
    experiment = plan("tiny", infoflow.load_spec({**TINY, "race": RACE}), SCALES["smoke"])
    assert [g.chains for g in experiment.groups] == [[4]] and experiment.clocks


def test_validate_refuses_it_before_anything_is_written(tmp_path) -> None:
    path = tmp_path / "huge.json"
    path.write_text(json.dumps({**TINY, "states": 10**6}))
    out = tmp_path / "run"
    done = run_cli("validate", str(path), "--out", str(out), "--quiet")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert str(path) in done.stderr and "field 'states'" in done.stderr
    assert not out.exists()
