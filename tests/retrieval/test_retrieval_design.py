"""Claims derived from the engine's exponents at each model's own size, and experiments the
theory designs: every comparison's prediction agrees with the exponents, the two kinds of
comparison claim split the measurements, every bundled spec yields a verdict, the design
finds separations where the theory predicts them within a budget, and ``infoflow plan``
prints the design with its estimate."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")

from conftest import SPECS, run_cli  # noqa: E402

import infoflow  # noqa: E402
from infoflow.validators.retrieval import design as design_module  # noqa: E402
from infoflow.validators.retrieval import timing  # noqa: E402
from infoflow.validators.retrieval.claims import BAND, MARGIN, claims, untested  # noqa: E402
from infoflow.validators.retrieval.design import choose, designs, outcomes, seconds  # noqa: E402
from infoflow.validators.retrieval.experiment import SCALES, Design, Model, plan  # noqa: E402
from infoflow.validators.steptime import ASSUMED_H200, measure, step_time  # noqa: E402

RETRIEVAL = sorted((SPECS / "retrieval").glob("*.json"))
SMOKE = SCALES["smoke"]


def _comparisons(found):
    return [c for c in found if c.derived_from and "margin" in c.derived_from]


@pytest.mark.parametrize("path", RETRIEVAL, ids=lambda p: p.stem)
def test_every_comparison_says_what_the_exponents_at_its_models_say(path) -> None:
    spec = infoflow.load_spec(path)
    for candidate in designs(spec, path.parent)[::3]:
        planned = plan(path.stem, spec, SMOKE, path.parent, candidate)
        nmse = {m: [0.01, 0.012] for m in planned.models}
        every = claims(planned, nmse, SMOKE)
        found = _comparisons(every)
        tested = [(a, b) for a, b in planned.pairs if not _below_margin(planned, a, b)]
        assert len(found) == len(tested)
        small = [line for line in untested(planned, every) if "differ by less" in line]
        assert len(small) == len(planned.pairs) - len(tested)
        for (a, b), claim in zip(tested, found, strict=True):
            alpha_a = infoflow.predict(_point(spec, a))["cost_exponent"].value
            alpha_b = infoflow.predict(_point(spec, b))["cost_exponent"].value
            assert claim.derived_from[a.label()]["exponent"] == pytest.approx(alpha_a)
            assert claim.derived_from[b.label()]["exponent"] == pytest.approx(alpha_b)
            alpha_a, alpha_b = (math.inf if v is None else float(v) for v in (alpha_a, alpha_b))
            delta = 0 if alpha_a == alpha_b else abs(alpha_a - alpha_b)
            assert delta == 0 or delta >= MARGIN
            kind = "no separation" if delta == 0 else "separation"
            assert claim.predicted.startswith(kind)


def _below_margin(planned, a: Model, b: Model) -> bool:
    delta = abs(planned.exponent(a) - planned.exponent(b))
    return 0 < delta < MARGIN


def _point(spec, model: Model):
    """The spec at ``model``'s own size, built independently of the experiment."""
    heads = list(model.heads)
    arch = spec.architecture.model_copy(
        update={
            "layers": len(heads),
            "heads": heads,
            "embed_dim": model.embed_dim,
            "positional_encoding": model.positional_encoding,
        }
    )
    update = {"seq_len": model.seq_len, "architecture": arch, "sweep": None}
    return spec.model_copy(update=update)


def test_separation_and_equality_split_the_measurements() -> None:
    spec = infoflow.load_spec(SPECS / "retrieval" / "kth-largest.json")
    equal = plan("kth", spec, SMOKE, None, Design((8,), 16))  # both exponents 1 at T = 8, n = 16
    apart = plan("kth", spec, SMOKE, None, Design((8, 16, 32, 64), 16))  # 3.6 at T = 64
    one8, two8 = Model(8, 16, (1,), False), Model(8, 16, (1, 1), False)
    one64, two64 = Model(64, 16, (1,), False), Model(64, 16, (1, 1), False)
    assert equal.exponent(one8) == equal.exponent(two8) == 1
    assert apart.exponent(one64) - apart.exponent(two64) >= MARGIN
    for ratio, separated in ((5.0, True), (1.2, False)):
        for planned, one, two in ((apart, one64, two64), (equal, one8, two8)):
            nmse = {m: [0.01] * 2 for m in planned.models} | {one: [0.01 * ratio] * 2}
            claim = _claim_for(planned, nmse, one, two)
            holds = separated if planned is apart else not separated
            assert claim.verdict == ("confirmed" if holds else "refuted"), claim


