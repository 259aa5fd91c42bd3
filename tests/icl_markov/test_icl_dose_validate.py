"""End to end: a tiny race with K sweeps at three layer-1 rates, judged by the pre-registered
projection criterion; and what ``infoflow plan`` says before anything trains."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from conftest import run_cli

import infoflow

TINY_RACE = {
    "kind": "icl_markov",
    "states": 4,
    "chains": 4,
    "context_len": 16,
    "model": {"layers": 2, "d_model": 16, "heads": 2, "mlp_width": 32},
    "training": {"steps": 40, "batch_size": 8, "lr": 0.003},
    "race": {"chains": [2, 8]},
    "sweep": {"chains": [2, 4, 8], "training.layer1_attention_lr": [0.5, 1.0, 2.0]},
    "options": {"criterion": "projection_global"},
}


@pytest.mark.slow
def test_a_race_with_a_dose_response_is_judged_by_its_preregistered_criterion(tmp_path):
    """The later criterion version, whose plateau holds the training mixture's bigram B, in
    the sweeps and the clocks alike (K = infinity included: B of the pool)."""
    spec = tmp_path / "tiny-race.json"
    spec.write_text(json.dumps(TINY_RACE))
    out = tmp_path / "out"
    args = ["--seeds", "1", "--quiet", "--device", "cpu", "--no-plots", "--out", str(out)]
    proc = run_cli("validate", str(spec), *args)
    assert proc.returncode == 0, proc.stderr
    report = json.loads((out / "report.json").read_text())
    pre = report["settings"]["icl_markov"]["preregistered"]["tiny-race"]
    assert pre["criterion"] == "projection_global" and pre["weight"] == 0.5
    assert pre["references"]["B"] == "B"
    (section,) = report["specs"]
    ids = [claim["id"] for claim in section["claims"]]
    assert "k1_dose" in ids and any(i.endswith("k1_star_race") for i in ids)
    assert all(claim["kind"] for claim in section["claims"])
    assert all(claim["kind"] for g in section["groups"] for claim in g["claims"])
    group = section["groups"][0]
    assert group["measurement"]["criterion"] == pre
    assert set(group["measurement"]["ceiling"]["2"]["separability"]) == {
        "U",
        "G1",
        "B",
        "G2",
        "M1",
        "M2",
    }
    member = group["members"][0]
    assert len(member["weights"]["memorizing"]) == len(member["steps"])
    assert all(0 <= a <= 1 for a in member["previous_attention"])
    text = (out / "report.md").read_text()  # it named four plots --no-plots did not draw
    assert "; no plots (--no-plots)." in text and ".png" not in text
    weights = infoflow.load_report(out).figures()[f"{group['name']}-weights.png"]
    assert weights.axes and weights.axes[0].lines  # drawn from the run's own record
    clocks = section["clocks"][0]
    assert clocks["criterion"] == "projection_global"
    assert {"previous_head", "status"} <= set(clocks["members"][0])
    text = (out / "report.md").read_text()
    assert "Criterion (pre-registered): projection_global, the projection onto" in text
    assert "The ceiling:" in text and "\n| - |" not in text  # every table row has a kind


def test_plan_shows_the_ceiling_before_anything_trains_and_the_gpu_run() -> None:
    out = run_cli("plan", "specs/icl_markov/race-c3-short.json", "--seeds", "2")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any(line.startswith("    K = 16: ") and "testable" in line for line in lines)
    assert any("testable K:" in line and "predicted K*_1 range" in line for line in lines)
    assert any(
        "on a GPU: infoflow validate specs/icl_markov/race-c3-short.json --scale smoke --gpu"
        in line
        for line in lines
    )


@pytest.mark.slow  # 5.8-6.2 CPU s on one thread, 10.3 on two in a CI run (the limit is 10)
def test_plan_proposes_a_testable_setting_where_the_predicted_range_is_not() -> None:
    """A tolerance no reference meets at C = 3 makes the predicted range untestable; the plan
    says so and names a setting with more states that meets it."""
    out = run_cli(
        "plan",
        "specs/icl_markov/race-c3-short.json",
        "--seeds",
        "1",
        "--set",
        "options.criterion_tolerance=0.02",
    )
    assert out.returncode == 0, out.stderr
    assert "is NOT testable here" in out.stdout
    assert "proposed: --set states=" in out.stdout


def test_plan_says_whether_the_predicted_k2_can_be_tested() -> None:
    import infoflow
    from infoflow.validators.icl_markov.ceiling import plan_lines

    spec = infoflow.load_spec("specs/icl_markov/k2-c3.json")

    def lines(tolerance: float) -> str:
        options = spec.options.model_copy(update={"criterion_tolerance": tolerance})
        tuned = spec.model_copy(update={"options": options})
        return "\n".join(plan_lines(tuned, [16, 64], [0], (16.0, 32.0), 50.0))

    assert "the predicted K*_2 50 (K = 16, 64 around it) is testable" in lines(0.001)
    strict = lines(0.2)  # no reference is that far from another kind
    assert "the predicted K*_2 50 (K = 16, 64 around it) is NOT testable here" in strict
    assert "proposed: none of the nearby settings tried" in strict


def test_plan_reads_the_ceiling_on_at_most_eight_seeds(monkeypatch) -> None:
    """Each seed draws its own test set: plan --seeds 1000 ran past five minutes (a
    fresh-user audit, 2026-12-07); the first eight give the mean, and the plan says so."""
    import infoflow
    from infoflow.validators.icl_markov import ceiling

    spec = infoflow.load_spec("specs/icl_markov/k2-c3.json")
    read = []
    real = ceiling.ceilings
    monkeypatch.setattr(
        ceiling, "ceilings", lambda s, c, seeds: read.append(seeds) or real(s, c, seeds)
    )
    text = "\n".join(ceiling.plan_lines(spec, [16, 64], list(range(100)), (16.0, 32.0)))
    assert read[0] == list(range(8)) and "(nats, mean over the first 8 seeds)" in text
    text = "\n".join(ceiling.plan_lines(spec, [16, 64], [0, 1], (16.0, 32.0)))
    assert read[-1] == [0, 1] and "(nats, mean over the seeds)" in text


def test_a_proposed_setting_fits_the_scale_or_names_the_scale_it_needs() -> None:
    """k2-c3 at the smoke scale (contexts capped at 64): the plan proposed context_len=128,
    which the cap undid; it proposes a setting within the cap, and a context beyond it only
    with --scale paper. Only what changes is set."""
    import infoflow
    from infoflow.validators.icl_markov.ceiling import propose

    spec = infoflow.load_spec("specs/icl_markov/k2-c3.json")
    smoke = propose(spec, [16, 32, 64], [0], (16.0, 32.0), max_context=64)
    assert smoke.startswith("proposed: --set states=4 makes K = 16, 32, 64 testable")
    paper = propose(spec, [16, 32, 64], [0], (16.0, 32.0))
    assert paper.startswith("proposed: --set context_len=128 makes K = 16, 32, 64 testable")
    k2 = propose(spec.model_copy(update={"states": 4}), [128, 256], [0], (136.0, 136.0), 64)
    assert "--set context_len=256 --scale paper (this scale caps context_len at 64)" in k2


@pytest.mark.slow  # 512-state test sequences: about 6 CPU s
def test_a_spec_the_scale_capped_is_proposed_at_its_own_context() -> None:
    """park2025 at the smoke scale (its 512 capped to 64): K*_2's K are testable at its own
    context, so the proposal is --scale paper alone (it proposed 256, halving it: a review)."""
    import infoflow
    from infoflow.validators.icl_markov.ceiling import propose

    park = infoflow.load_spec("specs/icl_markov/park2025.json")
    capped = park.model_copy(update={"context_len": 64})
    own = propose(capped, [512, 1024], [0], (772.0, 772.0), max_context=64, own_context=512)
    assert own.startswith("proposed: --scale paper (this scale caps context_len at 64) makes")
    assert own.endswith("nats)")  # the spec's own setting: nothing predicted anew
