"""The self-exclusion rule ([R] ``self_exclusion``, infoflow/retrieval/diagonal.py): a
condition s != t whose left-out pair (s, s) decides a max or min over two tokens needs
positional encoding (else global aggregation); the classes agree with the maths on random
draws; compile leaves the token out with a positional term."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from pydantic import ValidationError

from infoflow.core.errors import SpecError
from infoflow.retrieval import diagonal
from infoflow.retrieval.algebra import EXTREMUM, terms
from infoflow.retrieval.circuit import POSITIONS
from infoflow.retrieval.predict import predict_retrieval
from infoflow.retrieval.schedule_to_circuit import circuit_of
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.retrieval.text_to_expression import parse_target


def spec(target: str, pe: bool = False, embed_dim: int = 24, **options) -> RetrievalSpec:
    arch = {"layers": 2, "heads": [1, 1], "embed_dim": embed_dim, "positional_encoding": pe}
    data = {"kind": "retrieval", "target": target, "input_dim": 4, "seq_len": 8}
    return RetrievalSpec.model_validate({**data, "architecture": arch, "options": options})


PAIR = "for s in T for t in T if s != t"
#: (target, whether the pair (s, s) decides every draw, the score g as the max sees it)
CASES = [
    (f"max(dot(x[s], x[t]) {PAIR})", True, lambda a, b: a @ b),
    (f"-min(-dot(x[s], x[t]) {PAIR})", True, lambda a, b: a @ b),
    (f"max(2 * dot(x[t], x[s]) {PAIR})", True, lambda a, b: 2 * a @ b),
    (f"min(norm(x[s] - x[t]) {PAIR})", True, lambda a, b: -np.linalg.norm(a - b)),
    (f"max(sqnorm(x[s] + 2 * x[t]) {PAIR})", True, lambda a, b: np.sum((a + 2 * b) ** 2)),
    (
        f"max(sqnorm(x[s]) + sqnorm(x[t]) + 2 * dot(x[s], x[t]) {PAIR})",  # |x(s) + x(t)|^2
        True,
        lambda a, b: np.sum((a + b) ** 2),
    ),
    (
        f"min(dot(q, x[s]) + dot(q, x[t]) - dot(x[s], x[t]) {PAIR})",
        True,
        lambda a, b: -(a.sum() + b.sum() - a @ b),  # q = (1, 1, 1, 1) in the numbers
    ),
    (
        f"max(dot(q, x[s]) + dot(q, x[t]) - dot(x[s], x[t]) {PAIR})",
        False,
        lambda a, b: a.sum() + b.sum() - a @ b,
    ),
    (
        f"max(dot(q, x[s]) - dot(q, x[t]) + dot(x[s], x[t]) {PAIR})",
        False,
        lambda a, b: a.sum() - b.sum() + a @ b,
    ),
    (f"min(dot(x[s], x[t]) {PAIR})", False, lambda a, b: -(a @ b)),
    (  # linear f(s) + f(t) shift the tokens: (x(s) + q).(x(t) + q) - |q|^2, still rarely
        f"min(dot(q, x[s]) + dot(q, x[t]) + dot(x[s], x[t]) {PAIR})",
        False,
        lambda a, b: -(a.sum() + b.sum() + a @ b),
    ),
    (  # |x(s) + x(t)|^2: the min of a norm of a sum, often (was read rarely until 2026-12-05)
        f"min(sqnorm(x[s]) + sqnorm(x[t]) + 2 * dot(x[s], x[t]) {PAIR})",
        False,
        lambda a, b: -np.sum((a + b) ** 2),
    ),
    (f"max(-dot(x[s], x[t]) {PAIR})", False, lambda a, b: -(a @ b)),
    (f"max(norm(x[s] - x[t]) {PAIR})", False, lambda a, b: np.linalg.norm(a - b)),
    (  # |x(s) - x(t)|^2 spelled out: never, as its norm (was often until 2026-12-05)
        f"max(sqnorm(x[s]) + sqnorm(x[t]) - 2 * dot(x[s], x[t]) {PAIR})",
        False,
        lambda a, b: np.sum((a - b) ** 2),
    ),
    (f"min(norm(x[s] + x[t]) {PAIR})", False, lambda a, b: -np.linalg.norm(a + b)),
    (f"max(norm(x[s] - 2 * x[t]) {PAIR})", False, lambda a, b: np.linalg.norm(a - 2 * b)),
]


@pytest.mark.parametrize("target, decides, _", CASES)
def test_a_deciding_pair_needs_positional_encoding_else_global_aggregation(
    target: str, decides: bool, _
) -> None:
    decisive = {"self_exclusion": "decisive"}  # the reading that charges every draw only
    without = predict_retrieval(spec(target, **decisive))
    with_pe = predict_retrieval(spec(target, pe=True, **decisive))
    assert without["requires_positional_encoding"].value is decides
    assert without["efficient"].value is not decides
    assert with_pe["efficient"].value is True
    if decides:
        assert without["requires_positional_encoding"].provenance == (
            "reconstruction:self_exclusion"
        )
        assert "s != t, whose left-out pair (s, s) decides" in without["bottleneck"].value
        assert "T" in str(without["cost_exponent"].expression)  # grows with T


#: The default reading (often) charges these too: the pair decides a share of draws that the
#: form of the score does not keep small (docs/results/2026-12-05-self-exclusion-often.md).
OFTEN = {
    f"max(dot(q, x[s]) - dot(q, x[t]) + dot(x[s], x[t]) {PAIR})",
    f"min(norm(x[s] + x[t]) {PAIR})",
    f"min(sqnorm(x[s]) + sqnorm(x[t]) + 2 * dot(x[s], x[t]) {PAIR})",
}


@pytest.mark.parametrize("target, decides, _", CASES)
def test_the_default_reading_charges_every_draw_and_often(target: str, decides: bool, _) -> None:
    found = _role(target)
    assert (found == diagonal.OFTEN) is (target in OFTEN)
    charged = predict_retrieval(spec(target))["requires_positional_encoding"].value
    assert charged is (decides or target in OFTEN)
    if not decides and target not in OFTEN:
        assert found in (diagonal.RARELY, diagonal.NEVER)


def _role(target: str) -> str:
    ((_, reduce),) = terms(parse_target(target))  # -min(...): the min decides alone
    return diagonal.role(EXTREMUM[reduce.op], terms(reduce.body), ("s", "t"))


@pytest.mark.parametrize("target, decides, g", CASES)
def test_each_class_is_what_random_draws_show(target: str, decides: bool, g) -> None:
    """every draw: g(a, b) <= max(g(a, a), g(b, b)) always; never: g(a, a) <= g(a, b)
    always; some draws: both fail on some pair, so neither reading is safe (each example
    here is one; a score the engine does not recognise is also read as some draws)."""
    found = _role(target)
    assert (found == diagonal.EVERY_DRAW) is decides
    rng = np.random.default_rng(0)
    pairs = rng.normal(size=(4000, 2, 4)) * rng.uniform(0.1, 3, size=(4000, 1, 1))
    dominated = [g(a, b) <= max(g(a, a), g(b, b)) + 1e-9 for a, b in pairs]
    never = [g(a, a) <= g(a, b) + 1e-9 for a, b in pairs]
    assert all(dominated) is (found == diagonal.EVERY_DRAW)
    assert all(never) is (found == diagonal.NEVER)


def test_the_options_read_the_pairwise_minimum_strictly_or_as_before() -> None:
    minimum, maximum = f"min(dot(x[s], x[t]) {PAIR})", f"max(dot(x[s], x[t]) {PAIR})"
    strict = predict_retrieval(spec(minimum, self_exclusion="always"))
    assert strict["requires_positional_encoding"].value is True
    assert strict["efficient"].value is False
    before = predict_retrieval(spec(maximum, self_exclusion="never"))
    assert before["requires_positional_encoding"].value is False
    assert before["efficient"].value is True
    never_decides = predict_retrieval(
        spec(f"max(norm(x[s] - x[t]) {PAIR})", self_exclusion="always")
    )
    assert never_decides["requires_positional_encoding"].value is False


def test_compile_leaves_each_token_out_of_its_own_retrieval_with_positions() -> None:
    from infoflow.validators.retrieval import construction

    target = f"max(dot(x[s], x[t]) {PAIR})"
    circuit = circuit_of(spec(target, pe=True))
    first = next(h for h in circuit.heads if h.layer == 1)
    assert [f.query for f in first.score] == ["x", POSITIONS]
    assert circuit.channels[POSITIONS] == 8
    assert not circuit.notes
    witness = construction.build(spec(target, pe=True), beta=100, width=512, circuit=circuit)
    assert witness.nmse < 1e-3, witness.nmse
    with pytest.raises(SpecError, match="s != t, whose left-out pair"):
        circuit_of(spec(target))


SYMMETRIC = [
    "dot(x[s], x[t])",
    "norm(x[s] - x[t])",
    "norm(x[t] - x[s]) + 2 * dot(x[t], x[s])",
    "dot(q, x[s]) + dot(q, x[t])",
    "max(dot(q, x[s]), dot(q, x[t]))",
]


def _same_predictions(a: str, b: str, pe: bool = False) -> None:
    first, second = (_predictions(t, pe) for t in (a, b))
    for name in first:
        if name not in ("bottleneck", "information_sets"):
            assert first[name]["value"] == second[name]["value"], (name, a, b)
            assert first[name]["provenance"] == second[name]["provenance"], (name, a, b)


def _predictions(target: str, pe: bool) -> dict:
    """The predictions, or the refusal of a constant (the min of |x(s) - x(t)| over every
    pair is 0) as one."""
    try:
        return predict_retrieval(spec(target, pe=pe)).to_json()["predictions"]
    except ValidationError as exc:
        return {"refused": {"value": "constant" in str(exc), "provenance": None}}


@pytest.mark.parametrize("body", SYMMETRIC)
@pytest.mark.parametrize("op", ["max", "min"])
def test_an_order_test_on_a_symmetric_score_is_the_pair_unordered(op: str, body: str) -> None:
    """s < t over a score symmetric in s and t is s != t; s <= t is every pair."""
    pairs = "for s in T for t in T"
    distinct, everything = f"{op}({body} {pairs} if s != t)", f"{op}({body} {pairs})"
    _same_predictions(f"{op}({body} {pairs} if s < t)", distinct)
    _same_predictions(f"{op}({op}({body} for t in T if t > s) for s in T)", distinct)
    _same_predictions(f"{op}({body} {pairs} if t >= s)", everything)


@pytest.mark.parametrize(
    "target",
    [
        "max(dot(q, x[s]) + dot(w, x[t]) for s in T for t in T if s < t)",  # not symmetric
        "max(dot(q, x[s]) + 2 * dot(q, x[t]) for s in T for t in T if s < t)",  # nor this
        "argmax(dot(x[s], x[t]) for s in T for t in T if s < t)",  # its value is the order
        "max(dot(x[s], x[t]) for s in T for t in T if s < t and t < 5)",  # t read twice
        "max(max(dot(x[s], x[t]) for t in T if t > s) + dot(q, x[s]) for s in T)",  # not one
        # a sum of a score that is not symmetric (a symmetric one is half the s != t sum)
        "sum(dot(q, x[s]) * dot(w, x[t]) for s in T for t in T if s < t)",
    ],
)
def test_an_order_test_that_is_not_the_pair_unordered_still_reads_positions(target) -> None:
    without = predict_retrieval(spec(target))
    assert without["feasible"].value is False
    assert "reads positions" in without["bottleneck"].value


def test_compile_reads_an_order_test_on_a_symmetric_score_unordered() -> None:
    ordered = circuit_of(spec(f"max(dot(x[s], x[t]) {PAIR.replace('!=', '<')})", pe=True))
    distinct = circuit_of(spec(f"max(dot(x[s], x[t]) {PAIR})", pe=True))
    assert [h.score for h in ordered.heads] == [h.score for h in distinct.heads]


@pytest.mark.parametrize("op, kth", [("max", "kth_largest"), ("min", "kth_smallest")])
def test_a_separable_symmetric_pair_is_the_best_plus_the_second_best(op: str, kth: str) -> None:
    """The extremum over s != t of f(s) + f(t) is the best f plus the second best, which the
    engine plans as such (a peel, no PE), whatever the spelling; numbers agree."""
    f = "dot(q, x[{}])"
    split = f"{op}({f.format('t')} for t in T) + {kth}(({f.format('t')} for t in T), k=2)"
    for written in (
        f"{op}({f.format('s')} + {f.format('t')} {PAIR})",
        f"{op}({f.format('s')} + {f.format('t')} {PAIR.replace('!=', '<')})",
        f"{op}({op}({f.format('s')} + {f.format('t')} for t in T if t != s) for s in T)",
    ):
        _same_predictions(written, split)
        _same_predictions(written, split, pe=True)
    assert predict_retrieval(spec(split))["requires_positional_encoding"].value is False
    values = np.random.default_rng(1).normal(size=(100, 8))
    for v in values:
        pairs = [v[s] + v[t] for s in range(8) for t in range(8) if s != t]
        ranked = sorted(v, reverse=op == "max")
        assert np.isclose(max(pairs) if op == "max" else min(pairs), ranked[0] + ranked[1])


def test_a_pair_that_is_not_separable_and_symmetric_stays_a_pair() -> None:
    """(f(s) + 2 f(t) left this list on 2026-12-07: 2 max f + the second largest.)"""
    for target in (
        f"max(dot(q, x[s]) + dot(w, x[t]) {PAIR})",
        f"max(dot(q, x[s]) + dot(x[s], x[t]) + dot(q, x[t]) {PAIR})",
    ):
        tree = predict_retrieval(spec(target, pe=True))
        assert tree["comparison_order"].value == 2, target


@pytest.mark.parametrize(
    "target",
    [
        f"min(norm(x[s] - x[t]) {PAIR})",  # the closest pair: each token's nearest is itself
        f"max(norm(x[s] + x[t]) {PAIR})",
        f"min(sqnorm(x[s] + x[t]) {PAIR})",
    ],
)
def test_compile_leaves_each_token_out_of_a_norm_pair_with_positions(target: str) -> None:
    """The norm pair's key reads |x|^2 from LayerNorm's scale; the position channels add the
    same 2 / E to every token's variance, which the read takes out."""
    from infoflow.validators.retrieval import construction

    witness = construction.build(spec(target, pe=True, embed_dim=40), beta=100, width=512)
    assert POSITIONS in witness.circuit.channels
    assert witness.nmse < 1e-3, witness.nmse


