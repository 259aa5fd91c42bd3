"""infoflow compile: each mechanism's construction against the target it carries out, the
intrinsic-dimension witness, the refusals, the files, and explain's pointer to each head."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch
from conftest import SPECS, refused, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from infoflow.core.errors import SpecError
from infoflow.retrieval.circuit import (
    ANCHOR,
    BALANCE,
    MASK,
    POSITION_NUMBER,
    READOUT,
    SQNORM,
    TOKENS,
    Form,
    Head,
    self_penalised,
    without_self_penalty,
)
from infoflow.retrieval.circuit_forms import Unbuildable
from infoflow.retrieval.circuit_layout import lay_out
from infoflow.retrieval.schedule_to_circuit import circuit_of
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.retrieval.types import Schedule
from infoflow.validators.retrieval import construction, witness_ladder
from infoflow.validators.retrieval.circuit_to_weights import Weights
from infoflow.validators.retrieval.compile_report import compile_command, output_text
from infoflow.validators.retrieval.experiment import Model
from infoflow.validators.retrieval.exponents import Ladder
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs
from infoflow.validators.retrieval.witness_ladder import (
    exponent_claim,
    flat_claim,
    same_architecture,
)

RETRIEVAL = SPECS / "retrieval"


def spec(target: str, heads: list[int], embed_dim: int = 32, seq_len: int = 16, **extra):
    arch = {"layers": len(heads), "heads": heads, "embed_dim": embed_dim}
    arch["positional_encoding"] = extra.pop("positional_encoding", False)
    data = {"kind": "retrieval", "target": target, "input_dim": 4, "seq_len": seq_len}
    return RetrievalSpec.model_validate({**data, "architecture": arch, **extra})


def bundled(name: str, **overrides) -> RetrievalSpec:
    data = json.loads((RETRIEVAL / name).read_text())
    data.pop("sweep", None)
    for key, value in overrides.items():
        (data["architecture"] if key in ("heads", "layers", "embed_dim") else data)[key] = value
    return RetrievalSpec.model_validate(data)


#: "Exact up to floating point" in float64: the anchor (1e6) and the readout's mask (1e6) are
#: large; an exact construction measured an NMSE near 1e-11 until LayerNorm's bias kept every
#: channel small (2026-12-06), 1e-17 or less since (a fetch at beta 1000; sums 1e-20).
EXACT = 1e-10


def test_pooling_and_fixed_position_fetch_are_exact() -> None:
    pooled = spec("sum(dot(q, x[t]) for t in T)", [1], embed_dim=16)
    fetched = bundled("specific-position.json")
    for s in (pooled, fetched):
        witness = construction.build(s, beta=100, width=16)
        assert witness.nmse < EXACT, (s.target, witness.nmse)
    assert [h.mechanism for h in circuit_of(fetched).heads] == ["fetch"]


def test_max_position_retrieval_error_falls_as_beta_grows() -> None:
    s = spec("max(dot(q, x[t]) for t in T)", [1], embed_dim=16)
    errors = [construction.build(s, beta=b, width=16).nmse for b in (3, 30, 300)]
    assert errors[0] > errors[1] > errors[2], errors
    assert errors[2] < 1e-4 < errors[0]


def test_the_peeled_kth_retrieval_error_falls_as_beta_grows() -> None:
    s = bundled("kth-largest.json", layers=2, heads=[1, 1])
    circuit = circuit_of(s)
    assert [(h.layer, h.mechanism) for h in circuit.heads] == [
        (1, "k-th retrieval (peel)"),
        (2, "k-th retrieval (peel)"),
    ]
    errors = [
        construction.build(s, beta=b, width=16, circuit=circuit).nmse for b in (10, 100, 1000)
    ]
    assert errors[0] > errors[1] > errors[2], errors
    assert errors[2] < 1e-3


def test_the_peel_leaves_a_near_tie_s_runner_up_in_the_race() -> None:
    """In float64 the peel's margin is 1e-3 / beta: the token the round took scores at or
    above the blended value it retrieved, a near tie's runner-up below it by half the gap
    or more, so only the first leaves (a margin of 1 / beta took both: NMSE 0.0046 at beta
    100, T = 16). float32 keeps 1 / beta: its reads round at about 6e-5."""
    s = bundled("kth-largest.json", layers=2, heads=[1, 1])
    assert construction.build(s, width=16).nmse < 1e-5
    assert construction.build(s, width=16, dtype=torch.float32).nmse < 0.01


@pytest.mark.parametrize(
    "target",
    [
        "max(-dot(q, x[t]) for t in T)",
        "-min(dot(q, x[t]) for t in T)",
        "kth_largest((-dot(q, x[t]) for t in T), k=2)",
        "max(dot(q, x[t]) for t in T) - min(dot(q, x[t]) for t in T)",
        "max(-dot(x[s], x[t]) for s in T for t in T)",
    ],
)
def test_a_negated_score_keeps_its_sign(target: str) -> None:
    """A head copies the score's form (q . x(t), x(s).x(t)); the target's sign is the
    output's coefficient. Until 2026-12-05 it was dropped: these compiled to NMSE 25-34."""
    s = spec(target, [2, 1], seq_len=8)
    assert construction.build(s, width=512).nmse < 1e-3


def test_a_star_retrieves_each_leaf_side_by_side() -> None:
    """min over h, a, b, c of three pair scores with h: three heads in layer 1, one decode
    each, the readout's retrieval by their sum; each head named by the engine's step for
    the leaf it retrieves."""
    star = (
        "min(dot(x[h], x[a]) - dot(x[b], x[h]) + bilinear(x[h], A, x[c]) "
        "for h in T for a in T for b in T for c in T)"
    )
    witness = construction.build(spec(star, [3, 1], embed_dim=48, seq_len=8), width=1536)
    assert witness.nmse < 1e-3, witness.nmse
    first = [h for h in witness.circuit.heads if h.layer == 1]
    for head in first:
        leaf = head.does.split("its best ")[1].split()[0]
        assert f"retrieves the best {leaf} " in head.step, (head.does, head.step)
    assert {h.does.split("its best ")[1][0] for h in first} == {"a", "b", "c"}


def test_a_chain_on_one_head_a_layer_retrieves_its_leaves_one_a_layer() -> None:
    """The engine's sequential schedule ([R] sequential_schedule): on [1, 1, 1] the chain
    a - b - c retrieves one leaf a layer, each in the layer the schedule gives it."""
    chain = "max(dot(x[a], x[b]) + bilinear(x[b], A, x[c]) for a in T for b in T for c in T)"
    witness = construction.build(spec(chain, [1, 1, 1], embed_dim=32, seq_len=8), width=512)
    assert witness.nmse < 1e-3, witness.nmse
    assert [h.layer for h in witness.circuit.heads] == [1, 2, 3]
    for head in witness.circuit.heads[:2]:
        leaf = head.does.split("its best ")[1].split()[0]
        assert f"retrieves the best {leaf} " in head.step, (head.does, head.step)
        assert "sequential_schedule" in head.step


def test_a_sum_of_parts_runs_where_the_engine_runs_each_part() -> None:
    """On the engine's narrowest [1, 1, 1, 1] no two parts fit side by side: the pair's
    partners run in layer 1, the min and the max in layers 2 and 3, the readout's pair in
    layer 4, each head where the engine places its step and named after it."""
    target = (
        "max(dot(q, x[t]) for t in T) - min(dot(p, x[t]) for t in T)"
        " + min(dot(x[s], x[t]) for s in T for t in T if s != t)"
    )
    parts = spec(target, [1, 1, 1, 1], embed_dim=64, seq_len=8, positional_encoding=True)
    witness = construction.build(parts, beta=1000, width=512)
    assert witness.nmse < 1e-4, witness.nmse
    heads = sorted(witness.circuit.heads, key=lambda h: h.layer)
    assert [h.layer for h in heads] == [1, 2, 3, 4]
    planned = ["every token s retrieves the best t3 for min", "best t2 for min over t2"]
    planned += ["best t for max over t", "the readout retrieves the best s for min over s"]
    assert all(words in h.step for words, h in zip(planned, heads, strict=True)), heads
    assert [m.layer for m in witness.circuit.mlps] == [1]  # the pair's decode, after its head
    assert not witness.circuit.notes


