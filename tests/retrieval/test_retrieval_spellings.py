"""One function, one answer (issue 28): the rewrites the engine plans with are identities
(checked numerically with the validator's evaluator), windows are part of the language, and
targets with nothing to plan are refused."""

from __future__ import annotations

import itertools
import re

import pytest
from conftest import SPECS, run_cli

import infoflow
from infoflow.core.errors import SpecError
from infoflow.retrieval.domains import check_domains
from infoflow.retrieval.explain import explain
from infoflow.retrieval.expression import Condition, TargetError
from infoflow.retrieval.expression_rewrite import COUNT, rewrite
from infoflow.retrieval.text_to_expression import parse_target

torch = pytest.importorskip("torch")
from infoflow.validators.retrieval.targets import TargetFunction  # noqa: E402

REWRITTEN = [
    "max(dot(q, x[t-1]) for t in T)",  # renamed: t over 1..T-1
    "max(bilinear(x[s], A, x[t-1]) for s in T for t in T if s < t)",
    "sum(dot(q, x[t+2]) * relu(x[t+2][0]) for t in T if t >= 2)",
    "max(dot(q, x[1]), dot(q, x[2]), dot(q, x[4]))",  # a masked index with a gap
    "min(norm(x[T] - w), norm(x[T-2] - w))",
    "max(max(dot(q, x[s]) + dot(x[s], x[t]) for s in T for t in T), "
    "max(dot(w, x[s]) + dot(x[s], x[t]) for s in T for t in T))",  # one domain, merged
    "max(dot(q, x[t]) for t in T) + max(dot(q, x[s]) for s in T)",  # 2 max
    "max(dot(q, x[t]) - 0.5 * dot(q, x[t]) for t in T)",
    "sum(dot(q, x[s]) for s in T for t in T if s != t)",  # (T - 1) sum
    "max(dot(x[a], q) + dot(x[b], w) for a in T for b in T)",  # separable
    "min(dot(x[s], x[t]) + x[t][0] for s in T for t in T if abs(s - t) < 1)",  # s == t
    "max(max(dot(x[s], x[t-1]) for t in T if t <= s and t >= s) for s in T)",
]


def evaluate(tree, target: str, x):
    spec = infoflow.load_spec(
        {
            "kind": "retrieval",
            "target": target,
            "input_dim": 4,
            "seq_len": x.shape[1],
            "architecture": {"layers": 1, "heads": 1, "embed_dim": 8},
        }
    )
    function = TargetFunction(spec, seed=3, dtype=torch.float64)
    function.tree = tree
    function._params[f"{COUNT.name}/0"] = torch.tensor(x.shape[1] - 1.0, dtype=torch.float64)
    return function(x)


@pytest.mark.parametrize("target", REWRITTEN)
def test_each_rewrite_is_an_identity(target) -> None:
    x = torch.randn(64, 8, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    tree = parse_target(target)
    assert rewrite(tree) != tree  # the rewrite did something
    assert torch.allclose(evaluate(rewrite(tree), target, x), evaluate(tree, target, x))


def test_a_window_masks_exactly_the_pairs_it_names() -> None:
    target = "max(dot(x[s], x[t]) for s in T for t in T if s < t and t - s <= 2)"
    x = torch.randn(16, 7, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    got = evaluate(parse_target(target), target, x)
    pairs = [(s, t) for s, t in itertools.product(range(7), repeat=2) if 0 < t - s <= 2]
    want = torch.stack([(x[:, s] * x[:, t]).sum(-1) for s, t in pairs], -1).amax(-1)
    assert torch.allclose(got, want)


@pytest.mark.parametrize(
    ("condition", "read"),
    [
        ("abs(s - t) <= 3", [Condition("s", "<=", "t", 3), Condition("t", "<=", "s", 3)]),
        ("t - s <= 4", [Condition("t", "<=", "s", 4)]),
        ("s + 2 <= t", [Condition("s", "<=", "t", -2)]),
        ("t < T", [Condition("t", "<", "T")]),
        ("t <= T - 1", [Condition("t", "<=", "T", -1)]),
        ("3 <= t", [Condition("t", ">=", 3)]),
        ("s != t", [Condition("s", "!=", "t")]),
    ],
)
def test_windows_and_shifted_conditions_parse(condition, read) -> None:
    tree = parse_target(f"max(dot(x[s], x[t]) for s in T for t in T if {condition})")
    assert list(tree.conditions) == read


@pytest.mark.parametrize(
    ("condition", "named", "conditions"),
    [
        ("abs(s - t) <= 2", "abs(s - t) <= 2", 1),
        ("abs(t - s) < 3", "abs(t - s) < 3", 1),
        ("t - s <= 2 and s - t <= 2", "abs(t - s) <= 2", 1),  # a window's two sides: one
        ("s < t and t - s <= 4", "s < t", 2),  # a causal window: two conditions, as written
    ],
)
def test_a_window_is_named_as_written(condition, named, conditions) -> None:
    """A window is read as two conditions (above); what reads positions names it as one, in
    the bottleneck, explain's tree and a k-th's refusal (until 2026-12-05 they named one
    side, "s <= t + 2", and the tree listed both). A bilinear score: the max of a dot product
    over a window that holds (s, s) is the largest |x|^2 (since 2026-12-07)."""
    target = f"max(bilinear(x[s], A, x[t]) for s in T for t in T if {condition})"
    data = {"kind": "retrieval", "target": target, "architecture": {"layers": 2, "heads": 1}}
    spec = infoflow.load_spec(data)
    found = infoflow.predict(spec)["bottleneck"].value
    assert found.startswith(f"max over s, t: the condition {named} reads positions"), found
    tree = explain(spec).splitlines()[3]
    assert f"; condition {named};" in tree and tree.count("; condition ") == conditions, tree
    kth = f"max(kth_largest((dot(x[s], x[t]) for t in T if {condition}), k=2) for s in T)"
    with pytest.raises(SpecError, match=f"with the condition {re.escape(named)}: a k-th"):
        infoflow.load_spec({**data, "target": kth})


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ("abs(s - t) >= 3", "a window is written"),
        ("t == s + 1", r"read x\[s\+1\] instead"),
        ("2 * t <= s", "a condition compares"),
        ("s + t <= 4", "a condition compares"),
        ("t <= -T", "a condition compares"),
    ],
)
def test_conditions_outside_the_language_are_refused_with_a_reason(condition, message) -> None:
    with pytest.raises(TargetError, match=message):
        parse_target(f"max(dot(x[s], x[t]) for s in T for t in T if {condition})")


