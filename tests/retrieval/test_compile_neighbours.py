"""Compile builds a max or min over one token read at two offsets (``circuit_neighbours.py``)
as the same max over pairs a fixed gap apart: every token retrieves the one partner its
positional mask leaves it, an MLP decodes the pair's score, the readout retrieves the best.
A sum of them pools each token's pair score in layer 2. Until 2026-12-07 compile refused
them ("read at 2 offsets")."""

from __future__ import annotations

import pytest
from test_compile import spec

from infoflow.retrieval.circuit_neighbours import neighbour_pair
from infoflow.retrieval.expression import SEQUENCE, Condition
from infoflow.retrieval.text_to_expression import parse_target
from infoflow.validators.retrieval import construction

#: A decode MLP's interpolant at width 2048 (a norm pair's, 2.6e-5 at 512).
DECODED = 1e-5


@pytest.mark.parametrize(
    "target",
    [
        "max(dot(x[t-1], x[t+1]) for t in T)",
        "min(dot(x[t-1], x[t]) for t in T if t <= 5)",  # t's own range, moved onto s
        "max(bilinear(x[t+1], A, x[t+3]) for t in T)",  # both ahead: s starts at 2
        "max(dot(x[t-2], x[t-1]) for t in T)",  # both behind: u ends at T - 1
        "max(norm(x[t] - x[t-1]) for t in T)",  # a norm pair: a root in layer 2
        "sum(dot(x[t-1], x[t]) for t in T)",  # a sum: the readout pools each token's pair
        "sum(bilinear(x[t-2], A, x[t]) for t in T if t <= 6)",
        # a product of linear scores is a bilinear form of rank one (refused: a review)
        "max(x[t-1][0] * x[t+1][1] for t in T)",
        "sum(x[t+1][0] * x[t+3][1] for t in T)",
        "max(dot(q, x[t-1]) * dot(w, x[t+1]) for t in T)",
    ],
)
def test_a_neighbour_pair_is_built_on_the_engine_s_two_layers(target: str) -> None:
    built = construction.build(
        spec(target, [1, 1], seq_len=8, positional_encoding=True), beta=100, width=2048
    )
    assert built.nmse < DECODED, built.nmse
    assert sorted(h.layer for h in built.circuit.heads) == [1, 2]


def test_the_pair_keeps_the_positions_the_written_index_reads() -> None:
    """x[t+1], x[t+3] over t in T is the pair (s, s + 2) with s >= 2 (t >= 1), t <= 5 is
    s <= 6; x[t-2], x[t-1] ends u at T - 1 (t <= T)."""
    ahead = neighbour_pair(parse_target("max(bilinear(x[t+1], A, x[t+3]) for t in T if t <= 5)"))
    s, u = (v.name for v in ahead.variables)
    assert set(ahead.conditions) == {
        Condition(s, "<=", 6),
        Condition(u, ">=", s, 2),
        Condition(u, "<=", s, 2),
        Condition(s, ">=", 2),
    }
    behind = neighbour_pair(parse_target("max(dot(x[t-2], x[t-1]) for t in T)"))
    s, u = (v.name for v in behind.variables)
    assert Condition(u, "<=", SEQUENCE, -1) in behind.conditions


@pytest.mark.parametrize(
    "target",
    [
        "argmax(dot(x[t-1], x[t]) for t in T)",  # a position, not a value
        "max(x[t-1][0] + x[t][0] + x[t+1][0] for t in T)",  # three offsets
        "max(max(dot(x[t-1], x[t]) for t in T if t <= s) for s in T)",  # t tested against s
        "max(dot(q, x[t-1]) for t in T)",  # one offset: an index read where it reads
    ],
)
def test_what_is_no_neighbour_pair(target: str) -> None:
    node = parse_target(target)
    if "t <= s" in target:  # the inner max
        node = node.body
    assert neighbour_pair(node) is None


def test_a_product_of_linear_scores_of_two_tokens_is_a_pair() -> None:
    """x[s][0] * (x[t][1] - dot(q, x[t])) over s != t: the pair's matrix is a sum of outer
    products (refused, as no dot or bilinear, before: a review)."""
    target = "max(2 * x[s][0] * (x[t][1] - dot(q, x[t])) for s in T for t in T if s != t)"
    built = construction.build(
        spec(target, [1, 1], seq_len=8, positional_encoding=True), beta=100, width=2048
    )
    assert built.nmse < DECODED, built.nmse
    (decode,) = built.circuit.mlps
    assert decode.matrix == "2.0*outer(e:0,e:1) + -2.0*outer(e:0,q)"


def test_a_term_zero_on_every_draw_beside_another_builds_without_a_division_by_zero() -> None:
    """The nearest pair at an offset always has a partner at distance 0: its root MLP fitted
    a target of variance 0 (ZeroDivisionError, a review)."""
    target = (
        "max(-norm(x[s] - x[t+1]) for s in T for t in T if s != 3) + max(dot(q, x[t]) for t in T)"
    )
    built = construction.build(
        spec(target, [2, 1], seq_len=8, positional_encoding=True), beta=100, width=2048
    )
    assert built.nmse < DECODED, built.nmse
    assert built.decoders and all(v == v for v in built.decoders.values())  # no NaN