def test_compile_prints_the_output_with_its_signs_and_coefficients() -> None:
    """The readout's output as the target adds its terms (it printed every term added)."""
    assert output_text([("p0.out", 1.0), ("p1.out", -1.0), ("p2.out", 0.5)]) == (
        "p0.out - p1.out + 0.5 * p2.out"
    )
    assert output_text([("p0.out", -2.0), ("fixed.out", 1.0)]) == "-2 * p0.out + fixed.out"
    assert output_text([("p0.out", 1.0)], -0.5) == "p0.out - 0.5"


@pytest.mark.parametrize(
    ("target", "constant"),
    [
        ("max(dot(q, x[t]) + 1 for t in T)", 1.0),
        ("min(2 - dot(q, x[t]) for t in T) + 0.5", 2.5),
        ("kth_largest((dot(q, x[t]) - 0.5 for t in T), k=2)", -0.5),
        ("argmax(dot(q, x[t]) + 3 for t in T)", 0.0),
        ("x[1] + x[2] + 1", 1.0),
        ("max(dot(q, x[t]) + 0.1 for t in T) + max(dot(q, x[t]) + 0.2 for t in T)", 0.3),
        ("max(dot(q, x[t]) + 1 / 2 - 1 / 2 for t in T) + 2 * 3", 6.0),
        ("min((1 - dot(q, x[t])) / 2 for t in T)", 0.5),
        ("max(kth_largest((dot(x[s], x[t]) + 1 for t in T), k=2) for s in T)", 1.0),
        ("sum(dot(q, x[t]) + 1 for t in T)", 8.0),
        ("sum(2 * (dot(q, x[t]) - 1 / 4) for t in T) + max(dot(p, x[t]) + 3 for t in T)", -1.0),
    ],
)
def test_a_constant_in_a_score_is_taken_out_into_the_output_bias(target, constant) -> None:
    """max(f + c) is max f + c (an argmax does not move), a sum over the T = 8 tokens of f + c
    is the sum of f + 8 c, as the engine's canonical form takes them out (compile refused
    the constant before): the output's bias carries it."""
    heads = [1, 1, 1] if "for s in T" in target else [1, 1] if "kth" in target else [1]
    heads = [2] if "sum(2" in target else heads  # two terms side by side
    s = spec(target, heads, embed_dim=64, seq_len=8, positional_encoding=True)
    witness = construction.build(s, beta=1000)
    assert witness.circuit.constant == constant
    bound = 3e-3 if "argmax" in target else 1e-3 if "for s in T" in target else 1e-8
    assert witness.nmse < bound, witness.nmse


@pytest.mark.parametrize(
    "target", ["x[1][0] + x[3][0]", "max(dot(q, x[t]) for t in T) + x[2][1] + x[T][1]"]
)
def test_one_coordinate_of_fixed_positions_is_fetched_by_one_head(target) -> None:
    """The same coordinate of several fixed positions is one fetch head copying that
    coordinate (since 2026-12-06; fixed positions were fetched whole only), named so."""
    heads = [1, 1] if "max" in target else [1]
    s = spec(target, heads, embed_dim=48, seq_len=8, positional_encoding=True)
    witness = construction.build(s)
    assert witness.nmse < 1e-6, witness.nmse
    fetches = [h for h in witness.circuit.heads if h.mechanism == "fetch"]
    assert len(fetches) == 1 and fetches[0].values[0].matrix.startswith("e:"), fetches
    assert "x[2][1], x[8][1]" in fetches[0].does or "x[1][0], x[3][0]" in fetches[0].does
    with pytest.raises(SpecError, match="by one coordinate, alike"):
        circuit_of(spec("x[1][0] + x[3][1]", [1], seq_len=8, positional_encoding=True))


def test_heads_of_two_parts_in_one_layer_are_named_after_their_own_parts() -> None:
    """On [1, 1, 2] the pair's readout and the argmin share layer 3: each head takes its own
    engine part's sentence (a review found them swapped when heads were named layer by
    layer, in term order)."""
    target = "min(dot(x[s], x[t]) for s in T for t in T if s != t) + argmin(x[t][2] for t in T)"
    parts = spec(target, [1, 1, 2], embed_dim=64, seq_len=8, positional_encoding=True)
    circuit = circuit_of(parts)
    last = {h.does.split(" and ")[0]: h.step for h in circuit.heads if h.layer == 3}
    assert "for min over s, t" in last["the readout retrieves the best s by p0.value"]
    assert "for argmin over" in last["the readout retrieves the best t"]


@pytest.mark.parametrize(
    ("target", "heads", "named"),
    [  # a head's score matrix -> words of the engine step it must carry
        (
            "max(-dot(q, x[t]) for t in T) + min(-dot(p, x[s]) for s in T)",
            [2],
            {"q": "for min over t", "p": "for max over s"},
        ),
        (
            "max(max(bilinear(x[s], A, x[t]) for t in T) for s in T) + min(x[u][0] for u in T)",
            [2, 1],
            {"e:0": "for min over u", "A": "for max over s, t", "I": "for max over s, t"},
        ),
    ],
)
def test_a_term_pairs_with_its_engine_part_as_written(target, heads, named) -> None:
    """The engine factors a max of one scaled term as compile does (max(-f) is -min f
    there, since 2026-12-06; it kept the op as written before, and compile paired by it) and
    counts a max over s of a max over t as one over two indices: the heads are named after
    their own part (a review found them swapped)."""
    circuit = circuit_of(spec(target, heads, embed_dim=64, seq_len=8, positional_encoding=True))
    for head in circuit.heads:
        assert named[head.score[0].matrix] in head.step, (head.does, head.step)


def test_parts_that_do_not_pair_are_laid_out_by_search_unnamed() -> None:
    """A max of x(s).x(t) over every pair (which the engine plans as the max of |x|^2, one
    retrieval, and compile builds as the pair, two layers) beside a pair max of a bilinear
    form on [1, 1, 1, 1]: the terms do not pair with the engine's parts, so compile lays them
    out itself (one after the other), names no head, and says so; the witness still
    computes the target. Two pair maxima the engine runs alike pair in order, every head
    named; two maxima over s that differ in what they nest (a max over t, a partner peel)
    are told apart, each named after its own."""
    target = (
        "max(dot(x[s], x[t]) for s in T for t in T)"
        " + max(bilinear(x[s], A, x[t]) for s in T for t in T)"
    )
    witness = construction.build(spec(target, [1, 1, 1, 1], seq_len=8), width=512)
    assert witness.nmse < 1e-3, witness.nmse
    assert sorted(h.layer for h in witness.circuit.heads) == [1, 2, 3, 4]
    assert not any(h.step for h in witness.circuit.heads)
    assert "not named after the engine's steps" in " ".join(witness.circuit.notes)
    alike = target.replace("dot(x[s], x[t])", "bilinear(x[s], B, x[t])")
    circuit = circuit_of(spec(alike, [1, 1, 1, 1], seq_len=8))
    assert all(h.step for h in circuit.heads) and not circuit.notes
    for head in circuit.heads:  # B's pair is comparison 1, A's comparison 2, as written
        assert ("comparison 1" in head.step) == ("p0." in head.does), (head.does, head.step)
    partners = (  # the k = 1 "partner" is a max over s, t; the k = 7 one a partner peel
        "max(kth_largest((bilinear(x[s], B, x[t]) for t in T), k=1) for s in T)"
        " + max(kth_largest((bilinear(x[s], A, x[t]) for t in T if t != s), k=7) for s in T)"
    )
    circuit = circuit_of(spec(partners, [1, 2, 2], seq_len=8, positional_encoding=True))
    for head in circuit.heads:  # each term with its own part (two took one part before)
        assert ("s2" in head.step) == ("p1." in head.does), (head.does, head.step)