@pytest.mark.parametrize(
    ("target", "seq_len", "empty"),
    [
        ("min(dot(x[s], x[t]) for s in T for t in T if s != t)", 1, True),
        ("min(dot(x[s], x[t]) for s in T for t in T if s != t)", 2, False),
        ("max(dot(x[s], x[t]) for s in T for t in T if s < t and t <= s)", 64, True),
        ("max(dot(q, x[t]) for t in T if t > 64)", 64, True),
        ("max(dot(q, x[t]) for t in T if t > 63)", 64, False),
        ("max(dot(q, x[t-1]) for t in T)", 1, True),
        ("max(dot(x[s], x[t]) for s in T for t in T if abs(s - t) <= 1 and s != t)", 2, False),
        ("max(max(dot(x[s], x[t]) for t in T if t < s) for s in T)", 2, False),
        ("max(dot(x[s], x[t]) for s in T for t in T if t - s >= 5)", 5, True),
        ("sum(x[i + 1][0] for i in range(3) if i > 2)", 8, None),  # range indices are 0..n-1
    ],
)
def test_an_empty_reduction_is_found_exactly(target, seq_len, empty) -> None:
    if empty is None:  # the language's other checks come first
        with pytest.raises(TargetError):
            check_domains(parse_target(target), seq_len)
        return
    if empty:
        with pytest.raises(TargetError, match="runs over nothing"):
            check_domains(parse_target(target), seq_len)
    else:
        check_domains(parse_target(target), seq_len)


def test_targets_with_nothing_to_plan_exit_2_with_the_reason(tmp_path) -> None:
    spec = str(tmp_path / "s.json")
    base = (
        '{"kind": "retrieval", "target": "TARGET", "input_dim": 4, "seq_len": 8, '
        '"architecture": {"layers": 1, "heads": 1, "embed_dim": 8}}'
    )
    for target, reason in [
        ("max(dot(q, x[t]) - dot(q, x[t]) for t in T)", "reads no token"),
        ("3.0", "reads no token"),
        ("max(dot(q, x[t]) for t in T if t > 8)", "runs over nothing at T = 8"),
    ]:
        (tmp_path / "s.json").write_text(base.replace("TARGET", target))
        proc = run_cli("predict", spec)
        assert proc.returncode == 2 and reason in proc.stderr and "Traceback" not in proc.stderr
    with pytest.raises(SpecError, match="runs over nothing at T = 1"):
        infoflow.load_spec(SPECS / "retrieval" / "pairwise-min.json", ["seq_len=1"])


