"""``infoflow plan`` for the looped validator: every model it would train, and the GPU run."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from conftest import run_cli


def test_plan_lists_every_seed_and_width_and_the_gpu_command() -> None:
    out = run_cli("plan", "specs/looped_kv/looped-d256.json", "--scale", "paper", "--seeds", "2")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "2 seeds x widths 1x, 2x" in lines[0]
    models = [line for line in lines if "loops;" in line]
    assert len(models) == 4  # 2 seeds x 2 widths
    assert sum("d_model 512, MLP 2048" in line for line in models) == 2
    assert any("4,000 steps of 64 x 128 tokens" in line for line in models)
    measuring = [line for line in lines if "then the measurement of" in line]
    assert len(measuring) == 1 and "500 distillation steps a ratio" in measuring[0]
    assert "the 2 seeds at d_model 256" in measuring[0]  # every seed of the spec's width
    assert any(
        "on a GPU: infoflow validate specs/looped_kv/looped-d256.json --scale paper --gpu "
        "--seeds 2" in line
        for line in lines
    )


def test_the_gpu_command_repeats_the_plans_own_steps_and_overrides() -> None:
    """The command printed is the run the plan sized: --steps and every --set with it."""
    from infoflow.validators.steptime import gpu_line

    line = gpu_line("a b.json", "smoke", 1, 60.0, 30, ("sweep.chains=[4, 64]", "model.loops=2"))
    assert (
        "infoflow validate 'a b.json' --scale smoke --gpu --seeds 1 --steps 30 "
        "--set 'sweep.chains=[4, 64]' --set model.loops=2 (about 1.0 min" in line
    )
    out = run_cli(
        "plan", "specs/looped_kv/tiny-looped.json", "--steps", "50", "--set", "model.loops=2"
    )
    assert out.returncode == 0, out.stderr
    assert "--steps 50 --set model.loops=2 (about" in out.stdout


def test_plan_refuses_a_model_the_validator_cannot_train() -> None:
    out = run_cli("plan", "specs/looped_kv/ouro-1.4b.json")
    assert out.returncode == 2
    assert "cannot be validated" in out.stderr and "parameters" in out.stderr


@pytest.mark.parametrize("command", ["plan", "validate"])
def test_loops_beyond_the_validators_bound_are_refused_before_anything_runs(command) -> None:
    """Loops add no parameters: a billion passed the parameter cap and filled memory."""
    spec = "specs/looped_kv/tiny-looped.json"
    out = run_cli(command, spec, "--steps", "1", "--set", "model.loops=1000000000")
    assert out.returncode == 2, out.stderr
    assert "2,000,000,002 layer passes" in out.stderr and "up to 1,024" in out.stderr


@pytest.mark.slow  # two plans of an icl_markov spec: 9-15 CPU s, over the limit when loaded
def test_plan_says_compile_is_not_used_for_this_family() -> None:
    """Only the retrieval trainer compiles its step: the other families' plans say so."""
    from infoflow.validators.steptime import NOT_COMPILED

    looped, icl = "specs/looped_kv/tiny-looped.json", "specs/icl_markov/decoder-c3.json"
    plain = run_cli("plan", looped, "--device", "cuda").stdout.splitlines()
    both = run_cli("plan", looped, icl, "--device", "cuda", "--compile").stdout.splitlines()
    assert both.count(NOT_COMPILED) == 2 and NOT_COMPILED not in plain  # a line per spec
    looped_block = plain[:-1]  # without "estimated total": nothing else changes
    assert [line for line in both if line != NOT_COMPILED][: len(looped_block)] == looped_block


def test_the_measurement_counts_a_distillation_per_ratio_and_its_scored_passes() -> None:
    """One step per distillation step at each ratio of the grid (rho = T added when it is
    not on it), and five scored passes a ratio plus three: counted in steps of overhead."""
    from infoflow.validators.looped_kv.estimate import measurement_seconds
    from infoflow.validators.looped_kv.experiment import SCALES
    from infoflow.validators.looped_kv.measure import RHOS
    from infoflow.validators.looped_kv.model import LoopedConfig
    from infoflow.validators.steptime import StepTime

    launches = StepTime("cpu", "launches only", 1.0, 0.0, "a test")
    smoke = SCALES["smoke"]
    assert 4.0 in RHOS and 3.0 not in RHOS
    on_grid = measurement_seconds(LoopedConfig(loops=4), smoke, launches)
    off_grid = measurement_seconds(LoopedConfig(loops=3), smoke, launches)
    assert on_grid == len(RHOS) * (smoke.distill_steps + 5) + 3
    assert off_grid == (len(RHOS) + 1) * (smoke.distill_steps + 5) + 3


def test_a_models_estimate_counts_its_snapshots_of_the_structure() -> None:
    """Each snapshot: a forward pass on the calibration sequences, and the exact model's and
    one a ratio on the evaluation ones: counted in steps of overhead, with the training."""
    import infoflow
    from infoflow.validators.looped_kv.estimate import group_seconds
    from infoflow.validators.looped_kv.experiment import SCALES, plan
    from infoflow.validators.looped_kv.measure import RHOS
    from infoflow.validators.steptime import StepTime

    launches = StepTime("cpu", "launches only", 1.0, 0.0, "a test")
    spec = infoflow.load_spec("specs/looped_kv/tiny-looped.json")
    group = plan("tiny", spec, SCALES["smoke"]).structure[0]
    assert len(group.snapshots) == 3
    seconds = group_seconds(group, 100, 32, launches)
    assert seconds == 100 + 3 * (1 + len(RHOS) + 1)
