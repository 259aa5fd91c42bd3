"""The icl_markov verdict gates pre-registered in
docs/results/2026-12-05-icl-looped-verdicts-preregistered.md: each test feeds the judging
function the synthetic input on which the old rule decided against its own docs."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

pytest.importorskip("torch")

from infoflow.icl_markov.fit import _no_transient
from infoflow.validators.icl_markov.clocks.judge import coupling_claim
from infoflow.validators.icl_markov.decoder.claims import decoder_claims
from infoflow.validators.icl_markov.decoder.data import STEPS
from infoflow.validators.icl_markov.decoder.judge import measure_decoder
from infoflow.validators.icl_markov.kinds import CLAIM_KINDS
from infoflow.validators.icl_markov.ksweep import claims as ksweep
from infoflow.validators.icl_markov.ksweep import phases, thresholds, times
from infoflow.validators.icl_markov.ksweep.over_seeds import (
    censored_median,
    majority_median,
)
from infoflow.validators.store import Store

SEEN = {"detectable": True, "reason": ""}
BLIND = {"detectable": False, "reason": "even a perfect M2 has ID KL 0.8 x its OOD KL"}


def _history(k, seed, outcome, *, first_g2=100, memorized=None, transient=None, prev=None):
    last = "G2" if transient is None else "M2"
    call = phases.Call(last, last, "G1", 1.0, (last,))
    history = phases.MemberHistory(
        k, seed, [10, 100, 1000], [call] * 3, {"id:truth": 0.1, "ood:truth": 0.2}
    )
    history.outcome, history.first_g2, history.memorized_at = outcome, first_g2, memorized
    history.transient_duration, history.previous_head = transient, prev
    return history


def _sweep(transients: int, limit: dict):
    """K = 16 memorizes; K = 256 generalizes, ``transients`` of its three seeds with a
    transient G2 (G2 giving way to M2)."""
    histories = [_history(16, s, "memorization", first_g2=None, memorized=100) for s in range(3)]
    histories += [
        _history(256, s, "generalization", transient=500 if s < transients else None)
        for s in range(3)
    ]
    return thresholds.measure(histories, limit)


def test_k2_star_takes_the_seeds_majority_and_only_detectable_k() -> None:
    limit = {16: SEEN, 256: SEEN}
    one = _sweep(1, limit)  # one seed of three: not the K's
    assert one["per_k"][256]["transient_duration"] is None and one["k2_star"]["low"] is None
    assert ksweep._k2_star(200, one["k2_star"], limit).verdict == "inconclusive"
    two = _sweep(2, limit)
    claim = ksweep._k2_star(200, two["k2_star"], limit)
    assert claim.verdict == "refuted" and "K=256" in claim.reason
    blind = {16: SEEN, 256: BLIND}  # a transient where memorization cannot be seen
    assert ksweep._k2_star(200, _sweep(2, blind)["k2_star"], blind).verdict == "inconclusive"


def _final(final, measured_kind, limit=SEEN, gap_rule=True, id_kl=0.1, ood_kl=0.12):
    measured = {
        "final_phase": "M2" if measured_kind == "memorizing" else measured_kind,
        "final_kind": measured_kind,
        "id_kl": id_kl,
        "ood_kl": ood_kl,
    }
    return ksweep._final_phase(96, final, measured, limit, measured, "", gap_rule)


def test_a_final_phase_without_prediction_or_under_the_ceiling_is_not_judged() -> None:
    assert _final(None, "G2").verdict == "inconclusive"
    assert "no final phase is predicted" in _final(None, "G2").reason
    assert _final("G2", "G2").verdict == "confirmed"
    assert _final("G2", "memorizing").verdict == "refuted"
    for kind in ("G2", "memorizing"):  # a blind K cannot tell them apart
        assert _final("G2", kind, BLIND).verdict == "inconclusive"


def test_an_undetermined_last_checkpoint_names_its_criterions_rule() -> None:
    """Under the projection an undetermined checkpoint cited the gap rule's margin (an
    audit, 2026-12-07): each criterion names its own rule."""
    gap = _final("G2", "undetermined", gap_rule=True)
    assert gap.verdict == "inconclusive" and "by the margin 0.33" in gap.reason
    projected = _final("G2", "undetermined", gap_rule=False)
    assert projected.verdict == "inconclusive"
    assert projected.reason.endswith("no kind carries 0.5 of the mixture")


def test_the_gap_check_applies_only_under_the_gap_criterion() -> None:
    """A perfect M2 at C = 3, K = 96 sits at about 0.55 of its OOD KL: the projection calls it
    memorizing, the KL-gap rule (0.5) does not."""
    assert _final("M2", "memorizing", gap_rule=False, id_kl=0.3, ood_kl=0.5).verdict == "confirmed"
    assert _final("M2", "memorizing", gap_rule=True, id_kl=0.3, ood_kl=0.5).verdict == "refuted"


def test_the_final_boundary_is_bracketed_over_detectable_k_only() -> None:
    prediction = SimpleNamespace(value=150.0, interval=(100.0, 200.0), note="")
    kinds = {16: "memorizing", 32: "memorizing", 64: "G2", 128: "G2", 256: "G2"}
    per_k = {k: {"final_kind": kind} for k, kind in kinds.items()}
    seen = {k: SEEN for k in kinds}
    assert ksweep.final_boundary(prediction, per_k, seen).verdict == "refuted"  # 32 to 64
    claim = ksweep.final_boundary(prediction, per_k, {**seen, 64: BLIND})
    assert claim.verdict == "inconclusive" and "cannot be seen at K = [64]" in claim.reason
    assert claim.measured["bracket"] == [32, 128]


def test_times_never_reached_count_as_later_than_every_other() -> None:
    assert censored_median([20, 150, None]) == 150  # the dropped seed made it 85
    assert censored_median([150, None, None]) is None
    assert majority_median([500, None, None]) is None and majority_median([500, 300, None]) == 400


def _slows(*seeds, ratio=1.33):
    """memorization_slows on K = 4, 8, 16, each seed's tau_1Mem at them."""
    per_k = {
        k: {"outcome": "memorization", "memorized_ats": {s: t[i] for s, t in enumerate(seeds)}}
        for i, k in enumerate((4, 8, 16))
    }
    return times.memorization_slows({"per_k": per_k, "tau_2gen": {"checkpoint_ratio": ratio}})