def test_the_witness_without_its_positional_term_computes_the_max_with_the_diagonal() -> None:
    """What the engine charges is what decides: the witness with the self-penalty removed
    computes the maximum over every pair, the diagonal included, far from the target."""
    from infoflow.retrieval.circuit import self_penalised, without_self_penalty
    from infoflow.validators.retrieval import construction

    s = spec(f"max(dot(x[s], x[t]) {PAIR})", pe=True)
    circuit = circuit_of(s)
    bare = without_self_penalty(circuit)
    assert self_penalised(circuit) and not self_penalised(bare)
    with_term = construction.build(s, circuit=circuit, width=512)
    without = construction.build(s, circuit=bare, width=512)
    assert with_term.nmse < 1e-3 < 1 < without.nmse, (with_term.nmse, without.nmse)


def test_the_self_exclusion_claim_is_refuted_when_the_pair_does_not_decide() -> None:
    from infoflow.validators.retrieval.experiment import Model
    from infoflow.validators.retrieval.witness import _self_exclusion_claim

    model = Model(8, 32, (1, 1), True)

    def verdict(nmse, bare):
        record = {"nmse": nmse, "nmse_without_self_penalty": bare}
        return _self_exclusion_claim(model, record, learns_below=0.1).verdict

    assert verdict(1e-6, 11.8) == "confirmed"  # every draw
    assert verdict(1e-6, 0.02) == "confirmed"  # a share of draws (the 'often' class)
    assert verdict(1e-6, 2e-7) == "refuted"  # the diagonal changed nothing
    assert verdict(1e-6, 5e-6) == "refuted"  # nor here: less than 10x the witness's
    assert verdict(0.5, 11.8) == "inconclusive"  # the witness itself is wrong
    assert verdict(1e-6, float("nan")) == "inconclusive"  # not measured: no finding (a review)
    assert verdict(1e-6, None) == "inconclusive"