@pytest.mark.parametrize("heads", [[2], [1, 1], [2, 1], [1, 1, 1]])
def test_alike_parts_pair_in_order_and_every_head_is_named(heads) -> None:
    """Two maxima over one token: the engine runs both alike (the same steps up to the
    names of indices and comparisons), so they pair in order, each term's head named after
    its own part, wherever the layout puts it (on [1, 1] and [2, 1] no head was named)."""
    target = "max(dot(q, x[t]) for t in T) + max(dot(p, x[t]) for t in T)"
    circuit = circuit_of(spec(target, heads, embed_dim=64, seq_len=8))
    steps = {h.does.split(" into ")[-1]: h.step for h in circuit.heads}
    assert "(comparison 1)" in steps["p0.out"] and "(comparison 2)" in steps["p1.out"], steps
    assert not circuit.notes


def test_heads_whose_layers_do_not_align_with_the_engines_are_left_unnamed() -> None:
    """A max beside a max against x[1] on [2, 1, 1]: compile runs the fetch beside the max
    in layer 1 and the retrieval in layer 2, the engine the fetch in layer 2: no head takes
    the sentence of another layer's step (the retrieval was named after the fetch), and the
    notes say which layers are unnamed."""
    target = "max(dot(q, x[t]) for t in T) + max(dot(x[1], x[t]) for t in T)"
    circuit = circuit_of(spec(target, [2, 1, 1], 64, 8, positional_encoding=True))
    for head in circuit.heads:
        assert ("fixed positions" in head.step) <= (head.mechanism == "fetch"), head
    unnamed = sorted({h.layer for h in circuit.heads if not h.step})
    assert unnamed and f"layer(s) {', '.join(map(str, unnamed))} are not named" in circuit.notes[0]


def test_a_layout_keeps_a_norm_pair_in_layer_1_and_refuses_what_fits_nowhere() -> None:
    """The parts' layers are an increasing map onto the architecture's: a term reading |x|^2
    from the first LayerNorm keeps layer 1, and heads that fit no map are refused."""

    def part(*layers: int, norm: bool = False):
        score = (Form(ANCHOR, SQNORM if norm else TOKENS, "I", 1),)
        return [Head(layer, 0, "m", "w", "d", score=score) for layer in layers], [], None

    schedule = Schedule(shape=None, placements=[])
    laid, how, paired = lay_out([part(1), part(1, 2, norm=True)], (1, 1, 1), schedule)
    assert (how, paired) == ("search", None)
    assert [[h.layer for h in heads] for heads, _ in laid] == [[2], [1, 3]]
    with pytest.raises(Unbuildable, match="no layout of the terms fits heads"):
        lay_out([part(1, 2, norm=True), part(1, 2, norm=True)], (1, 1, 1), schedule)


def test_terms_that_attend_alike_share_one_head_and_opposite_ones_do_not() -> None:
    """max norm + max sqnorm: one retrieval (the engine's [1]), one head copying |x|^2 twice,
    the norm's root after it (until 2026-12-07, a head a term: refused on [1]); a min beside
    the max scores with the opposite sign: two heads (the engine's [2])."""
    target = "max(norm(x[t]) for t in T) + max(sqnorm(x[t]) for t in T)"
    witness = construction.build(spec(target, [1], seq_len=8), width=256)
    assert witness.nmse < 1e-6, witness.nmse
    (head,) = witness.circuit.heads
    assert [c.source for c in head.values] == [SQNORM, SQNORM]
    # the norm's root fitted on the copy it reads, the second of its head (a fuzz's
    # traceback: the decode looked for the first copy alone), at that copy's scale
    swapped = "max(sqnorm(x[t]) for t in T) + 2 * max(norm(x[t]) for t in T)"
    witness = construction.build(spec(swapped, [1], seq_len=8), width=256)
    assert witness.nmse < 1e-6, witness.nmse
    scaled = "max(norm(x[t]) for t in T) + max(norm(2 * x[t]) for t in T)"  # copies of scale 1, 4
    witness = construction.build(spec(scaled, [2], seq_len=8), width=256)  # the engine: [2]
    assert sorted(c.scale for c in witness.circuit.heads[0].values) == [1.0, 4.0]
    assert witness.nmse < 1e-6, witness.nmse
    opposite = construction.build(spec(target.replace("max(norm", "min(norm"), [2], seq_len=8))
    assert opposite.nmse < 1e-6, opposite.nmse
    assert [len(h.values) for h in opposite.circuit.heads] == [1, 1]


@pytest.mark.parametrize(
    "target",
    [
        "max(dot(x[a], x[b]) + dot(x[b], x[c]) for a in T for b in T for c in T)",
        "min(dot(x[h], x[a]) + dot(x[h], x[b]) + dot(x[c], x[h]) "
        "for h in T for a in T for b in T for c in T)",
    ],
)
def test_equal_leaves_are_one_retrieval_counted_as_often_as_they_occur(target: str) -> None:
    """Leaves with one score are one function of the centre: the engine plans them on one
    head ([1, 1]), and compile builds that plan, the readout weighing the one value by the
    number of leaves (2 or 3), to the target as written."""
    witness = construction.build(spec(target, [1, 1], embed_dim=32, seq_len=8), width=512)
    assert witness.nmse < 1e-3, witness.nmse
    assert [h.layer for h in witness.circuit.heads] == [1, 2]
    weights = [copy.scale for copy in witness.circuit.heads[-1].values]
    assert weights == [2.0 if target.startswith("max") else 3.0]


@pytest.mark.parametrize(
    "target",
    [
        "max(dot(q, x[s]) + dot(q, x[t]) for s in T for t in T if s != t)",
        "min(dot(q, x[s]) + dot(q, x[t]) for s in T for t in T if s != t)",
        "kth_smallest((-dot(q, x[t]) for t in T), k=2) - max(dot(q, x[t]) for t in T)",
        "-min(dot(q, x[t]) for t in T) + kth_largest((dot(q, x[t]) for t in T), k=15)",
    ],
)
def test_the_max_beside_a_peel_is_its_first_round(target: str) -> None:
    """max over s != t of f(s) + f(t) = max f + the second largest: the peel's first round
    holds max f, so the engine plans it on [1, 1] (it planned [2, 1], the max beside the
    peel, until 2026-12-05), and compile builds that plan, the output reading the round's
    channel with the max's sign (a min, a negated score, a k-th from its far end alike)."""
    witness = construction.build(spec(target, [1, 1]), width=16)
    assert [(h.layer, h.mechanism) for h in witness.circuit.heads] == [
        (1, "k-th retrieval (peel)"),
        (2, "k-th retrieval (peel)"),
    ]
    assert any(channel.endswith(".m1") for channel, _ in witness.circuit.output)
    assert witness.nmse < 1e-5, witness.nmse