def test_memorization_slows_needs_a_rise_beyond_one_checkpoint() -> None:
    """Checkpoints 1.33 apart: one step of jitter either way decides nothing."""
    assert _slows([100, 100, 133]).verdict == "inconclusive"
    assert _slows([133, 100, 100]).verdict == "inconclusive"
    assert _slows([100, 200, 400]).verdict == "confirmed"
    assert _slows([400, 200, 100]).verdict == "refuted"
    assert _slows([100, 200, 400]).measured["rises"][0] == pytest.approx(4.0)


def test_memorization_slows_is_judged_seed_by_seed() -> None:
    """docs/results/2026-12-05-icl-seed-rules-preregistered.md, rule 3: two seeds rising 4x
    and one falling 8x made each K's median rise 3x (confirmed); the seeds split now."""
    split = _slows([100, 200, 400], [100, 150, 400], [800, 400, 100])
    assert split.verdict == "inconclusive" and "seed 2: disagrees" in split.reason
    assert _slows([100, 200, 400], [100, 150, 400], [80, 200, 500]).verdict == "confirmed"
    assert _slows([400, 200, 100], [500, 300, 100], [800, 400, 100]).verdict == "refuted"
    short = _slows([100, 200, 400], [100, None, 400])  # seed 1 never memorized at K = 8
    assert short.verdict == "inconclusive" and "seed 1 memorized at fewer" in short.reason


def test_memorization_slows_leaves_out_the_k_the_ceiling_hides() -> None:
    """At K = 32 the criterion cannot tell memorizing apart (the ceiling): its time counted
    in this paper claim while the K*_1 fit and calibrate's a left it out (an audit,
    2026-12-07). Here it falls, which split the seeds; left out, every seed rises."""
    seeds = ([100, 200, 400, 50], [100, 150, 400, 500], [80, 200, 500, 60])
    per_k = {
        k: {"outcome": "memorization", "memorized_ats": {s: t[i] for s, t in enumerate(seeds)}}
        for i, k in enumerate((4, 8, 16, 32))
    }
    measurement = {"per_k": per_k, "tau_2gen": {"checkpoint_ratio": 1.33}}
    assert times.memorization_slows(measurement).verdict == "inconclusive"
    limit = {k: {"detectable": k < 32} for k in per_k}  # a gap rule's ceiling
    claim = times.memorization_slows({**measurement, "ceiling": limit})
    assert claim.verdict == "confirmed" and claim.measured["left_out"] == [32]
    assert all(32 not in t for t in claim.measured["tau_1mem"].values())
    # a projection's: memorizing testable at 32, generalizing not: kept, as calibrate keeps it
    testable = {k: {"testable": {"memorizing": True, "generalizing": k < 32}} for k in per_k}
    kept = times.memorization_slows({**measurement, "ceiling": testable})
    assert kept.verdict == "inconclusive" and "left_out" not in kept.measured


