"""icl_markov predictions: the published anchor, the working forms as symbolic identities,
the phase logic, calibration files (shipped, bad, refitted) and `infoflow calibrate`."""

from __future__ import annotations

import json
import math

import pytest
from conftest import ROOT, SPECS, park_only_calibration, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

import infoflow
from infoflow.core.errors import SpecError
from infoflow.icl_markov.calibration import LOWER_BOUND, SHIPPED, distance, load_calibration
from infoflow.icl_markov.fit import fit, regression
from infoflow.icl_markov.phases import FORMS, contradiction, regime

PARK = SPECS / "icl_markov" / "park2025.json"
SMOKE = SPECS / "icl_markov" / "smoke-c3.json"


def _spec(**fields):
    base = {
        "kind": "icl_markov",
        "states": 10,
        "chains": 64,
        "context_len": 512,
        "model": {"layers": 2, "d_model": 64, "heads": 4, "mlp_width": 256},
        "training": {"steps": 107979, "batch_size": 128, "lr": 6e-4, "weight_decay": 0.1},
    }
    base.update(fields)
    return infoflow.load_spec(base)


def test_park_settings_boundary_is_their_final_time_boundary_not_k1() -> None:
    """Park et al.'s Figure 1(a) threshold (2^5 to 2^6) is the final-phase boundary at their
    budget: predicted as ``final_boundary`` there and nowhere else (not scaled), and K*_1 does
    not come from it."""
    result = infoflow.predict(PARK)
    boundary = result["final_boundary"]
    assert 2**5 < boundary.value < 2**6 and boundary.interval == (32, 64)
    assert boundary.provenance.startswith("calibrated:park2025")
    assert "Figure 1(a)" in boundary.note and "107,979 steps" in boundary.note
    assert not result["k1_star"].provenance.startswith("calibrated:park2025")
    assert result["task_vector_generalizes"].value is False  # d_model 64 < C^2 = 100
    shorter = infoflow.predict(_spec(training={"steps": 6000, "batch_size": 128, "lr": 6e-4}))
    assert shorter["final_boundary"].value is None
    assert "steps 107,979 (here 6,000)" in shorter["final_boundary"].note


def test_the_figure_holds_only_with_parks_training_recipe() -> None:
    """Park et al.'s code clips the gradient to norm 0.01, has no warmup and decays every
    parameter (a review read it, 2026-12-06): park2025.json trains so, and the figure's
    boundary is not predicted for the default recipe, each difference named."""
    training = infoflow.load_spec(PARK).training
    assert (training.grad_clip, training.warmup_fraction, training.decay) == (0.01, 0, "all")
    for field, value in (("grad_clip", "null"), ("warmup_fraction", "0.02"), ("decay", "matrices")):
        other = infoflow.predict(
            infoflow.load_spec(PARK, ["sweep=null", f"training.{field}={value}"])
        )
        assert other["final_boundary"].value is None
        assert (
            field in other["final_boundary"].note
            and "other settings" in other["final_boundary"].note
        )
    k1 = infoflow.predict(infoflow.load_spec(PARK, ["sweep=null"]))["k1_star"]
    assert "grad_clip 0.01 vs None" in k1.note  # the smoke anchor's runs trained unclipped


def test_the_figure_holds_at_parks_mixture_and_rate_and_says_when_the_forms_disagree() -> None:
    """Park et al. draw mixture weights as normalised U(0, 1) (mixture "park"): their boundary
    holds there, not at the Dirichlet default, nor with layer 1's attention slowed (the
    intervention that moves it). Where final_phase, from K*_1 scaled by the working forms,
    puts K on the other side of the figure's bracket, a message says so."""
    assert infoflow.load_spec(PARK).mixture == "park"
    default = infoflow.predict(infoflow.load_spec(PARK, ["sweep=null", "mixture=random"]))
    assert default["final_boundary"].value is None and "mixture" in default["final_boundary"].note
    slowed = infoflow.load_spec(PARK, ["sweep=null", "training.layer1_attention_lr=0.5"])
    assert infoflow.predict(slowed)["final_boundary"].value is None
    messages = {
        chains: infoflow.predict(
            infoflow.load_spec(PARK, ["sweep=null", f"chains={chains}"])
        ).messages
        for chains in (16, 32, 45, 64, 128)
    }
    assert [k for k, said in messages.items() if said] == [64]  # K*_1 = 90 > 64: M2 at 64
    assert messages[64][0].startswith("final_phase M2 disagrees with the boundary measured")