ISSUE_28 = [  # (one spelling, another) of one function, from the issue's report
    ("max(dot(q, x[t-1]) for t in T)", "max(dot(q, x[t]) for t in T if t != T)"),
    (
        "max(bilinear(x[s], A, x[t-1]) for s in T for t in T if s < t)",
        "max(bilinear(x[s], A, x[u]) for s in T for u in T if s <= u and u != T)",
    ),
    (
        "max(max(bilinear(x[s], A[i], x[t]) for s in T for t in T) for i in range(2))",
        "max(max(bilinear(x[s], A[0], x[t]) for s in T for t in T), "
        "max(bilinear(x[s], A[1], x[t]) for s in T for t in T))",
    ),
    ("max(dot(q, x[1]), dot(q, x[2]), dot(q, x[3]))", "max(dot(q, x[t]) for t in T if t <= 3)"),
    (
        "max(dot(q, x[t]) for t in T) + max(dot(q, x[s]) for s in T)",
        "2 * max(dot(q, x[t]) for t in T)",
    ),
    ("sum(dot(q, x[s]) for s in T for t in T if s != t)", "7 * sum(dot(q, x[s]) for s in T)"),
    (
        "max(dot(x[s], x[t]) for s in T for t in T if abs(s - t) <= 2)",
        "max(dot(x[s], x[t]) for s in T for t in T if s - t <= 2 and t - s <= 2)",
    ),
]


def verdicts(target: str, heads: list[int]) -> dict:
    spec = {
        "kind": "retrieval",
        "target": target,
        "input_dim": 4,
        "seq_len": 8,
        "architecture": {
            "layers": len(heads),
            "heads": heads,
            "embed_dim": 4,
            "positional_encoding": True,
        },
    }
    names = ("min_heads", "min_architectures", "cost_exponent", "efficient", "comparison_order")
    result = infoflow.predict(spec)
    return {name: result.predictions[name].value for name in names}


@pytest.mark.parametrize(("one", "other"), ISSUE_28)
def test_the_issues_spellings_of_one_function_get_one_verdict(one, other) -> None:
    for heads in ([1], [2], [1, 1], [2, 2], [1, 1, 1]):
        assert verdicts(one, heads) == verdicts(other, heads), heads


@pytest.mark.parametrize(
    ("target", "heads", "message"),
    [
        ("x[1][0] / 0", 1, "a division by 0"),
        ("x[1][0] / (x[2][0] - x[2][0])", 1, "a division by 0"),
        ("log(0) + sqrt(-1) + x[1][0]", 1, r"log\(0\) has no real value"),
        ("sqrt(x[1][0] - x[1][0] - 2)", 1, r"sqrt\(-2\) has no real value"),
        ("x[1][100]", 1, "coordinate 100 of a token of width d = 4"),
        ("sum(x[1][i] for i in range(5))", 1, "coordinate 4 of a token of width d = 4"),
        ("max(x[t-64][0] for t in T)", 1, "runs over nothing at T = 16"),
        ("x[1][0]", 80, "80 heads in a layer at E = 64"),
    ],
)
def test_targets_that_cannot_exist_are_refused(target, heads, message) -> None:
    """Issue 29, item 4: never a finite 'efficient' cost for what has no value."""
    spec = {
        "kind": "retrieval",
        "target": target,
        "input_dim": 4,
        "seq_len": 16,
        "architecture": {"layers": 1, "heads": heads, "embed_dim": 64},
    }
    with pytest.raises(SpecError, match=message):
        infoflow.load_spec(spec)


def test_values_in_their_domain_and_coordinates_within_d_are_planned() -> None:
    spec = {
        "kind": "retrieval",
        "target": "x[1][0] / 2 + log(3) + sqrt(0) + x[2][3] + sum(x[1][i] for i in range(4))",
        "input_dim": 4,
        "seq_len": 16,
        "architecture": {"layers": 1, "heads": 64, "embed_dim": 64},
    }
    assert infoflow.predict(spec).predictions["feasible"].value is False  # no PE


def test_a_k_beyond_t_is_refused_whether_or_not_d_is_given() -> None:
    spec = {
        "kind": "retrieval",
        "target": "kth_largest((dot(q, x[t]) for t in T), k=17)",
        "seq_len": 16,
        "architecture": {"layers": 1, "heads": 1},
    }
    for extra in ({}, {"input_dim": 4}):
        with pytest.raises(SpecError, match="k = 17 exceeds T = 16"):
            infoflow.load_spec({**spec, **extra})


@pytest.mark.parametrize("kth", ["kth_largest", "kth_smallest"])
def test_a_kth_that_is_rank_1_from_its_far_end_is_that_extremum(kth) -> None:
    """The 7th of 7 partners t != s is the other end's extremum (kth_candidates.far_extrema,
    applied where derive finds the rank counted from the far end)."""
    from infoflow.retrieval.kth_candidates import far_extrema

    target = f"max({kth}((dot(x[s], x[t]) for t in T if t != s), k=7) for s in T)"
    x = torch.randn(64, 8, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    tree = parse_target(target)
    extremum = far_extrema(tree, {(7, 1): 1})
    assert extremum.body.op == ("min" if kth == "kth_largest" else "max")
    assert torch.allclose(evaluate(extremum, target, x), evaluate(tree, target, x))
