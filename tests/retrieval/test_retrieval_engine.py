"""The InfoFlow engine: the papers' results and targets nobody wrote a special case for."""

from __future__ import annotations

import itertools

import pytest
import sympy
from conftest import SPECS

import infoflow
from infoflow.retrieval.derive import _derive, derive
from infoflow.retrieval.laws import E, T, d, n
from infoflow.retrieval.schedule_to_cost import annotate_edges
from infoflow.retrieval.schedule_to_flow import information_dag

PAIRWISE_MIN = "min(dot(x[s], x[t]) for s in T for t in T if s != t)"
INTRINSIC = "sum(max(bilinear(x[s], A[i], x[t]) for s in T for t in T) for i in range(D))"
TRIANGLE = "min(norm(x[a] + x[b] + x[c]) for a in T for b in T for c in T)"


def predict(target: str, heads, pe=False, seq_len=64, d_in=4, embed=64, params=None, **opts):
    spec = {
        "kind": "retrieval",
        "target": target,
        "params": params or {},
        "input_dim": d_in,
        "seq_len": seq_len,
        "architecture": {
            "layers": len(heads),
            "heads": list(heads),
            "embed_dim": embed,
            "positional_encoding": pe,
        },
        "options": opts,
    }
    return infoflow.predict(spec)


def value(result, name):
    return result[name].value


# ---- the papers' results ---------------------------------------------------------------


def test_depth_separation_for_the_pairwise_minimum() -> None:
    one = predict(PAIRWISE_MIN, [1])
    assert sympy.simplify(one["cost_exponent"].expression - sympy.Max(1, T * d / E - 1)) == 0
    assert not value(one, "efficient")
    # linear in T: each further 2048 tokens add 2048 * d / E to the exponent
    alpha = one["cost_exponent"].expression.subs({d: 4, E: 64})
    assert alpha.subs(T, 4096) - alpha.subs(T, 2048) == 2048 * 4 // 64
    two = predict(PAIRWISE_MIN, [1, 1])
    assert value(two, "efficient") and value(two, "cost_exponent") == 1
    assert not two["cost_exponent"].expression.has(T)
    assert value(two, "min_layers") == 2 and value(two, "min_heads") == [1, 1]
    # more heads in one layer do not help: the separation is in depth
    assert not value(predict(PAIRWISE_MIN, [8]), "efficient")


@pytest.mark.parametrize("D", range(2, 7))
def test_intrinsic_dimension_needs_D_heads_in_both_layers(D) -> None:
    full = predict(INTRINSIC, [D, D], params={"D": D})
    assert value(full, "efficient")
    assert value(full, "min_heads") == [D, D] and value(full, "min_layers") == 2
    assert value(full, "comparison_dimension") == D and value(full, "comparison_order") == 2
    assert sympy.simplify(full["num_comparisons"].expression - D * T**2) == 0
    for heads in ([D - 1, D], [D, D - 1]):
        short = predict(INTRINSIC, heads, params={"D": D})
        assert not value(short, "efficient"), heads
        assert "too few heads" in value(short, "bottleneck")


@pytest.mark.parametrize("heads", [[1], [2, 2], [4, 4], [8, 8, 8], [16] * 6])
def test_triangle_center_is_never_efficient(heads) -> None:
    result = predict(TRIANGLE, heads, d_in=2, embed=48)
    assert value(result, "comparison_order") == 3
    assert not value(result, "efficient")
    assert "order 3" in value(result, "bottleneck")


@pytest.mark.parametrize("k", [2, 3, 5])
def test_single_head_kth_largest_costs_theorem_2(k) -> None:
    result = predict(f"kth_largest((dot(q, x[t]) for t in T), k={k})", [1], embed=32)
    alpha = result["cost_exponent"].expression
    assert alpha.has((T - k - 1) / (n + 1))
    assert result["cost_exponent"].bound == "lower"
    assert result["cost_exponent"].provenance == "paper:theorem-2"
    assert value(result, "cost_exponent") == pytest.approx(max(1, (64 - k - 1) / 33))
    deep = predict(f"kth_largest((dot(q, x[t]) for t in T), k={k})", [1] * k, embed=32)
    assert value(deep, "efficient") and value(deep, "min_layers") == k