def test_each_copy_of_a_held_max_reads_its_own_peel() -> None:
    """sum over i of (max f_i + 2nd largest f_i) on [2, 2], the engine's minimal plan: two
    peels, each holding its copy's max."""
    pair = "max(dot(w[i], x[t]) for t in T) + kth_largest((dot(w[i], x[t]) for t in T), k=2)"
    witness = construction.build(spec(f"sum({pair} for i in range(2))", [2, 2]), width=16)
    assert sorted(h.layer for h in witness.circuit.heads) == [1, 1, 2, 2]
    assert sum(channel.endswith(".m1") for channel, _ in witness.circuit.output) == 2
    assert witness.nmse < 1e-5, witness.nmse


def test_a_pair_decode_error_falls_as_the_mlp_grows() -> None:
    s = bundled("pairwise-min.json", seq_len=16)
    small, large = (construction.build(s, beta=1000, width=w) for w in (128, 512))
    assert large.nmse * 10 < small.nmse, (small.nmse, large.nmse)
    assert large.decoders["p0.value"] < small.decoders["p0.value"]


def test_a_window_pair_retrieves_only_the_partners_its_conditions_allow() -> None:
    """The bundled sliding window (s < t, t - s <= 4): every token's first score is penalised
    on the partners outside its window, and the readout's on the last token, which has none.
    The witness computes the target; the same circuit without its masks does not (it finds
    each token's own pair, |x|^2), so a construction that ignored the window would fail."""
    window = bundled("sliding-window.json")
    built = construction.build(window, width=512)
    assert built.nmse < 1e-4, built.nmse
    masks = built.circuit.masks
    assert masks["p0"][0] == (1, *range(6, 17))  # token 1's partners: 2..5
    assert masks["p0.alone"] == ((16,),)
    bare = [
        replace(h, score=tuple(f for f in h.score if not f.matrix.startswith(MASK)))
        for h in built.circuit.heads
    ]
    unmasked = construction.build(window, width=512, circuit=replace(built.circuit, heads=bare))
    assert unmasked.nmse > 1.0, unmasked.nmse


@pytest.mark.parametrize(
    "target",
    [
        "max(bilinear(x[s], A, x[t]) for s in T for t in T if s < t and t - s <= 3)",
        "min(dot(x[s], x[t]) for s in T for t in T if abs(s - t) <= 2 and s != t)",
        "max(dot(x[s], x[t]) for s in T for t in T if t - s >= 3)",
        "max(norm(x[s] - x[t]) for s in T for t in T if s < t and t - s <= 2)",
    ],
)
def test_windows_orders_and_lone_tokens_are_built(target: str) -> None:
    """An asymmetric score under an order (s queries, t is retrieved), a two-sided window of
    the min, a gap that leaves the last three tokens without a partner, a norm pair's window."""
    pe = spec(target, [1, 1], embed_dim=64, seq_len=10, positional_encoding=True)
    assert construction.build(pe, width=512).nmse < 1e-3


def test_a_window_whose_distance_is_zero_on_every_draw_is_refused() -> None:
    """The nearest pair where a token may pair with itself, the farthest where it may pair
    with nothing else: 0 on every draw, nothing to build (and no NMSE to measure). Both are
    refused before compile: the second since 2026-12-06 (abs(s - t) < 1 is s == t), the
    first since 2026-12-07 (a window holding (s, s): each token's nearest is itself; compile
    refused it, predict planned it)."""
    nearest = "min(norm(x[s] - x[t]) for s in T for t in T if abs(s - t) <= 3)"
    with pytest.raises(ValidationError, match="a token's nearest is itself"):
        spec(nearest, [1, 1], embed_dim=64, positional_encoding=True)
    farthest = "max(norm(x[s] - x[t]) for s in T for t in T if abs(s - t) < 1)"
    with pytest.raises(ValidationError, match="a token's nearest is itself"):
        spec(farthest, [1, 1], embed_dim=64, positional_encoding=True)


def test_terms_equal_up_to_their_names_are_one_and_terms_that_cancel_are_refused() -> None:
    """The pair over t < s and the same pair spelled over s < t with the dot's arguments
    swapped are one term (one head a layer, as the engine plans it); max(-f) + min(f) is 0."""
    twice = (
        "max(dot(x[s], x[t]) for s in T for t in T if t < s) "
        "+ max(dot(x[t], x[s]) for t in T for s in T if s < t)"
    )
    built = construction.build(spec(twice, [1, 1], positional_encoding=True), width=512)
    assert built.nmse < 1e-4 and [c for _, c in built.circuit.output] == [2.0]
    cancels = "max(-dot(q, x[t]) for t in T) + min(dot(q, x[t]) for t in T)"
    with pytest.raises(ValueError, match="it is a constant"):  # the engine's own refusal now
        circuit_of(spec(cancels, [1, 1], positional_encoding=True))
    f = "max(dot(q, x[t]) for t in T)"  # 0.1 f + 0.2 f - 0.3 f is 0 exactly, not 5.6e-17 f
    exact = circuit_of(spec(f"0.1 * {f} + 0.2 * {f} - 0.3 * {f} + min(x[t][0] for t in T)", [1]))
    assert len(exact.heads) == 1


def test_compile_needs_a_sequence_length() -> None:
    target = "max(dot(x[s], x[t]) for s in T for t in T if s < t and t - s <= 2)"
    with pytest.raises(SpecError, match="seq_len"):
        circuit_of(spec(target, [1, 1], seq_len=None, positional_encoding=True))


def test_a_window_takes_a_range_of_one_of_its_tokens() -> None:
    """``t < 3`` beside ``s < t`` was refused ("conditions between s and t only"); a token
    whose own test fails is left without a partner since 2026-12-07."""
    target = "max(dot(x[s], x[t]) for s in T for t in T if s < t and t < 3)"
    built = construction.build(
        spec(target, [1, 1], seq_len=8, positional_encoding=True), beta=100, width=2048
    )
    assert built.nmse < 1e-5, built.nmse


def test_the_self_penalty_ablation_keeps_the_rest_of_a_window() -> None:
    """Removing the positional self-penalty from a window that leaves each token out of its
    own retrieval drops only the diagonal from its mask; a token an order left without a
    partner (s = T under s < t) has itself again."""
    target = "max(dot(x[s], x[t]) for s in T for t in T if abs(s - t) <= 1 and s != t)"
    circuit = circuit_of(spec(target, [1, 1], seq_len=4, positional_encoding=True))
    assert self_penalised(circuit)
    assert circuit.masks["p0"] == ((1, 3, 4), (2, 4), (1, 3), (1, 2, 4))
    bare = without_self_penalty(circuit)
    assert bare.masks["p0"] == ((3, 4), (4,), (1,), (1, 2))
    assert not self_penalised(bare)
    assert circuit.to_json()["masks"]["p0"][0] == [1, 3, 4]
    order = "max(bilinear(x[s], A, x[t]) for s in T for t in T if s < t)"
    ordered = circuit_of(spec(order, [1, 1], seq_len=3, positional_encoding=True))
    assert ordered.masks["p0.alone"] == ((3,),)  # s = 3 has no t > 3
    assert without_self_penalty(ordered).masks["p0.alone"] == ((),)  # it has itself


def test_the_induction_head_compiles_on_one_head_a_layer() -> None:
    """The bundled induction head on [1, 1] (the engine's plan): the readout fetches x[T] in
    layer 1, retrieves the token whose predecessor matches it in layer 2 and copies that
    position's number plus one. Its error falls as beta grows; the same circuit copying the
    match's own position is off by one on every draw."""
    induction = bundled("induction-head.json", heads=[1, 1])
    coarse, fine = (construction.build(induction, beta=b, width=64) for b in (100, 1000))
    assert fine.nmse < 1e-3 and fine.nmse * 3 < coarse.nmse, (coarse.nmse, fine.nmse)
    (fetch, match) = fine.circuit.heads
    assert (fetch.layer, match.layer) == (1, 2)
    assert [(c.source, c.scale) for c in match.values] == [(POSITION_NUMBER, 16), (ANCHOR, 1)]
    # x[16] is the query fetched and no token's predecessor: one flag marks it for both
    assert fine.circuit.flags == {"p0.at": (16,)} and fine.circuit.width == 15
    wrong = replace(fine.circuit, heads=[fetch, replace(match, values=match.values[:1])])
    assert construction.build(induction, beta=1000, width=64, circuit=wrong).nmse > 0.03