def _timed(first_g2: dict[int, list], predicted: float = 500.0):
    per_k = {
        k: {"outcome": "generalization", "first_g2s": dict(enumerate(seeds))}
        for k, seeds in first_g2.items()
    }
    measurement = {"per_k": per_k, "tau_2gen": {"checkpoint_ratio": 1.26}}
    return times.tau_2gen(predicted, measurement), times.tau_2gen_flat(measurement)


def test_tau_2gen_and_its_flatness_are_judged_seed_by_seed() -> None:
    """Rules 1 and 2: seeds at 100, 260 and 2,000 steps against 500 were confirmed (the
    median 260 within 2x); two seeds changing 4x across K in opposite ways were flat (rule 2
    judges each seed's fitted rise since the night of 2026-12-07)."""
    tau, _ = _timed({4: [100, 260, 2000], 8: [100, 260, 2000]})
    assert tau.verdict == "inconclusive" and tau.measured["seeds"] == {0: 100, 1: 260, 2: 2000}
    assert _timed({4: [300, 400, 600]})[0].verdict == "confirmed"
    assert _timed({4: [1100, 2000, None]})[0].verdict == "refuted"  # never: above
    _, flat = _timed({4: [100, 400, 250], 8: [400, 100, 250]})
    assert flat.verdict == "inconclusive"
    assert _timed({4: [100, 400, 250], 8: [110, 420, 250]})[1].verdict == "confirmed"
    assert _timed({4: [100, 100, 250], 8: [400, 800, 900]})[1].verdict == "refuted"
    assert _timed({4: [100, 100, 250], 8: [400, 800, None]})[1].verdict == "refuted"


@pytest.mark.parametrize(
    "power, verdict",
    [(0.0, "confirmed"), (0.2, "confirmed"), (0.8, "inconclusive"), (1.0, "refuted")],
)
def test_flatness_is_the_fitted_rise_within_one_spacing(power, verdict) -> None:
    """Pre-registered on the night of 2026-12-07: each seed's first-G2 step fitted across the
    K that generalize (45 to 128, as at k2-c5); a time growing as K^0.8 (a rise of 2.3) was
    flat under the largest / smallest rule (at most 2 x 1.26); it is a rise of more than one
    checkpoint now, and K^1 (2.8) is beyond two: refuted."""
    ks = (45, 64, 90, 128)
    steps = {k: [300 * (k / 45) ** power * (1 + 0.01 * s) for s in range(3)] for k in ks}
    flat = _timed(steps)[1]
    assert flat.verdict == verdict, flat.measured["rises"]
    rise = (128 / 45) ** power
    assert all(r == pytest.approx(rise, rel=0.02) for r in flat.measured["rises"].values())
    if verdict == "inconclusive":  # every seed between: not "the seeds split"
        assert flat.reason.startswith("no seed agrees and none disagrees"), flat.reason


def test_flatness_refutes_a_fall_and_confirms_one_checkpoint_either_way() -> None:
    """A fall beyond two spacings on every seed refutes as a rise does; a move of exactly
    one checkpoint (1.26, as the times are read) is within; a seed that never reached G2 at
    any K has no rise and decides nothing."""
    assert _timed({45: [900, 800, 1000], 128: [300, 260, 350]})[1].verdict == "refuted"
    one = _timed({128: [514, 600, 700], 256: [514 / 1.26, 600 * 1.26, 700]})[1]
    assert one.verdict == "confirmed", one.measured["rises"]
    none = _timed({45: [300, None, 300], 128: [300, None, 300]})[1]
    assert none.verdict == "inconclusive" and none.measured["rises"][1] is None
    assert "seed 1: neither" in none.reason


def test_the_gap_check_of_a_memorizing_phase_reads_each_seed() -> None:
    """Rule 4: the mean KLs over the seeds decided it; one outlier flipped it either way."""
    passes, fails = {"id:truth": 0.1, "ood:truth": 0.4}, {"id:truth": 0.3, "ood:truth": 0.4}

    def judged(*rows):
        finals = {s: {"kind": "memorizing", **row} for s, row in enumerate(rows)}
        measured = {"final_kind": "memorizing", "final_phase": "M2", "finals": finals}
        return ksweep._final_phase(16, "M2", measured, SEEN, {}, "").verdict

    assert judged(passes, passes, passes) == "confirmed"
    assert judged(fails, fails, passes) == "inconclusive"
    assert judged(fails, fails, fails) == "refuted"


