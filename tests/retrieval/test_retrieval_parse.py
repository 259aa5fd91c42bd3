"""The target parser: the language's examples pass, hostile input is refused, nothing runs."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import pytest
import torch
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

import infoflow
from infoflow.core.errors import SpecError
from infoflow.retrieval.expression import Apply, Reduce, TargetError, Token, Variable
from infoflow.retrieval.text_to_expression import parse_target
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs

EXAMPLES = [
    "min(dot(x[s], x[t]) for s in T for t in T if s != t)",
    "sum(max(bilinear(x[s], A[i], x[t]) for s in T for t in T) for i in range(D))",
    "min(norm(x[a] + x[b] + x[c]) for a in T for b in T for c in T)",
    "kth_largest((dot(q, x[t]) for t in T), k=2)",
    "x[1] + x[2] + x[3]",
]


#: Each example's top node: the reduction and the indices it runs over (sizes: T is None,
#: range(D) is D), or the operator.
TOPS = [
    ("min", (("s", None), ("t", None))),
    ("sum", (("i", 4),)),
    ("min", (("a", None), ("b", None), ("c", None))),
    ("kth_largest", (("t", None),)),
    ("+", None),
]


@pytest.mark.parametrize(("target", "top"), list(zip(EXAMPLES, TOPS, strict=True)))
def test_examples_parse(target, top) -> None:
    tree = parse_target(target, (("D", 4),))
    op, indices = top
    if indices is None:
        assert tree.fn == op
    else:
        assert tree.op == op and tuple((v.name, v.size) for v in tree.variables) == indices


def test_k_is_an_integer_or_a_parameter_of_the_spec() -> None:
    assert parse_target("kth_largest((x[t][0] for t in T), k=K)", (("K", 3),)).k == 3
    for k in ("-1", "T - 1", "K"):
        with pytest.raises(TargetError, match="k must be an integer from 1 to"):
            parse_target(f"kth_largest((x[t][0] for t in T), k={k})")


def test_a_negative_exponent_is_a_number() -> None:
    """x ** -2 was refused as "an exponent must be a number" (a CLI fuzz, 2026-12-05)."""
    tree = parse_target("max(dot(q, x[t]) ** -2 for t in T)")
    assert tree.body.args[1].value == -2


def test_tree_shape() -> None:
    tree = parse_target(EXAMPLES[0])
    assert isinstance(tree, Reduce) and tree.op == "min"
    assert tree.variables == (Variable("s"), Variable("t"))
    assert tree.body == Apply("dot", (Token("s"), Token("t")))
    assert [(c.left, c.op, c.right) for c in tree.conditions] == [("s", "!=", "t")]
    nested = parse_target(EXAMPLES[1], (("D", 4),))
    assert nested.variables == (Variable("i", 4),)


HOSTILE = {
    "attribute": ("x.__class__", "not allowed"),
    "numpy's dot": ("max(np.dot(q, x[t]) for t in T)", "write dot(...), which the target has"),
    "torch's max": ("torch.max(x[t][0] for t in T)", "write max(...), which the target has"),
    "matmul": ("max(x[s] @ A @ x[t] for s in T for t in T)", "dot(a, b), or bilinear(a, A, b)"),
    "dunder call": ("__import__('os').system('touch /tmp/infoflow-pwned')", "not allowed"),
    "dunder name": ("__builtins__", "not allowed"),
    "lambda": ("(lambda: 1)()", "lambda"),
    "import": ("import os", "not a valid expression"),
    "unknown function": ("evil(x[1])", "unknown function 'evil'"),
    "open": ("open('/etc/passwd')", "unknown function 'open'"),
    "huge exponent": ("x[1] ** 100000", "above 16"),
    "symbolic exponent": ("x[1] ** x[2]", "exponent must be a number"),
    "huge constant": ("x[1] * 10**100", "above"),
    "constant beyond a float": ("x[1] * 1e400", "the constant (beyond a float's range) is above"),
    "negative index": ("x[-1]", "a bound name or an unsigned integer"),  # said "an integer"
    "deep nesting": ("(" * 300 + "x[1]" + ")" * 300, ""),
    "deep calls": ("abs(" * 40 + "x[1]" + ")" * 40, "nested deeper"),
    "too long": ("x[1] + " * 600 + "x[1]", "longer than"),
    "string": ("'hello'", "only numbers"),
    "f-string": ("f'{x[1]}'", "not part of the target language"),
    "list comprehension": ("min([x[t] for t in T])", "generators"),
    "walrus": ("(y := x[1])", "not part of the target language"),
    "unbound index": ("x[s]", "not bound"),
    "position zero": ("x[0]", "1-based"),
    "huge range": ("sum(x[1] for i in range(10**9))", ""),
    "generator over list": ("min(x[t] for t in [1, 2])", "runs over T or range"),
    "keyword": ("dot(x[1], x[2], axis=0)", "keyword"),
    "shadowing": ("min(x[x] for x in T)", "taken"),
    "empty": ("   ", "empty"),
    "far neighbour": ("max(x[t - 100][0] for t in T)", "offset must be an integer in 1..64"),
    "beyond the end": ("x[T + 1]", "beyond the sequence"),
    "offset on a position": ("x[3 - 1]", "write x[2]"),
    "k zero": ("kth_largest((x[t][0] for t in T), k=0)", "k must be an integer"),
    "k huge": ("kth_largest((x[t][0] for t in T), k=10000000000)", "k must be an integer"),
    "k twice": ("kth_largest((x[t][0] for t in T), k=2, k=3)", "is given k twice"),
    "kth over pairs": (
        "kth_largest((dot(x[s], x[t]) for s in T for t in T), k=2)",
        "over one token index",
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_input_is_refused(name, monkeypatch) -> None:
    text, words = HOSTILE[name]

    def forbidden(*args, **kwargs):
        raise AssertionError("the parser executed something")

    from infoflow.retrieval.canonical_to_tree import build_tree

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    with pytest.raises(TargetError) as caught:
        build_tree(parse_target(text))
    assert words in str(caught.value)
    assert not Path("/tmp/infoflow-pwned").exists()


def test_a_long_flat_sum_is_one_level_not_one_a_term() -> None:
    """Python parses a + b + c to the left: 26 terms were 'nested deeper than 24 levels'."""
    terms = [f"dot(q, x[{i}])" for i in range(1, 61)]
    tree = parse_target(" + ".join(terms[:30]) + " - " + " - ".join(terms[30:]))
    assert tree.fn in ("+", "-")
    with pytest.raises(TargetError, match="nested deeper"):
        parse_target("abs(" * 30 + " + ".join(terms[:3]) + ")" * 30)  # calls still count


def test_a_long_chain_is_a_shallow_tree_of_the_same_sum() -> None:
    """320 terms fit the node limit; read left-nested, the validator's evaluation of the
    target ran out of recursion (a review found plan/validate exiting 1 on it)."""
    signs = [1, -1, -1, 1] * 10
    text = "x[1][0]" + "".join(
        f" {'+' if sign > 0 else '-'} x[{i}][0]" for i, sign in enumerate(signs[1:], 2)
    )
    spec = infoflow.load_spec(
        {
            "kind": "retrieval",
            "target": text,
            "input_dim": 4,
            "seq_len": 40,
            "architecture": {"layers": 1, "heads": 1, "positional_encoding": True},
        }
    )
    x = sample_inputs(spec, 3, 40, torch.Generator().manual_seed(0)).double()
    value = TargetFunction(spec, seed=0, dtype=torch.float64)(x)
    expected = (x[:, :, 0] * torch.tensor(signs, dtype=torch.float64)).sum(1)
    assert torch.allclose(value, expected)
    assert _depth(parse_target(text)) <= 8  # log2(40) + 2


def _depth(node) -> int:
    return 1 + max((_depth(a) for a in getattr(node, "args", ())), default=0)


def test_a_number_where_a_vector_belongs_is_refused() -> None:
    """A spec param is a number: params {"q": 2} made dot(q, x[t]) dot(2, x[t]), planned."""
    with pytest.raises(TargetError, match=r"dot\(\) takes vectors; q is a number"):
        parse_target("max(dot(q, x[t]) for t in T)", (("q", 2),))
    with pytest.raises(TargetError, match=r"norm\(\) takes vectors; 3 is a number"):
        parse_target("norm(3)")
    assert parse_target("max(2 * dot(q, x[t]) for t in T)") is not None


@pytest.mark.parametrize(
    ("target", "refusal"),
    [
        ("max(x[t] for t in T)", r"max\(\) ranks numbers and its body is a vector"),
        ("kth_largest((x[t] + 1 for t in T), k=2)", r"kth_largest\(\) ranks numbers"),
        ("argmin(abs(x[t]) for t in T)", r"argmin\(\) ranks numbers"),
        ("max(x[t][0][1] for t in T)", r"x\[t\]\[0\] is a number: it has no coordinate \[1\]"),
        ("max(dot(x[t][0], q) for t in T)", r"dot\(\) takes vectors; its argument 1 is a number"),
        ("max(sqnorm(x[t][1]) for t in T)", r"sqnorm\(\) takes vectors"),
        ("max(bilinear(x[s], x[t], x[s]) for s in T for t in T)", r"a matrix in the middle"),
    ],
)
def test_a_vector_where_a_number_belongs_is_refused(target, refusal) -> None:
    """A max, min, k-th or argmax ranks numbers, and a coordinate has no coordinates: predict
    planned max(x[t]) as one head and x[t][0][0] as x[t][0] (a review found them)."""
    with pytest.raises(SpecError, match=refusal) as refused:
        infoflow.load_spec(_two_layers(target))
    assert refused.value.field == "target"


@pytest.mark.parametrize(
    "target",
    [
        "sum(x[t] for t in T)",
        "x[1] + x[2] + 1",
        "max(bilinear(x[s], A - B, x[t]) for s in T for t in T)",
        "max(dot(p - q, x[t]) + x[t][0] for t in T)",
        "max(norm(x[s] - x[t]) for s in T for t in T if s != t)",
    ],
)
def test_vectors_where_vectors_belong_are_planned(target) -> None:
    assert infoflow.predict(_two_layers(target))["min_layers"].value >= 1


def _two_layers(target: str) -> dict:
    arch = {"layers": 2, "heads": 1}
    return {"kind": "retrieval", "target": target, "input_dim": 4, "seq_len": 8} | {
        "architecture": arch
    }


def test_hostile_target_exits_2_naming_the_field(tmp_path) -> None:
    spec = {
        "kind": "retrieval",
        "target": "max(dot(x[s], x[t]).real for s in T for t in T)",
        "architecture": {"layers": 2, "heads": [1, 1]},
    }
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(spec))
    proc = run_cli("predict", str(path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{path}: field 'target': at column" in proc.stderr
    assert "attribute access is not allowed" in proc.stderr


LANGUAGE = st.sampled_from(
    [
        "x",
        "[",
        "]",
        "(",
        ")",
        "s",
        "t",
        "1",
        "2",
        " for ",
        " in ",
        "T",
        "range",
        "min",
        "max",
        "sum",
        "dot",
        "norm",
        "+",
        "-",
        "*",
        "**",
        ",",
        " if ",
        "!=",
        "k=",
        "kth_largest",
        "q",
        "__",
        ".",
        "lambda",
        ":",
        "'",
        "9" * 8,
    ]
)


def _outcome(text: str) -> str:
    from infoflow.retrieval.canonical_to_tree import build_tree

    try:
        build_tree(parse_target(text))
    except TargetError:
        return "refused"
    return "tree"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_random_text_gives_a_tree_or_a_refusal(text) -> None:
    assert _outcome(text) in ("tree", "refused")


@settings(max_examples=500, deadline=None)
@given(st.lists(LANGUAGE, max_size=40).map("".join))
def test_random_language_fragments_give_a_tree_or_a_refusal(text) -> None:
    assert _outcome(text) in ("tree", "refused")


def test_constants_are_evaluated_in_the_targets_dtype() -> None:
    """A constant was a float32 tensor in a float64 evaluation: max(0.001 f) * 1000 differed
    from max f by 4e-7 (a fuzz of compile found it); in float64 it is rounding."""
    base = {"kind": "retrieval", "input_dim": 4, "seq_len": 8}
    base["architecture"] = {"layers": 1, "heads": 1}
    scaled = infoflow.load_spec({**base, "target": "max(0.001 * dot(q, x[t]) for t in T) * 1000"})
    plain = infoflow.load_spec({**base, "target": "max(dot(q, x[t]) for t in T)"})
    x = sample_inputs(scaled, 64, 8, torch.Generator().manual_seed(0)).double()
    values = [TargetFunction(s, seed=0, dtype=torch.float64)(x) for s in (scaled, plain)]
    assert (values[0] - values[1]).abs().max() < 1e-12