@pytest.mark.parametrize(
    "target",
    [
        "argmax(dot(q, x[t]) for t in T)",
        "argmin(bilinear(x[3], A, x[t+1]) for t in T)",
        "max(dot(x[1], x[t]) for t in T)",  # the theory note's fixed query: fetch, retrieve
        "min(bilinear(x[T], A, x[t-1]) for t in T)",
    ],
)
def test_one_token_retrievals_at_an_offset_or_against_a_fixed_position(target: str) -> None:
    """An argmax copies the winner's position; a max against a fixed position retrieves
    the best token in layer 2 (the readout fetched the position in layer 1) and decodes its
    score by the layer's MLP."""
    built = construction.build(spec(target, [1, 1], positional_encoding=True), beta=1000, width=512)
    assert built.nmse < 1e-3, built.nmse


@pytest.mark.parametrize(
    ("target", "coefficients"),
    [
        ("max(-0.5 * dot(x[s], x[t]) for s in T for t in T if s != t)", [-0.5]),
        ("3 * kth_largest((-dot(q, x[t]) for t in T), k=2)", [-3.0]),
        ("max(2 * dot(q, x[t]) for t in T) + kth_largest((dot(q, x[t]) for t in T), k=2)", [1, 2]),
        (" + ".join(f"kth_largest((dot(q, x[{i}]) for {i} in T), k=2)" for i in "tu"), [2]),
    ],
)
def test_a_constant_factor_of_a_score_is_taken_out_of_its_reduction(target, coefficients):
    """max(c f) is c max f for c > 0 and c min f for c < 0 (a k-th flips its end): the
    output carries c, the heads retrieve f; a max of 2 f beside the k-th of f is still the
    peel's first round, read with coefficient 2 ([1, 1]); two equal terms are one, twice."""
    built = construction.build(spec(target, [1, 1], positional_encoding=True), width=512)
    assert built.nmse < 1e-4, built.nmse
    assert sorted(c for _, c in built.circuit.output) == coefficients


@pytest.mark.parametrize(
    ("target", "matrix"),
    [
        ("max(dot(p - q, x[t]) for t in T)", "1.0*p + -1.0*q"),
        ("min(dot(p, x[t]) - 0.5 * x[t][0] for t in T)", "-0.5*e:0 + 1.0*p"),
        ("max(bilinear(x[s], A - B, x[t]) for s in T for t in T if s != t)", "1.0*A + -1.0*B"),
        (
            "max(dot(x[s], x[t]) - bilinear(x[t], A, x[s]) for s in T for t in T)",
            "-1.0*A^T + 1.0*I",
        ),
    ],
)
def test_a_score_that_combines_parameters_or_scores_is_one_matrix(target, matrix) -> None:
    """A linear or bilinear score written as a combination is built as its weighted sum of
    matrices (refused before 2026-12-05), and computes the target."""
    heads = [1, 1] if "x[s]" in target else [1]
    witness = construction.build(
        spec(target, heads, embed_dim=64, seq_len=8, positional_encoding=True), width=512
    )
    assert witness.nmse < 1e-3, witness.nmse
    assert any(f.matrix == matrix for h in witness.circuit.heads for f in h.score)


@pytest.mark.slow
@pytest.mark.parametrize("d", [2, 3])
def test_the_intrinsic_dimension_witness_reaches_nmse_below_1e_3(d: int) -> None:
    s = bundled(f"intrinsic-dimension-D{d}.json", seq_len=16)
    witness = construction.build(s)
    assert witness.nmse < 1e-3, witness.nmse
    layers = [(h.layer, h.who) for h in witness.circuit.heads]
    assert sorted(layers) == [(1, "every token")] * d + [(2, "the readout")] * d


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=6, max_size=6))
def test_every_read_through_layer_norm_gives_the_channel(content: list[float]) -> None:
    s = bundled("pairwise-min.json", seq_len=8)
    circuit = circuit_of(s)
    weights = Weights(circuit, s, TargetFunction(s, seed=0), beta=10, width=64)
    model = weights.build()
    h = torch.zeros(1, 1, 1, weights.e, dtype=torch.float64)
    h[..., circuit.offset(ANCHOR)] = weights.anchor
    x = circuit.offset(TOKENS)
    h[..., x : x + 4] = torch.tensor(content[:4], dtype=torch.float64)
    h[..., circuit.offset("p0.value")] = content[4]
    h[..., circuit.offset(READOUT)] = content[5]
    keep = [
        i for i in range(weights.e) if i not in (circuit.offset(ANCHOR), circuit.offset(BALANCE))
    ]
    h[..., circuit.offset(BALANCE)] = -h[..., keep].sum(-1)
    normed = model._norm(h, model.ln1[0])[0, 0, 0]
    for group, want in ((TOKENS, content[:4]), ("p0.value", content[4:5]), (READOUT, content[5:])):
        got = normed @ weights.read(group)
        assert torch.allclose(got, torch.tensor(want, dtype=torch.float64), atol=1e-8), group


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-4, 4), min_size=2, max_size=2))
def test_a_norm_pair_key_reads_the_squared_norm_from_layer_norm(x: list[float]) -> None:
    s = control(seq_len=8)
    circuit = circuit_of(s)
    weights = Weights(circuit, s, TargetFunction(s, seed=0), beta=10, width=64)
    model = weights.build()
    token = torch.tensor([[x]], dtype=torch.float64)  # one sequence of one token
    with torch.no_grad():
        h = torch.einsum("btd,mde->mbte", token, model.W_in) + model.b_in[:, None, None]
        normed = model._norm(h, model.ln1[0])[0, 0, 0]
    square = sum(v * v for v in x)
    got = float(normed @ weights.read(SQNORM)[:, 0])
    assert got == pytest.approx(square, abs=1e-5)  # 1.5 |x|^4 / (E S^2) is below 1e-6
    # a read is off by |x|^2 / (E S^2) relative, the construction's second-order error
    assert (normed @ weights.read(TOKENS)).tolist() == pytest.approx(x, abs=1e-7)


def test_the_pair_center_witness_carries_out_the_norm_and_its_square() -> None:
    s = control(seq_len=8)
    heads = circuit_of(s).heads
    assert [(f.key, f.scale) for f in heads[0].score] == [(TOKENS, 2.0), (SQNORM, 1.0)]
    coarse, fine = (construction.build(s, beta=1000, width=w) for w in (128, 512))
    assert fine.nmse < 1e-3 and fine.nmse * 10 < coarse.nmse, (coarse.nmse, fine.nmse)
    squared = control(seq_len=8, options={"squared_norm": True})
    witness = construction.build(squared, beta=1000, width=512)
    assert [m.kind for m in witness.circuit.mlps] == ["decode"]  # no square root
    assert witness.nmse < 1e-3
    with pytest.raises(ValueError, match="float64 only"):
        construction.build(s, width=128, dtype=torch.float32)