def test_a_previous_token_head_formed_on_one_seed_of_three_is_not_the_ks() -> None:
    histories = [_history(32, 0, "generalization", prev=150.0)]
    histories += [_history(32, s, "generalization") for s in (1, 2)]
    measurement = thresholds.measure(histories, {32: SEEN})
    assert measurement["per_k"][32]["previous_head"] is None
    sweep = SimpleNamespace(
        group=SimpleNamespace(
            spec=SimpleNamespace(training=SimpleNamespace(layer1_attention_lr=1.0))
        ),
        measurement=measurement,
    )
    entry = {
        "members": [
            {"clock": "G", "layer1_attention_lr": 1.0, "previous_head": t} for t in (140, 150, 160)
        ]
    }
    claim = coupling_claim(sweep, entry)  # K = 32's seeds: 150, never, never
    assert claim.verdict == "inconclusive" and "within a factor 2" in claim.reason
    never = [_history(32, s, "generalization") for s in range(3)]
    sweep.measurement = thresholds.measure(never, {32: SEEN})
    claim = coupling_claim(sweep, entry)
    assert claim.verdict == "refuted" and "every seed lies beyond" in claim.reason
    # a K of one seed beside it does not undo the refutation (two seeds suffice where it
    # is); one seed alone decides nothing (a review)
    one = thresholds.measure([_history(16, 0, "generalization")], {16: SEEN})
    sweep.measurement["per_k"][16] = one["per_k"][16]
    assert coupling_claim(sweep, entry).verdict == "refuted"
    sweep.measurement = one
    claim = coupling_claim(sweep, entry)
    assert claim.verdict == "inconclusive" and "1 seed(s)" in claim.reason


def test_a_diverged_decoder_decides_nothing(tmp_path) -> None:
    """Through the run's database, which reads a NaN back as None."""
    members = [("capacity", k) for k in (128, 256, 512, 1024, 2048)] + [("task_dim", 2)]
    train = {128: 0.01, 256: 0.02, 512: 0.03, 1024: math.nan, 2048: 0.5}
    rows = [
        {"decoder:train_kl": train.get(n, 0.01), "decoder:fresh_kl": math.nan}
        | {"decoder:g2_level": 0.1}
        for _, n in members
    ]
    store = Store(tmp_path / "runs.db")
    store.record_metrics("decoder", STEPS, rows)
    measured = measure_decoder(SimpleNamespace(members=members), store.metrics("decoder"))
    assert measured["capacity"]["diverged"] == [1024]
    capacity, task = decoder_claims(measured, 2100.0, 3)
    assert capacity.verdict == "inconclusive" and "not finite at K = [1024]" in capacity.reason
    assert task.verdict == "inconclusive" and measured["task_dims"][2]["generalizes"] is None


def test_k_infinity_counts_a_head_never_formed_like_every_k() -> None:
    """K = inf at [50, 400, never] is a range open above: it confirms nothing (rule 6; its
    median 400 confirmed K = 16 at 800 before); [300, 400, 500] does."""
    histories = [_history(16, s, "generalization", prev=800.0) for s in range(3)]
    sweep = SimpleNamespace(
        group=SimpleNamespace(
            spec=SimpleNamespace(training=SimpleNamespace(layer1_attention_lr=1.0))
        ),
        measurement=thresholds.measure(histories, {16: SEEN}),
    )
    clocks = [{"clock": "G", "layer1_attention_lr": 1.0, "previous_head": t} for t in (50, 400)]
    clocks.append({"clock": "G", "layer1_attention_lr": 1.0, "previous_head": None})
    assert coupling_claim(sweep, {"members": clocks}).verdict == "inconclusive"

    def g(*steps):
        return {
            "members": [
                {"clock": "G", "layer1_attention_lr": 1.0, "previous_head": t} for t in steps
            ]
        }

    assert coupling_claim(sweep, g(300, 400, 500)).verdict == "confirmed"  # 800 <= 2 x 500
    assert coupling_claim(sweep, g(100, 150, 200)).verdict == "refuted"  # 800 > 2 x 200


def test_calibration_reads_a_k_as_persisting_only_when_no_seed_was_transient() -> None:
    row = {"transient_duration": None, "transient_durations": {"0": 500, "1": None, "2": None}}
    assert not _no_transient(row)  # the K's majority says persisted; one seed did not
    assert _no_transient({**row, "transient_durations": {"0": None}})
    assert _no_transient({"transient_duration": None})  # a report before 2026-12-05