@pytest.mark.parametrize("op", ["max", "min"])
def test_a_difference_f_s_minus_f_t_over_the_pair_is_never_decided_by_its_diagonal(op) -> None:
    """max over s != t of f(s) - f(t) is max f - min f >= 0, the diagonal's value: charged
    by no reading, the same plan as without the condition (one head each, [2]; it was a
    pair, [1, 1], until 2026-12-05). A token's own race over t is
    not (its diagonal wins where f(s) is the least), so a sum over those stays charged."""
    pair = f"{op}(dot(q, x[s]) - dot(q, x[t]) {PAIR})"
    unconditioned = predict_retrieval(spec(pair.replace(" if s != t", "")))
    for reading in diagonal.CHARGED:
        found = predict_retrieval(spec(pair, self_exclusion=reading))
        assert found["requires_positional_encoding"].value is False
        for name in ("efficient", "min_heads", "comparison_order"):  # max f - min f: split
            assert found[name].value == unconditioned[name].value, name
    rng = np.random.default_rng(0)
    f = rng.normal(size=(1000, 8))
    extremum = np.max if op == "max" else np.min
    differences = f[:, :, None] - f[:, None, :]
    off = ~np.eye(8, dtype=bool)
    assert np.allclose(extremum(differences[:, off], -1), extremum(differences, (1, 2)))
    race = "sum(max(dot(q, x[s]) - dot(q, x[t]) for t in T if t != s) for s in T)"
    charged = predict_retrieval(spec(race, self_exclusion="always"))
    assert charged["requires_positional_encoding"].value is True


