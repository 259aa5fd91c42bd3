"""The shared criterion (projection onto the references) and its ceiling, against direct
computation; the clocks and the K sweep read it alike."""

import json
import math

import pytest
from conftest import SPECS

torch = pytest.importorskip("torch")

from infoflow.icl_markov.spec import IclMarkovSpec  # noqa: E402
from infoflow.validators.chains import ChainSampler, sample_chains  # noqa: E402
from infoflow.validators.icl_markov import references  # noqa: E402
from infoflow.validators.icl_markov.clocks.measure import Projected, clock_time  # noqa: E402
from infoflow.validators.icl_markov.criterion import (  # noqa: E402
    KINDS,
    PROJECTED,
    PROJECTIONS,
    WEIGHT,
    distinguishable,
    kind_weights,
    preregistration,
    project,
    separability,
    stacked,
)
from infoflow.validators.icl_markov.ksweep.phases import (  # noqa: E402
    MemberHistory,
    projected_call,
    projection_ceiling,
)
from infoflow.validators.icl_markov.training import mixture_weights  # noqa: E402


def _refs(states: int, length: int, chains: int, n: int = 48, seed: int = 0, names=PROJECTED):
    """The projection's references ``names`` [R, N, C] on n sequences of ``chains`` chains."""
    P = sample_chains(chains, states, 1.0, seed)
    w = mixture_weights(chains, chains, "random", seed)
    g = torch.Generator().manual_seed(seed + 1)
    x = ChainSampler(P).sample(torch.multinomial(w.float(), n, True, generator=g), length, g)
    found = references.predictions(x, P, w, 1.0)
    return stacked({k: v[:, :-1] for k, v in found.items()}, names).flatten(1, 2).double()


def test_the_projection_recovers_a_known_mixture_and_a_pure_reference() -> None:
    refs = _refs(3, 32, 8)
    weights = torch.ones(refs.shape[1])
    truth = torch.tensor([0.0, 0.2, 0.5, 0.3, 0.0], dtype=torch.float64)
    model = (truth[:, None, None] * refs).sum(0)
    found, misfit = project(model, refs, weights)
    assert found.sum().item() == pytest.approx(1.0)
    assert found.tolist() == pytest.approx(truth.tolist(), abs=0.02)
    assert misfit.item() < 1e-4
    pure, _ = project(refs[PROJECTED.index("M2")], refs, weights)
    assert pure[PROJECTED.index("M2")].item() > 0.97


def test_the_projection_minimises_the_kl_over_the_simplex() -> None:
    """No other mixture, on a grid of the simplex's corners and midpoints, fits better."""
    refs = _refs(3, 24, 4)
    weights = torch.ones(refs.shape[1])
    model = torch.softmax(
        torch.randn(refs.shape[1:], generator=torch.Generator().manual_seed(3)), -1
    )
    _, misfit = project(model.double(), refs, weights)
    r = len(PROJECTED)
    for i in range(r):
        for j in range(r):
            w = torch.zeros(r, dtype=torch.float64)
            w[i] += 0.5
            w[j] += 0.5
            mixture = (w[:, None, None] * refs).sum(0)
            kl = (model * (model.log() - mixture.log())).sum(-1).mean()
            assert misfit.item() <= kl.item() + 1e-9


@pytest.mark.parametrize("states,length,chains", [(3, 64, 32), (5, 48, 6)])
def test_separability_is_the_kl_to_the_nearest_midpoint_of_another_kind(
    states, length, chains
) -> None:
    """At two settings, each reference's separability against direct computation: the
    smallest over references of another kind of KL(X || (X + Y) / 2), averaged over the
    positions; and the projection of that midpoint is split evenly between the two."""
    refs = _refs(states, length, chains)
    found = separability(refs, torch.ones(refs.shape[1]), PROJECTED)
    for i, x in enumerate(PROJECTED):
        direct = []
        for j, y in enumerate(PROJECTED):
            if KINDS[x] != KINDS[y]:
                middle = (refs[i] + refs[j]) / 2
                direct.append(float((refs[i] * (refs[i] / middle).log()).sum(-1).mean()))
        assert found[x] == pytest.approx(min(direct), rel=1e-6)
    m1, g2 = PROJECTED.index("M1"), PROJECTED.index("G2")
    weights, _ = project((refs[m1] + refs[g2]) / 2, refs, torch.ones(refs.shape[1]))
    assert weights[m1].item() + weights[PROJECTED.index("M2")].item() == pytest.approx(
        0.5, abs=0.05
    )