def _claim_for(planned, nmse, a: Model, b: Model):
    """The comparison claim about the pair {a, b}."""
    found = _comparisons(claims(planned, nmse, SMOKE))
    tested = [pair for pair in planned.pairs if not _below_margin(planned, *pair)]
    by_pair = {frozenset(pair): c for pair, c in zip(tested, found, strict=True)}
    return by_pair[frozenset((a, b))]


def test_a_model_that_learned_nothing_decides_nothing() -> None:
    spec = infoflow.load_spec(SPECS / "retrieval" / "kth-largest.json")
    planned = plan("kth", spec, SMOKE, None, Design((8, 16, 32, 64), 16))
    stuck = {m: [0.9, 0.95] for m in planned.models}
    assert {c.verdict for c in _comparisons(claims(planned, stuck, SMOKE))} == {"inconclusive"}


@pytest.fixture
def fast_device(monkeypatch):
    """Designs against a device that trains anything in a minute."""
    fixed = ASSUMED_H200.__class__("cpu", "fast", 1e-3, 1e-13, "fixed for this test")
    monkeypatch.setattr(design_module, "step_time", lambda device: fixed)
    monkeypatch.setattr(design_module, "target_seconds", lambda *args: 0.0)


@pytest.mark.parametrize("path", RETRIEVAL, ids=lambda p: p.stem)
def test_every_bundled_spec_yields_a_claim_that_can_be_decided(path, fast_device) -> None:
    spec = infoflow.load_spec(path)
    chosen = choose(path.stem, spec, SMOKE, path.parent)
    learned = {m: [0.01, 0.011] for m in chosen.models}
    decided = [c for c in claims(chosen, learned, SMOKE) if c.verdict != "inconclusive"]
    assert decided, f"{path.stem}: no claim can be decided at {chosen.design}"


@pytest.mark.parametrize(
    "name", ["kth-largest", "pairwise-min", "intrinsic-dimension-D3", "triangle-center"]
)
def test_the_design_finds_the_separations_the_theory_predicts(name, fast_device) -> None:
    spec = infoflow.load_spec(SPECS / "retrieval" / f"{name}.json")
    chosen = choose(name, spec, SMOKE, None)
    separated = [row for row in outcomes(chosen) if row[-1] == "separation"]
    assert separated, f"{name}: {chosen.design} tests no separation"
    best_at_spec_size = plan(name, spec, SMOKE, None, Design((16,), None))
    count = sum(row[-1] == "separation" for row in outcomes(best_at_spec_size))
    assert len(separated) >= count


def test_a_budget_is_respected_or_the_cheapest_design_is_taken(monkeypatch) -> None:
    slow = ASSUMED_H200.__class__("cpu", "slow", 0.01, 1e-10, "fixed for this test")
    monkeypatch.setattr(design_module, "step_time", lambda device: slow)
    monkeypatch.setattr(design_module, "target_seconds", lambda *args: 0.0)
    spec = infoflow.load_spec(SPECS / "retrieval" / "pairwise-min.json")
    every = [
        design_module.estimate(plan("pm", spec, SMOKE, None, d), slow) for d in designs(spec, None)
    ]
    assert max(map(seconds, every)) > SMOKE.budget_seconds  # the budget rules some out
    assert seconds(choose("pm", spec, SMOKE, None)) <= SMOKE.budget_seconds
    tight = choose("pm", spec, replace(SMOKE, budget_seconds=1), None)
    assert seconds(tight) == pytest.approx(min(map(seconds, every)))


def test_the_paper_scale_trains_the_spec_as_written(fast_device) -> None:
    spec = infoflow.load_spec(SPECS / "retrieval" / "intrinsic-dimension-D4.json")
    chosen = choose("id4", spec, SCALES["paper"], None)
    assert chosen.design == Design() and {m.seq_len for m in chosen.models} == {64}
    assert {m.embed_dim for m in chosen.models} == {60}


