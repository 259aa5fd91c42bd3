"""The race predictor of K*_1 on synthetic clocks, the clock criterion, and predict reading
clocks from a calibration file."""

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import infoflow
from infoflow.icl_markov.calibration import SHIPPED, load_calibration
from infoflow.icl_markov.race import Clocks, clocks_of, crossing, median_coverage, race, span

KS = [2, 4, 8, 16, 32, 64]


def run(clock: str, k: int | None, time: float, rate: float = 1.0, seed: int = 0) -> dict:
    """A clock-run member as report.json and calibration files hold it."""
    return {"clock": clock, "layer1_attention_lr": rate, "chains": k, "seed": seed, "time": time}


def clocks(g, g_prev, m1, m2_prev, **more) -> Clocks:
    return Clocks(
        g=g,
        g_prev=g_prev,
        m1={k: [m1(k)] for k in KS},
        m2_prev={k: [m2_prev(k)] for k in KS},
        steps=10_000,
        **more,
    )


def test_power_law_memorisation_ties_with_g2_where_the_algebra_says():
    # tau_M1 = 10 K, tau_G = 200: the tie is at K = 20 (log-log interpolation is exact here)
    result = race(clocks([200], [150], lambda k: 10 * k, lambda k: 1e4))
    assert result.k1_star == pytest.approx(20)
    assert result.interval == pytest.approx((20, 20))
    assert "M1 path" in result.reason


def test_the_m2_path_pays_for_the_previous_token_head():
    # tau_prev = 200 - 40 = 160; M2 path = 160 + K: ties with 200 at K = 40 (interpolated
    # log-log between 32 and 64); M1 is far slower
    result = race(clocks([200], [40], lambda k: 1e4, lambda k: k))
    assert result.tau_prev == (160, 160, 160)
    assert 32 < result.k1_star < 64
    assert "M2 path" in result.reason
    # a faster head (tau_prev 20) leaves M2 ahead at every K on the grid: no tie to report
    fast = race(clocks([200], [180], lambda k: 1e4, lambda k: k))
    assert fast.k1_star is None and "above" in fast.reason


def test_slowing_layer1_attention_delays_g2_but_not_m1():
    base = clocks([200], [40], lambda k: 10 * k, lambda k: 1e4)
    # [R] unmeasured: tau_prev / r; G takes 40 + 160 / 0.5 = 360, M1 ties at K = 36
    assert race(base, 0.5).k1_star == pytest.approx(36)
    assert race(base, 0.5).tau_g[1] == pytest.approx(360)
    # measured: the slowed G clock is used as it is
    measured = clocks([200], [40], lambda k: 10 * k, lambda k: 1e4, g_slowed={0.5: [300]})
    assert race(measured, 0.5).k1_star == pytest.approx(30)


def test_no_tie_is_reported_with_its_reason():
    never = race(clocks([None], [40], lambda k: 10 * k, lambda k: 1e4))
    assert never.k1_star is None and "did not form" in never.reason
    assert never.interval == (64, math.inf)  # one-sided: above the grid
    below = race(clocks([10], [5], lambda k: 100 * k, lambda k: 1e4))
    assert below.k1_star is None and "below" in below.reason


def test_a_median_tie_off_the_grid_keeps_the_seeds_end_on_it():
    """The median M1 clock beats tau_G at every K, but its slowest seed (3 x 10 K) ties with
    the fastest G seed (180) at K = 6: K*_1 is above the grid's end by the median and may be
    as low as 6 by the seeds."""
    seeds = Clocks(
        g=[180, 200, 220],
        g_prev=[40],
        m2_prev={k: [1e6] for k in KS},
        m1={k: [1 * k, 2 * k, 30 * k] for k in KS},
        steps=10_000,
    )
    result = race(seeds)
    assert result.k1_star is None and "above K = 64" in result.reason
    assert result.interval == pytest.approx((6, math.inf))
    # and the mirror image: the median loses at every K, its fastest seed ties at K = 8
    mirrored = Clocks(
        g=[100, 160, 200],
        g_prev=[40],
        m2_prev={k: [1e6] for k in KS},
        m1={k: [25 * k, 1e4, 1e4] for k in KS},
        steps=10_000,
    )
    result = race(mirrored)
    assert result.k1_star is None and "below K = 2" in result.reason
    assert result.interval == pytest.approx((0, 8))


def test_a_censored_clock_is_taken_at_the_run_length():
    # K = 16 did not form within 1,000 steps: interpolated to (16, 1000), an upper bound
    assert crossing([4, 8, 16], [50, 100, math.inf], 150, 1000) == pytest.approx(
        8 * 2 ** (math.log(1.5) / math.log(10))
    )
    assert crossing([4, 8, 16], [200, 300, 400], 150, 1000) == -math.inf  # below the grid
    assert crossing([4, 8, 16], [50, 60, 70], 150, 1000) == math.inf  # above it


