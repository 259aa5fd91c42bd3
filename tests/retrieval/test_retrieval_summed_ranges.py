"""Sums of one function over ranges of one token index, netted (since 2026-12-06): where the
terms' coefficients weigh one range by one number and every other position by 0, at every
T, they are that number times the sum over that range (a value at a fixed position counting
as the sum over that position). Until then each range was a pool of its own weighting: two
heads, and positional encoding where none is needed."""

from __future__ import annotations

import random

import pytest
import torch
from rewrite_checks import assert_one_function, ranged_term, spec_of

import infoflow
from infoflow.core.errors import SpecError
from infoflow.retrieval.expression_rewrite import rewrite
from infoflow.retrieval.text_to_expression import parse_target
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs

WHOLE = "sum(x[t][0] for t in T)"
NETTED = [
    ("sum(x[t][0] for t in T if t <= 3) + sum(x[s][0] for s in T if s >= 4)", WHOLE, [[1]], False),
    ("sum(x[t][0] for t in T) - x[1][0]", "sum(x[t][0] for t in T if t >= 2)", [[1]], True),
    ("sum(x[t][0] for t in T) - sum(x[v+1][0] for v in T)", "x[1][0]", [[1]], True),
    (
        "sum(dot(q, x[t]) for t in T if t <= T - 2) + dot(x[T], q) + dot(q, x[T - 1])",
        "sum(dot(q, x[t]) for t in T)",
        [[1]],
        False,
    ),
    (
        "2 * sum(x[t][1] for t in T if t <= 4) - 2 * x[4][1] + 2 * sum(x[s][1] for s in T if s > 4)"
        " - 2 * x[2][1]",
        "2 * sum(x[t][1] for t in T if t != 2 and t != 4)",
        [[1]],
        True,
    ),
    (
        "sum(x[t][0] for t in T if t <= 3) + sum(x[s][0] for s in T if s >= 5 and s != 6)",
        "sum(x[t][0] for t in T if t != 4 and t != 6)",
        [[1]],
        True,
    ),
]
#: Weights of two signs or two levels stay as written (one softmax is one weighting), and so
#: do ranges with a gap that grows with T.
KEPT = [
    "sum(x[t][0] for t in T if t <= 3) - sum(x[s][0] for s in T if s >= 4)",
    "2 * sum(x[t][0] for t in T if t <= 3) + sum(x[s][0] for s in T if s >= 4)",
    "sum(x[t][0] for t in T if t <= 3) + sum(x[s][0] for s in T if s >= T - 2)",
]


@pytest.mark.parametrize(("written", "plain", "architectures", "pe"), NETTED)
def test_sums_that_net_to_one_range_are_one_sum(written, plain, architectures, pe) -> None:
    names = ("comparison_order", "min_architectures", "feasible", "requires_positional_encoding")
    assert_one_function(written, plain, ([1], [2]), names, pes=(False, True))
    result = infoflow.predict(spec_of(written, [1]))
    assert result["min_architectures"].value == architectures
    assert result["requires_positional_encoding"].value is pe


@pytest.mark.parametrize("written", KEPT)
def test_weights_of_two_signs_or_levels_stay_two_pools(written) -> None:
    assert infoflow.predict(spec_of(written, [2]))["min_architectures"].value == [[2], [1, 1]]


def test_the_engines_reading_is_the_written_function_at_every_small_T() -> None:
    """Random sums of x[t][0] over ranges bounded by numbers up to 6 or T - k (or every
    position but two), with values at fixed positions, and coefficients +-1, +-2: the
    rewrite agrees with the target as written at T = 3, 5 and 8 (where the ends' order
    differs from large T's); many of them net."""
    rng, netted, checked = random.Random(0), 0, 0
    for _ in range(60):
        text = " + ".join(
            f"{rng.choice([1, -1, 2, -2])} * {ranged_term(rng, i, 'sum')}" for i in range(3)
        )
        for length in (3, 5, 8):
            try:
                spec = infoflow.load_spec(spec_of(text, [1]) | {"seq_len": length})
            except SpecError:
                continue  # a fixed position past T
            x = sample_inputs(spec, 32, length, torch.Generator().manual_seed(0)).double()
            written, reading = (TargetFunction(spec, seed=0, dtype=torch.float64) for _ in "ab")
            reading.tree = rewrite(parse_target(text))
            assert torch.allclose(written(x), reading(x), atol=1e-9), (length, text)
            netted += repr(reading.tree).count("Reduce") < text.count("sum(")
            checked += 1
    assert checked > 120 and netted > checked // 4, (checked, netted)