def test_a_tokens_own_best_partner_decides_every_draw_only_when_every_token_counts() -> None:
    """Each token's best other partner by a dot product: the token of largest norm scores
    itself highest, on every draw. A sum over the tokens always reads it; a min over them
    keeps the token it changes only on some draws."""
    inner = "max(dot(x[s], x[t]) for t in T if t != s)"
    needs = {
        f"sum({inner} for s in T)": True,
        f"min({inner} for s in T)": False,
        f"max({inner} for s in T)": True,  # one max over the pair
    }
    for target, decides in needs.items():
        found = predict_retrieval(spec(target, self_exclusion="decisive"))
        assert found["requires_positional_encoding"].value is decides, target
        often = predict_retrieval(spec(target))  # the default charges the min's share too
        assert often["requires_positional_encoding"].value is True, target
    strict = predict_retrieval(spec(f"min({inner} for s in T)", self_exclusion="always"))
    assert strict["requires_positional_encoding"].value is True


def test_a_kth_partner_other_than_itself_is_off_by_the_token_itself() -> None:
    """The k-th largest score of a token against the others: the token of largest norm
    ranks itself first, so without PE its k-th is every draw one rank off; a sum over the
    tokens reads it, a max over them only sometimes; the k-th smallest is rarely moved. (The
    peel's own need for PE, [R] partner_peel, is read as content here, to test this rule
    alone.)"""
    spelled = "{}({}((dot(x[s], x[t]) for t in T if t != s), k=2) for s in T)"
    needs = {
        spelled.format("sum", "kth_largest"): (True, True),
        spelled.format("max", "kth_largest"): (False, True),
        spelled.format("sum", "kth_smallest"): (False, False),  # rarely: never charged
    }
    for target, (decisive, often) in needs.items():
        for reading, expected in (("decisive", decisive), ("often", often)):
            found = predict_retrieval(spec(target, partner_peel="content", self_exclusion=reading))
            assert found["requires_positional_encoding"].value is expected, (target, reading)