def test_kth_cost_summary_option_does_not_grow_with_T() -> None:
    target = "kth_largest((dot(q, x[t]) for t in T), k=2)"
    result = predict(target, [1], embed=32, kth_cost="summary")
    assert value(result, "efficient") and result["cost_exponent"].expression.has(n)


def test_specific_positions_need_positional_encoding() -> None:
    with_pe = predict("x[1] + x[2] + x[3]", [1], pe=True, seq_len=10)
    assert value(with_pe, "efficient") and value(with_pe, "min_layers") == 1
    assert value(with_pe, "requires_positional_encoding")
    assert value(with_pe, "information_sets") == [["x[1]", "x[2]", "x[3]"]]
    without = predict("x[1] + x[2] + x[3]", [1], pe=False, seq_len=10)
    assert not value(without, "feasible") and not value(without, "efficient")
    assert (
        value(without, "cost_exponent") is None and without["cost_exponent"].expression == sympy.oo
    )


def test_decode_offset_option() -> None:
    loose = predict(PAIRWISE_MIN, [1], decode_offset=0, exponent_floor=0)
    assert sympy.simplify(loose["cost_exponent"].expression - sympy.Max(0, T * d / E)) == 0


# ---- targets nobody wrote a special case for --------------------------------------------

GENERAL = {
    # target: (heads that suffice, min_layers, min_heads, order)
    "chain of three": (
        "max(dot(x[a], x[b]) + bilinear(x[b], A, x[c]) for a in T for b in T for c in T)",
        [2, 1],
        2,
        [2, 1],
        2,
    ),
    # two leaves that are one function of b: max over b of 2 max over a of x(a)^T A x(b)
    "chain of three with equal leaves": (
        "max(bilinear(x[a], A, x[b]) + bilinear(x[c], A, x[b]) for a in T for b in T for c in T)",
        [1, 1],
        2,
        [1, 1],
        2,
    ),
    # ... and with x(a).x(b), 2 max over a, b of x(a).x(b): 2 max |x|^2 (Cauchy-Schwarz)
    "chain of three dot products": (
        "max(dot(x[a], x[b]) + dot(x[b], x[c]) for a in T for b in T for c in T)",
        [1],
        1,
        [1],
        1,
    ),
    "chain of four": (
        "max(dot(x[a], x[b]) + norm(x[b] - x[c]) + dot(x[c], x[e]) "
        "for a in T for b in T for c in T for e in T)",
        [2, 1, 1],
        3,
        [2, 1, 1],
        2,
    ),
    "star with three leaves": (
        "min(dot(x[h], x[a]) - dot(x[b], x[h]) + bilinear(x[h], A, x[c]) "
        "for h in T for a in T for b in T for c in T)",
        [3, 1],
        2,
        [3, 1],
        2,
    ),
    "star with three equal leaves": (
        "min(dot(x[h], x[a]) + dot(x[h], x[b]) + dot(x[c], x[h]) "
        "for h in T for a in T for b in T for c in T)",
        [1, 1],
        2,
        [1, 1],
        2,
    ),
    "nested min of max": (  # the token whose farthest is nearest (a max of min is 0)
        "min(max(norm(x[s] - x[t]) for t in T) for s in T)",
        [1, 1],
        2,
        [1, 1],
        2,
    ),
    "sum of two reductions": (
        "max(dot(q, x[t]) for t in T) - min(dot(w, x[u]) for u in T)",
        [2],
        1,
        [2],
        1,
    ),
    "separable sum": ("sum(relu(dot(w, x[t])) for t in T)", [1], 1, [1], 1),
    # the max over i joins the max over s, t: one score max_i x[s] A_i x[t], one head a layer
    "ranged pairwise maxima": (
        "max(max(bilinear(x[s], A[i], x[t]) for s in T for t in T) for i in range(3))",
        [1, 1],
        2,
        [1, 1],
        2,
    ),
    # a sum over i does not commute with the max: three comparisons side by side
    "ranged pairwise sums": (
        "sum(max(bilinear(x[s], A[i], x[t]) for s in T for t in T) for i in range(3))",
        [3, 3],
        2,
        [3, 3],
        2,
    ),
    # the sum distributes: dot(sum x[s], sum x[t]), one averaging head
    "pairwise sum": ("sum(dot(x[s], x[t]) for s in T for t in T)", [1], 1, [1], 1),
}