@pytest.mark.parametrize(
    ("target", "input_dim"),
    [
        ("max(norm(x[a] + x[b]) for a in T for b in T)", 2),
        ("max(norm(x[a] - x[b]) for a in T for b in T if a != b)", 2),
        ("min(sqnorm(x[a] + x[b]) for a in T for b in T)", 3),
        ("max(sqnorm(x[b] - x[a]) for a in T for b in T)", 2),
    ],
)
def test_every_sign_of_the_norm_pair_is_built(target: str, input_dim: int) -> None:
    s = control(seq_len=8, target=target, input_dim=input_dim)
    assert construction.build(s, beta=1000, width=512).nmse < 1e-3


def test_a_norm_pair_the_heads_cannot_carry_out_is_refused() -> None:
    target = "min(norm(x[a] + x[b]) for a in T for b in T if a != b)"
    with pytest.raises(SpecError, match="the engine calls this architecture not efficient"):
        circuit_of(control(target=target))  # the default reading charges the pair (often)
    decisive = control(target=target, options={"self_exclusion": "decisive"})
    with pytest.raises(SpecError, match="the condition s != t on the norm of a sum"):
        circuit_of(decisive)


def control(**overrides) -> RetrievalSpec:
    """The triangle's order-2 control, the pair center: min ||x(a) + x(b)||."""
    data = json.loads((RETRIEVAL / "cpu-suite" / "triangle-control.json").read_text())
    data.pop("sweep")
    return RetrievalSpec.model_validate({**data, **overrides})


