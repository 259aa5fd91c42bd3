"""Compile builds the engine's per-branch reading of a max whose branches differ
(``circuit_branches.py``, since 2026-12-06): each branch a sum of one-token retrievals, and
one ReLU of the readout's MLP joins them exactly, max(A, B) = A + relu(B - A). The one-score
reading (a pair score of abs) is not built (where both readings are efficient, the per-branch
one is); three branches are refused (one hidden layer
takes the larger of two exactly, not of three)."""

from __future__ import annotations

import pytest
from test_compile import spec

from infoflow.core.errors import SpecError
from infoflow.retrieval.derive import derive
from infoflow.retrieval.schedule_to_circuit import circuit_of
from infoflow.validators.retrieval import construction

SPREAD = "max(abs(x[s][0] - x[t][1]) for s in T for t in T)"
BRANCHED = [
    SPREAD,
    "min(-abs(x[s][0] - x[t][1]) for s in T for t in T)",
    "max(abs(x[s][0] - x[t][1]) + 3 for s in T for t in T)",
    "max(max(x[s][0] for s in T) - min(x[t][1] for t in T), 2 * max(x[s][1] for s in T))",
    "min(max(x[s][0] for s in T) - min(x[t][1] for t in T), max(dot(q, x[s]) for s in T))",
    # the pointwise max inside a sum or scaled (each branch takes the rest; a review)
    "2 * max(abs(x[s][0] - x[t][1]) for s in T for t in T)",
    "3 - max(abs(x[s][0] - x[t][1]) for s in T for t in T)",
    "max(max(x[s][0] for s in T), 0)",  # a constant branch
    "max(relu(x[s][0] - x[t][1]) for s in T for t in T)",
    "max(abs(x[s][0] - x[t][1]) for s in T for t in T for u in T)",  # an index nothing reads
]


@pytest.mark.parametrize("target", BRANCHED)
def test_the_branches_max_is_one_relu_after_their_heads(target: str) -> None:
    """The witness's error is the softmax's alone: it falls about as 1 / beta^2 (the relu is
    exact), and the heads sit in layer 1, the relu in layer 1's MLP."""
    at = spec(target, [4], seq_len=8)
    coarse, sharp = (construction.build(at, beta=beta, width=16) for beta in (100, 1000))
    assert sharp.nmse < 1e-5 and sharp.nmse < coarse.nmse / 30, (coarse.nmse, sharp.nmse)
    (relu,) = [m for m in sharp.circuit.mlps if m.kind == "relu"]
    assert relu.layer == 1 and {h.layer for h in sharp.circuit.heads} == {1}
    assert sharp.circuit.output[-1][0] == relu.output


def test_a_branch_read_at_an_offset_keeps_its_range() -> None:
    """x[t-1] in one branch leaves t = 1 out of both (the first per-branch reading kept it
    in one, and compile reported NMSE 0.11 as a witness, a review)."""
    target = "max(max(x[t][0], x[t-1][1]) for t in T)"
    witness = construction.build(spec(target, [2], seq_len=8, positional_encoding=True))
    assert witness.nmse < 1e-5


def test_a_refusal_names_why_the_reading_is_not_built() -> None:
    """Two pointwise maxima in one sum: the written form's reason and the reading's."""
    one = "max(abs(x[s][{}] - x[t][{}]) for s in T for t in T)"
    target = f"{one.format(0, 1)} + {one.format(2, 3)}"
    with pytest.raises(SpecError, match=r"abs.*; as the engine reads it, the term max"):
        circuit_of(spec(target, [8], embed_dim=64, seq_len=8))


def test_the_one_score_reading_is_not_built() -> None:
    """On [1, 1] the engine takes the one-score reading (a pair score of abs), which compile
    does not build, and the other needs four heads: refused, the reason named."""
    with pytest.raises(SpecError, match="abs"):
        circuit_of(spec(SPREAD, [1, 1], seq_len=8))


@pytest.mark.parametrize("heads", [[2, 2], [1, 1, 1, 1]])
def test_where_both_readings_are_efficient_the_buildable_one_is_built(heads) -> None:
    """The engine takes the one score where both readings are efficient; compile builds the
    per-branch reading and says so (it refused until 2026-12-06, a known gap)."""
    at = spec(SPREAD, heads, seq_len=8)
    assert derive(at).tree.branches == "one_score"
    witness = construction.build(at, beta=1000, width=16)
    assert witness.nmse < 1e-5
    (note,) = [n for n in witness.circuit.notes if n.startswith("built from")]  # one says it
    assert "the engine's other reading of the target, one reduction a branch" in note
    assert "(it took one score, the target as written)" in note


def test_a_refusal_names_the_reading_that_failed() -> None:
    """Neither reading built (a pair's order test on a branch): the other reading's reason is
    named as its own, not as the engine's (a review, 2026-12-06)."""
    target = "max(abs(x[s][0] - x[t][1]) for s in T for t in T if s < t)"
    with pytest.raises(SpecError, match=r"abs.*; read one reduction a branch \(also efficient\)"):
        circuit_of(spec(target, [2, 2], seq_len=8, positional_encoding=True))


@pytest.mark.parametrize(
    ("target", "heads", "reason"),
    [
        (
            "max(max(x[s][0] for s in T) - min(x[t][1] for t in T), max(x[s][1] for s in T), "
            "min(x[t][2] for t in T))",
            [4],
            "3 branches: one hidden layer takes the larger of two exactly, not of three",
        ),
        ("max(max(x[s][0] for s in T), x[1][1])", [2], "outside a pointwise max"),
        # the norm's square root is layer 2's MLP: the max needs a third
        (
            "max(max(norm(x[s] - x[t]) for s in T for t in T), max(dot(q, x[u]) for u in T))",
            [2, 1],
            r"needs a layer after their last \(2\): the architecture has 2",
        ),
    ],
)
def test_what_one_relu_cannot_join_is_refused(target: str, heads: list[int], reason: str):
    with pytest.raises(SpecError, match=reason):
        circuit_of(spec(target, heads, embed_dim=48, seq_len=8, positional_encoding=True))


def test_a_layer_after_the_square_root_takes_the_max() -> None:
    target = "max(max(norm(x[s] - x[t]) for s in T for t in T), max(dot(q, x[u]) for u in T))"
    witness = construction.build(spec(target, [2, 1, 1], embed_dim=48, seq_len=8), beta=1000)
    assert witness.nmse < 1e-5
    assert [m.layer for m in witness.circuit.mlps if m.kind == "relu"] == [3]
