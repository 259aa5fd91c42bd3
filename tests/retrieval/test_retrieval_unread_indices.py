"""A token index of a max or min that only its order tests read is eliminated
(infoflow/retrieval/unread_indices.py): each case is checked against the written target on
random draws, and its plan against the plan of the projected target written out."""

from __future__ import annotations

import pytest
import torch

import infoflow
from infoflow.retrieval.expression import Condition
from infoflow.retrieval.unread_indices import eliminated
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs

#: (written, the same function with s eliminated)
SAME = [
    ("max(max(dot(q, x[t]) for t in T if t <= s) for s in T)", "max(dot(q, x[t]) for t in T)"),
    ("max(dot(q, x[t]) for s in T for t in T if t <= s)", "max(dot(q, x[t]) for t in T)"),
    ("min(dot(q, x[t]) for s in T for t in T if s >= t)", "min(dot(q, x[t]) for t in T)"),
    ("max(dot(q, x[t]) for s in T for t in T if t < s)", "max(dot(q, x[t]) for t in T if t < T)"),
    (
        "max(dot(q, x[t]) for s in T for t in T if t >= s + 2)",
        "max(dot(q, x[t]) for t in T if t >= 3)",
    ),
    (
        "max(dot(q, x[t]) for s in T for t in T if s <= t - 1 and s >= t - 3)",
        "max(dot(q, x[t]) for t in T if t >= 2)",
    ),
    (
        "max(max(dot(x[u], x[t]) for t in T if t != u and t <= s) for s in T for u in T)",
        "max(dot(x[u], x[t]) for u in T for t in T if t != u)",
    ),
]


def _spec(target: str, heads: list[int], pe: bool) -> dict:
    arch = {"layers": len(heads), "heads": heads, "embed_dim": 64, "positional_encoding": pe}
    return {"kind": "retrieval", "target": target, "input_dim": 4, "seq_len": 8} | {
        "architecture": arch
    }


@pytest.mark.parametrize(("written", "projected"), SAME)
def test_an_index_only_its_order_tests_read_is_eliminated(written, projected) -> None:
    specs = [infoflow.load_spec(_spec(t, [1], True)) for t in (written, projected)]
    x = sample_inputs(specs[0], 256, 8, torch.Generator().manual_seed(0)).double()
    values = [TargetFunction(s, seed=0, dtype=torch.float64)(x) for s in specs]
    assert torch.allclose(values[0], values[1], atol=1e-9), (values[0] - values[1]).abs().max()
    for heads in ([1], [1, 1], [2, 1]):
        for pe in (False, True):
            plans = [infoflow.predict(_spec(t, heads, pe)) for t in (written, projected)]
            for name in ("comparison_order", "min_architectures", "efficient", "feasible"):
                assert plans[0][name].value == plans[1][name].value, (name, heads, pe)


def test_the_max_over_a_prefix_needs_no_positions() -> None:
    """A review's example: the max over s of the max over t <= s is the max over every t, one
    head without positional encoding (it was "impossible": a position read)."""
    result = infoflow.predict(_spec(SAME[0][0], [1], False))
    assert result["efficient"].value and result["min_architectures"].value == [[1]]


@pytest.mark.parametrize(
    ("conditions", "kept"),
    [
        ([Condition("t", "<=", "s")], (Condition("t", "<=", "T"),)),  # s = T: every t
        ([Condition("t", "<", "s")], (Condition("t", "<=", "T", -1),)),
        ([Condition("s", ">=", 3)], ()),  # 3 <= T: where it fails the target is refused
        ([Condition("s", "!=", "t")], None),
        ([Condition("s", "==", "t")], None),
        (
            [Condition("s", "<=", "t"), Condition("s", ">=", "u", 1)],
            (Condition("u", "<=", "t", -1),),
        ),
    ],
)
def test_elimination_keeps_what_the_tests_say_of_the_others(conditions, kept) -> None:
    found = eliminated("s", tuple(conditions))
    if kept is None:
        assert found is None
    else:  # tests between numbers and T that hold at every T are dropped later by the fold
        assert [c for c in found if "s" not in (c.left, c.right)] == list(found)
        assert set(kept) <= set(found) and (kept or not found), found  # () keeps nothing