def test_compile_writes_a_witness_that_loads_into_the_validators_model(tmp_path) -> None:
    out = tmp_path / "witness"
    proc = run_cli(
        "compile",
        str(RETRIEVAL / "pairwise-min.json"),
        "--set",
        "seq_len=16",
        "--width",
        "256",
        "--out",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    assert "layer 1 head 0 (max-position retrieval)" in proc.stdout
    assert "realises: 1 head(s): every token s retrieves the best t" in proc.stdout
    meta = json.loads((out / "witness.json").read_text())
    assert [h["layer"] for h in meta["circuit"]["heads"]] == [1, 2]
    model, loaded = construction.load(out)
    s = RetrievalSpec.model_validate(loaded["spec"])
    target = TargetFunction(s, seed=0, dtype=torch.float64)
    again = construction.nmse(model, s, target, seed=0)
    assert again == pytest.approx(meta["nmse"], rel=1e-9)
    assert meta["nmse"] < 1e-2


def test_compile_refuses_an_inefficient_spec_naming_the_bottleneck(tmp_path) -> None:
    line = refused("compile", str(RETRIEVAL / "triangle-center.json"), "--out", str(tmp_path))
    assert "bottleneck: global aggregation" in line and "no architecture makes it" in line
    line = refused(
        "compile",
        str(RETRIEVAL / "intrinsic-dimension-D2.json"),
        "--set",
        "architecture.heads=[1,2]",
        "--out",
        str(tmp_path),
    )
    assert "too few heads" in line and "try the minimal architecture" in line
    assert not any(tmp_path.iterdir())


def test_an_out_folder_that_cannot_be_made_is_refused_before_the_build(tmp_path) -> None:
    """Under a file, --out was a traceback after the whole build (NotADirectoryError)."""
    (tmp_path / "afile").write_text("")
    for out, why in (("afile", "exists and is not a folder"), ("afile/w", "is a file, not")):
        line = refused(
            "compile", str(RETRIEVAL / "pairwise-min.json"), "--out", str(tmp_path / out)
        )
        assert "field '--out'" in line and why in line


def test_compile_refuses_what_it_does_not_build(tmp_path) -> None:
    path = tmp_path / "norm.json"
    data = {
        "kind": "retrieval",
        "target": "min(norm(x[s] + 2 * x[t]) for s in T for t in T)",  # the max: 3 max |x|
        "seq_len": 16,
        "architecture": {"layers": 2, "heads": 1, "embed_dim": 32},
    }
    path.write_text(json.dumps(data))
    line = refused("compile", str(path), "--out", str(tmp_path / "w"))
    assert (
        "field 'target'" in line
        and "is not x[s]^T M x[t] (dot, bilinear, a product of linear scores) or the norm" in line
    )
    data["target"] = "min(norm(x[s] - x[t]) for s in T for t in T)"  # 0 on every draw
    path.write_text(json.dumps(data))
    line = refused("compile", str(path), "--out", str(tmp_path / "w"))
    assert "the target reads no token" in line and "a constant" in line
    data["target"] += " + max(dot(q, x[t]) for t in T)"  # the engine reads it as its max
    path.write_text(json.dumps(data))
    line = refused("compile", str(path), "--out", str(tmp_path / "w"))
    assert "the nearest pair is built only with s != t and positional encoding" in line
    assert "itself (distance 0)" in line
    line = refused(
        "compile",
        str(RETRIEVAL / "intrinsic-dimension-D2.json"),
        "--set",
        "architecture.embed_dim=12",
        "--out",
        str(tmp_path / "w"),
    )
    assert "needs 20 channels, E = 12" in line


@pytest.mark.parametrize(
    "target",
    [
        "max(dot(x[s], x[t-1]) for s in T for t in T)",
        "max(dot(x[s], x[t-1]) for s in T for t in T if s != t)",
        "max(dot(x[t+2], x[s]) for s in T for t in T)",
    ],
)
def test_a_pair_dot_read_at_an_offset_is_built_from_the_engine_s_reading(target) -> None:
    """dot(x[s], x[t-1]) is another function than dot(x[s], x[t]): compile built the pair
    without the offset (NMSE 0.16 to 2.8, whatever beta and width; a fuzz found it), then
    refused it; since a window pair takes a range of one token (2026-12-07) it builds the
    engine's reading, the pair over the positions t - 1 reads, measured against the target
    as written."""
    built = construction.build(
        spec(target, [1, 1], embed_dim=64, seq_len=8, positional_encoding=True),
        beta=100,
        width=2048,
    )
    assert built.nmse < 1e-5, built.nmse
    assert any("engine's reading" in note for note in built.circuit.notes)


def test_a_chain_read_at_an_offset_is_refused_not_built_without_it() -> None:
    target = "max(dot(x[a], x[b]) + dot(x[b], x[c+1]) for a in T for b in T for c in T)"
    with pytest.raises(SpecError, match=r"is not x\[\w+\]\^T M x\[\w+\]"):
        circuit_of(spec(target, [2, 1], embed_dim=64, seq_len=8, positional_encoding=True))


def test_explain_points_each_step_to_its_compiled_head() -> None:
    proc = run_cli("explain", str(RETRIEVAL / "intrinsic-dimension-D2.json"))
    assert proc.returncode == 0, proc.stderr
    for layer in (1, 2):
        for slot in (0, 1):
            assert f"-> compiled: layer {layer} head {slot}" in proc.stdout
    proc = run_cli("explain", str(RETRIEVAL / "triangle-center.json"))
    assert "-> compiled" not in proc.stdout


@pytest.mark.slow  # builds and evaluates witnesses up to 1024 wide: about 10 CPU s
def test_the_sweep_measures_an_exponent_and_says_whether_the_error_falls(monkeypatch) -> None:
    monkeypatch.setattr(construction, "BETAS", (3.0, 30.0, 300.0))
    monkeypatch.setattr(construction, "WIDTHS", (32, 64, 128))
    monkeypatch.setattr(construction, "SAMPLES", 512)
    result = construction.sweep(bundled("pairwise-min.json", seq_len=8))
    assert result["beta_falls"] and result["width_falls"]
    assert result["slope"] < 0 and 0 < result["measured_alpha"] < 5
    assert result["engine_alpha"] == 1


@pytest.mark.slow  # builds and evaluates witnesses up to 1024 wide: about 10 CPU s
def test_a_witness_without_a_layer_keeps_the_other_layers_weights() -> None:
    from infoflow.validators.retrieval.ablation import without_layer

    s = bundled("pairwise-min.json", seq_len=8, layers=3, heads=[1, 1, 1])  # layer 3 unused
    witness = construction.build(s, width=256)
    smaller = without_layer(witness.model, 3)
    assert smaller.members[0].heads == (1, 1)
    x = sample_inputs(s, 64, 8, torch.Generator().manual_seed(5)).double()
    with torch.no_grad():
        assert torch.allclose(smaller(x), witness.model(x), atol=1e-9)
        # without layer 2 the readout's retrieval is gone: the output is not the target's
        assert not torch.allclose(without_layer(witness.model, 2)(x), witness.model(x), atol=1e-3)


def test_a_circuit_without_a_head_computes_the_rest_of_the_target() -> None:
    from infoflow.retrieval.circuit import without_head

    s = bundled("intrinsic-dimension-D2.json", seq_len=8)
    circuit = circuit_of(s)
    smaller = without_head(circuit, 1, 1)  # copy 2's retrieval, its decode, its readout head
    assert smaller.heads_per_layer == (1, 2)
    assert [(h.layer, h.slot) for h in smaller.heads] == [(1, 0), (2, 0)]
    assert smaller.output == [("p0.out", 1.0)] and len(smaller.mlps) == 1
    unused = without_head(circuit_of(bundled("pairwise-min.json", heads=[2, 1])), 1, 1)
    assert unused.heads_per_layer == (1, 1) and len(unused.heads) == 2  # nothing read it
    deficient = bundled("intrinsic-dimension-D2.json", seq_len=8, heads=[1, 2])
    built = construction.build(deficient, circuit=smaller, beta=1000, width=1024)
    x = sample_inputs(s, 256, 8, torch.Generator().manual_seed(2)).double()
    model = built.model
    matrix = TargetFunction(s, seed=0, dtype=torch.float64).parameter("A", (0,), 2, 8)
    first = torch.einsum("bsi,ij,btj->bst", x, matrix, x).amax((1, 2))
    with torch.no_grad():
        got = model(x)[0, :, 0]
    assert float(((got - first) ** 2).mean() / first.var()) < 1e-4


def test_which_architectures_are_the_witness_with_a_part_removed() -> None:
    from infoflow.validators.retrieval.experiment import Model
    from infoflow.validators.retrieval.witness_plan import removed_part as _removed

    w = Model(16, 20, (2, 2), False)
    assert _removed(w, Model(16, 20, (1, 2), False)) == (1, 1)
    assert _removed(w, Model(16, 20, (2, 1), False)) == (2, 1)
    assert _removed(w, Model(16, 20, (2,), False)) == (1, None)
    for other in (Model(16, 24, (1, 2), False), Model(8, 20, (1, 2), False), w):
        assert _removed(w, other) is None
    assert _removed(w, Model(16, 20, (1, 1), False)) is None


def test_the_witness_claim_needs_the_threshold_and_a_fall_with_precision() -> None:
    from infoflow.validators.retrieval.experiment import Model
    from infoflow.validators.retrieval.witness import _witness_claim

    model = Model(16, 16, (1, 1), False)

    def verdict(nmse, coarse, knob="beta"):
        record = {"nmse": nmse, "nmse_coarse": coarse, "knob": knob}
        return _witness_claim(model, record, learns_below=0.08).verdict

    assert verdict(1e-3, 0.05) == "confirmed"
    assert verdict(1e-3, 2e-3, "MLP width and beta") == "refuted"  # the error does not fall
    assert verdict(0.1, 5.0) == "refuted"  # not below the learns threshold
    # a build too narrow (None) or diverged (NaN) is not a finding against the plan (a review:
    # both were refuted, and a witness not built at all a TypeError)
    assert verdict(1e-3, None) == "inconclusive"
    assert verdict(float("nan"), 1.0) == "inconclusive"
    assert verdict(None, 1e-3) == "inconclusive"


def test_a_width_too_narrow_for_the_decoders_is_refused_naming_the_option(tmp_path) -> None:
    """It was a traceback (ValueError: a decoder of width 4 cannot cover 8 directions)."""
    spec = str(SPECS / "retrieval" / "intrinsic-dimension-D2.json")
    line = refused("compile", spec, "--width", "8", "--out", str(tmp_path / "w"))
    assert "field '--width': 8 is too narrow here: a decoder of width 4" in line


def test_the_sweep_is_drawn_and_written_in_words(tmp_path) -> None:
    from infoflow.validators.retrieval.compile_report import plot_sweep, sweep_lines

    result = {
        "beta": [{"beta": b, "nmse": 1 / b} for b in (1.0, 10.0, 100.0)],
        "beta_falls": True,
        "engine_alpha": 1,
        "engine_bound": "estimate",
        "width": [
            {"width": w, "decoder_parameters": 100 * w, "nmse": w**-4.0} for w in (8, 16, 32)
        ],
        "slope": -4.0,
        "measured_alpha": 0.5,
        "width_falls": True,
    }
    path = plot_sweep(result, tmp_path / "sweep.png", "spec $x$")
    assert path.read_bytes()[:4] == b"\x89PNG"
    text = "\n".join(sweep_lines(result))
    assert "measured alpha 0.5; engine alpha 1" in text
    assert "costs less than the engine predicts" in text
    result.update(width_falls=False, measured_alpha=float("inf"), slope=0.1)
    assert "FINDING: the error does not fall as the MLP grows" in "\n".join(sweep_lines(result))


def _power_ladder(slopes: list[float]) -> Ladder:
    """A ladder whose seed i falls as (decoder parameters)^slopes[i] exactly."""
    sizes = [1000, 2000, 4000, 8000]
    return Ladder(sizes, [[(p / 1000) ** s for s in slopes] for p in sizes])


def test_the_witness_exponent_claim_reads_the_seeds_slopes_against_the_engines_bound() -> None:
    model = Model(16, 24, (1, 1), False)

    def verdict(slopes):
        return exponent_claim(model, _power_ladder(slopes), alpha=1.0).verdict

    assert verdict([-4.0, -4.1, -3.9]) == "confirmed"  # alpha 0.5 <= 1: slope <= -2
    assert verdict([-1.0, -1.5, -0.5]) == "refuted"  # alpha 2 > 1 for every seed
    assert verdict([-3.0, -1.0, -2.5]) == "inconclusive"
    alone = exponent_claim(model, _power_ladder([-4.0]), alpha=1.0)  # --seeds 1
    assert alone.verdict == "inconclusive" and "1 seed(s)" in alone.reason


def test_the_witness_flat_claim_compares_one_architecture_at_two_lengths() -> None:
    short, long = Model(8, 24, (1, 1), False), Model(16, 24, (1, 1), False)
    assert same_architecture(short, long) and not same_architecture(short, short)
    assert not same_architecture(short, Model(16, 24, (2, 1), False))

    def verdict(a, b):
        ladders = {short: _power_ladder(a), long: _power_ladder(b)}
        return flat_claim(short, long, ladders, alpha=1.0).verdict

    assert verdict([-4.0, -4.0, -4.1], [-4.02, -3.9, -4.0]) == "confirmed"
    assert verdict([-4.0, -4.0, -4.1], [-1.0, -1.2, -0.9]) == "refuted"
    assert verdict([-4.0, -4.0, -4.0], [-1.0, -4.0, -3.9]) == "inconclusive"
    # neither falls: no exponent, no tolerance (a zero tolerance refuted any one-sided gap)
    ladders = {short: _power_ladder([0.1, 0.2, 0.1]), long: _power_ladder([0.3, 0.4, 0.5])}
    flat = flat_claim(short, long, ladders, alpha=1.0)
    assert flat.verdict == "inconclusive" and "flat or rising" in flat.reason
    # a witness too narrow for its narrowest width: three rungs, no exponent (not "flat")
    three = Ladder([2000, 4000, 8000], [[(p / 1000) ** -2.0] * 3 for p in (2000, 4000, 8000)])
    short_of_a_rung = flat_claim(short, long, {short: three, long: three}, alpha=1.0)
    assert short_of_a_rung.verdict == "inconclusive"
    assert short_of_a_rung.reason.endswith("(3 rung(s): a measured exponent needs 4)")
    assert "flat" not in short_of_a_rung.reason


@pytest.mark.slow  # builds and evaluates witnesses up to 1024 wide: about 10 CPU s
def test_the_witness_ladder_measures_the_constructions_exponent(monkeypatch) -> None:
    monkeypatch.setattr(witness_ladder, "WIDTHS", (32, 64, 128, 256))
    monkeypatch.setattr(construction, "SAMPLES", 256)
    s = bundled("pairwise-min.json", seq_len=8)
    ladder = witness_ladder.ladder_of(s, circuit_of(s), seeds=2)
    assert ladder.seeds == 2 and len(ladder.sizes) == 4 and ladder.sizes == sorted(ladder.sizes)
    slope = ladder.slope()
    assert slope.count == 2 and slope.high < -2  # faster than the engine's alpha = 1
    no_decoder = bundled("kth-largest.json", layers=2, heads=[1, 1], seq_len=8)
    assert witness_ladder.ladder_of(no_decoder, circuit_of(no_decoder), seeds=2) is None


def test_heads_are_named_after_the_engines_steps_when_the_engine_places_them_later() -> None:
    """On three layers the engine places the 2nd largest's two steps in layers 2 and 3,
    compile builds them in 1 and 2: the head that retrieves the 2nd largest realises the
    engine's 2nd-largest step, not the step the engine put in its own layer."""
    circuit = circuit_of(spec("kth_largest((dot(q, x[t]) for t in T), k=2)", [1, 1, 1]))
    said = {h.layer: h.step for h in circuit.heads}
    assert "1st largest" in said[1] and "2nd largest" in said[2]


def test_a_constant_in_a_sum_is_counted_over_the_tuples_the_sum_runs_over() -> None:
    """sum(x[t-1][0] + 1 for t in T) adds the constant over T - 1 tuples (x[0] does not
    exist; a review found it counted T times, then it was refused); a condition leaves out
    what it fails (t != s over pairs: T (T - 1)); a condition on an enclosing index leaves the
    constant inside, its count not one number."""
    from infoflow.retrieval.circuit_terms import terms_of
    from infoflow.retrieval.expression import Const
    from infoflow.retrieval.text_to_expression import parse_target

    def constant(target: str) -> list:
        found = terms_of(parse_target(target), 8)
        return [c for c, term, _ in found if term == Const(1)]

    assert constant("sum(x[t-1][0] + 1 for t in T)") == [7]
    assert constant("sum(x[t][0] + 1 for t in T)") == [8]
    assert constant("sum(x[t+2][0] - 0.5 for t in T if t >= 2)") == [-2.5]
    assert constant("sum(dot(x[s], x[t]) + 1 for s in T for t in T if s != t)") == [56]
    assert constant("max(sum(x[t][0] + 1 for t in T if t < s) for s in T)") == []


@pytest.mark.parametrize(
    ("target", "heads"),
    [
        (
            "max(kth_largest((bilinear(x[s], A, x[t]) for t in T if t != s), k=2) for s in T)"
            " + max(kth_largest((bilinear(x[a], B, x[b]) for b in T), k=2) for a in T)",
            [2, 2, 2],
        ),
        (
            "max(kth_largest((bilinear(x[s], A, x[t]) for t in T if t != s), k=2) for s in T)"
            " + max(kth_largest((bilinear(x[a], B, x[b]) for b in T), k=2) for a in T)",
            [1, 1, 1, 1, 1, 1],
        ),
        ("argmax(dot(x[t-1], x[T]) for t in T) + max(dot(p, x[u]) for u in T)", [2, 1]),
        (
            "max(bilinear(x[s], A, x[t]) for s in T for t in T if s != t)"
            " + max(bilinear(x[a], B, x[b]) for a in T for b in T)",
            [2, 2],
        ),
    ],
)
def test_no_head_carries_another_terms_sentence(target, heads) -> None:
    """A review's cases: alike parts whose nested comparisons differ (a self-exclusion) were
    paired in written order, where the engine numbers them by structure; heads side by side
    in one layer were named by order (a fetch took a retrieval's sentence, a plain pair the
    self-excluding one's). A head now carries its own part's sentence, or none (noted)."""
    circuit = circuit_of(spec(target, heads, embed_dim=64, seq_len=8, positional_encoding=True))
    for head in circuit.heads:
        assert ("fixed positions" in head.step) <= (head.mechanism == "fetch"), head
        assert ("other than itself" in head.step) <= ("other than" in head.does), head
        assert ("retrieves the best" in head.step) <= (head.mechanism != "fetch"), head
    unnamed = sorted({h.layer for h in circuit.heads if not h.step})
    assert not unnamed or "not named after the engine's steps" in " ".join(circuit.notes)


def test_compile_writes_over_no_file_it_did_not_write(tmp_path) -> None:
    """A fresh-user audit (2026-12-07): --out replaced a user's witness.json and wrote into
    a validate run's folder; both refused before anything is built, the files untouched."""
    spec = str(SPECS / "retrieval" / "specific-position.json")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "witness.json").write_text("mine\n")
    line = refused("compile", spec, "--out", str(tmp_path / "mine"))
    assert "holds witness.json, which compile did not write" in line
    assert (tmp_path / "mine" / "witness.json").read_text() == "mine\n"
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "results.sqlite").touch()
    assert "a validate run's folder" in refused("compile", spec, "--out", str(tmp_path / "run"))
    assert not (tmp_path / "run" / "witness.json").exists()