def test_step_time_is_measured_on_this_machine(monkeypatch) -> None:
    model = measure(torch.device("cpu"))
    assert model.overhead >= 0 and model.per_flop > 0 and "measured" in model.source
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert step_time("cuda") is ASSUMED_H200


def test_a_target_is_timed_once_then_read_from_the_cache(monkeypatch) -> None:
    spec = infoflow.load_spec(SPECS / "retrieval" / "pairwise-min.json")
    first = timing.target_seconds(spec, 12, 64, "cpu")

    def measure_again(*args):
        raise AssertionError("measured again")

    monkeypatch.setattr(timing, "_time_target", measure_again)
    assert timing.target_seconds(spec, 12, 64, "cpu") == first > 0


def test_plan_prints_exponents_claims_and_estimates() -> None:
    proc = run_cli("plan", str(SPECS / "retrieval" / "kth-largest.json"), "--budget", "1h")
    assert proc.returncode == 0, proc.stderr
    assert "budget 60.0 min" in proc.stdout and "fixed for the tests" in proc.stdout
    assert "separation" in proc.stdout and "estimated total:" in proc.stdout
    gpu = run_cli(
        "plan",
        str(SPECS / "retrieval" / "intrinsic-dimension-D2.json"),
        "--scale",
        "paper",
        "--device",
        "cuda",
    )
    assert gpu.returncode == 0, gpu.stderr
    assert ("assumed" in gpu.stdout) != torch.cuda.is_available()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--budget", "soon"], "not a duration"),
        (["--budget", "0s"], "--budget"),
    ],
)
def test_plan_refuses_bad_options_in_one_line(args, message) -> None:
    proc = run_cli("plan", str(SPECS / "retrieval" / "kth-largest.json"), *args)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_plan_is_for_retrieval_and_icl_markov_specs() -> None:
    proc = run_cli("plan", str(SPECS / "looped_kv" / "deepseek-v3.json"))
    assert proc.returncode == 2 and "'plan' is not available for looped_kv" in proc.stderr