def test_the_m2_tie_does_not_count_the_previous_token_head_twice():
    """tau_prev is shared by G2 and M2: their race is tau_M2|prev against tau_G|prev, however
    much tau_G's seeds spread."""
    spread = race(clocks([150, 200, 250], [40], lambda k: 1e4, lambda k: 5 * k))
    assert spread.k1_star == pytest.approx(8) and spread.interval == pytest.approx((8, 8))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(50, 500), min_size=1, max_size=4),
    st.lists(st.floats(1, 40), min_size=1, max_size=4),
    st.floats(1, 20),
    st.floats(0.5, 2),
    st.lists(st.floats(0.7, 1.4), min_size=3, max_size=3),
)
def test_the_interval_holds_the_median_tie(g, g_prev, scale, power, noise):
    """Over random clocks rising with K: low <= K*_1 <= high whenever a tie is found."""
    m1 = {k: [scale * k**power * n for n in noise] for k in KS}
    result = race(Clocks(g=g, g_prev=g_prev, m1=m1, m2_prev={k: [1e6] for k in KS}, steps=1))
    if result.k1_star is not None:
        low, high = result.interval
        assert low <= result.k1_star * (1 + 1e-9) and result.k1_star <= high * (1 + 1e-9)


def test_span_counts_a_clock_that_did_not_form_as_infinite():
    assert span([3, None, 1]) == (1, 3, math.inf)


def test_span_ends_cover_the_median_by_order_statistics():
    """The ends are X_(j), X_(n+1-j) for the largest j covering the median with >= 75%: the
    extremes up to five seeds, then the 2nd and 5th of six, the 3rd and 7th of nine."""
    assert median_coverage(3, 1) == 0.75 and median_coverage(6, 2) == 1 - 2 * 7 / 64
    assert median_coverage(9, 3) == 1 - 2 * (1 + 9 + 36) / 512 and median_coverage(9, 4) < 0.75
    assert span([1, 2]) == (1, 1.5, 2) and span([4, 1, 3, 5, 2]) == (1, 3, 5)
    assert span(list(range(1, 7))) == (2, 3.5, 5)
    assert span([*range(1, 9), None]) == (3, 5, 7)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), st.integers(0, 2**32 - 1))
def test_span_coverage_matches_a_simulation(n, seed):
    """Over many draws of n seeds from a continuous distribution with median 0, the span's
    ends hold 0 as often as median_coverage says (within sampling error)."""
    import random

    rng = random.Random(seed)
    draws = [span([rng.gauss(0, 1) for _ in range(n)]) for _ in range(2000)]
    held = sum(low <= 0 <= high for low, _, high in draws) / len(draws)
    j = int(span(list(range(n)))[0]) + 1  # the order statistic span takes as its low end
    assert abs(held - median_coverage(n, j)) < 0.05


def test_clocks_from_member_rows_as_reports_hold_them():
    rows = [run("G", None, 9.0), run("G", None, 20.0, rate=0.5), run("M1", 4, 3.0, seed=1)]
    found = clocks_of(rows, 100)
    assert found.g == [9.0] and found.g_slowed == {0.5: [20.0]} and found.m1 == {4: [3.0]}


SMOKE = json.loads(Path("specs/icl_markov/smoke-c3.json").read_text())


def with_clocks(folder: Path, members: list[dict], chains: int = 8) -> dict:
    """The smoke spec at K = ``chains`` (as a dict) with a calibration file in ``folder``
    that holds ``members`` as the clocks of its setting and run length."""
    shipped = json.loads(SHIPPED.read_text())
    settings_ = {
        "states": 3,
        "context_len": 64,
        "dirichlet_alpha": 1.0,
        "mixture": "random",
        **SMOKE["model"],
        "batch_size": 64,
        "lr": 0.001,
        "weight_decay": 0.1,
    }
    shipped["clocks"] = [
        {
            "name": "synthetic",
            "settings": settings_,
            "provenance": "test",
            "source": "hand-made",
            "device": "none",
            "date": "2026-11-30",
            "steps": 1500,
            "criterion": "projection",
            "members": members,
        }
    ]
    (folder / "calibration.json").write_text(json.dumps(shipped))
    return {**SMOKE, "sweep": None, "chains": chains}