def test_the_option_leaves_the_names_of_trained_groups_as_they_were() -> None:
    """self_exclusion only changes what the engine reads, not what trains: the CPU suite's
    pairwise-minimum groups have the same names whatever the option says (they matched the
    committed 2026-12-04 report's until TRAINING_VERSION 3 renamed every group)."""
    from pathlib import Path

    import infoflow
    from infoflow.validators.retrieval.experiment import SCALES, plan

    root = Path(__file__).resolve().parents[2]
    spec = infoflow.load_spec(root / "specs/retrieval/cpu-suite/pairwise-min.json")
    names = []
    for reading in ("decisive", "never", "often"):
        options = spec.options.model_copy(update={"self_exclusion": reading})
        planned = plan(
            "pairwise-min", spec.model_copy(update={"options": options}), SCALES["smoke"]
        )
        names.append({g.name for g in planned.groups})
    assert len(names[0]) >= 2 and names[0] == names[1] == names[2]


PAIRS = np.random.default_rng(2).normal(size=(2000, 2, 3)) * np.random.default_rng(3).uniform(
    0.1, 3, size=(2000, 1, 1)
)


def test_what_the_engine_calls_every_draw_or_never_holds_on_random_pairs() -> None:
    """Soundness on a family of scores a x(s).x(t) + b f(s) + c f(t), every one of its 500
    (a tenth of a second to classify; 60 random draws met "never", 2 of 500, about once in
    eight runs, a review): whenever the engine says the pair (s, s) decides every draw, or
    never, the inequality holds on 2,000 pairs."""
    u, v = PAIRS[:, 0], PAIRS[:, 1]
    found = Counter()
    singles = ("sqnorm(x[{}])", "dot(q, x[{}])")
    for op, a, b, c, single in itertools.product(("max", "min"), *[range(-2, 3)] * 3, singles):
        score = f"{a} * dot(x[s], x[t]) + {b} * {single.format('s')} + {c} * {single.format('t')}"
        target = f"{op}({score} {PAIR})"
        role = _role(target)
        found[role] += 1
        sign = 1 if op == "max" else -1
        f = (lambda w: (w * w).sum(-1)) if single.startswith("sqnorm") else (lambda w: w.sum(-1))

        def g(left, right, a=a, b=b, c=c, f=f, sign=sign):  # q = (1, 1, 1) in the numbers
            return sign * (a * (left * right).sum(-1) + b * f(left) + c * f(right))

        if role == diagonal.EVERY_DRAW:
            assert np.all(g(u, v) <= np.maximum(g(u, u), g(v, v)) + 1e-9), target
        if role == diagonal.NEVER:
            assert np.all(g(u, u) <= g(u, v) + 1e-9), target
    assert found[diagonal.EVERY_DRAW] and found[diagonal.NEVER]


