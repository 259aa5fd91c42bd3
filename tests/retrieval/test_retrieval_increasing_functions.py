"""A max, min or k-th of a nondecreasing function is the function of the max, min or k-th
(infoflow/retrieval/increasing_functions.py): checked against the written target on random
draws, and its plan against the plan of the function written out."""

from __future__ import annotations

import pytest
import torch
from rewrite_checks import assert_one_function, assert_reading_is_written, spec_of

import infoflow
from infoflow.retrieval.expression import Apply, Reduce
from infoflow.retrieval.expression_rewrite import rewrite
from infoflow.retrieval.increasing_functions import put_back
from infoflow.retrieval.text_to_expression import parse_target
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs

NAMES = ("comparison_dimension", "min_architectures", "requires_positional_encoding")

#: (written, the function taken out written by hand)
SAME = [
    ("max(exp(dot(q, x[t])) for t in T)", "exp(max(dot(q, x[t]) for t in T))"),
    (
        "kth_largest((tanh(x[t][0]) for t in T), k=2)",
        "tanh(kth_largest((x[t][0] for t in T), k=2))",
    ),
    (
        "max(min(exp(dot(x[s], x[t])) for t in T if t != s) for s in T)",
        "exp(max(min(dot(x[s], x[t]) for t in T if t != s) for s in T))",
    ),
    (
        "max(norm(x[t]) for t in T) + max(sqnorm(x[t]) for t in T)",
        "max(norm(x[t]) for t in T) + max(norm(x[t]) for t in T) ** 2",
    ),
]

#: one score under two spellings: one retrieval (two heads were planned)
MERGED = [
    "max(norm(x[t]) for t in T) + max(sqnorm(x[t]) for t in T)",
    "max(dot(q, x[t]) for t in T) - min(-exp(dot(q, x[t])) for t in T)",
]

#: a range that may be empty keeps its function; a max term of a max joins it
READ_AS_WRITTEN = [
    "max(min(exp(x[t][0]) for t in T if t < s) + x[s][1] for s in T if s >= 2)",
    "max(dot(q, x[a]) + max(norm(x[a] + x[c]) for c in T) for a in T)",
    "min(sqrt(sqnorm(x[s] - x[t]) + 1) for s in T for t in T if s != t)",
    # a review: a neighbour read, a range index, a log outside its domain (nan as written)
    "sum(tanh(max(exp(x[t-1][0] + x[t][1]) for t in T if t != s)) for s in T)",
    "sum(tanh(max(exp(dot(A[i], x[s])) for i in range(1) if i != j)) for s in T for j in range(2))",
    "max(log(x[t][0]) for t in T)",
]


@pytest.mark.parametrize(("written", "plain"), SAME)
def test_the_function_taken_out_is_one_plan(written, plain) -> None:
    assert_one_function(written, plain, ([1], [1, 1]), NAMES, pes=(False, True))


@pytest.mark.parametrize("target", MERGED)
def test_one_score_under_two_spellings_is_one_retrieval(target) -> None:
    result = infoflow.predict(spec_of(target, [1]))
    assert result["min_heads"].value == [1]
    assert result["comparison_dimension"].value == 1
    assert result["efficient"].value is True


@pytest.mark.parametrize("target", READ_AS_WRITTEN + MERGED + [w for w, _ in SAME])
def test_the_reading_is_the_written_function(target) -> None:
    assert_reading_is_written(target, pe=True)


def test_a_range_that_may_be_empty_keeps_its_function() -> None:
    """exp of an empty max is 0, not -inf: the max over t < s keeps exp inside."""
    target = "max(min(exp(x[t][0]) for t in T if t < s) + x[s][1] for s in T if s >= 2)"
    inner = rewrite(parse_target(target)).body.args[0]
    assert isinstance(inner, Reduce) and isinstance(inner.body, Apply) and inner.body.fn == "exp"


def test_a_max_term_of_a_max_joins_it_and_nested_is_flat() -> None:
    nested = "max(dot(q, x[a]) + max(norm(x[a] + x[c]) for c in T) for a in T)"
    flat = "max(dot(q, x[a]) + norm(x[a] + x[c]) for a in T for c in T)"
    plans = [infoflow.predict(spec_of(t, [1])) for t in (nested, flat)]
    assert plans[0]["comparison_dimension"].value == plans[1]["comparison_dimension"].value


@pytest.mark.parametrize("seq_len", [2, 3])
def test_a_range_a_neighbour_empties_keeps_its_function(seq_len) -> None:
    """At T = 2 the max over t != s reading x[t-1] is empty at s = 2: tanh(-inf) is -1, and
    taken out it was tanh(exp(...)) (a review)."""
    target = "sum(tanh(max(exp(x[t-1][0] + x[t][1]) for t in T if t != s)) for s in T)"
    spec = infoflow.load_spec({**spec_of(target, [1]), "seq_len": seq_len})
    x = sample_inputs(spec, 64, seq_len, torch.Generator().manual_seed(0)).double()
    written = TargetFunction(spec, seed=0, dtype=torch.float64)
    reading = TargetFunction(spec, seed=0, dtype=torch.float64)
    reading.tree = rewrite(parse_target(target))
    assert torch.allclose(written(x), reading(x), atol=1e-9, equal_nan=True)


def test_compile_reads_the_function_put_back() -> None:
    """sqrt(max(sqnorm(v))) is max(norm(v)) again: the retrieval compile builds."""
    reading = put_back(rewrite(parse_target("max(norm(x[s] + x[t]) for s in T for t in T)")))
    assert isinstance(reading, Reduce) and reading.op == "max"
    assert isinstance(reading.body, Apply) and reading.body.fn == "norm"
