"""Targets whose reductions run over nothing for some values of the indices around them
(infoflow/retrieval/infinite_values.py): refused where the validator's value is infinite or
nan on every draw, accepted where an enclosing max drops the -inf. Each verdict is checked
against the validator's own evaluation of the target, so the two cannot drift apart."""

from __future__ import annotations

import pytest
import torch

import infoflow
from infoflow.core.errors import SpecError
from infoflow.retrieval.expression import TargetError
from infoflow.retrieval.infinite_values import check_infinite
from infoflow.retrieval.text_to_expression import parse_target
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs

#: (target, where the message says a reduction is short) for targets infinite on every draw
INFINITE = [
    ("min(max(x[t][0] for t in T if t < s) for s in T)", "max over t runs over nothing at s = 1"),
    ("max(min(dot(q, x[t]) for t in T if t > s) for s in T)", "at s = 8"),
    ("sum(max(x[t][0] for t in T if t < s) for s in T)", "at s = 1"),
    ("min(max(x[c][0] + x[u][1] for b in T for c in T if b > u) for u in T)", "at u = 8"),
    ("max(abs(max(x[t][0] for t in T if t < s)) for s in T)", "at s = 1"),
    ("min(min(max(x[t][0] for t in T if t < s), x[s][1]) for s in T)", "at s = 1"),
    ("min(max(x[t][0] for t in T if t < s) / 2 for s in T)", "at s = 1"),
    # the max over t < s is empty at s = 1 too, but its enclosing max drops it: the message
    # names the reduction that makes the target infinite (a review found the other named)
    (
        "max(max(x[t][0] for t in T if t < s) for s in T) "
        "+ min(max(x[t][1] for t in T if t > s) for s in T)",
        "max over t runs over nothing at s = 8",
    ),
]

#: targets with a reduction over nothing somewhere whose value stays finite
FINITE = [
    "max(max(x[t][0] for t in T if t < s) for s in T)",  # the max drops s = 1
    "max(max(x[t][0] for t in T if t < s) - x[s][1] for s in T)",
    "sum(exp(max(x[t][0] for t in T if t < s)) for s in T)",  # exp(-inf) = 0
    "sum(relu(max(x[t][0] for t in T if t < s)) for s in T)",
    "min(max(max(x[t][0] for t in T if t < s), x[s][1]) for s in T)",  # a pointwise max
    "min(abs(max(x[t][0] for t in T if t < s)) for s in T)",  # +inf, which the min drops
    "max(x[s][0] + max(x[t][0] for t in T if t > s) for s in T)",
    "min(max(x[t][0] for t in T if t < s) for s in T if s > 1)",
    "max(max(x[t][0] for t in T if t < s) - min(x[t][1] for t in T if t < s) for s in T)",
    "sum(max(3 * x[u-1][0] for b in T if abs(b - u) <= 1 and b >= 3) for u in T)",
    "argmax(max(x[t][0] for t in T if t < s) for s in T)",
    "min(max(x[t][0] for t in T if t < s) / -2 for s in T)",  # +inf, which the min drops
    "sum(sum(x[t][0] for t in T if t < s) for s in T)",  # a sum over nothing is 0
]


def _spec(target: str) -> dict:
    arch = {"layers": 2, "heads": 1, "embed_dim": 64, "positional_encoding": True}
    return {"kind": "retrieval", "target": target, "input_dim": 4, "seq_len": 8} | {
        "architecture": arch
    }


def _values(target: str) -> torch.Tensor:
    """The validator's values of ``target`` on random draws (the spec unchecked)."""
    spec = infoflow.load_spec(_spec("x[1][0]")).model_copy(update={"target": target})
    x = sample_inputs(spec, 64, 8, torch.Generator().manual_seed(0)).double()
    return TargetFunction(spec, seed=0, dtype=torch.float64)(x)


@pytest.mark.parametrize(("target", "where"), INFINITE)
def test_a_target_infinite_on_every_draw_is_refused(target, where) -> None:
    assert not torch.isfinite(_values(target)).any()
    with pytest.raises(SpecError, match="on every draw: there is nothing to learn") as found:
        infoflow.load_spec(_spec(target))
    assert where in str(found.value)


@pytest.mark.parametrize("target", FINITE)
def test_an_empty_range_whose_value_is_dropped_is_accepted(target) -> None:
    assert torch.isfinite(_values(target)).all()
    check_infinite(parse_target(target), 8)
    infoflow.predict(_spec(target))


def test_the_message_names_the_reduction_and_where() -> None:
    with pytest.raises(TargetError) as found:
        check_infinite(parse_target(INFINITE[0][0]), 8)
    assert str(found.value) == (
        "the max over t runs over nothing at s = 1, and the target is -inf on every draw: "
        "there is nothing to learn"
    )


def test_a_grid_beyond_the_budget_is_not_checked(monkeypatch) -> None:
    """Past MAX_CELLS positions the check says nothing (the docstring's promise)."""
    from infoflow.retrieval import infinite_values

    monkeypatch.setattr(infinite_values, "MAX_CELLS", 10)
    check_infinite(parse_target(INFINITE[0][0]), 8)


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("min(dot(x[s], x[t]) for s in T for t in T if s < t and t <= s)", "runs over nothing"),
        ("max(dot(q, x[t]) for t in T if t < 0)", "runs over nothing"),
        ("max(x[t][0] for t in T if t < 3 and t > T - 2)", "runs over nothing"),
        (INFINITE[0][0], "on every draw"),
    ],
)
def test_without_a_seq_len_a_target_with_no_value_at_large_t_is_refused(target, why) -> None:
    """Predictions symbolic in T need a value at large T: these were planned and predicted
    efficient without a seq_len, refused with one (an audit, 2026-12-07)."""
    unsized = {k: v for k, v in _spec(target).items() if k != "seq_len"}
    with pytest.raises(SpecError, match=why) as found:
        infoflow.load_spec(unsized)
    assert "no seq_len is given, so it is checked at T = 64" in str(found.value)


@pytest.mark.parametrize(
    "target",
    [
        "min(dot(x[s], x[t]) for s in T for t in T if s != t)",  # empty at T = 1 only
        "max(dot(q, x[t]) for t in T if t > 100)",  # checked past 100
        "x[200][0] + max(x[t][0] for t in T)",
    ],
)
def test_without_a_seq_len_a_target_empty_at_small_t_only_is_planned(target) -> None:
    unsized = {k: v for k, v in _spec(target).items() if k != "seq_len"}
    assert infoflow.predict(unsized)["feasible"].value is True
