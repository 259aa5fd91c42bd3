"""A token's k-th partner: the peel over a pair score leaves each token's earlier partners out
by position ([R] ``partner_peel``), the rank counts the candidates a condition t != s leaves,
and compile builds the peel with positional encoding."""

from __future__ import annotations

import pytest

from infoflow.core.errors import SpecError
from infoflow.retrieval.derive import derive
from infoflow.retrieval.explain import explain
from infoflow.retrieval.expression import TargetError
from infoflow.retrieval.mechanisms import kth
from infoflow.retrieval.predict import predict_retrieval
from infoflow.retrieval.schedule_to_circuit import circuit_of
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.validators.retrieval.construction import build

PARTNER = "{outer}(kth_largest((dot(x[s], x[t]) for t in T{cond}), k={k}) for s in T)"
SECOND = PARTNER.format(outer="max", cond=" if t != s", k=2)


def spec(
    target: str, layers: int = 3, pe: bool = False, embed: int = 40, **options
) -> RetrievalSpec:
    arch = {"layers": layers, "heads": 1, "embed_dim": embed, "positional_encoding": pe}
    data = {"kind": "retrieval", "target": target, "input_dim": 4, "seq_len": 8}
    return RetrievalSpec.model_validate({**data, "architecture": arch, "options": options})


# ---- the engine ------------------------------------------------------------------------


def test_a_peel_over_partners_needs_positional_encoding() -> None:
    """With PE: the rounds, then the max. Without: one head (Theorem 2) or global
    aggregation, both growing with T; the old reading (content) plans the peel anyway."""
    target = PARTNER.format(outer="max", cond="", k=2)
    assert predict_retrieval(spec(target, pe=True))["efficient"].value
    without = predict_retrieval(spec(target))
    assert not without["efficient"].value
    needs = without["requires_positional_encoding"]
    assert needs.value is True and needs.provenance == kth.PARTNER_PEEL
    content = predict_retrieval(spec(target, partner_peel="content"))
    assert content["efficient"].value
    assert content["requires_positional_encoding"].value is False
    # with t != s the token itself is left out too, by the self-exclusion rule (often)
    assert predict_retrieval(spec(SECOND, pe=True))["efficient"].value
    assert not predict_retrieval(spec(SECOND, partner_peel="content"))["efficient"].value


def test_a_peel_of_one_race_needs_no_positions() -> None:
    """The readout's own k-th (order 1): one race, its peel keys are the tokens' own."""
    found = predict_retrieval(spec("kth_largest((dot(q, x[t]) for t in T), k=2)", layers=2))
    assert found["efficient"].value and found["requires_positional_encoding"].value is False


def test_explain_names_the_rule_and_the_end_the_peel_counts_from() -> None:
    text = explain(spec(PARTNER.format(outer="max", cond="", k=2), pe=True))
    assert "learns the 2nd largest t (of 2), leaving out the partners it retrieved before" in text
    assert "reconstruction:partner_peel" in text
    both = explain(spec(SECOND, pe=True))  # t != s: the positional term as well
    assert "t other than itself (a positional term in the score leaves it out) (of 2)" in both
    smallest = PARTNER.format(outer="max", cond="", k=7)  # the 2nd smallest of 8
    assert "learns the 2nd smallest t (of 2)" in explain(spec(smallest, pe=True))


def test_the_rank_counts_the_candidates_t_other_than_s() -> None:
    """The 7th largest of the 7 others is their minimum: one retrieval, two layers in all."""
    assert kth.rank(7, 8, 1) == 1 and kth.rank(7, 8) == 2 and kth.rank(6, 8, 1) == 2
    last = PARTNER.format(outer="max", cond=" if t != s", k=7)
    assert predict_retrieval(spec(last, pe=True))["min_layers"].value == 2
    twice = PARTNER.format(outer="max", cond=" if t != s if s != t", k=7)  # one token left out
    assert predict_retrieval(spec(twice, pe=True))["min_layers"].value == 2
    every = PARTNER.format(outer="max", cond="", k=7)
    assert predict_retrieval(spec(every, pe=True))["min_layers"].value == 3
    with pytest.raises(TargetError, match="k = 8 exceeds T = 8, less 1 left out by t != s"):
        kth.rank(8, 8, 1)
    with pytest.raises(ValueError, match="there is no 8th value of 7"):
        spec(PARTNER.format(outer="max", cond=" if t != s", k=8))


@pytest.mark.parametrize(
    ("far", "near"),
    [
        ("max(kth_smallest((dot(x[s], x[t]) for t in T if t != s), k=7) for s in T)", "max"),
        ("max(kth_largest((dot(x[s], x[t]) for t in T if t != s), k=7) for s in T)", "min"),
        ("sum(kth_smallest((dot(x[s], x[t]) for t in T if t != s), k=7) for s in T)", "max"),
    ],
)
def test_a_kth_counted_from_its_far_end_is_the_extremum_there(far: str, near: str) -> None:
    """The 7th smallest of 7 partners is their max: whether the pair (s, s) decides it is
    the max's answer, at every reading and with or without PE (it was the min's: no PE, an
    efficient plan, and a compiled witness at NMSE 12)."""
    outer = far.split("(", 1)[0]
    same = f"{outer}({near}(dot(x[s], x[t]) for t in T if t != s) for s in T)"
    names = ("requires_positional_encoding", "efficient", "cost_exponent", "min_layers")
    for reading in ("often", "decisive", "always"):
        for pe in (False, True):
            found, expected = (
                predict_retrieval(spec(target, layers=2, pe=pe, self_exclusion=reading))
                for target in (far, same)
            )
            assert [found[n].value for n in names] == [expected[n].value for n in names]