def test_k1_scales_as_the_working_form_between_context_lengths(tmp_path) -> None:
    """K*_1(N) / K*_1(512) = (g(N) / g(512))^(1/a), g(N) = N / ln N, a from the file."""
    path = str(park_only_calibration(tmp_path))
    a = load_calibration(path).exponents.memorization.value
    g = lambda n: n / math.log(n)  # noqa: E731
    for n in (64, 128, 1024, 4096):
        k1 = infoflow.predict(_spec(context_len=n, calibration=path))["k1_star"]
        expected = 45.25 * (g(n) / g(512)) ** (1 / a)
        assert k1.value == pytest.approx(expected, abs=0.05)
        assert "context_len" in k1.note and "Calibrated on other settings" in k1.note


@settings(max_examples=40, deadline=None)
@given(
    st.integers(min_value=2, max_value=12),
    st.integers(min_value=1, max_value=64),
    st.integers(min_value=1, max_value=512),
)
def test_k2_is_the_capacity_form(states, d_heads, mlp) -> None:
    spec = _spec(
        states=states, model={"layers": 2, "d_model": 4 * d_heads, "heads": 4, "mlp_width": mlp}
    )
    k2 = infoflow.predict(spec)["k2_star"].value
    capacity = load_calibration().capacity.value  # the shipped constant (the decoder's fit)
    form = 2 * 4 * d_heads * mlp / (states * (states - 1))
    assert k2 == pytest.approx(capacity * form, abs=0.05)


def test_uncalibrated_timescales_say_so(tmp_path) -> None:
    path = park_only_calibration(tmp_path)
    result = infoflow.predict(_spec(chains=2, calibration=str(path)))
    assert result["tau_2gen"].value is None and result["tau_2gen"].provenance == "uncalibrated"
    assert result["phase_sequence"].value == ["G1", "M1", "M2"]
    assert result["final_phase"].provenance == "uncalibrated"


def test_a_constant_from_other_settings_says_which_differ() -> None:
    """The shipped tau_2Gen comes from the CPU smoke runs (C = 3, N = 64): at Park's setting
    it is scaled by g(512) / g(64) and the note lists what the working form ignores."""
    tau = infoflow.predict(_spec())["tau_2gen"]
    assert tau.provenance.startswith("calibrated:smoke-c3")
    assert "Calibrated on other settings (states 10 vs 3; context_len 512 vs 64" in tau.note
    g = lambda n: n / math.log(n)  # noqa: E731
    smoke = next(a for a in load_calibration().anchors if a.tau_2gen)
    assert tau.value == round(smoke.tau_2gen.value * g(512) / g(64))


def test_a_sequence_placed_by_scaled_thresholds_says_so() -> None:
    """The order of the phases is the paper's; where K falls among them rests on K*_1 and
    K*_2, which at other settings than the anchor's are scaled by the working forms."""
    at_anchor = infoflow.predict(SMOKE)
    assert FORMS not in at_anchor["k1_star"].provenance
    assert at_anchor["phase_sequence"].provenance == "paper:summary"
    scaled = infoflow.predict(PARK)
    assert FORMS in scaled["k1_star"].provenance
    assert scaled["phase_sequence"].provenance == f"paper:summary, placed by {FORMS}"


@pytest.mark.parametrize(
    ("spec", "overrides", "placed_by"),
    [
        ("smoke-c3.json", ["chains=10000"], "reconstruction:capacity"),
        ("smoke-c3.json", ["chains=64"], "reconstruction:capacity"),  # between: both
        ("race-c3.json", ["options.criterion=gap"], "mechanism:clock_race"),
    ],
)
def test_a_sequence_names_the_reconstruction_or_mechanism_that_placed_k(
    spec, overrides, placed_by
) -> None:
    """Above K*_2 (its capacity form is [R]) and where the clock race gives K*_1 the
    sequence read paper:summary alone (a fresh-user audit, 2026-12-07)."""
    loaded = infoflow.load_spec(SPECS / "icl_markov" / spec, ["sweep=null", *overrides])
    provenance = infoflow.predict(loaded)["phase_sequence"].provenance
    assert provenance.startswith("paper:summary, placed by ") and placed_by in provenance


