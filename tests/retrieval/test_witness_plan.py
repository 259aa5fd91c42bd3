"""What ``plan`` says of the construction claims before they run: the work it counts is the
work the claims do (builds and fine-tunes, the control once), its time estimate follows the
step-time models, and a device the spec's ``validation.build_on`` leaves out makes none."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")

from conftest import SPECS  # noqa: E402

import infoflow  # noqa: E402
from infoflow.validators.protocol import Context  # noqa: E402
from infoflow.validators.retrieval import construction, witness  # noqa: E402
from infoflow.validators.retrieval.design import choose, describe, with_floors  # noqa: E402
from infoflow.validators.retrieval.experiment import SCALES, Design, plan  # noqa: E402
from infoflow.validators.retrieval.witness_plan import (  # noqa: E402
    BUILD_OVERHEAD,
    construction_seconds,
    construction_work,
)
from infoflow.validators.steptime import StepTime  # noqa: E402
from infoflow.validators.store import Recorder  # noqa: E402

SUITE = SPECS / "retrieval" / "cpu-suite"
#: One seed and a short cap: the witness ladder builds each width once, and fine-tunes are
#: capped at 40 steps.
SHORT = replace(
    SCALES["smoke"],
    seeds=1,
    settings=replace(SCALES["smoke"].settings, steps=40, eval_every=10),
)


def _spec(name: str, **validation):
    data = json.loads((SUITE / f"{name}.json").read_text())
    if validation:
        data["validation"] = validation
    return infoflow.load_spec(data)


def _counted(monkeypatch, experiment, folder) -> tuple[list[int], list[int]]:
    """Run the construction claims with their results kept in ``folder``, counting each
    build's MLP width and each fine-tune's steps (not trained: a fixed result)."""
    widths, steps = [], []
    real_build = construction.build

    def build(spec, **kwargs):
        widths.append(kwargs.get("width", construction.WIDTH))
        return real_build(spec, **kwargs)

    def fine_tune(model, spec, tune, device, seed=0):
        steps.append(tune.steps)
        return 1.0, 0.5

    monkeypatch.setattr(construction, "build", build)
    monkeypatch.setattr(witness, "fine_tune", fine_tune)
    context = Context(torch.device("cpu"), Recorder(), folder)
    witness.construction_claims(with_floors(experiment), context)
    return widths, steps


@pytest.mark.slow  # builds the witness 15 times at T = 8: about 15 CPU s
def test_the_counted_work_is_the_work_the_claims_do_with_the_control_once(
    monkeypatch, tmp_path
) -> None:
    """Intrinsic dimension at T = 8: the witness (2, 2) and two ablations of a head each.
    The control is fine-tuned once for both (three fine-tunes, not four), and a resumed run
    computes none of it again."""
    experiment = plan("id", _spec("intrinsic-dimension"), SHORT, SUITE, Design((8,), None))
    (work,) = construction_work(experiment)
    widths, steps = _counted(monkeypatch, experiment, tmp_path)
    assert sorted(widths) == sorted(work.builds)
    assert work.fine_tunes == len(steps) == 3 and set(steps) == {40}
    assert _counted(monkeypatch, experiment, tmp_path) == ([], [])


def test_the_estimate_counts_builds_on_the_cpu_and_fine_tunes_on_the_device() -> None:
    experiment = plan("id", _spec("intrinsic-dimension"), SHORT, SUITE, Design((8,), None))
    (work,) = construction_work(experiment)
    free = StepTime("cpu", "free", 0.0, 0.0, "test")
    slow = StepTime("cpu", "slow", 0.01, 1e-9, "test")
    builds_only = construction_seconds(experiment, free, free)
    assert builds_only == pytest.approx(BUILD_OVERHEAD * len(work.builds))
    with_device = construction_seconds(experiment, free, slow)
    # the fine-tunes: steps and 11 held-out passes each, at least 10 ms apiece
    assert with_device - builds_only >= work.fine_tunes * (40 + 11) * 0.01
    assert construction_seconds(experiment, slow, free) > builds_only  # the forward passes
    on_gpu = replace(slow, device_type="cuda")
    assert construction_seconds(experiment, free, on_gpu) == pytest.approx(with_device)


def test_a_target_compile_does_not_build_costs_nothing() -> None:
    spec = _spec("triangle")  # no architecture efficient: no witness
    experiment = plan("triangle", spec, SHORT, SUITE, Design((8,), None))
    assert construction_work(experiment) == []
    assert construction_seconds(experiment, *[StepTime("cpu", "x", 1.0, 1.0, "t")] * 2) == 0


def test_a_device_left_out_of_build_on_makes_no_construction_claim(tmp_path) -> None:
    why = "settled on a CPU (docs/results)"
    spec = _spec("intrinsic-dimension", train_on=["cpu", "cuda"], build_on=["cuda"], why=why)
    experiment = choose("id", spec, SHORT, SUITE)
    assert experiment.not_built == f"no construction claim on cpu: {why}"
    assert experiment.construction_seconds == 0
    context = Context(torch.device("cpu"), Recorder(), tmp_path)
    assert witness.construction_claims(experiment, context) == ([], [])
    text = describe(experiment, "id.json")
    assert f"  no construction claim on cpu: {why}" in text and "witness heads" not in text
    built = choose("id", _spec("intrinsic-dimension", train_on=["cuda"], why=why), SHORT, SUITE)
    assert not built.not_built and built.construction_seconds > 0
    assert "construction claims (infoflow compile): about" in describe(built, "id.json")