@pytest.mark.parametrize("name", sorted(GENERAL))
def test_efficient_targets_outside_the_paper(name) -> None:
    target, heads, layers, min_heads, order = GENERAL[name]
    result = predict(target, heads)
    assert value(result, "efficient"), value(result, "bottleneck")
    assert value(result, "min_layers") == layers and value(result, "min_heads") == min_heads
    assert value(result, "comparison_order") == order
    # one head fewer in any layer that is fully used breaks it
    for layer, h in enumerate(heads):
        fewer = list(heads)
        fewer[layer] = h - 1
        if h > 1 and sum(min_heads[layer : layer + 1]) == h:
            assert not value(predict(target, fewer), "efficient"), (name, fewer)


@pytest.mark.parametrize(
    ("target", "order"),
    [
        (
            "max(bilinear(x[a], A, x[b]) + bilinear(x[b], A, x[c]) + bilinear(x[c], A, x[a]) "
            "for a in T for b in T for c in T)",
            3,
        ),
        (  # a cycle in a min: the diagonal does not hold it
            "min(dot(x[a], x[b]) + dot(x[b], x[c]) + dot(x[c], x[a]) "
            "for a in T for b in T for c in T)",
            3,
        ),
        ("sum(norm(x[s] - x[t]) for s in T for t in T)", 2),
        ("max(min(dot(x[s], x[t]) + dot(x[t], x[u]) for t in T) for s in T for u in T)", 3),
    ],
    ids=["cycle", "min-cycle", "pairwise-distance-sum", "nested-three-way"],
)
def test_inefficient_targets_outside_the_paper(target, order) -> None:
    for heads in ([1], [4, 4], [8, 8, 8, 8]):
        result = predict(target, heads)
        assert not value(result, "efficient")
    assert value(result, "comparison_order") == order


def test_information_sets_grow_layer_by_layer() -> None:
    result = predict(
        "max(bilinear(x[a], A, x[b]) + bilinear(x[b], A, x[c]) + bilinear(x[c], A, x[e]) "
        "for a in T for b in T for c in T for e in T)",
        [2, 1, 1],
    )
    sets = value(result, "information_sets")
    assert sets[0] == [] and len(sets[-1]) == 4
    for before, after in itertools.pairwise(sets):
        assert set(before) <= set(after)


def test_symbolic_work_does_not_depend_on_T() -> None:
    """T = 8 and T = 10^6 share one derivation, and the DAG has the same size."""
    _derive.cache_clear()
    small = predict(PAIRWISE_MIN, [1, 1], seq_len=8)
    large = predict(PAIRWISE_MIN, [1, 1], seq_len=10**6)
    assert _derive.cache_info().misses == 1
    assert small["cost_exponent"].expression == large["cost_exponent"].expression
    spec = infoflow.load_spec(SPECS / "retrieval" / "pairwise-min.json", ["seq_len=1000000"])
    assert information_dag(derive(spec).schedule).number_of_nodes() == 2 * 3


def test_symbolic_T() -> None:
    result = predict(PAIRWISE_MIN, [1], seq_len=None)
    assert value(result, "cost_exponent") == "Max(1, T/16 - 1)"
    assert value(result, "num_comparisons") == "T**2"  # beta1 * T^beta', an estimate


def test_edge_costs_follow_their_mode() -> None:
    spec = infoflow.load_spec(SPECS / "retrieval" / "pairwise-min.json", ["architecture.layers=1"])
    der = derive(spec)
    dag = information_dag(der.schedule)
    annotate_edges(dag, der.schedule, der.options)
    modes = {data["mode"]: data["cost"] for _, _, data in dag.edges(data=True)}
    assert modes == {"residual": "0", "global": str(T * d / E - 1)}


