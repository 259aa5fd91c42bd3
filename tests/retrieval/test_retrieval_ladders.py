"""What the retrieval claims are measured with: the plateau rule and the per-member schedule it
drives, the exponent fit on size ladders (synthetic power laws of known slope), the
intervals over seeds, the pooling shortcut on targets where its floor is known in closed
form, the optimiser with a learning rate per member, and the parameter counts."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

import infoflow  # noqa: E402
from infoflow.validators.ensemble import MemberAdamW  # noqa: E402
from infoflow.validators.retrieval.exponents import (  # noqa: E402
    Interval,
    Ladder,
    coverage,
    exponent_of,
    fit_slope,
    paired_differences,
    paired_exponent_differences,
)
from infoflow.validators.retrieval.floors import (  # noqa: E402
    ALL_OR_NONE,
    FIT_SAMPLES,
    LEARNS_FACTOR,
    TEST_SAMPLES,
    fitted_nmse,
    floors,
    pooled_features,
)
from infoflow.validators.retrieval.model import EnsembleTransformer, Member  # noqa: E402
from infoflow.validators.retrieval.plateau import (  # noqa: E402
    EARLIEST,
    PLATEAU_SLOPE,
    STARTED,
    WINDOW,
    MemberSchedule,
    loss_slope,
    plateaued,
)
from infoflow.validators.retrieval.target_checks import cannot_evaluate  # noqa: E402
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs  # noqa: E402


def test_the_loss_slope_is_the_log_log_slope_of_the_last_window() -> None:
    steps = [100 * i for i in range(1, 9)]
    assert loss_slope(steps, [0.5 * s**-0.3 for s in steps]) == pytest.approx(-0.3)
    assert loss_slope(steps[: WINDOW - 1], [0.5] * (WINDOW - 1)) is None  # too short
    early_drop = [1.0, 0.5, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1]  # only the last window counts
    assert loss_slope(steps, early_drop) == pytest.approx(0.0)


def test_a_plateau_is_flat_and_below_the_trivial_loss() -> None:
    steps = [100 * i for i in range(1, 6)]
    assert plateaued(steps, [0.2] * 5)
    assert not plateaued(steps, [0.95] * 5)  # still at the trivial predictor's loss
    slow = [0.2 * s ** -(PLATEAU_SLOPE / 2) for s in steps]
    fast = [0.2 * s ** -(2 * PLATEAU_SLOPE) for s in steps]
    assert plateaued(steps, slow) and not plateaued(steps, fast)


def test_each_member_cools_down_at_its_own_plateau_or_near_the_cap() -> None:
    cap, every = 1000, 50
    schedule = MemberSchedule.start(2, cap)
    step = 0
    while not schedule.done(step) and step < cap:
        step += every
        flat, falling = 0.3, 0.5 * step**-0.5  # member 1 improves until the end
        schedule.observe(step, [flat, falling])
    settled, capped = schedule.members
    assert not settled.capped and settled.cooldown_start == EARLIEST * cap
    assert settled.cooldown_length == round(0.2 * settled.cooldown_start)
    assert settled.factor(settled.cooldown_start) == 1.0
    assert settled.factor(settled.cooldown_start + settled.cooldown_length // 2) == 0.5
    assert settled.done(settled.cooldown_start + settled.cooldown_length)
    assert capped.capped and capped.still_improving and capped.slope == pytest.approx(-0.5)
    assert capped.cooldown_start + capped.cooldown_length == cap
    again = MemberSchedule.from_dict(schedule.to_dict())
    assert again == schedule


def test_a_cap_of_four_evaluations_cools_down_before_the_caps_evaluation() -> None:
    """--steps 400, evaluations every 100: the cap's own evaluation came first, a cooldown
    of one step that never trained and a last step of 401 (an audit, 2026-12-07). Known, the
    evaluation before the cap starts it: 60 steps, the last at 360."""
    for every, start, end in ((100, 300, 360), (None, 400, 400)):
        schedule = MemberSchedule.start(1, 400, every)
        for step in (100, 200, 300, 400):
            if not schedule.done(step):
                schedule.observe(step, [0.5 * step**-0.5])  # improving throughout
        (member,) = schedule.members
        assert member.capped and member.cooldown_start == start
        assert schedule.last_step(member) == end
    assert MemberSchedule.from_dict(schedule.to_dict()) == schedule


def test_a_member_capped_at_the_trivial_loss_is_stuck_not_still_improving() -> None:
    """The cap cools down a member whose loss never left about 1: falling more slowly than the
    plateau rule allows, it is not improving (a model that cannot represent the target), so a
    "does not learn" is decided; falling faster, it is still improving (the docs said any
    capped member was, an audit, 2026-12-07)."""
    for slope, improving in ((-PLATEAU_SLOPE / 2, False), (-2 * PLATEAU_SLOPE, True)):
        schedule = MemberSchedule.start(1, 20)
        for step in (5, 10, 15, 20):
            schedule.observe(step, [1.5 * (step / 5) ** slope])
        (member,) = schedule.members
        assert member.capped and member.losses[-1] >= STARTED
        assert member.still_improving is improving


@settings(max_examples=50, deadline=None)
@given(
    slope=st.floats(-3.0, -0.05),
    level=st.floats(1e-4, 1.0),
    base=st.integers(50, 5000),
    rungs=st.integers(3, 7),
)
def test_the_fit_recovers_a_power_law_and_its_exponent(slope, level, base, rungs) -> None:
    sizes = [base * 2**i for i in range(rungs)]
    nmse = [level * (s / base) ** slope for s in sizes]
    assert fit_slope(sizes, nmse) == pytest.approx(slope, abs=1e-9)
    alpha = exponent_of(fit_slope(sizes, nmse))
    assert alpha == pytest.approx(-2 / slope)  # NMSE ~ eps^2 and params ~ eps^-alpha


def test_a_ladder_that_does_not_fall_has_an_infinite_exponent() -> None:
    assert exponent_of(0.01) == math.inf and exponent_of(None) is None
    assert exponent_of(math.nan) is None  # no slope, not an infinite exponent
    assert fit_slope([1, 2, 4, 8], [0.5, None, float("nan"), 0.5]) is None  # two usable rungs


def test_report_md_calls_a_ladder_that_is_not_steep_flat_not_a_huge_exponent() -> None:
    """A model that learned nothing showed "measured alpha 3.2e+04" (-2 / slope; a review)."""
    from infoflow.validators.retrieval.report import _alpha

    flat = Ladder([1, 2, 4, 8], [[0.9], [0.9], [0.9], [0.8999]]).to_json()
    assert _alpha(flat) == "flat (> 20)"
    steep = Ladder([1, 2, 4, 8], [[0.8], [0.4], [0.2], [0.1]]).to_json()
    assert _alpha(steep) == "2"
    # the judge calls a ladder steep only when every seed is: a flat seed is said
    mixed = Ladder([1, 2, 4, 8], [[0.8] * 3, [0.4, 0.4, 0.8], [0.2, 0.2, 0.8], [0.1] * 2 + [0.8]])
    assert _alpha(mixed.to_json()) == "2 (a seed flat)"


def test_intervals_are_the_range_over_seeds_and_pair_seeds() -> None:
    sizes = [100, 200, 400, 800]
    a = Ladder(sizes, [[(s / 100) ** k for k in (-1.0, -0.8, -1.2)] for s in sizes])
    b = Ladder(sizes, [[(s / 100) ** k for k in (-0.1, -0.3, 0.0)] for s in sizes])
    slope = a.slope()
    assert (slope.median, slope.low, slope.high) == pytest.approx((-1.0, -1.2, -0.8))
    difference = paired_differences(b, a)  # seed by seed: 0.9, 0.5, 1.2
    assert (difference.low, difference.high) == pytest.approx((0.5, 1.2))
    assert difference.above(0) and not difference.above(0.6) and not difference.below(0)
    assert not Interval.of([0.3]).above(0)  # one seed decides nothing
    assert coverage(3) == 0.75 and coverage(1) == 0.0


def test_exponent_differences_pair_seeds_keep_infinities_and_count_unpaired_seeds() -> None:
    sizes = [100, 200, 400, 800]

    def ladder(*slopes):
        return Ladder(sizes, [[(s / 100) ** k for k in slopes] for s in sizes])

    a, b = ladder(-1.0, -2.0, 0.5), ladder(-2.0, -2.0, -1.0)
    difference = paired_exponent_differences(a, b)  # 2 - 1, 1 - 1, inf - 2
    assert (difference.low, difference.median, difference.count) == pytest.approx((0, 1, 3))
    assert difference.high == math.inf and difference.to_json()["high"] == "inf"
    rising = paired_exponent_differences(ladder(0.5, 0.2), ladder(0.1, -1.0))
    assert rising.count == 1 and rising.low == math.inf  # two infinite exponents: no value
    apart = paired_exponent_differences(ladder(0.5, -1.0), ladder(-1.0, 0.5))
    assert (apart.low, apart.median, apart.high) == (-math.inf, None, math.inf)
    unpaired = paired_differences(ladder(-1.0, -2.0, -1.5), ladder(-2.0, -2.0))
    assert (unpaired.count, unpaired.missing) == (2, 1)
    assert not unpaired.above(-10) and not unpaired.below(10)  # a seed without partner


def _spec(target: str, seq_len: int, params: dict | None = None):
    return infoflow.load_spec(
        {
            "kind": "retrieval",
            "target": target,
            "params": params or {},
            "input_dim": 4,
            "seq_len": seq_len,
            "architecture": {"layers": 1, "heads": 1, "embed_dim": 16},
        }
    )


INTRINSIC = "sum(max(bilinear(x[s], A[i], x[t]) for s in T for t in T) for i in range(D))"
MAX_PAIR = "max(dot(x[s], x[t]) for s in T for t in T if s != t)"
MIN_FIRST = "min(x[u][0] for u in T)"
MAX_Q, MIN_P = "max(dot(q, x[t]) for t in T)", "min(dot(p, x[t]) for t in T)"


def _pair_max(x) -> torch.Tensor:
    """max over s != t of x[s] . x[t]: [batch, 1]."""
    scores = torch.einsum("bsd,btd->bst", x, x)
    eye = torch.eye(x.shape[1], dtype=torch.bool)
    return scores.masked_fill(eye, float("-inf")).flatten(1).amax(1, keepdim=True)


def _by_brute_force(target: TargetFunction, x) -> torch.Tensor:
    """Each copy max over s, t of x[s]^T A[i] x[t], from the drawn matrices: [batch, D]."""
    matrices = target.parameter("A", (), 2, x.shape[1])
    scores = torch.einsum("bsd,ide,bte->bist", x, matrices, x)
    return scores.flatten(2).amax(-1)


def test_term_values_are_the_targets_terms() -> None:
    target = TargetFunction(_spec(INTRINSIC, 6, {"D": 3}), seed=0)
    x = torch.randn(300, 6, 4)
    ((_, values),) = target.term_values(x)  # one term: the sum over i of D copies
    assert values.shape == (300, 3)
    assert torch.allclose(values.sum(1), target(x), atol=1e-5)
    assert torch.allclose(values, _by_brute_force(target, x), atol=1e-5)
    one = TargetFunction(_spec("min(dot(x[s], x[t]) for s in T for t in T if s != t)", 6), 0)
    ((_, values),) = one.term_values(x)
    assert torch.equal(values, one(x)[:, None])
    two = TargetFunction(_spec(f"{MAX_PAIR} - 2 * {MIN_FIRST}", 6), 0)
    (_, first), (_, second) = two.term_values(x)  # unscaled, unsigned
    assert torch.allclose(first[:, 0] - 2 * second[:, 0], two(x), atol=1e-5)
    assert torch.equal(second[:, 0], x[:, :, 0].amin(1))
    assert TargetFunction(_spec("sum(x[t] for t in T)", 6), 0).term_values(x) is None


def test_a_parameter_indexed_by_constants_grows_to_its_largest_index() -> None:
    """w[0] then w[1]: one family of two vectors (it raised "used with different sizes"),
    the first drawn as it was alone; compile builds it."""
    both = "max(dot(w[0], x[t]) for t in T) + max(dot(w[1], x[t]) for t in T)"
    target = TargetFunction(_spec(both, 6), seed=0)
    x = torch.randn(50, 6, 4)
    w = target.parameter("w", (), 1, 6)
    assert w.shape == (2, 4)
    expected = (x @ w[0]).amax(1) + (x @ w[1]).amax(1)
    assert torch.allclose(target(x), expected, atol=1e-5)
    alone = TargetFunction(_spec("max(dot(w[0], x[t]) for t in T)", 6), seed=0)
    assert torch.equal(alone.parameter("w", (0,), 1, 6), w[0])
    ranged = (
        "sum(max(dot(w[i], x[t]) for t in T) for i in range(2)) + max(dot(w[2], x[t]) for t in T)"
    )
    grown = TargetFunction(_spec(ranged, 6), seed=0)
    grown(x)
    w = grown.parameter("w", (), 1, 6)
    expected = sum((x @ w[i]).amax(1) for i in range(3))
    assert torch.allclose(grown(x), expected, atol=1e-5)  # range(2) takes rows 0 and 1 only
    mixed = "max(dot(A[0][1], x[t]) for t in T) + max(dot(A[1], x[t]) for t in T)"
    assert "different index counts" in cannot_evaluate(_spec(mixed, 6))


def test_a_parameter_a_dot_or_bilinear_combines_is_a_vector_or_a_matrix() -> None:
    """dot(p - 2 * q, x[t]) is dot(p, x[t]) - 2 dot(q, x[t]) with vectors p and q, as the
    engine expands it (it was scalars times the sum of x's coordinates), and bilinear's
    middle argument may combine matrices."""
    x = torch.randn(50, 6, 4)
    target = TargetFunction(_spec("max(dot(p - 2 * q, x[t]) for t in T)", 6), seed=0)
    p, q = (target.parameter(name, (), 1, 6) for name in ("p", "q"))
    assert p.shape == q.shape == (4,)
    assert torch.allclose(target(x), (x @ p - 2 * (x @ q)).amax(1), atol=1e-5)
    pair = "max(bilinear(x[s], A - B / 2, x[t]) for s in T for t in T)"
    target = TargetFunction(_spec(pair, 6), seed=0)
    a, b = (target.parameter(name, (), 2, 6) for name in ("A", "B"))
    scores = torch.einsum("bsi,ij,btj->bst", x, a - b / 2, x)
    assert torch.allclose(target(x), scores.flatten(1).amax(1), atol=1e-5)
    product = "max(bilinear(x[s], A * B, x[t]) for s in T for t in T)"  # not linear in A
    assert "combination" in cannot_evaluate(_spec(product, 6))


def test_the_held_shortcut_is_least_squares_on_the_parts_an_architecture_resolves() -> None:
    """Intrinsic dimension, D = 2: heads (1, 2) resolve one of the two maxima (the engine's
    schedule), so their shortcut is least squares on the pooled moments and the better of
    the two maxima, computed here from the matrices by brute force."""
    spec, seq_len = _spec(INTRINSIC, 8, {"D": 2}), 8
    architectures = (((2, 2), False), ((1, 2), False), ((1,), False))
    found = floors(spec, seq_len, architectures)
    every, some, none = (found.held[n] for n in ("heads [2, 2]", "heads [1, 2]", "heads [1]"))
    assert (every["resolved"], every["shortcut"]) == ("2 of 2", None)
    assert (none["resolved"], none["shortcut"]) == ("0 of 2", None)
    assert found.held_below("heads [2, 2]") is None and found.held_below("heads [9]") is None
    generator = torch.Generator().manual_seed(7)  # the floors' own samples
    x = sample_inputs(spec, FIT_SAMPLES + TEST_SAMPLES, seq_len, generator)
    target = TargetFunction(spec, seed=0)
    maxima, y = _by_brute_force(target, x).double(), target(x).double()
    pooled = pooled_features(x.double())
    by_hand = min(fitted_nmse(torch.cat([pooled, maxima[:, [i]]], 1), y) for i in range(2))
    assert some["resolved"] == "1 of 2"
    assert some["shortcut"] == pytest.approx(by_hand, rel=1e-6)
    assert some["shortcut"] < found.shortcut / 2  # one maximum explains much of the target
    assert found.held_below("heads [1, 2]") == some["shortcut"] / LEARNS_FACTOR


def test_report_md_states_each_held_shortcut_and_what_beats_it() -> None:
    from infoflow.validators.retrieval.report import markdown

    found = floors(_spec(INTRINSIC, 8, {"D": 2}), 8, (((1, 2), False), ((2, 2), False)))
    section = {"name": "id", "target": INTRINSIC, "claims": [], "models": [], "design": None}
    (line,) = [x for x in markdown({**section, "floors": {"8": found.describe()}}) if "held" in x]
    held = found.held["heads [1, 2]"]
    assert f"held by heads [1, 2] (1 of 2 parts) {held['shortcut']:.3g}" in line
    assert f"a separation from it needs NMSE below {held['learns_below']:.3g}" in line
    assert "heads [2, 2]" not in line  # it resolves every part: no shortcut of its own


def test_the_held_shortcut_finds_the_resolved_part_by_its_structure() -> None:
    """One head resolves the minimum over one token but not the maximum over pairs: the
    held shortcut is least squares on the pooled moments and the minimum's values, not the
    maximum's (which would explain far more of the target)."""
    spec, seq_len = _spec(f"{MAX_PAIR} + {MIN_FIRST}", 8), 8
    held = floors(spec, seq_len, (((1,), False),)).held["heads [1]"]
    generator = torch.Generator().manual_seed(7)  # the floors' own samples
    x = sample_inputs(spec, FIT_SAMPLES + TEST_SAMPLES, seq_len, generator).double()
    y = TargetFunction(spec, seed=0)(x.float()).double()
    pooled = pooled_features(x)
    minimum, maximum = x[:, :, :1].amin(1), _pair_max(x)
    assert held["resolved"] == "1 of 2"
    assert held["shortcut"] == pytest.approx(fitted_nmse(torch.cat([pooled, minimum], 1), y))
    assert fitted_nmse(torch.cat([pooled, maximum], 1), y) < held["shortcut"] / 4


def test_a_constant_term_changes_no_held_shortcut() -> None:
    """A term that reads no token is skipped: least squares' intercept holds it."""
    architectures = (((1,), False),)
    plain = floors(_spec(f"{MAX_Q} + {MIN_P}", 8), 8, architectures).held["heads [1]"]
    shifted = floors(_spec(f"{MAX_Q} + {MIN_P} + 1", 8), 8, architectures).held["heads [1]"]
    assert plain["shortcut"] is not None
    assert shifted["shortcut"] == pytest.approx(plain["shortcut"], rel=1e-6)


def test_copies_placed_as_one_block_are_counted_one_by_one() -> None:
    """Past 16 copies the engine places a comparison's copies as one block: the held
    shortcut counts them as the copies they are."""
    held = floors(_spec(INTRINSIC, 8, {"D": 17}), 8, (((1, 2), False),)).held["heads [1, 2]"]
    assert held["resolved"] in ("0 of 17", "17 of 17") and held["why"] == ALL_OR_NONE


@pytest.mark.parametrize(
    "target, why",
    [
        (f"{MAX_Q} * {MIN_P}", "a term of the target holds several reductions"),
        (f"sum(x[t][0] for t in T) + sum(x[s][1] for s in T) + {MAX_Q}", "one to one"),
        (f"{MAX_Q} + x[1][0]", "the target reads fixed positions"),
    ],
)
def test_the_held_shortcut_is_not_guessed_where_terms_are_not_parts(target, why) -> None:
    """A product of two reductions, sums the engine pools into one part, a fixed position:
    which values an architecture holds would be a guess, so the pooling shortcut stands."""
    held = floors(_spec(target, 8), 8, (((1,), False),)).held["heads [1]"]
    assert held["resolved"] == "1 of 2" and held["shortcut"] is None
    assert why in held["why"] and held["why"].endswith("the pooling shortcut stands")


def test_parts_of_one_structure_are_the_best_choice_among_them() -> None:
    """A maximum and a minimum of projections have one structure: the engine's one head
    resolves either, so the held shortcut takes the better one."""
    spec = _spec(f"{MAX_Q} + {MIN_P}", 8)
    held = floors(spec, 8, (((1,), False),)).held["heads [1]"]
    generator = torch.Generator().manual_seed(7)
    x = sample_inputs(spec, FIT_SAMPLES + TEST_SAMPLES, 8, generator).double()
    target = TargetFunction(spec, seed=0)
    y = target(x.float()).double()
    q, p = (target.parameter(name, (), 1, 8).double() for name in ("q", "p"))
    pooled = pooled_features(x)
    each = [(x @ q).amax(1, keepdim=True), (x @ p).amin(1, keepdim=True)]
    by_hand = min(fitted_nmse(torch.cat([pooled, values], 1), y) for values in each)
    assert held["shortcut"] == pytest.approx(by_hand, rel=1e-6)


@pytest.mark.parametrize("seq_len", [5, 10])
def test_the_pooling_shortcut_meets_its_closed_form(seq_len) -> None:
    """x1 + x2 + x3 from what pooling holds: E[x1 + x2 + x3 | the multiset] is 3 times the
    mean, so the best NMSE is 1 - 3/T (tokens i.i.d.), whatever the features add."""
    found = floors(_spec("x[1] + x[2] + x[3]", seq_len), seq_len)
    assert found.shortcut == pytest.approx(1 - 3 / seq_len, abs=0.02)
    assert found.learns_below == found.shortcut / LEARNS_FACTOR and found.trivial == 1.0
    assert floors(_spec("sum(x[t] for t in T)", seq_len), seq_len).shortcut < 1e-9


def test_member_adamw_is_adamw_per_member_and_a_zero_rate_freezes() -> None:
    torch.manual_seed(0)
    ours_param = torch.nn.Parameter(torch.randn(3, 5, 4))
    their_param = torch.nn.Parameter(ours_param.detach().clone())
    ours = MemberAdamW([(ours_param, 1)], 5, lr=1e-2, weight_decay=0.1)
    theirs = torch.optim.AdamW([their_param], lr=1e-2, weight_decay=0.1)
    ours.member_lr = torch.tensor([1.0, 1.0, 0.0, 1.0, 0.5])
    start = ours_param.detach().clone()
    for _ in range(10):
        gradient = torch.randn(3, 5, 4)
        ours_param.grad, their_param.grad = gradient.clone(), gradient.clone()
        ours.step()
        theirs.step()
    assert torch.allclose(ours_param[:, :2], their_param[:, :2], atol=1e-6)
    assert torch.equal(ours_param[:, 2], start[:, 2])
    moved = (ours_param[:, 4] - start[:, 4]).abs().mean() / (
        their_param[:, 4] - start[:, 4]
    ).abs().mean()
    assert 0.3 < moved < 0.7  # half the rate, about half the way
    ours.extra = {"kept": [1, 2]}
    state = ours.state_dict()
    again = MemberAdamW([(torch.nn.Parameter(start.clone()), 1)], 5, lr=1e-2, weight_decay=0.1)
    again.load_state_dict(state)
    assert again.extra == {"kept": [1, 2]}


@pytest.mark.parametrize("heads, width", [((1,), 8), ((2, 2), 48), ((4, 4, 4), 128)])
def test_a_members_parameter_count_is_its_own_models(heads, width) -> None:
    member = Member(heads, True, 0, 16, width)
    model = EnsembleTransformer([member], seq_len=10, input_dim=4, output_dim=3)
    assert member.parameters(10, 4, 3) == sum(p.numel() for p in model.parameters())
    mlp = sum(getattr(model, name).numel() for name in ("W_1", "b_1", "W_2", "b_2"))
    assert member.decoder_parameters() == mlp


@pytest.mark.parametrize("name", ["smoke", "paper"])
@pytest.mark.parametrize("embed_dim", [8, 16, 24, 32, 60])
def test_every_scales_ladder_spans_eight_times_in_decoder_parameters(name, embed_dim) -> None:
    from infoflow.validators.retrieval.experiment import SCALES

    rungs = SCALES[name].rungs
    sizes = [Member((1, 1), False, 0, embed_dim, width).decoder_parameters() for width in rungs]
    assert len(rungs) >= 4 and sizes == sorted(sizes) and sizes[-1] >= 8 * sizes[0]