@pytest.mark.slow
def test_validate_records_the_design_in_the_report(tmp_path) -> None:
    out = tmp_path / "run"
    proc = run_cli(
        "validate",
        str(SPECS / "retrieval" / "kth-largest.json"),
        "--steps",
        "2",
        "--seeds",
        "1",
        "--quiet",
        "--device",
        "cpu",
        "--out",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads((out / "report.json").read_text())
    (section,) = report["specs"]
    design = section["design"]
    assert design["step_time"] == "fixed for the tests" and design["groups"]
    for group in design["groups"]:
        seconds = report["throughput"][group["name"]]["seconds"]
        assert group["estimated_seconds"] > 0 and seconds > 0
    for claim in section["claims"]:
        if "margin" in (claim.get("derived_from") or {}):
            assert claim["derived_from"]["band"] == BAND


def _train_briefly(device: torch.device, folder):
    """Train two tiny members for 40 steps on ``device``; their model and held-out inputs."""
    from infoflow.validators.protocol import Context
    from infoflow.validators.retrieval.model import Member
    from infoflow.validators.retrieval.train import Group, TrainSettings, load_trained, train_group
    from infoflow.validators.store import Recorder

    spec = infoflow.load_spec(SPECS / "retrieval" / "kth-largest.json")
    settings = TrainSettings(steps=40, batch=32, eval_every=20, eval_size=128)
    members = [Member((1, 1), False, seed, 16) for seed in range(2)]
    group = Group("brief", spec, 8, members, ["a", "b"], settings)
    store = Recorder()
    train_group(group, Context(device, store, folder, None))
    *_, (_, (_, _, final)) = [row for row in store.rows if row[0] == "record_metrics"]
    assert all(0 < row["eval:nmse"] < 10 for row in final)
    return load_trained(group, device, folder)


def test_the_device_path_runs_on_the_cpu(tmp_path) -> None:
    model, x = _train_briefly(torch.device("cpu"), tmp_path)
    assert x.device.type == "cpu" and model(x[:8]).dtype == torch.float32


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_the_gpu_path_trains_in_bf16_with_a_fused_optimiser_on_device_data(tmp_path) -> None:
    from infoflow.validators.ensemble import precision
    from infoflow.validators.retrieval.train import TrainSettings, make_optimizer

    cuda = torch.device("cuda")
    model, x = _train_briefly(cuda, tmp_path)
    assert x.device.type == "cuda" and next(model.parameters()).device.type == "cuda"
    with precision(cuda):  # what train_group trains under
        assert model(x[:8]).dtype == torch.bfloat16
    optimizer = make_optimizer(model, TrainSettings(steps=1, batch=1), cuda)
    assert optimizer.param_groups[0]["fused"]
    assert not step_time("cuda").assumed


def test_a_single_inefficient_point_is_compared_with_itself_at_half_the_length() -> None:
    spec = infoflow.load_spec(
        {
            "kind": "retrieval",
            "input_dim": 2,
            "seq_len": 16,
            "target": "min(norm(x[a] + x[b] + x[c]) for a in T for b in T for c in T)",
            "architecture": {"layers": 1, "heads": 1, "embed_dim": 8},
        }
    )
    planned = plan("triangle", spec, SMOKE)
    assert planned.pairs == [(Model(16, 8, (1,), False), Model(8, 8, (1,), False))]
    learned = {m: [0.01, 0.011] for m in planned.models}
    (claim,) = claims(planned, learned, SMOKE)
    assert claim.predicted.startswith("separation") and claim.verdict == "refuted"


def test_a_spec_that_leaves_sizes_open_is_planned_at_the_defaults(fast_device) -> None:
    spec = infoflow.load_spec(
        {
            "kind": "retrieval",
            "architecture": {"layers": 1, "heads": 1},
            "target": "min(dot(x[s], x[t]) for s in T for t in T)",
        }
    )
    for candidate in designs(spec, None):
        planned = plan("open", spec, SMOKE, None, candidate)
        assert all(math.isfinite(planned.exponent(m)) for m in planned.models)
    chosen = choose("open", spec, SMOKE, None)
    assert {m.seq_len for m in chosen.models} <= {8, 16} and chosen.pairs


def test_infeasible_models_are_never_compared_with_each_other() -> None:
    spec = infoflow.load_spec(SPECS / "retrieval" / "specific-position.json")
    for candidate in designs(spec, None):
        planned = plan("positions", spec, SMOKE, None, candidate)
        assert all(
            math.isfinite(planned.exponent(a)) or math.isfinite(planned.exponent(b))
            for a, b in planned.pairs
        )
        assert {m.seq_len for m in planned.models} == set(candidate.seq_lens)


def test_candidate_widths_are_multiples_of_every_head_count() -> None:
    for path in RETRIEVAL:
        spec = infoflow.load_spec(path)
        heads = {
            h for _, p in infoflow.expand(spec, path.parent) for h in p.architecture.heads_per_layer
        }
        for candidate in designs(spec, path.parent):
            assert candidate.embed_dim is None or all(candidate.embed_dim % h == 0 for h in heads)


def test_a_separation_the_other_way_round_is_refuted() -> None:
    spec = infoflow.load_spec(SPECS / "retrieval" / "kth-largest.json")
    planned = plan("kth", spec, SMOKE, None, Design((64,), 16))
    one, two = Model(64, 16, (1,), False), Model(64, 16, (1, 1), False)
    nmse = {one: [0.01, 0.012], two: [0.2, 0.21]}  # the one predicted worse learned
    claim = _claim_for(planned, nmse, one, two)
    assert claim.verdict == "refuted" and "predicted worse, converged" in claim.reason


def test_differences_under_the_margin_are_listed_as_untested_not_claimed() -> None:
    spec = infoflow.load_spec(SPECS / "retrieval" / "kth-largest.json")
    planned = plan("kth", spec, SMOKE, None, Design((24,), 16))  # one layer: 21/17 = 1.24
    small = [(a, b) for a, b in planned.pairs if _below_margin(planned, a, b)]
    nmse = {m: [0.01, 0.011] for m in planned.models}
    listed = [
        line
        for line in untested(planned, claims(planned, nmse, SMOKE))
        if "differ by less than the margin" in line
    ]
    assert small and len(listed) == len(small)
