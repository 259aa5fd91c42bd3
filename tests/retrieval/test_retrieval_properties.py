"""Hypothesis properties of the planner over random targets and architectures.

Targets are random factor graphs (unary, pairwise and three-way factors over up to four
indices) inside min/max reductions, sometimes nested, sometimes replicated over a range,
sometimes with k-th retrievals beside or inside them. The one exception to "a head more
never hurts" is stated in docs/retrieval.md: with E fixed, a head more in the layer with the
fewest heads shrinks n = E/h, and Theorem 2's (T-k-1)/(n+1) rises.
"""

from __future__ import annotations

import itertools
import re
from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

import infoflow
from infoflow.retrieval.derive import derive
from infoflow.retrieval.layer_fit import fits
from infoflow.retrieval.schedule_to_flow import information_dag

NAMES = ["a", "b", "c", "e"]
POINTS = [{"seq_len": T} for T in (8, 64, 1024, 10**6)]


@st.composite
def targets(draw) -> str:
    size = draw(st.integers(1, 4))
    names = NAMES[:size]
    factors = draw(
        st.lists(
            st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True),
            min_size=1,
            max_size=4,
        )
    )
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
    k = draw(st.integers(2, 4))
    target += draw(
        st.sampled_from(
            [
                "",
                f" + kth_largest((dot(w, x[z]) for z in T), k={k})",
                f" + max(kth_largest((dot(x[y], x[z]) for z in T), k={k}) for y in T)",
                f" + sum(kth_smallest((norm(x[y] - x[z]) for z in T), k={k}) for y in T)",
            ]
        )
    )
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
    """... except through n = E / (fewest heads in a layer), which a head more can shrink
    (docs/retrieval.md): then only single-head k-th retrievals may cost more."""
    layer = data.draw(st.integers(0, len(heads) - 1))
    more = list(heads)
    more[layer] += 1
    narrower = min(more) > min(heads) and "kth" in target
    points = zip(exponent_values(target, heads), exponent_values(target, more), POINTS, strict=True)
    for before, after, point in points:
        if not narrower:
            assert after <= before + 1e-12
            continue
        # the rise is Theorem 2's at the smaller n = E / h (every k the target reads), and
        # without its k-th retrievals (appended last) the target obeys the rule
        T, n = point["seq_len"], 64 / min(more)
        ranks = [int(k) for k in re.findall(r"k=(\d+)", target)]
        assert after <= max(before, *((T - k - 1) / (n + 1) for k in ranks)) + 1e-9
    if narrower:
        base = re.split(r" \+ (?:sum\(|max\()?kth_", target)[0]
        for before, after in zip(
            exponent_values(base, heads), exponent_values(base, more), strict=True
        ):
            assert after <= before + 1e-12, base


@settings(max_examples=60, deadline=None)
@given(targets(), architectures, st.data())
def test_a_layer_more_never_raises_the_exponent(target, heads, data) -> None:
    where = data.draw(st.integers(0, len(heads)))
    more = [*heads[:where], data.draw(st.integers(1, 4)), *heads[where:]]
    for before, after in zip(
        exponent_values(target, heads), exponent_values(target, more), strict=True
    ):
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
        {
            "kind": "retrieval",
            "target": target,
            "architecture": {"layers": len(heads), "heads": heads},
        }
    )
    dag = information_dag(derive(spec).schedule)
    residual = [(u, v) for u, v, mode in dag.edges(data="mode") if mode == "residual"]
    assert residual
    for u, v in residual:
        assert set(dag.nodes[u]["info"]) <= set(dag.nodes[v]["info"])


@cache
def brute_force_fits(heads: tuple, preds: tuple, caps: tuple) -> bool:
    """Every way to fill the layers from the first, tried."""

    def go(layer: int, done: int) -> bool:
        if done == (1 << len(heads)) - 1:
            return True
        if layer == len(caps):
            return False
        ready = [
            v
            for v in range(len(heads))
            if not done >> v & 1 and all(done >> p & 1 for p in preds[v])
        ]
        for k in range(len(ready), -1, -1):
            for chosen in itertools.combinations(ready, k):
                if sum(heads[v] for v in chosen) <= caps[layer]:
                    mask = done
                    for v in chosen:
                        mask |= 1 << v
                    if go(layer + 1, mask):
                        return True
        return False

    return go(0, 0)


@st.composite
def step_graphs(draw):
    n = draw(st.integers(1, 8))
    preds = [
        tuple(sorted(draw(st.sets(st.integers(0, v - 1), max_size=2)))) if v else ()
        for v in range(n)
    ]
    heads = draw(st.lists(st.sampled_from([1, 1, 2]), min_size=n, max_size=n))
    caps = draw(st.lists(st.integers(0, 4), min_size=1, max_size=6))
    return heads, preds, caps


@settings(max_examples=400, deadline=None)
@given(step_graphs())
def test_the_layer_test_is_exact(graph) -> None:
    """fits() finds a placement exactly when one exists, and what it finds is valid."""
    heads, preds, caps = graph
    found = fits(heads, [list(p) for p in preds], caps)
    assert (found is not None) == brute_force_fits(tuple(heads), tuple(preds), tuple(caps))
    if found is not None:
        assert all(1 <= layer <= len(caps) for layer in found)
        assert all(found[p] < found[v] for v in range(len(heads)) for p in preds[v])
        for layer in range(1, len(caps) + 1):
            assert (
                sum(h for h, at in zip(heads, found, strict=True) if at == layer) <= caps[layer - 1]
            )