def test_the_self_exclusion_claim_is_made_only_where_the_engine_charged_the_condition() -> None:
    """Compile leaves the token out wherever there is PE; the pairwise minimum's diagonal
    decides only some draws, so no claim rests on it there."""
    from infoflow.validators.retrieval.witness import _charged

    assert _charged(spec(f"max(dot(x[s], x[t]) {PAIR})", pe=True))
    minimum = spec(f"min(dot(x[s], x[t]) {PAIR})", pe=True)
    assert not _charged(minimum)
    assert POSITIONS in circuit_of(minimum).channels  # built exactly all the same


def test_explain_leaves_out_only_the_pair_the_condition_names() -> None:
    """A chain with a != b: the step over a (held by b) leaves b out; the step over c does
    not."""
    from infoflow.retrieval.explain import explain

    chain = "max(dot(x[a], x[b]) + dot(x[b], x[c]) for a in T for b in T for c in T if a != b)"
    three = spec(chain, pe=True, embed_dim=32).model_dump()
    three["architecture"].update(layers=3, heads=[1, 1, 1])
    text = explain(RetrievalSpec.model_validate(three))
    assert "every token b retrieves the best a other than itself" in text
    assert "every token b retrieves the best c for" in text
    assert "the best c other than itself" not in text


def test_the_reason_names_the_pair_the_condition_leaves_out() -> None:
    found = predict_retrieval(spec("max(dot(x[a], x[b]) for a in T for b in T if a != b)"))
    assert "the condition a != b, whose left-out pair (a, a) decides" in found["bottleneck"].value