def test_min_heads_is_an_upper_bound_beside_a_k_th_it_does_not_pair() -> None:
    """A max the peel's first round holds is paired ([1, 1], exact); one the planner cannot
    pair (the copy i = 0 of a max over range(2), beside the k-th of w[0]) keeps its head, and
    since it might not need it the count is an upper bound."""

    def min_heads(target: str):
        spec = {"kind": "retrieval", "target": target, "input_dim": 4, "seq_len": 16}
        spec["architecture"] = {"layers": 2, "heads": 2, "embed_dim": 64}
        found = infoflow.predict(infoflow.load_spec(spec))["min_heads"]
        return found.value, found.bound

    pair = "max(dot(q, x[t]) for t in T) + kth_largest((dot(q, x[t]) for t in T), k=2)"
    assert min_heads(pair) == ([1, 1], "exact")
    copies = (
        "sum(max(dot(w[i], x[t]) for t in T) for i in range(2)) "
        "+ kth_largest((dot(w[0], x[t]) for t in T), k=2)"
    )
    assert min_heads(copies) == ([3, 1], "upper")
    assert min_heads("kth_largest((dot(q, x[t]) for t in T), k=2)") == ([1, 1], "exact")


def test_min_heads_is_an_upper_bound_beside_an_odd_median_peeled_from_its_own_end() -> None:
    """The third largest of five ranks third from both ends: the planner peels it from the
    largest, which holds a max beside it (exact) but not a min (charged a head it may not
    need, since a peel from the smallest would hold it: upper). At T = 6 or 7 the far end
    ranks deeper than the minimal three layers reach, so the min's head is exact; beside a
    max as well, the peel holds one of the two whichever end it runs from: exact."""

    def min_heads(extrema: str, seq_len: int):
        f = "dot(q, x[t]) for t in T"
        target = " + ".join([*(f"{e}({f})" for e in extrema.split()), f"kth_largest(({f}), k=3)"])
        spec = {"kind": "retrieval", "target": target, "input_dim": 4, "seq_len": seq_len}
        spec["architecture"] = {"layers": 3, "heads": 2, "embed_dim": 32}
        found = infoflow.predict(infoflow.load_spec(spec))["min_heads"]
        return found.value, found.bound

    assert min_heads("max", 5) == ([1, 1, 1], "exact")
    assert min_heads("min", 5) == ([2, 1, 1], "upper")
    assert min_heads("min", 6) == min_heads("min", 7) == ([2, 1, 1], "exact")
    assert min_heads("max min", 5) == ([2, 1, 1], "exact")


def test_min_heads_is_an_upper_bound_beside_a_k_th_that_is_the_same_extremum() -> None:
    """The 5th largest of five is the min: the planner retrieves it and the min beside it
    with a head each, where one would do."""
    f = "dot(q, x[t]) for t in T"
    spec = {"kind": "retrieval", "input_dim": 4, "seq_len": 5}
    spec |= {
        "target": f"min({f}) + kth_largest(({f}), k=5)",
        "architecture": {"layers": 1, "heads": 2},
    }
    found = infoflow.predict(infoflow.load_spec(spec))["min_heads"]
    assert (found.value, found.bound) == ([2], "upper")


def test_theorem_2_counts_the_candidates_a_k_th_over_t_not_s_leaves() -> None:
    """t != s leaves T - 1 candidates: (T - 1 - k - 1) / (n + 1), 60/33 at T = 64 (it used T:
    1.848, an audit, 2026-12-07); at T = 4, k = 2 lies outside the theorem's k <= N - 2."""
    data = {
        "kind": "retrieval",
        "target": "max(kth_largest((dot(x[s], x[t]) for t in T if t != s), k=2) for s in T)",
        "input_dim": 4,
        "architecture": {
            "layers": 2,
            "heads": [1, 1],
            "embed_dim": 32,
            "positional_encoding": True,
        },
    }
    alpha = infoflow.predict({**data, "seq_len": 64})["cost_exponent"]
    assert alpha.value == pytest.approx(60 / 33) and alpha.provenance == "paper:theorem-2"
    terms = derive(infoflow.load_spec({**data, "seq_len": 4})).terms
    kth = [t for t in terms if t.rank]
    assert kth and all(t.provenance == "reconstruction:kth_range" for t in kth)
