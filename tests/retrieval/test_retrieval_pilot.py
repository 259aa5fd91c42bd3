"""The design's pilot: the extrapolation on power laws of known slope, the members it
trains, a real pilot that stops at its step with the run's schedule, the design that takes
the best candidate its pilot calls learnable (else the best that fits, naming the others),
and the pilot in ``plan``, report.json and report.md."""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from conftest import SPECS, run_cli  # noqa: E402

import infoflow  # noqa: E402
from infoflow.validators.protocol import Context  # noqa: E402
from infoflow.validators.retrieval import design as design_module  # noqa: E402
from infoflow.validators.retrieval import pilot as pilot_module  # noqa: E402
from infoflow.validators.retrieval import timing  # noqa: E402
from infoflow.validators.retrieval.design import choose, sizes  # noqa: E402
from infoflow.validators.retrieval.experiment import SCALES, Design, plan  # noqa: E402
from infoflow.validators.retrieval.pilot import (  # noqa: E402
    Pilot,
    PilotMember,
    extrapolated,
    not_piloted,
    pilot,
    pilot_group,
    pilot_key,
    recorded_curves,
)
from infoflow.validators.retrieval.plan_text import describe  # noqa: E402
from infoflow.validators.retrieval.report import _design  # noqa: E402
from infoflow.validators.steptime import ASSUMED_H200, recorded  # noqa: E402
from infoflow.validators.store import Recorder  # noqa: E402

SMOKE = SCALES["smoke"]
POSITION = SPECS / "retrieval" / "cpu-suite" / "specific-position.json"


@pytest.mark.parametrize("slope", [-1.5, -0.5, -0.1])
def test_a_power_law_in_steps_is_extrapolated_exactly(slope) -> None:
    curve = {step: 0.7 * step**slope for step in range(100, 601, 100)}
    assert extrapolated(curve, 600, 2000) == pytest.approx(0.7 * 2000**slope)
    assert extrapolated(curve, 400, 2000) == pytest.approx(0.7 * 2000**slope)


def test_a_rising_curve_is_held_flat_and_too_few_evaluations_give_nothing() -> None:
    assert extrapolated({300: 0.2, 600: 0.3}, 600, 2000) == pytest.approx(0.3)
    assert extrapolated({600: 0.3}, 600, 2000) is None
    assert extrapolated({100: 0.3, 200: 0.2}, 600, 2000) is None  # nothing after the half


def test_the_pilot_trains_the_largest_rung_of_every_efficient_model_every_seed() -> None:
    spec = infoflow.load_spec(SPECS / "retrieval" / "kth-largest.json")
    experiment = plan("kth", spec, SMOKE, None, Design((8,), 16))
    (group,) = experiment.groups
    piloted = pilot_group(experiment, group)
    assert piloted.settings == group.settings and piloted.data_seed == group.data_seed
    largest = max(SMOKE.rungs)
    efficient = [m for m in experiment.models if experiment.expected[m].efficient]
    assert efficient and len(efficient) < len(experiment.models)
    assert len(piloted.members) == len(efficient) * SMOKE.seeds
    assert {m.hidden for m in piloted.members} == {largest}
    assert {m.seed for m in piloted.members} == set(range(SMOKE.seeds))
    assert {(m.heads, m.embed_dim) for m in piloted.members} == {
        (m.heads, m.embed_dim) for m in efficient
    }


@pytest.fixture
def short_pilot(monkeypatch):
    """Pilots of 100 steps whose training calls are counted (the ``until`` of each)."""
    monkeypatch.setattr(pilot_module, "PILOT_STEPS", 100)
    stopped, train = [], pilot_module.train_group
    monkeypatch.setattr(
        pilot_module,
        "train_group",
        lambda group, context, until: stopped.append(until) or train(group, context, until),
    )
    return stopped, train


def _position(steps: int, eval_every: int):
    """The specific position at T = 10, E = 8, with its floors, on a short cap."""
    short = replace(SMOKE, settings=replace(SMOKE.settings, steps=steps, eval_every=eval_every))
    spec = infoflow.load_spec(POSITION)
    return design_module.with_floors(plan("sp", spec, short, None, Design((10,), 8)))