@pytest.mark.parametrize(
    "target",
    [
        "kth_largest((dot(q, x[t]) for t in T if t <= 3), k=2)",
        "kth_largest((dot(q, x[t]) for t in T if t != 1), k=2)",
        "kth_largest((dot(q, x[t-1]) for t in T), k=2)",
        "kth_largest((dot(x[t], x[t-1]) for t in T), k=2)",
        "max(kth_largest((dot(x[s], x[t]) for t in T if t < s), k=2) for s in T)",
        "max(kth_largest((dot(x[s], x[t]) for t in T if abs(t - s) <= 1), k=2) for s in T)",
    ],
)
def test_a_kth_over_a_restricted_set_of_candidates_is_refused(target: str) -> None:
    """Its rank would be counted among T (less t != s) candidates where the condition or the
    neighbour leaves fewer, some of them fewer than k: refused, not planned at T's rank."""
    with pytest.raises(ValueError, match="its candidates and so its rank are not counted"):
        spec(target)


def test_a_rank_that_depends_on_whether_tokens_coincide_is_refused() -> None:
    """t != s and t != u leave 6 or 7 candidates: the 6th largest is then the smallest or
    the second smallest; the 2nd is the 2nd either way."""
    assert kth.rank(2, 8, 2) == 2
    with pytest.raises(TargetError, match="rank from the nearer end is not fixed"):
        kth.rank(6, 8, 2)


# ---- compile ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "layers"),
    [
        (SECOND, 3),
        (PARTNER.format(outer="max", cond="", k=2), 3),
        (PARTNER.format(outer="min", cond=" if t != s", k=3), 4),
        ("max(kth_smallest((bilinear(x[s], A, x[t]) for t in T if t != s), k=2) for s in T)", 3),
    ],
)
def test_compile_builds_the_partner_peel(target: str, layers: int) -> None:
    """Every round leaves out what the token took before (its weight above 1/2 marks a
    position taken: a soft mark would leave out a near tie's runner-up too, NMSE 0.03).
    Each round before the last takes T channels more."""
    witness = build(spec(target, layers=layers, pe=True, embed=48))
    assert witness.nmse < 1e-5, witness.nmse
    rounds = layers - 1
    kinds = [m.kind for m in witness.circuit.mlps]
    assert kinds == ["threshold"] * (rounds - 1) + ["decode"]


def test_the_partner_peel_falls_with_beta() -> None:
    coarse = build(spec(SECOND, pe=True), beta=10).nmse
    assert coarse > 30 * build(spec(SECOND, pe=True)).nmse


def test_compile_refuses_the_peel_without_positional_encoding() -> None:
    """Under the content reading the engine plans it; compile knows no construction."""
    every = PARTNER.format(outer="max", cond="", k=2)
    with pytest.raises(SpecError, match="no construction is known"):
        circuit_of(spec(every, partner_peel="content"))
    with pytest.raises(SpecError, match="the engine calls this architecture not efficient"):
        circuit_of(spec(SECOND))


def test_the_last_rank_from_the_other_end_is_one_retrieval() -> None:
    """min over t != s, spelled as the 7th largest of the 7 others: no taken positions."""
    circuit = circuit_of(spec(PARTNER.format(outer="max", cond=" if t != s", k=7), pe=True))
    assert max(h.layer for h in circuit.heads) == 2 and "p0.taken" not in circuit.channels
    assert derive(spec(PARTNER.format(outer="max", cond=" if t != s", k=7), pe=True)).efficient


def test_the_decoder_is_fitted_on_the_partner_the_last_round_retrieves() -> None:
    """The decode MLP of rank r learns x(s).x(t) at each token's r-th best partner (the
    token itself left out under t != s), the inputs the model feeds it."""
    import torch

    from infoflow.validators.retrieval.circuit_to_weights import Weights
    from infoflow.validators.retrieval.decode import exact_inputs
    from infoflow.validators.retrieval.targets import TargetFunction

    s = spec(PARTNER.format(outer="min", cond=" if t != s", k=3), layers=4, pe=True, embed=48)
    circuit = circuit_of(s)
    weights = Weights(circuit, s, TargetFunction(s, seed=0), beta=100, width=64)
    (decode,) = [m for m in circuit.mlps if m.kind == "decode"]
    z, y = exact_inputs(weights, decode, torch.Generator().manual_seed(0))
    x, partner = z[:, :4], z[:, 4:]
    assert torch.allclose(y, (x * partner).sum(-1))
    tokens = x.reshape(-1, 8, 4)
    scores = tokens @ tokens.transpose(1, 2)
    scores = scores.masked_fill(torch.eye(8, dtype=torch.bool), -torch.inf)
    third = scores.sort(-1, descending=True).values[..., 2]
    assert torch.allclose(y, third.reshape(-1))