def test_the_task_vector_test_is_a_reconstruction() -> None:
    assert CLAIM_KINDS["task_vector"] == "reconstruction"


def test_no_seed_or_a_nan_decides_nothing_seed_by_seed() -> None:
    """Review of 2026-12-05: an empty seed set confirmed (all of nothing), a memorizing phase
    with no memorizing seed's KLs refuted, NaN KLs refuted, a step of 0 crashed the fits."""
    per_k = {k: {"outcome": "generalization", "first_g2s": {}} for k in (4, 8)}
    measurement = {"per_k": per_k, "tau_2gen": {"checkpoint_ratio": 1.26}}
    assert times.tau_2gen_flat(measurement).verdict == "inconclusive"
    nan = {"kind": "memorizing", "id:truth": math.nan, "ood:truth": 0.4}
    measured = {"final_kind": "memorizing", "final_phase": "M2", "finals": {0: nan, 1: nan}}
    claim = ksweep._final_phase(16, "M2", measured, SEEN, {}, "")
    assert claim.verdict == "inconclusive" and "not finite" in claim.reason
    zero = {k: {"outcome": "generalization", "first_g2s": {0: 0, 1: 300}} for k in (4, 8)}
    flat = times.tau_2gen_flat({"per_k": zero, "tau_2gen": {"checkpoint_ratio": 1.26}})
    assert flat.verdict == "inconclusive"  # seed 0 never: its ratio is open, seed 1 flat


def test_the_previous_head_refutes_on_the_fast_side_with_few_clock_seeds_formed() -> None:
    """Rule 6 as registered: K = inf's range is [100, never] with one clock seed of three
    formed; K's seeds at 10 and 12 lie below 100 / 2 on every seed: refuted."""
    histories = [_history(16, s, "generalization", prev=t) for s, t in enumerate((10.0, 12.0))]
    sweep = SimpleNamespace(
        group=SimpleNamespace(
            spec=SimpleNamespace(training=SimpleNamespace(layer1_attention_lr=1.0))
        ),
        measurement=thresholds.measure(histories, {16: SEEN}),
    )
    clocks = [
        {"clock": "G", "layer1_attention_lr": 1.0, "previous_head": t} for t in (100, None, None)
    ]
    assert coupling_claim(sweep, {"members": clocks}).verdict == "refuted"
    none = [{**c, "previous_head": None} for c in clocks]
    assert coupling_claim(sweep, {"members": none}).verdict == "inconclusive"


def test_the_report_says_where_no_g2_formed_and_the_ceiling_line_where_the_grid_falls_short():
    """'G2 persists at this budget from K = -.' and 'tau_2Gen None steps'; a K*_1 range 16 to
    32 was 'testable' on a grid of K = 45 and 64 (a review)."""
    from infoflow.validators.icl_markov.ceiling import _range_line
    from infoflow.validators.icl_markov.ksweep.report import _thresholds

    measurement = {
        "k1_star": {"low": 32, "high": None, "monotone": True, "undecided": []},
        "k2_star": {"low": None, "g2_persists_from": None},
        "tau_2gen": {"value": None, "min": None, "max": None, "checkpoint_ratio": 1.0},
        "k1_fit": {
            "status": "none",
            "reason": "no decided outcome",
            "outcomes": 0,
            "left_out": [],
            "low": None,
            "high": None,
        },
    }
    text = _thresholds(measurement)
    assert "G2 persists at no K. tau_2Gen not measured (generalization won at no K)." in text
    limit = {k: {"detectable": True} for k in (45, 64)}
    line = _range_line(limit, (16, 32))
    assert line.endswith("is NOT testable here: the grid (45 to 64) does not reach it")
    limit = {k: {"detectable": True} for k in (8, 16, 32, 64)}
    assert _range_line(limit, (16, 32)).endswith("(K = 8, 16, 32, 64 in and around it) is testable")
    # a race's one-sided range needs no K past its open end ("NOT testable: the grid does not
    # reach it" on a grid through 16 and 23 for "0 to 26.3": an audit, 2026-12-07)
    grid = {k: {"detectable": True} for k in (16, 23, 32, 45)}
    line = _range_line(grid, (0, 26.3))
    assert "range open to 26.3 (K = 16, 23, 32 in and around it) is testable" in line
    assert "range 20 to open (K = 16, 23, 32, 45 in" in _range_line(grid, (20, math.inf))
