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
from infoflow.validators.retrieval.design import choose, with_floors  # noqa: E402
from infoflow.validators.retrieval.experiment import SCALES, Design, plan  # noqa: E402
from infoflow.validators.retrieval.plan_text import describe  # noqa: E402
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
    assert sorted(widths) == sorted(work.builds + work.ablation_builds)
    assert work.fine_tunes == len(steps) == 3 and set(steps) == {40}
    kept = [p for p in tmp_path.glob("witness-*.json") if json.loads(p.read_text()).get("ladder")]
    for path in kept:  # as an older rule wrote it: a kept ladder's slope is derived again
        record = json.loads(path.read_text())
        path.write_text(json.dumps({**record, "ladder": {**record["ladder"], "slope": "old"}}))
    assert _counted(monkeypatch, experiment, tmp_path) == ([], [])
    context = Context(torch.device("cpu"), Recorder(), tmp_path)
    _, records = witness.construction_claims(with_floors(experiment), context)
    ladders = [r["ladder"] for r in records if r.get("ladder")]
    assert len(ladders) == len(kept) >= 1 and all(lad["slope"] != "old" for lad in ladders)


#: Step-time models for the estimate's tests: assumed, so that no target's time is measured.
FREE = StepTime("cpu", "free", 0.0, 0.0, "test", assumed=True)
SLOW = StepTime("cpu", "slow", 0.01, 1e-9, "test", assumed=True)


def test_the_estimate_counts_builds_on_the_cpu_and_fine_tunes_on_the_device() -> None:
    experiment = plan("id", _spec("intrinsic-dimension"), SHORT, SUITE, Design((8,), None))
    (work,) = construction_work(experiment)
    builds_only = construction_seconds(experiment, FREE, FREE)
    builds = len(work.builds) + len(work.ablation_builds)
    assert builds_only == pytest.approx(BUILD_OVERHEAD * builds)
    with_device = construction_seconds(experiment, FREE, SLOW)
    # each fine-tune: 40 steps and 12 held-out evaluations of 4 chunks, 10 ms apiece at least
    assert with_device - builds_only >= work.fine_tunes * (40 + 12 * 4) * 0.01
    assert construction_seconds(experiment, SLOW, FREE) > builds_only  # the forward passes
    on_gpu = replace(SLOW, device_type="cuda")
    assert not work.float64  # float32 fine-tunes: the same count on either device
    assert construction_seconds(experiment, FREE, on_gpu) == pytest.approx(with_device)


def test_a_witness_that_reads_the_norm_fine_tunes_in_float64_twice_as_long_on_a_cpu() -> None:
    spec = _spec("triangle-control")  # the pair center, its ablation without a head
    spec = spec.model_copy(update={"sweep": {"architecture.heads": [[2, 2], [1, 2]]}})
    experiment = plan("control", spec, SHORT, SUITE, Design((8,), None))
    works = {work.model.heads: work for work in construction_work(experiment)}
    assert works[(2, 2)].fine_tunes == 2 and len(works[(2, 2)].ablation_builds) == 2
    assert all(work.float64 for work in works.values())
    builds_only = construction_seconds(experiment, FREE, FREE)
    on_cpu = construction_seconds(experiment, FREE, SLOW) - builds_only
    on_gpu = construction_seconds(experiment, FREE, replace(SLOW, device_type="cuda"))
    assert on_cpu > 0 and on_cpu == pytest.approx(2 * (on_gpu - builds_only))


def test_a_target_compile_does_not_build_costs_nothing() -> None:
    spec = _spec("triangle")  # no architecture efficient: no witness
    experiment = plan("triangle", spec, SHORT, SUITE, Design((8,), None))
    assert construction_work(experiment) == []
    assert construction_seconds(experiment, SLOW, SLOW) == 0


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