def test_the_ceiling_says_untestable_with_the_numbers() -> None:
    close = {"U": 0.1, "G1": 0.004, "G2": 0.02, "M1": 0.004, "M2": 0.02}
    assert distinguishable(close, "generalizing", 0.01) and not distinguishable(
        close, "memorizing", 0.01
    )
    limit = projection_ceiling([close, close], [(32, 0), (32, 1)], 0.01)[32]
    assert not limit["detectable"] and "M1 0.004" in limit["reason"]
    assert projection_ceiling([close], [(32, 0)], 0.003)[32]["detectable"]


def _row(u=0.0, g1=0.0, g2=0.0, m1=0.0, m2=0.0, sep=0.05) -> dict[str, float]:
    weights = dict(zip(PROJECTED, (u, g1, g2, m1, m2), strict=True))
    row = {f"w:{p}": v for p, v in weights.items()}
    row.update({f"sep:{p}": sep for p in PROJECTED})
    return row


def test_the_sweep_and_the_clocks_read_the_same_weights() -> None:
    """One set of rows: the sweep's outcome and the memorising clock agree on when
    memorization formed (M1 + M2 reach WEIGHT between steps 100 and 200)."""
    rows = {
        10: _row(u=0.9, g1=0.1),
        100: _row(g1=0.6, m1=0.3, m2=0.1),
        200: _row(g1=0.2, m1=0.5, m2=0.3),
        400: _row(g2=0.6, m2=0.4),
    }
    history = MemberHistory.from_metrics(8, 0, rows, {}, criterion="projection")
    assert history.outcome == "memorization" and history.memorized_at == 200
    assert [c.phase for c in history.calls] == ["G1", "G1", "M1", "G2"]
    time, status = clock_time(rows, Projected("memorizing", 0.01))
    assert status == "formed" and 100 < time < 200
    share = (WEIGHT - 0.4) / (0.8 - 0.4)
    assert time == pytest.approx(math.exp(math.log(100) + share * math.log(2)))
    # the same rows read as a G clock: G2 forms at 400, after memorization
    assert clock_time(rows, Projected("generalizing", 0.01))[0] == pytest.approx(
        math.exp(math.log(200) + (WEIGHT / 0.6) * math.log(2))
    )
    assert clock_time(rows, Projected("memorizing", 0.1)) == (None, "not timed")


def test_a_memorising_clock_that_generalises_first_is_not_timed_as_memorization() -> None:
    rows = {10: _row(g1=1.0), 100: _row(g1=0.3, g2=0.7), 200: _row(m1=0.6, g2=0.4)}
    assert clock_time(rows, Projected("memorizing", 0.01)) == (None, "generalised first")
    assert MemberHistory.from_metrics(8, 0, rows, {}, criterion="projection").outcome == (
        "generalization"
    )


def test_an_undetermined_projection_call_names_its_candidates() -> None:
    call = projected_call(_row(g1=0.4, g2=0.3, m1=0.3))
    assert call.phase == "undetermined" and call.label == "G1/G2/M1?"


