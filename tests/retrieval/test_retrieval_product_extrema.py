"""A max or min of a product of factors >= 0 is the product of each factor's own extremum
over the indices only it reads (infoflow/retrieval/product_extrema.py): each case is checked
against the written target on random draws, and its plan against the plan of the nested
form written out."""

from __future__ import annotations

import pytest
import torch

import infoflow
from infoflow.retrieval.expression_rewrite import rewrite
from infoflow.retrieval.text_to_expression import parse_target
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs

PAIRS = "for a in T for b in T for c in T"

#: (written, the same function with each index in its factor)
SAME = [
    (
        f"max(norm(x[a] - x[b]) * norm(x[b] - x[c]) {PAIRS})",
        "max(max(norm(x[a] - x[b]) for a in T) ** 2 for b in T)",  # equal leaves: one
    ),
    (
        f"min(norm(x[a] - x[b]) * norm(x[b] - x[c]) {PAIRS} if a != b and c != b)",
        "min(min(norm(x[a] - x[b]) for a in T if a != b) ** 2 for b in T)",
    ),
    (
        f"max(2 * abs(dot(x[a], x[b])) * exp(x[b][0]) * sqnorm(x[c]) {PAIRS} if c >= 3)",
        "max(2 * max(abs(dot(x[a], x[b])) for a in T) * exp(x[b][0]) for b in T) "
        "* max(sqnorm(x[c]) for c in T if c >= 3)",
    ),
]

#: products the rule leaves as written: a sign a draw decides, a negative coefficient, a
#: test that couples two indices each factor would take
KEPT = [
    f"max(norm(x[a] - x[b]) * dot(x[b], x[c]) {PAIRS})",
    f"max(-norm(x[a] - x[b]) * norm(x[b] - x[c]) {PAIRS} if a != b and c != b)",
    f"max(norm(x[a] - x[b]) * norm(x[b] - x[c]) {PAIRS} if a != c)",
]


#: a review's counterexamples, left as written: a `!=` beside a test that may leave the
#: index nothing (nan where a factor is 0), a guard on an enclosing index when every index
#: moves
WRITTEN = [
    "min(norm(x[a] - x[b]) * relu(x[b][0]) for a in T for b in T if a == 1 and a != b)",
    "max(abs(x[a][0] - x[b][0]) * relu(dot(q, x[b])) for a in T for b in T if a >= 8 and a != b)",
    "max(x[u][0] + max(abs(x[a][0]) * abs(x[b][1]) for a in T for b in T if u >= 3) for u in T)",
]


def _spec(target: str, heads: list[int]) -> dict:
    arch = {"layers": len(heads), "heads": heads, "embed_dim": 64}
    return {"kind": "retrieval", "target": target, "input_dim": 4, "seq_len": 8} | {
        "architecture": arch
    }


@pytest.mark.parametrize(("written", "nested"), SAME)
def test_a_product_of_factors_at_least_zero_separates_as_a_sum(written, nested) -> None:
    specs = [infoflow.load_spec(_spec(t, [1])) for t in (written, nested)]
    x = sample_inputs(specs[0], 256, 8, torch.Generator().manual_seed(0)).double()
    values = [TargetFunction(s, seed=0, dtype=torch.float64)(x) for s in specs]
    assert torch.allclose(values[0], values[1], atol=1e-9), (values[0] - values[1]).abs().max()
    for heads in ([1], [2, 1], [1, 1, 1]):
        plans = [infoflow.predict(_spec(t, heads)) for t in (written, nested)]
        for name in ("comparison_order", "min_architectures", "efficient"):
            assert plans[0][name].value == plans[1][name].value, (name, heads)


def test_the_max_of_a_product_of_distances_is_a_pair() -> None:
    """It was order 3, not efficient at any size; the farthest token from b, squared, is
    one retrieval a token and one by the readout."""
    result = infoflow.predict(_spec(SAME[0][0], [1, 1]))
    assert result["comparison_order"].value == 2 and result["efficient"].value
    assert result["min_architectures"].value == [[1, 1]]


@pytest.mark.parametrize("target", KEPT)
def test_a_product_the_rule_cannot_separate_stays_order_three(target) -> None:
    assert infoflow.predict(_spec(target, [2, 1]))["comparison_order"].value == 3


@pytest.mark.parametrize("target", WRITTEN)
def test_the_engines_reading_keeps_the_written_value(target) -> None:
    spec = infoflow.load_spec(_spec(target, [1]))
    x = sample_inputs(spec, 64, 8, torch.Generator().manual_seed(0)).double()
    written, reading = (TargetFunction(spec, seed=0, dtype=torch.float64) for _ in range(2))
    reading.tree = rewrite(parse_target(target))
    assert torch.allclose(written(x), reading(x), atol=1e-9, equal_nan=True)