@pytest.mark.parametrize(
    ("chains", "steps", "sequence", "final"),
    [
        (4, 100_000, ["G1", "M1", "M2"], "M2"),
        (4, 50, ["G1", "M1", "M2"], "G1"),  # before tau_1Mem(4) = 1000 (4/45.25)^0.7 = 183
        (100, 500, ["G1", "G2", "M2"], "G1"),  # before tau_2Gen
        (100, 2000, ["G1", "G2", "M2"], "G2"),  # tau_2Gen + transient = 1000 + 1000/0.8^2
        (100, 3000, ["G1", "G2", "M2"], "M2"),
        (600, 10**6, ["G1", "G2"], "G2"),
    ],
)
def test_phases_follow_the_timescales(tmp_path, chains, steps, sequence, final) -> None:
    path = park_only_calibration(tmp_path, tau_2gen={"value": 1000.0}, k2_star={"value": 500.0})
    training = {"steps": steps, "batch_size": 128, "lr": 6e-4, "weight_decay": 0.1}
    result = infoflow.predict(_spec(chains=chains, training=training, calibration=str(path)))
    assert result["phase_sequence"].value == sequence
    assert result["final_phase"].value == final
    assert result["tau_2gen"].value == 1000
    duration = result["transient_g2_duration"].value
    if sequence == ["G1", "G2", "M2"]:
        assert duration == round(1000 * (1 - chains / 500) ** -2)  # gamma = 2
    else:
        assert duration is None


def test_past_a_lower_bound_on_the_transient_no_final_phase_is_predicted(tmp_path) -> None:
    """A transient_scale that is only a lower bound (a G2 that persisted) bounds the transient
    from below: before its end the phase is still G2; after it, G2 or M2, so none is
    predicted (the K = 45 run of 2026-12-02 took "M2" from such a bound)."""
    path = park_only_calibration(tmp_path, tau_2gen={"value": 1000.0}, k2_star={"value": 500.0})
    data = json.loads(path.read_text())
    data["transient_scale"] = {"value": 1.0, "provenance": LOWER_BOUND, "source": "-"}
    path.write_text(json.dumps(data))
    for steps, final in ((2000, "G2"), (3000, None)):
        training = {"steps": steps, "batch_size": 128, "lr": 6e-4, "weight_decay": 0.1}
        result = infoflow.predict(_spec(chains=100, training=training, calibration=str(path)))
        assert result["transient_g2_duration"].bound == "lower"
        assert result["final_phase"].value == final
    assert "lasts at least 1,562 more" in result["final_phase"].note


def test_task_vector_criterion_is_d_model_against_c_squared() -> None:
    assert infoflow.predict(_spec(states=8))["task_vector_generalizes"].value is True  # 64 >= 64
    assert infoflow.predict(_spec(states=9))["task_vector_generalizes"].value is False
    option = _spec(states=9, options={"task_vector_dim": "mlp_width"})
    assert infoflow.predict(option)["task_vector_generalizes"].value is True


def test_bad_calibration_files_exit_2_naming_file_and_field(tmp_path) -> None:
    missing = run_cli("predict", str(PARK), "--set", "calibration=nope.json")
    assert missing.returncode == 2 and "calibration" in missing.stderr
    assert "Traceback" not in missing.stderr
    bad = tmp_path / "bad.json"
    data = json.loads(SHIPPED.read_text())
    del data["exponents"]["transient"]
    bad.write_text(json.dumps(data))
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({**json.loads(PARK.read_text()), "calibration": "bad.json"}))
    proc = run_cli("predict", str(spec))
    assert proc.returncode == 2 and "bad.json" in proc.stderr
    assert "exponents.transient" in proc.stderr and "Traceback" not in proc.stderr
    data = {**json.loads(SHIPPED.read_text()), "format": 99}  # read as format 1 until a review
    bad.write_text(json.dumps(data))
    later = run_cli("predict", str(spec))
    assert later.returncode == 2 and "field 'format': Input should be 1" in later.stderr