def test_previous_token_attention_is_the_models_own_layer1_attention() -> None:
    """The measured attention reproduces layer 1's output: its weights times the values,
    through W_O, equal the model's attention block (SDPA)."""
    from infoflow.validators.icl_markov.model import (
        StackedGPT,
        _norm,
        previous_token_attention,
    )

    model = StackedGPT([3, 4], 3, 12, 2, 16, 2, 32)
    with torch.no_grad():
        model.W_QKV.normal_(0, 0.5)  # sharp, unequal patterns
    x = torch.randint(0, 3, (2, 5, 12))
    members = torch.arange(2)[:, None, None]
    z = _norm(model.W_E[members, x] + model.W_pos[:, None, :12], model.ln1[0])
    d, heads = 16, 2
    q, k, v = (
        torch.einsum("mbtd,mde->mbte", z, model.W_QKV[0][..., i * d : (i + 1) * d])
        .unflatten(-1, (heads, -1))
        .transpose(2, 3)
        for i in range(3)
    )
    scores = (q @ k.transpose(-1, -2) / math.sqrt(d // heads)).masked_fill(
        ~torch.ones(12, 12, dtype=torch.bool).tril(), float("-inf")
    )
    weights = scores.softmax(-1)
    out = (weights @ v).transpose(2, 3).flatten(-2)
    direct = torch.einsum("mbtd,mde->mbte", out, model.W_O[0])
    assert torch.allclose(direct, model._attention(z, 0), atol=1e-5)
    expected = weights.diagonal(-1, dim1=-2, dim2=-1).mean((1, 3)).amax(-1)
    assert torch.allclose(previous_token_attention(model, x), expected, atol=1e-6)
    hard = StackedGPT([1], 3, 12, 2, 16, 2, 32, ("previous", "causal"))
    assert previous_token_attention(hard, x[:1]).item() == 1.0


def test_the_dose_response_claim_reads_the_extreme_rates() -> None:
    from infoflow.validators.icl_markov.ksweep.dose import dose_claim, dose_claims

    def fit(low, high):
        return {"status": "fit", "low": low, "high": high, "value": math.sqrt(low * high)}

    falls = {0.25: fit(40, 60), 0.5: fit(30, 45), 1.0: fit(20, 32), 2.0: fit(12, 20)}
    assert dose_claim(falls).verdict == "confirmed"
    rises = {0.25: fit(10, 14), 1.0: fit(20, 32), 2.0: fit(40, 60)}
    assert dose_claim(rises).verdict == "refuted" and "rises with r" in dose_claim(rises).reason
    overlap = {0.25: fit(20, 40), 1.0: fit(20, 32), 2.0: fit(18, 30)}
    assert dose_claim(overlap).verdict == "inconclusive"
    none = {**falls, 2.0: {"status": "none", "low": None, "high": None, "reason": "off"}}
    assert dose_claim(none).verdict == "inconclusive"
    two = dose_claims([("a", 1.0, fit(1, 2)), ("a", 0.5, fit(3, 4))])
    assert two == []  # two rates are a shift, not a dose-response


def test_the_final_boundary_claim_places_the_change_of_final_phase() -> None:
    from infoflow.core.results import Prediction
    from infoflow.validators.icl_markov.ksweep.claims import final_boundary

    kinds = {16: "memorizing", 32: "memorizing", 64: "G2", 128: "G2"}
    per_k = {k: {"final_kind": v} for k, v in kinds.items()}
    limit = {k: {"detectable": True} for k in kinds}
    park = Prediction(45.25, "chains", "estimate", "calibrated:park2025", "", None, (32, 64))
    assert final_boundary(park, per_k, limit).verdict == "confirmed"
    later = Prediction(200.0, "chains", "estimate", "p", "", None, (150, 256))
    assert final_boundary(later, per_k, limit).verdict == "refuted"
    missing = Prediction(None, "chains", "estimate", "uncalibrated", "None: other budget.")
    assert final_boundary(missing, per_k, limit).verdict == "inconclusive"


def test_the_training_bigram_is_the_pair_frequency_of_the_training_sequences() -> None:
    """B(j | i) weighs each chain's row by its mixture weight and its stationary mass at i (the
    unweighted mixture of rows is 0.03 off here, beyond the tolerance)."""
    P = sample_chains(6, 3, 1.0, 2)
    w = mixture_weights(6, 6, "random", 2)
    g = torch.Generator().manual_seed(5)
    x = ChainSampler(P).sample(torch.multinomial(w.float(), 4000, True, generator=g), 40, g)
    counts = torch.zeros(3, 3, dtype=torch.float64)
    pairs = (x[:, :-1].flatten(), x[:, 1:].flatten())
    counts.index_put_(pairs, torch.ones(pairs[0].numel(), dtype=torch.float64), accumulate=True)
    empirical = counts / counts.sum(-1, keepdim=True)
    found = references.training_bigram(torch.arange(3)[None], P, w)[0]
    assert found.flatten().tolist() == pytest.approx(empirical.flatten().tolist(), abs=0.01)


def test_the_later_criterion_reads_a_model_at_the_training_bigram_as_the_plateau() -> None:
    """A model that predicts from the current state alone: projection_global puts it on the
    plateau almost exactly; the first version has no reference for it (its misfit exceeds
    the 0.01-nat tolerance) and spreads it over U and the memorizers."""
    names = PROJECTIONS["projection_global"]
    refs = _refs(3, 64, 16, names=names)
    weights = torch.ones(refs.shape[1])
    model = refs[names.index("B")]
    found, misfit = project(model, refs, weights)
    assert kind_weights(dict(zip(names, found.tolist(), strict=True)))["plateau"] > 0.99
    assert misfit.item() < 1e-4
    first = tuple(n for n in names if n != "B")
    before, before_misfit = project(model, refs[[names.index(n) for n in first]], weights)
    assert before_misfit.item() > 0.01
    assert kind_weights(dict(zip(first, before.tolist(), strict=True)))["memorizing"] > 0.05


def test_each_criterion_version_registers_its_own_references() -> None:
    base = json.loads((SPECS / "icl_markov" / "race-c3-short.json").read_text())
    for criterion, names in PROJECTIONS.items():
        spec = IclMarkovSpec.model_validate({**base, "options": {"criterion": criterion}})
        assert tuple(preregistration(spec)["references"]) == names