def test_a_pilot_is_the_runs_first_steps_and_is_cached_on_disk(short_pilot) -> None:
    """A real pilot, shortened: 100 steps of a 200-step cap (the warmup is the cap's),
    trained to 50, then resumed to 100."""
    stopped, train = short_pilot
    experiment = _position(200, 50)
    found = pilot(experiment, "cpu")
    assert stopped == [50, 100]
    assert len(found.members) == SMOKE.seeds  # heads [1] with PE; its twin without PE is not
    threshold = experiment.floors[10].learns_below
    assert all(m.learns_below == threshold and 0 < m.extrapolated < 10 for m in found.members)
    group = pilot_group(experiment, experiment.groups[0])
    full, early = _curves(train, group, None), _curves(train, group, 100)
    assert max(early[0]) == 100 and max(full[0]) > 100  # stopped at the pilot's step
    for whole, start, member in zip(full, early, found.members, strict=True):
        assert start == {step: v for step, v in whole.items() if step <= 100}  # same schedule
        assert extrapolated(whole, 100, 200) == pytest.approx(member.extrapolated, rel=1e-6)
    stopped.clear()
    timing._CACHED.clear()  # another process: read back from the file
    assert pilot(experiment, "cpu") == found and stopped == []
    capped = _position(150, 50)
    assert pilot(capped, "cpu") is None and stopped == []  # under twice the pilot: none


def test_a_pilot_evaluates_half_way_whatever_the_evaluation_interval(short_pilot) -> None:
    stopped, _ = short_pilot
    found = pilot(_position(200, 40), "cpu")  # 40 does not divide 50: evaluated at 50 anyway
    assert stopped == [50, 100]
    assert all(m.extrapolated < pilot_module.DIVERGED for m in found.members)


def test_a_resumed_run_pins_its_pilots_numbers(short_pilot) -> None:
    stopped, _ = short_pilot
    experiment = _position(200, 50)
    group = pilot_group(experiment, experiment.groups[0])
    key = pilot_key(group)
    pinned = {f"pilot:cpu:{key}:{i}": 0.5 + i for i in range(len(group.members))}
    with recorded(pinned) as used:
        found = pilot(experiment, "cpu")
        assert dict(used) == pinned  # and recorded again
    assert [m.extrapolated for m in found.members] == [0.5, 1.5, 2.5] and stopped == []
    assert not found.learnable


def _curves(train, group, until) -> list[dict[int, float]]:
    """Each member's held-out NMSE by step, trained away from any store to ``until``."""
    recorder = Recorder()
    with tempfile.TemporaryDirectory() as folder:
        train(group, Context(torch.device("cpu"), recorder, Path(folder)), until)
    return recorded_curves(recorder, len(group.members))


def _called(learnable: bool) -> Pilot:
    value = 0.01 if learnable else 0.5
    return Pilot(600, (PilotMember("heads [1, 1], T=8, E=16, MLP 20, seed 0", 8, value, 0.1),))


@pytest.fixture
def fast_device(monkeypatch):
    fixed = ASSUMED_H200.__class__("cpu", "fast", 1e-3, 1e-13, "fixed for this test")
    monkeypatch.setattr(design_module, "step_model", lambda device: fixed)
    monkeypatch.setattr(design_module, "target_seconds", lambda *args: 0.0)


def test_the_design_takes_the_best_candidate_its_pilot_calls_learnable(
    monkeypatch, fast_device
) -> None:
    spec = infoflow.load_spec(SPECS / "retrieval" / "pairwise-min.json")
    unpiloted = choose("pm", spec, SMOKE, None)
    assert unpiloted.pilot is None  # the scale does not pilot
    calls: list[Design] = []

    def second_learns(experiment, device):
        calls.append(experiment.design)
        return _called(len(calls) == 2)

    monkeypatch.setattr(design_module, "pilot", second_learns)
    chosen = choose("pm", spec, replace(SMOKE, pilot=True), None)
    assert len(calls) == 2 and calls[0] == unpiloted.design  # the best first
    assert chosen.design == calls[1] and chosen.pilot.learnable
    assert chosen.pilot.passed_over == (sizes(calls[0]),)
    assert sizes(calls[0]) in chosen.pilot.sentence()