def test_a_compile_killed_between_its_files_is_run_again_into_its_folder(
    tmp_path, monkeypatch
) -> None:
    """Killed after one file, compile's folder is still compile's: the weights came first and
    left model.safetensors alone, which the next compile refused as not its own (2026-12-07)."""
    out = tmp_path / "w"
    witness = construction.build(bundled("specific-position.json"), width=16)

    def killed(path, write):
        raise KeyboardInterrupt

    monkeypatch.setattr(construction, "write_with", killed)
    with pytest.raises(KeyboardInterrupt):
        construction.save(witness, out)
    monkeypatch.undo()
    assert [p.name for p in out.iterdir()] == ["witness.json"]
    compile_command(witness.spec, "specific-position.json", out, width=16)
    assert sorted(p.name for p in out.iterdir()) == ["model.safetensors", "witness.json"]


@pytest.mark.slow  # two compiles
def test_a_witness_no_better_than_the_mean_says_so(tmp_path) -> None:
    """At MLP width 64 intrinsic-dimension D = 2's witness has NMSE 2.04 and said nothing;
    specific-position's, compiled into the same folder (compile's own: replaced), does not
    warn."""
    spec = str(SPECS / "retrieval" / "intrinsic-dimension-D2.json")
    proc = run_cli("compile", spec, "--width", "64", "--out", str(tmp_path / "w"))
    assert proc.returncode == 0, proc.stderr
    assert "WARNING: no better than predicting the mean (NMSE 1): at MLP width 64" in proc.stdout
    good = str(SPECS / "retrieval" / "specific-position.json")
    again = run_cli("compile", good, "--width", "64", "--out", str(tmp_path / "w"))
    assert again.returncode == 0 and "WARNING" not in again.stdout, again.stdout