@pytest.mark.parametrize(
    ("change", "field", "said"),
    [  # a review, 2026-12-07: the first two were tracebacks (exit 1), the rest read silently
        (lambda d: d["anchors"][0].pop("budget_steps"), "anchors.0", "needs the steps"),
        (lambda d: d["anchors"][0]["final_boundary"].pop("high"), "final_boundary", "both"),
        (lambda d: d["capacity"].update(value=True), "capacity.value", "valid number"),
        (lambda d: d["anchors"][0]["settings"].update(mixture="x"), "settings", "mixture"),
        (lambda d: d["exponents"]["memorization"].update(value=0.001), "exponents", "0.05"),
    ],
)
def test_a_calibration_file_the_forms_cannot_read_is_refused(tmp_path, change, field, said):
    data = json.loads(SHIPPED.read_text())
    change(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(SpecError) as error:
        load_calibration(bad)
    assert "bad.json" in str(error.value) and field in str(error.value) and said in str(error.value)


# ---- refitting ---------------------------------------------------------------------------


def _report(slope: float, low=8, high=16, first_g2=(300, 320, 300)) -> dict:
    """A report as `infoflow validate` writes it, with tau_1Mem = 20 K^slope."""
    chains = [1, 2, 4, 8, 16, 32, 64]
    per_k = {}
    for k in chains:
        memorizes = k <= low
        per_k[str(k)] = {
            "outcome": "memorization" if memorizes else "generalization",
            "memorized_at": 20 * k**slope if memorizes else None,
            "transient_duration": None if memorizes else 100,
        }
    setting = infoflow.load_spec(SMOKE).model_dump(
        mode="json", exclude={"chains", "sweep", "description"}
    )  # as IclGroup.describe() writes it
    group = {
        "name": "smoke-c3-abc",
        "setting": setting,
        "chains": chains,
        "seeds": [0],
        "measurement": {
            "per_k": per_k,
            "k1_star": {"low": low, "high": high, "monotone": True, "undecided": []},
            "k2_star": {"low": None, "g2_persists_from": high},
            "tau_2gen": {
                "value": sorted(first_g2)[1],
                "min": min(first_g2),
                "max": max(first_g2),
                "checkpoint_ratio": 1.25,
            },
        },
    }
    return {
        "scale": "smoke",
        "device": "cpu",
        "started": "2026-11-29T19:00:00+00:00",
        "specs": [{"kind": "icl_markov", "name": "smoke-c3", "groups": [group]}],
    }


@settings(max_examples=25, deadline=None)
@given(st.floats(min_value=0.2, max_value=2.0))
def test_fit_recovers_the_memorization_exponent(slope) -> None:
    found = fit([("report.json", _report(slope))], load_calibration())
    memorization = found.calibration.exponents.memorization
    assert memorization.value == pytest.approx(slope, rel=1e-9)
    assert memorization.stderr <= 1e-6 and memorization.provenance == "fit:validate"


def test_a_slope_from_three_k_does_not_weigh_in_a() -> None:
    """Memorization won at K = 1, 2, 4 only: a near-perfect slope from three points would
    outweigh every other run by its tiny standard error, so a is kept."""
    three = fit([("report.json", _report(3.0, low=4, high=8))], load_calibration())
    assert three.calibration.exponents == load_calibration().exponents
    assert any("3 K; 4 needed" in str(line) for line in three.lines)
    four = fit([("report.json", _report(3.0))], load_calibration())  # K = 1, 2, 4, 8
    assert four.calibration.exponents.memorization.value == pytest.approx(3.0)


def test_a_leaves_out_the_k_where_the_ceiling_could_not_tell_memorizing_apart() -> None:
    """A run's ceiling marks memorizing untestable at K = 8: its "memorization" there (an
    early call, a = 0.07 from the committed dose-c3 run) is no point of the slope, so four
    of K = 1, 2, 4, 8 leave three and a is kept; K = 16 memorizing, testable, restores four."""
    report = _report(1.0, low=8)
    measurement = report["specs"][0]["groups"][0]["measurement"]
    measurement["per_k"]["8"]["memorized_at"] = 1.0  # far off the power law
    testable = {"memorizing": True, "generalizing": True}
    measurement["ceiling"] = {str(k): {"testable": testable} for k in (1, 2, 4, 16)}
    measurement["ceiling"]["8"] = {"testable": {**testable, "memorizing": False}}
    found = fit([("report.json", report)], load_calibration())
    assert found.calibration.exponents == load_calibration().exponents
    assert any(
        "3 K; 4 needed (memorizing untestable at K = [8])" in str(line) for line in found.lines
    )
    measurement["per_k"]["16"] = {"outcome": "memorization", "memorized_at": 20 * 16.0}
    measurement["per_k"]["16"]["transient_duration"] = None
    found = fit([("report.json", report)], load_calibration())
    assert found.calibration.exponents.memorization.value == pytest.approx(1.0)
    gap = {str(k): {"detectable": k != 8} for k in (1, 2, 4, 8, 16)}  # a gap run's ceiling
    measurement["ceiling"] = gap
    found = fit([("report.json", report)], load_calibration())
    assert found.calibration.exponents.memorization.value == pytest.approx(1.0)


def test_a_persisting_g2_bounds_the_transient_scale_from_below(tmp_path) -> None:
    """G2 persisted from tau_2Gen = 300 to step 1,500 at K = 16: with K*_2 = 3072 (capacity
    1 at C = 3, d_model 48, MLP 192) and gamma 2, transient_scale >= 1200 / (300 / (1 -
    16/3072)^2)."""
    report = _report(0.8)
    per_k = report["specs"][0]["groups"][0]["measurement"]["per_k"]
    for k in ("16", "32", "64"):
        per_k[k].update(transient_duration=None)
    found = fit([("report.json", report)], load_calibration(park_only_calibration(tmp_path)))
    expected = 1200 / (300 * (1 - 16 / 3072) ** -2)
    assert found.calibration.transient_scale.value == pytest.approx(expected)
    assert found.calibration.transient_scale.provenance == "fit:lower-bound"


def test_a_bound_below_the_current_transient_scale_is_shown_as_kept() -> None:
    """The table showed ">= bound" where the file kept the larger current value (a review):
    it shows the value kept and the bound in its note."""
    report = _report(0.8)
    per_k = report["specs"][0]["groups"][0]["measurement"]["per_k"]
    for k in ("16", "32", "64"):
        per_k[k].update(transient_duration=None)
    base = load_calibration()
    base = base.model_copy(
        update={"transient_scale": base.transient_scale.model_copy(update={"value": 1e6})}
    )
    found = fit([("report.json", report)], base)
    assert found.calibration.transient_scale.value == 1e6
    (line,) = [row for row in found.lines if row[0] == "transient_scale"]
    assert line[1] == "1e+06" and line[2].startswith("kept: these runs bound it only from below")


def test_regression_reports_its_uncertainty() -> None:
    slope, stderr = regression([0, 1, 2, 3], [0, 1.1, 1.9, 3.2])
    assert slope == pytest.approx(1.04) and 0 < stderr < 0.1


def test_calibrate_writes_a_file_that_predictions_use(tmp_path) -> None:
    report = tmp_path / "run" / "report.json"
    report.parent.mkdir()
    report.write_text(json.dumps(_report(0.8)))
    out = tmp_path / "refit.json"
    base = park_only_calibration(tmp_path)
    proc = run_cli(
        "calibrate", "icl_markov", str(report.parent), "--base", str(base), "--out", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    assert "a (memorization exponent)" in proc.stdout
    # the base's a is replaced, and the table says so (an audit, 2026-12-07: unsaid)
    assert "not pooled: give its reports too to pool them" in proc.stdout
    calibration = load_calibration(out)
    assert calibration.exponents.memorization.source.endswith(f"from {report}")
    names = [a.name for a in calibration.anchors]
    assert names == ["park2025", "smoke-c3-abc@2026-11-29"]
    spec = json.loads(SMOKE.read_text())
    spec["calibration"] = str(out)
    spec.pop("sweep")
    result = infoflow.predict(spec)
    assert result["k1_star"].value == pytest.approx(math.sqrt(8 * 16), abs=0.05)
    assert result["k1_star"].provenance.startswith("calibrated:smoke-c3-abc@2026-11-29")
    assert "Calibrated at these settings." in result["k1_star"].note
    assert result["tau_2gen"].value == 300
    assert result["tau_2gen"].interval == (pytest.approx(300 / 1.25), 320)
    steps = spec["training"]["steps"]
    assert calibration.anchors[1].run_steps == steps
    assert "Measured by" not in result["k1_star"].note
    spec["training"]["steps"] = 600  # another run length: said (it was not, a review)
    note = infoflow.predict(spec)["k1_star"].note
    assert f"Measured by runs of {steps:,} steps, this spec's are 600" in note


def test_calibrate_shows_a_reports_group_name_never_obeys_it(tmp_path) -> None:
    """A group name with terminal escapes and rich markup is printed escaped (issue 29)."""
    report = _report(0.8)
    report["specs"][0]["groups"][0]["name"] = "evil\x1b[31mRED\x07[bold]x[/bold]"
    (tmp_path / "report.json").write_text(json.dumps(report))
    out = tmp_path / "refit.json"
    proc = run_cli("calibrate", "icl_markov", str(tmp_path), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    assert "evil\\x1b[31mRED\\x07[bold]x[/bold]" in proc.stdout


def test_calibrate_rejects_what_it_cannot_use(tmp_path) -> None:
    assert run_cli("calibrate", "retrieval", str(tmp_path)).returncode == 2
    empty = tmp_path / "report.json"
    empty.write_text(json.dumps({"specs": []}))
    proc = run_cli("calibrate", "icl_markov", str(empty))
    assert proc.returncode == 2 and "no icl_markov results" in proc.stderr
    other = {"specs": [{"kind": "retrieval", "groups": []}]}  # among icl_markov reports
    with pytest.raises(infoflow.SpecError, match=r"^other\.json: .*no icl_markov results"):
        fit([("icl.json", _report(0.8)), ("other.json", other)], load_calibration())


def test_where_the_race_and_the_capacity_disagree_no_phase_is_predicted() -> None:
    """Issue 29, item 4: 2^53 states leave K*_2 far below one chain while K*_1 stays at 90;
    a K between them would memorize first (the race) but cannot store its chains (the
    capacity): no phase, with the reason, and K*_2 shown with its digits, not as 0.0."""
    huge = infoflow.predict(_spec(states=2**53, chains=64)).predictions
    k1, k2 = huge["k1_star"].value, huge["k2_star"].value
    assert 0 < k2 < 1e-20 and k1 > 64
    for name in ("phase_sequence", "final_phase"):
        assert huge[name].value is None and huge[name].provenance == "reconstruction:working_forms"
        assert "the race (memorization forms first) and the capacity" in huge[name].note
    # a context of 10^8 puts K*_1 above K*_2 too; K = 1, below both, is placed
    long = infoflow.predict(_spec(context_len=10**8, chains=1)).predictions
    assert long["k1_star"].value > long["k2_star"].value > 1
    assert long["phase_sequence"].value == ["G1", "M1", "M2"]


def test_a_race_spec_is_predicted_from_an_anchor_its_own_sweep_did_not_make() -> None:
    """smoke-c3 (1,500 steps) and race-c3 (600 steps) both measured at one setting: of
    anchors equally near the first listed is used, smoke-c3's, so a race-c3 K sweep is judged
    against numbers it did not calibrate (its own anchor would make its K*_1 claim circular)."""
    race = infoflow.predict(infoflow.load_spec(SPECS / "icl_markov" / "race-c3.json"))
    for quantity in ("k1_star", "tau_2gen"):
        assert race[quantity].provenance.startswith("calibrated:smoke-c3-98c2d3b1")
    assert (race["k1_star"].value, race["tau_2gen"].value) == (22.6, 263)


def test_a_single_layer_has_no_g2_and_so_no_race() -> None:
    """Edelman et al.: single-layer models never beat the in-context unigram, so G2 (and with
    it K*_1, tau_2Gen and the phase sequences) is not predicted for one layer."""
    one = infoflow.predict(_spec(model={"layers": 1, "d_model": 64, "heads": 4, "mlp_width": 256}))
    for name in ("k1_star", "tau_2gen", "phase_sequence", "final_phase"):
        assert one[name].value is None and one[name].provenance == "prior:edelman2024", name
        assert "single-layer models never beat the in-context unigram" in one[name].note
    assert one["k2_star"].value is not None  # the MLP's capacity does not need G2


def test_calibrate_records_where_the_capacity_was_fitted() -> None:
    """The decoder run behind the shipped capacity (2026-11-30): refitting from it gives the
    shipped constant and records its setting, which the K*_2 claim then leaves unjudged."""
    path = ROOT / "docs" / "results" / "2026-11-30-icl-decoder-c3-cpu" / "report.json"
    refit = fit([(path, json.loads(path.read_text()))], load_calibration()).calibration
    shipped = load_calibration().capacity
    assert refit.capacity.value == pytest.approx(shipped.value)
    assert refit.capacity.fitted_at == shipped.fitted_at
    model = {"layers": 2, "d_model": 16, "heads": 2, "mlp_width": 64}
    setting = {"states": 3, "context_len": 64, "dirichlet_alpha": 1.0, "model": model}
    assert refit.capacity.fitted_at == [setting]


def test_the_context_law_refuses_contexts_where_it_falls() -> None:
    """g(N) = N / ln N falls below N = e, so a context of 2 states gave larger thresholds
    than one of 3 (K*_1 5.7 against 5.4; a review found it): refused, exit 2, naming the
    field."""
    with pytest.raises(infoflow.SpecError, match="falls below N = e") as short:
        infoflow.predict(_spec(context_len=2))
    assert short.value.field == "context_len"
    assert infoflow.predict(_spec(context_len=3))["tau_2gen"].value > 0


@pytest.mark.parametrize(
    ("k1_fit", "expected", "why"),
    [
        (
            {"status": "fit", "value": 11.0, "low": 7.0, "high": 20.0, "outcomes": 21},
            (11.0, 7.0, 20.0),
            "logistic fit over 21 seed outcomes",
        ),
        (
            {"status": "separable", "value": None, "low": 8, "high": 12, "outcomes": 21},
            (math.sqrt(8 * 12), 8, 12),
            "every seed's outcome separates",
        ),
        (  # one side open: the grid bracket, saying why
            {"status": "fit", "value": 11.0, "low": None, "high": 20.0, "outcomes": 21},
            (math.sqrt(8 * 16), 8, 16),
            "(grid; the logistic fit: fit)",
        ),
        (None, (math.sqrt(8 * 16), 8, 16), "between 8 and 16 (grid)"),  # a report before it
    ],
)
def test_an_anchor_takes_the_logistic_fit_over_every_seed_where_it_is_two_sided(
    k1_fit, expected, why
) -> None:
    """The grid bracket reads the seeds' majority per K; the fit reads every seed's outcome
    (until 2026-12-06 calibrate used the grid alone: on the 2026-12-02 k2-c5 run 37.9 in [32,
    45] where the fit says 42.7 in [29.7, 61.1])."""
    report = _report(0.8)
    if k1_fit is not None:
        report["specs"][0]["groups"][0]["measurement"]["k1_fit"] = k1_fit
    found = fit([("report.json", report)], load_calibration())
    (anchor,) = [a for a in found.calibration.anchors if a.name.startswith("smoke-c3-abc")]
    k1 = anchor.k1_star
    assert (k1.value, k1.low, k1.high) == pytest.approx(expected)
    assert any(why in line[2] for line in found.lines if "K*_1" in line[0])


def test_the_final_phase_names_the_step_it_is_at() -> None:
    """A final G2 beside a phase sequence ending in M2 read as a contradiction (a review): the
    step is in the unit, shown after the value; a one-layer model's null has no step."""
    from infoflow.render import format_value

    result = infoflow.predict(_spec(chains=64))
    final = result["final_phase"]
    assert final.unit == f"at step {result.spec.training.steps:,}"
    assert format_value(final) == f"{final.value} {final.unit}"
    model = {"layers": 1, "d_model": 64, "heads": 4, "mlp_width": 256}
    one = infoflow.predict(_spec(chains=64, model=model))
    assert one["final_phase"].value is None and one["final_phase"].unit == ""


def test_calibrate_names_the_anchors_no_prediction_reads() -> None:
    """Of anchors at the same settings the first listed is read; the others were written and
    never used, unsaid (an audit, 2026-12-07). The shipped file has three such race-c3
    anchors, behind smoke-c3's at the same settings."""
    rows = load_calibration(None).shadowed()
    assert (
        "race-c3-3d08a2483ed5@2026-11-30: k1_star",
        "-",
        ("not read: smoke-c3-98c2d3b1@2026-11-29 is listed first at these settings"),
    ) in rows
    assert {name.split(":")[1].strip() for name, _, _ in rows} == {"k1_star", "tau_2gen"}


@pytest.mark.parametrize(
    ("k", "interval", "torn"),
    [
        (32, (64, math.inf), True),  # K < 64 < K*_1 and K >= K*_2: the two disagree
        (64, (64, math.inf), True),
        (10, (64, math.inf), False),  # below both: placed, below K*_1
        (80, (64, math.inf), False),  # K*_1 unknown against K: unplaced, not torn
        (32, (0.0, 16), False),  # K >= K*_1: above K*_2, placed
    ],
)
def test_a_one_sided_k1_below_which_k_chains_do_not_fit_is_a_contradiction(
    k, interval, torn
) -> None:
    """The race's K*_1 off its grid (> 64) with K*_2 = 15.4: a K of 32 was placed below
    K*_1, G1 -> M1 -> M2, where the capacity says the chains do not fit (a review)."""
    assert contradiction(k, None, 15.4, interval) is torn
    if torn:
        assert regime(k, None, 15.4, interval) == "below K*_1"  # what it was placed as


def test_predict_leaves_unplaced_a_k_under_the_race_s_bound_whose_chains_do_not_fit(tmp_path):
    """The race at half layer 1's rate bounds K*_1 > 64 (its tie off the grid); with a
    capacity that puts K*_2 at 15.4, K = 32 was placed G1 -> M1 -> M2 (a review)."""
    data = json.loads(SHIPPED.read_text())
    data["capacity"] = {"value": 0.005, "provenance": "default", "source": "-"}
    (tmp_path / "small.json").write_text(json.dumps(data))
    spec = json.loads((SPECS / "icl_markov" / "race-c3.json").read_text())
    spec.pop("sweep", None)
    spec["options"] = {"criterion": "gap"}
    spec["calibration"] = str(tmp_path / "small.json")
    spec["training"] = {**spec["training"], "layer1_attention_lr": 0.5}
    result = infoflow.predict({**spec, "chains": 32})
    k1, k2 = result["k1_star"], result["k2_star"].value
    assert k1.value is None and k2 <= 32 <= k1.interval[0]  # K*_2 <= K < K*_1
    assert result["phase_sequence"].value is None
    assert result["phase_sequence"].provenance == FORMS


def test_no_weight_decay_is_a_setting_predicted_at_not_a_division_by_zero() -> None:
    """weight_decay = 0 (the spec allows it) exited 2, "a division by zero", from the log
    ratio that finds the nearest anchor (a review): it is one category apart now."""
    spec = json.loads(SMOKE.read_text())
    spec.pop("sweep", None)
    spec["training"]["weight_decay"] = 0
    result = infoflow.predict(spec)
    decayed = infoflow.predict({**spec, "training": {**spec["training"], "weight_decay": 0.1}})
    assert result["k1_star"].value == decayed["k1_star"].value  # the same nearest anchor
    assert "weight_decay 0.0 vs 0.1" in result["k1_star"].note
    assert distance({"weight_decay": 0}, {"weight_decay": 0.1}) == 1
    assert distance({"weight_decay": 0}, {"weight_decay": 0}) == 0


def test_a_k_the_race_s_bound_leaves_unplaced_carries_the_race_s_provenance() -> None:
    """K = 32 beside the race's K*_1 > 25.2: no phase, for want of K*_1's value, not of a
    calibration; phase_sequence read "uncalibrated", and transient_g2_duration
    "paper:summary" whatever its reason (a review)."""
    spec = json.loads((SPECS / "icl_markov" / "race-c3.json").read_text())
    spec.pop("sweep", None)
    result = infoflow.predict({**spec, "chains": 32, "options": {"criterion": "gap"}})
    k1 = result["k1_star"]
    assert k1.value is None and k1.interval[0] < 32 and math.isinf(k1.interval[1])
    assert k1.provenance.startswith("mechanism:clock_race")
    for name in ("phase_sequence", "transient_g2_duration"):
        assert result[name].value is None
        assert result[name].provenance == k1.provenance, name


@pytest.mark.parametrize("chains", [2, 64, 2000])  # below K*_1, between, above K*_2
def test_the_result_names_its_spec_file_in_every_regime(chains: int) -> None:
    """A provenance named like the spec's source replaced it in the caption (a self-review
    of the transient's provenance: "paper:summary · icl_markov")."""
    spec = infoflow.load_spec(PARK, [f"chains={chains}", "sweep=null"])
    result = infoflow.predict(spec, source=str(PARK))
    assert result.caption() == f"{PARK} · icl_markov"