def test_predict_races_the_clocks_of_a_calibration_file_at_that_setting(tmp_path):
    members = [run("G", None, 200.0), run("G_prev", None, 150.0)]
    members += [run("M1", k, 10.0 * k) for k in KS]
    spec = with_clocks(tmp_path, members)
    (tmp_path / "spec.json").write_text(json.dumps({**spec, "calibration": "calibration.json"}))
    k1 = infoflow.predict(infoflow.load_spec(tmp_path / "spec.json"))["k1_star"]
    assert k1.value == pytest.approx(20) and k1.interval == pytest.approx((20, 20))
    assert k1.provenance == "mechanism:clock_race (calibrated:synthetic)"
    # clocks timed by one criterion never race for a spec judged by another
    gap = {**spec, "options": {"criterion": "gap"}, "calibration": "calibration.json"}
    (tmp_path / "gap.json").write_text(json.dumps(gap))
    k1 = infoflow.predict(infoflow.load_spec(tmp_path / "gap.json"))["k1_star"]
    assert k1.provenance.startswith("calibrated:")
    # another setting, or runs of another length (another warmup), have no clocks: the
    # anchor, which says so in its provenance
    longer = {**SMOKE["training"], "steps": 3000}
    for change in ({"context_len": 128}, {"training": longer}):
        (tmp_path / "other.json").write_text(
            json.dumps({**spec, **change, "calibration": "calibration.json"})
        )
        k1 = infoflow.predict(infoflow.load_spec(tmp_path / "other.json"))["k1_star"]
        assert k1.provenance.startswith("calibrated:")
    # layer 1 slowed: the race at that rate ([R] tau_prev / r, said in the note); without
    # clocks, no prediction at all (the anchors do not model the rate)
    slowed = {**SMOKE["training"], "layer1_attention_lr": 0.5}
    (tmp_path / "slow.json").write_text(
        json.dumps({**spec, "training": slowed, "calibration": "calibration.json"})
    )
    k1 = infoflow.predict(infoflow.load_spec(tmp_path / "slow.json"))["k1_star"]
    assert k1.value == pytest.approx(25) and "tau_prev / 0.5 [R]" in k1.note
    (tmp_path / "slow.json").write_text(json.dumps({**spec, "training": slowed}))
    result = infoflow.predict(infoflow.load_spec(tmp_path / "slow.json"))
    assert result["k1_star"].value is None and result["tau_2gen"].value is None


def test_clock_sets_at_one_setting_are_pooled_and_a_shared_run_counts_once(tmp_path):
    """Two sets at the smoke setting: M1's seeds pool to six (the race's ends become the 2nd
    and 5th), and the G run both sets hold is one run, not two; so is a seed both sets ran,
    at another time (a re-run counted twice narrowed the interval: an audit, 2026-12-07)."""
    g = [run("G", None, 200.0), run("G_prev", None, 150.0)]
    first = g + [run("M1", k, 10.0 * k) for k in KS]
    again = [run("M1", k, 30.0 * k) for k in KS]  # seed 0 again: the first set's counts
    times = enumerate((5, 9, 11, 15, 20), start=1)
    second = g + again + [run("M1", k, t * k, seed=s) for s, t in times for k in KS]
    spec = with_clocks(tmp_path, first)
    calibration = json.loads((tmp_path / "calibration.json").read_text())
    calibration["clocks"].append({**calibration["clocks"][0], "name": "more", "members": second})
    (tmp_path / "calibration.json").write_text(json.dumps(calibration))
    found = load_calibration(tmp_path / "calibration.json").clocks_at(
        calibration["clocks"][0]["settings"], 1500, "projection"
    )
    assert found.name == "synthetic + more" and len(found.members) == 2 + 6 * len(KS)
    clocks = found.clocks()
    assert clocks.g == [200.0] and sorted(clocks.m1[8]) == [40, 72, 80, 88, 120, 160]
    (tmp_path / "spec.json").write_text(json.dumps({**spec, "calibration": "calibration.json"}))
    k1 = infoflow.predict(infoflow.load_spec(tmp_path / "spec.json"))["k1_star"]
    # six M1 runs at each K: the median is 10.5 K, the ends the 2nd and 5th (9 K and 15 K)
    assert k1.value == pytest.approx(200 / 10.5, abs=0.05)  # predict rounds to 0.1
    assert k1.interval == pytest.approx((200 / 15, 200 / 9))
    assert "synthetic + more" in k1.provenance


def test_a_one_sided_race_still_places_k(tmp_path):
    """Memorization wins at every K on the grid: K*_1 > 64, so K = 8 and K = 64 are below it
    (the phases the paper gives there), while K = 128 is unplaced."""
    members = [run("G", None, 200.0), run("G_prev", None, 150.0)]
    members += [run("M1", k, 10.0) for k in KS]
    for chains, expected in ((8, ["G1", "M1", "M2"]), (64, ["G1", "M1", "M2"]), (128, None)):
        spec = {**with_clocks(tmp_path, members, chains), "calibration": "calibration.json"}
        (tmp_path / "spec.json").write_text(json.dumps(spec))
        result = infoflow.predict(infoflow.load_spec(tmp_path / "spec.json"))
        assert result["k1_star"].value is None and result["k1_star"].interval == (64, math.inf)
        assert result["phase_sequence"].value == expected
        assert "K*_1 > 64" in result["phase_sequence"].note