def test_when_no_pilot_says_learnable_the_best_that_fits_is_taken(monkeypatch, fast_device) -> None:
    spec = infoflow.load_spec(SPECS / "retrieval" / "pairwise-min.json")
    calls: list[Design] = []
    monkeypatch.setattr(
        design_module, "pilot", lambda e, device: calls.append(e.design) or _called(False)
    )
    chosen = choose("pm", spec, replace(SMOKE, pilot=True), None)
    assert len(calls) == design_module.PILOT_CANDIDATES
    assert chosen.design == calls[0] and not chosen.pilot.learnable
    assert chosen.pilot.passed_over == tuple(sizes(d) for d in calls[1:])
    no_cuda = replace(SMOKE, pilot=True, device="cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    calls.clear()
    assert choose("pm", spec, no_cuda, None).pilot is None and not calls  # cannot train here


def test_plan_says_why_a_design_has_no_pilot(fast_device) -> None:
    short = replace(SMOKE, pilot=True, settings=replace(SMOKE.settings, steps=1000))
    chosen = choose("sp", infoflow.load_spec(POSITION), short, None)
    assert "  pilot: none (the cap, 1,000 steps, is under twice the pilot's 600)" in describe(
        chosen, "sp"
    )
    triangle = infoflow.load_spec(SPECS / "retrieval" / "cpu-suite" / "triangle.json")
    planned = plan("tri", triangle, replace(SMOKE, pilot=True), None)
    assert not any(planned.expected[m].efficient for m in planned.models)
    assert not_piloted(planned) == "no model predicted efficient"
    assert "pilot" not in describe(choose("sp", infoflow.load_spec(POSITION), SMOKE, None), "sp")


def test_the_pilot_is_in_report_json_and_report_md() -> None:
    described = _called(False).describe()
    assert described["learnable"] is False and described["members"][0]["learns_below"] == 0.1
    design = {
        **Design((8,), 16).describe(),
        "step_time": "fixed",
        "groups": [],
        "pilot": {**described, "passed_over": ["T = 8, 16, E = 24"]},
    }
    text = _design(design)
    assert "The pilot (600 steps" in text and "not learnable" in text
    assert "extrapolated to NMSE 0.5 at the cap, learns below 0.1" in text
    assert "other designs piloted, not learnable: T = 8, 16, E = 24" in text
    assert "Over the budget" not in text


def test_report_md_says_when_the_design_is_over_the_budget() -> None:
    """plan said "over the budget: no design fits, this is the cheapest"; report.md did not
    (a fresh-user audit, 2026-12-07)."""
    group = {"name": "g", "members": 2, "steps_cap": 100, "estimated_seconds": 37.9}
    design = {**Design((8,), 16).describe(), "step_time": "fixed", "groups": [group]}
    over = _design({**design, "budget_seconds": 10.0})
    assert "**Over the budget of 10 s: no design fits, this is the cheapest.**" in over
    assert "Over the budget" not in _design({**design, "budget_seconds": 60.0})
    assert "Over the budget" not in _design({**design, "budget_seconds": None})


@pytest.mark.slow
def test_plan_pilots_once_and_a_second_plan_reads_the_cache() -> None:
    """``plan`` pilots (600 steps) and writes ``pilots-cpu.json``; a second ``plan`` prints
    the same and does not train (the file is not written again, and stderr says no pilot
    trains); ``--no-pilot`` pilots nothing."""
    pilots = Path(os.environ["INFOFLOW_CACHE"]) / "pilots-cpu.json"
    first = run_cli("plan", str(POSITION), "--budget", "8m")
    assert first.returncode == 0, first.stderr
    (line,) = [x for x in first.stdout.splitlines() if x.startswith("  pilot (600 steps")]
    assert "3 members): learnable" in line
    assert "piloting " in first.stderr and "600 steps (once: cached" in first.stderr
    written = pilots.stat().st_mtime_ns
    second = run_cli("plan", str(POSITION), "--budget", "8m")
    assert second.stdout == first.stdout and "piloting" not in second.stderr  # said as it trains
    assert pilots.stat().st_mtime_ns == written
    assert "pilot (" not in run_cli("plan", str(POSITION), "--no-pilot").stdout
