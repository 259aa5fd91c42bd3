"""Hypothesis properties of the planner over random targets and architectures.

Targets are random factor graphs (unary, pairwise and three-way factors over up to four
indices) inside min/max reductions, sometimes nested, sometimes replicated over a range.
k-th largest targets are left out of the head property: with E fixed, a head more shrinks
n = E/h, and Theorem 2's exponent (T-k-1)/(n+1) rises, as the theory says it should.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import infoflow
from infoflow.retrieval.flow import information_dag
from infoflow.retrieval.predict import derive

NAMES = ["a", "b", "c", "e"]
POINTS = [{"seq_len": T} for T in (8, 64, 1024, 10**6)]


@st.composite
def targets(draw) -> str:
    size = draw(st.integers(1, 4))
    names = NAMES[:size]
    factors = draw(st.lists(st.lists(st.sampled_from(names), min_size=1, max_size=3,
                                     unique=True), min_size=1, max_size=4))  # fmt: skip
    terms = []
    for scope in factors:
        if len(scope) == 1:
            terms.append(f"dot(q, x[{scope[0]}])")
        elif len(scope) == 2:
            terms.append(f"dot(x[{scope[0]}], x[{scope[1]}])")
        else:
            terms.append("norm(" + " + ".join(f"x[{v}]" for v in scope) + ")")
    op = draw(st.sampled_from(["min", "max"]))
    loops = " ".join(f"for {v} in T" for v in names)
    target = f"{op}({' + '.join(terms)} {loops})"
    if draw(st.booleans()):
        target = f"sum({target} for i in range({draw(st.integers(2, 3))}))"
    if draw(st.booleans()):
        target += " + max(dot(w, x[z]) for z in T)"
    return target


architectures = st.lists(st.integers(1, 4), min_size=1, max_size=4)


def exponent_values(target: str, heads: list[int]) -> list[float]:
    """The exponent at growing T (infinite when impossible)."""
    spec = {
        "kind": "retrieval",
        "target": target,
        "input_dim": 4,
        "architecture": {"layers": len(heads), "heads": heads, "embed_dim": 64},
    }
    values = []
    for point in POINTS:
        value = infoflow.predict({**spec, **point})["cost_exponent"].value
        values.append(float("inf") if value is None else value)
    return values


@settings(max_examples=60, deadline=None)
@given(targets(), architectures, st.data())
def test_a_head_more_never_raises_the_exponent(target, heads, data) -> None:
    layer = data.draw(st.integers(0, len(heads) - 1))
    more = list(heads)
    more[layer] += 1
    for before, after in zip(exponent_values(target, heads), exponent_values(target, more),
                             strict=True):  # fmt: skip
        assert after <= before + 1e-12


@settings(max_examples=60, deadline=None)
@given(targets(), architectures, st.data())
def test_a_layer_more_never_raises_the_exponent(target, heads, data) -> None:
    where = data.draw(st.integers(0, len(heads)))
    more = [*heads[:where], data.draw(st.integers(1, 4)), *heads[where:]]
    for before, after in zip(exponent_values(target, heads), exponent_values(target, more),
                             strict=True):  # fmt: skip
        assert after <= before + 1e-12


@settings(max_examples=60, deadline=None)
@given(targets(), architectures)
def test_the_exponent_never_falls_as_T_grows(target, heads) -> None:
    values = exponent_values(target, heads)
    assert values == sorted(values)


@settings(max_examples=60, deadline=None)
@given(targets(), architectures)
def test_information_sets_only_grow_along_residual_edges(target, heads) -> None:
    spec = infoflow.load_spec(
        {"kind": "retrieval", "target": target,
         "architecture": {"layers": len(heads), "heads": heads}}
    )  # fmt: skip
    dag = information_dag(derive(spec).plan)
    residual = [(u, v) for u, v, mode in dag.edges(data="mode") if mode == "residual"]
    assert residual
    for u, v in residual:
        assert set(dag.nodes[u]["info"]) <= set(dag.nodes[v]["info"])
