"""Schedules, k-th retrieval as a step, positions, large sizes and provenance (issue 13,
items 2-6)."""

from __future__ import annotations

import pytest
import sympy
from conftest import SPECS, run_cli

import infoflow
from infoflow.core.errors import SpecError
from infoflow.retrieval.derive import derive
from infoflow.retrieval.explain import explain
from infoflow.retrieval.laws import T, d, n
from infoflow.retrieval.schedule_to_flow import information_dag

CHAIN = "max(dot(x[a], x[b]) + bilinear(x[b], A, x[c]) for a in T for b in T for c in T)"
STAR = (  # three leaves, three different functions of h (equal ones would share a head)
    "min(dot(x[h], x[a]) - dot(x[b], x[h]) + bilinear(x[h], A, x[c]) "
    "for h in T for a in T for b in T for c in T)"
)
MAX_OF_KTH = "max(kth_largest((dot(x[s], x[t]) for t in T), k=2) for s in T)"


def spec(target: str, heads, pe=False, seq_len=64, embed=64, **options):
    return infoflow.load_spec(
        {
            "kind": "retrieval",
            "target": target,
            "input_dim": 4,
            "seq_len": seq_len,
            "architecture": {
                "layers": len(heads),
                "heads": list(heads),
                "embed_dim": embed,
                "positional_encoding": pe,
            },
            "options": options,
        }
    )


def predict(target: str, heads, **kwargs):
    return infoflow.predict(spec(target, heads, **kwargs))


def value(target: str, heads, name: str, **kwargs):
    return predict(target, heads, **kwargs)[name].value


# ---- item 2: any valid elimination schedule --------------------------------------------


def test_chains_and_stars_run_in_sequence_as_well_as_in_parallel() -> None:
    for target, wide, narrow in ((CHAIN, [2, 1], [1, 1, 1]), (STAR, [3, 1], [1, 1, 1, 1])):
        for heads in (wide, narrow):
            assert value(target, heads, "efficient"), (target, heads)
        assert value(target, [1], "min_architectures") == [wide, narrow]
        assert value(target, [1], "min_heads") == wide
        assert not value(target, narrow[:-1], "efficient")  # one head a layer, a layer short
    text = explain(spec(CHAIN, [1, 1, 1]))
    assert "every token b retrieves the best a" in text
    assert "[reconstruction:sequential_schedule]" in text
    assert "sequential_schedule" not in explain(spec(CHAIN, [2, 1]))


def test_a_layer_between_steps_is_fine() -> None:
    """What a token retrieved stays in its residual stream: steps need not be adjacent."""
    assert value(CHAIN, [2, 0 + 1, 1], "efficient")
    schedule = derive(spec("min(dot(x[s], x[t]) for s in T for t in T)", [1, 1, 1])).schedule
    assert schedule.heads_used() in ([1, 1, 0], [1, 0, 1], [0, 1, 1])


# ---- item 3: k-th retrieval is a step like any other -------------------------------------


def test_kth_inside_a_max_needs_its_rounds_and_then_the_max() -> None:
    """Each token's peel over its partners leaves its earlier partners out by position
    ([R] partner_peel): with PE, the rounds and then the max; the old engine's reading
    (content) plans the same without PE."""
    assert value(MAX_OF_KTH, [1, 1, 1], "efficient", pe=True)
    assert value(MAX_OF_KTH, [1, 1, 1], "min_architectures") == [[1, 1, 1]]
    assert value(MAX_OF_KTH, [1, 1, 1], "requires_positional_encoding")
    assert value(MAX_OF_KTH, [1, 1, 1], "efficient", partner_peel="content")
    short = predict(MAX_OF_KTH, [1, 1], embed=32)
    alpha = short["cost_exponent"]
    assert not short["efficient"].value and alpha.expression.has((T - 3) / (n + 1))
    assert alpha.provenance == "paper:theorem-2" and alpha.bound == "lower"
    assert abs(alpha.value - 61 / 33) < 1e-12


def test_kth_inside_a_sum_keeps_its_theorem_2_cost() -> None:
    target = "sum(kth_largest((dot(x[s], x[t]) for t in T), k=2) for s in T)"
    assert value(target, [1, 1, 1], "efficient", pe=True)
    short = predict(target, [1, 1], embed=32)
    assert short["cost_exponent"].expression.has((T - 3) / (n + 1))
    assert short["cost_exponent"].provenance == "paper:theorem-2"


def test_global_aggregation_is_taken_where_it_is_cheaper() -> None:
    """Both exponents grow with T; the exponent is the smaller at every T."""
    alpha = predict(MAX_OF_KTH, [4, 4])["cost_exponent"]  # n = 16: (T-3)/17 vs T/16 - 1
    assert alpha.value == 3 and alpha.provenance == "reconstruction:global_aggregation"
    at = {d: 4, sympy.Symbol("E", positive=True): 64, n: 16}
    for seq_len, expected in ((64, 3), (10**6, (10**6 - 3) / 17)):
        assert float(alpha.expression.subs(at).subs(T, seq_len)) == expected


def test_theorem_2_range() -> None:
    kth = "kth_largest((dot(q, x[t]) for t in T), k={k})"
    for k in (1, 64):  # the max and the min: one head
        assert value(kth.format(k=k), [1], "efficient")
    second_smallest = predict(kth.format(k=63), [1], embed=32)  # k = T - 1
    alpha = second_smallest["cost_exponent"]
    assert alpha.expression.has((T - 3) / (n + 1))
    assert alpha.provenance == "reconstruction:kth_symmetry"
    assert second_smallest["min_layers"].value == 2
    third = predict(kth.format(k=3), [1], embed=32)["cost_exponent"]
    assert third.expression.has((T - 4) / (n + 1)) and third.provenance == "paper:theorem-2"
    proc = run_cli(
        "predict",
        str(SPECS / "retrieval" / "kth-largest.json"),
        "--set",
        "sweep=null",
        "--set",
        "target=kth_largest((dot(q, x[t]) for t in T), k=17)",
    )
    assert proc.returncode == 2 and "k = 17 exceeds T = 16" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_a_kth_step_is_peeled_whole_or_not_at_all() -> None:
    """Peeling p < r layers leaves the (r-p)-th of T-p candidates: Theorem 2 prices it as
    the r-th of T, so a second layer never makes a third-largest retrieval dearer."""
    target = "kth_largest((dot(q, x[t]) for t in T), k=3)"
    one, two = (predict(target, heads, embed=32)["cost_exponent"] for heads in ([1], [1, 1]))
    assert one.expression == two.expression and one.expression.has((T - 4) / (n + 1))
    assert value(target, [1, 1, 1], "efficient")


MAX_BESIDE = "{}({} for t in T) + kth_largest(({} for t in T), k={})"


@pytest.mark.parametrize(
    "target",
    [
        MAX_BESIDE.format("max", "dot(q, x[t])", "dot(q, x[t])", 2),
        MAX_BESIDE.format("min", "dot(q, x[t])", "dot(q, x[t])", 63),  # its far end: the min
        "max(dot(q, x[s]) + dot(q, x[t]) for s in T for t in T if s != t)",  # max f + 2nd
        "min(-dot(q, x[s]) - dot(q, x[t]) for s in T for t in T if s != t)",
        "kth_smallest((-dot(q, x[t]) for t in T), k=2) - max(dot(q, x[t]) for t in T)",
        MAX_BESIDE.format("min", "-2 * dot(x[t], q)", "dot(q, x[t])", 2),  # the max of f
        "kth_largest((dot(q, x[t]) for t in T), k=1) + kth_largest((dot(q, x[t]) for t in T), k=2)",
        # a score of several terms up to a constant factor, whose sign flips the end
        MAX_BESIDE.format("min", "dot(w - q, x[t])", "dot(q - w, x[t])", 2),
        MAX_BESIDE.format(
            "min", "-(dot(q, x[t]) + dot(w, x[t]))", "dot(q, x[t]) + dot(w, x[t])", 2
        ),
        MAX_BESIDE.format(
            "max", "2 * (dot(q, x[t]) + dot(w, x[t]))", "dot(w, x[t]) + dot(q, x[t])", 2
        ),
    ],
)
def test_a_max_beside_a_kth_of_its_score_is_the_peels_first_round(target: str) -> None:
    """The peel of the 2nd largest of f retrieves the largest in layer 1: max f beside it
    takes no head of its own ([1, 1], where [2, 1] was planned until 2026-12-05), with the
    same exponent and the same beta1; on one layer the single head and the max's are two."""
    assert value(target, [1], "min_architectures") == [[1, 1]]
    assert value(target, [1], "comparison_dimension") == 2
    assert value(target, [1, 1], "efficient")
    assert value(target, [1, 1], "cost_exponent") == 1
    assert "no head of its own" in explain(spec(target, [1, 1]))
    assert derive(spec(target, [2])).schedule.heads_used() == [2]
    assert "no head of its own" not in explain(spec(target, [2]))


@pytest.mark.parametrize(
    "target",
    [
        MAX_BESIDE.format("max", "dot(w, x[t])", "dot(q, x[t])", 2),  # another score
        MAX_BESIDE.format("max", "dot(q, x[t]) + dot(w, x[t])", "dot(q, x[t]) - dot(w, x[t])", 2),
        MAX_BESIDE.format("max", "dot(q, x[t])", "dot(q, x[t])", 63),  # the peel takes the min
        MAX_BESIDE.format("min", "dot(q, x[t])", "dot(q, x[t])", 2),
        "max(dot(q, x[t]) for t in T if t != 1) + kth_largest((dot(q, x[t]) for t in T), k=2)",
    ],
)
def test_a_max_the_peel_does_not_take_first_keeps_its_head(target: str) -> None:
    """Another score, the other end, or other candidates: the max has a head of its own."""
    assert value(target, [1], "min_heads", pe=True) == [2, 1]
    assert not value(target, [1, 1], "efficient", pe=True)


def test_each_copy_of_a_max_over_a_range_index_is_held_by_its_own_kths_peel() -> None:
    """sum over i of (max f_i + 2nd largest f_i): copy i of the max is the first round of
    copy i's peel, as compile builds it ([2, 2] and [3, 3], were [4, 2] and [6, 3]); copies
    of another count are not paired."""
    pair = "max(dot(w[i], x[t]) for t in T) + kth_largest((dot(w[i], x[t]) for t in T), k=2)"
    held = f"sum({pair} for i in range({{}}))"
    assert value(held.format(2), [1], "min_heads") == [2, 2]
    assert value(held.format(3), [1], "min_heads") == [3, 3]
    maxima = "sum(max(dot(w[i], x[t]) for t in T) for i in range(2))"
    other = f"{maxima} + kth_largest((dot(w[0], x[t]) for t in T), k=2)"
    assert value(other, [1], "min_heads") == [3, 1]


def test_a_hold_never_pairs_different_scores() -> None:
    """From a review: naming each term's indices afresh let a sum over s that reads x[t] pass
    for one that does not, and pairing a range sum's terms by order put a k-th beside the
    wrong max; each undercharged a head. An added constant changes no best token: held."""
    clash = (
        "max(sum(dot(x[s], x[t]) for s in T) + dot(q, x[t]) for t in T)"
        " + kth_largest((sum(dot(x[t], x[t]) for s in T) + dot(q, x[t]) for t in T), k=2)"
    )
    assert value(clash, [1], "min_heads") == [2, 2]
    free = "sum(kth_largest((x[t][t] for t in T), k=2) + max(x[t][i] for t in T) for i in range(1))"
    assert value(free, [1], "min_heads") == [2, 1]
    two = (
        "sum(max(dot(w[i], x[t]) for t in T) + max(bilinear(x[s], M, x[t]) for s in T for t in T)"
        " + kth_largest((dot(w[i], x[t]) for t in T), k=2) for i in range(1))"
    )
    assert value(two, [1], "min_heads") == [3, 2]  # two maxima: not paired (was [2, 1])
    constant = "max(dot(q, x[t]) + 1 for t in T) + kth_largest((dot(q, x[t]) + 1 for t in T), k=2)"
    assert value(constant, [1], "min_heads") == [1, 1]


def test_the_first_largest_is_the_max() -> None:
    """kth_largest(f, k=1) is max f, one spelling (beside the max it was a second part, which
    fell back to global aggregation on one head: [2], not efficient)."""
    kth = "kth_largest((dot(q, x[t]) for t in T), k=1)"
    both = predict(f"max(dot(q, x[t]) for t in T) + {kth}", [1])
    assert both["min_heads"].value == [1] and both["efficient"].value
    assert predict("kth_smallest((dot(q, x[t]) for t in T), k=1)", [1])["efficient"].value


# ---- item 4: positions where the target needs them ---------------------------------------


def test_index_conditions_read_positions() -> None:
    for target in (
        "max(dot(q, x[s]) + dot(w, x[t]) for s in T for t in T if s < t)",  # not symmetric
        "max(dot(q, x[t]) for t in T if t <= 3)",
        "max(dot(q, x[t]) for t in T if t != 1)",
    ):
        without = predict(target, [1, 1])
        assert not without["feasible"].value and not without["efficient"].value
        assert "reads positions" in without["bottleneck"].value
        assert "without positional encoding" in without["bottleneck"].value
        assert value(target, [1, 1], "efficient", pe=True)
        assert value(target, [1], "requires_positional_encoding")
    # s != t between two tokens keeps the target permutation invariant
    assert value("min(dot(x[s], x[t]) for s in T for t in T if s != t)", [1, 1], "efficient")


def test_neighbours_and_fixed_queries_cost_a_layer() -> None:
    # a neighbour read with its own token is a second query: a previous-token head first
    previous = "max(dot(q, x[t-1]) + dot(w, x[t]) for t in T)"
    assert value(previous, [1], "min_architectures") == [[1, 1]]
    assert not value(previous, [1], "efficient", pe=True)
    assert value(previous, [1, 1], "efficient", pe=True)
    # read alone, x[t-1] only renames the index: a masked retrieval over t <= T - 1
    renamed = "max(dot(q, x[t-1]) for t in T)"
    assert value(renamed, [1], "min_architectures") == [[1]]
    assert value(renamed, [1], "efficient", pe=True)
    assert not value(renamed, [1], "feasible")  # the mask reads positions
    fixed_query = "max(dot(x[1], x[t]) for t in T)"
    assert value(fixed_query, [1], "min_architectures") == [[1, 1]]
    assert value(fixed_query, [1, 1], "efficient", pe=True)
    assert not value(fixed_query, [1, 1], "feasible")


def test_the_induction_head_needs_two_layers() -> None:
    """Find the earlier token whose predecessor matches the current (last) token: the current
    token in layer 1, the match in layer 2. The position after the match is the match's
    position plus one, which the positional encoding it needs gives with no head of its own
    ([1, 1]; until 2026-12-05 a previous-token head was charged for it, and compile's [1, 1]
    witness refuted that). A score that reads the token after the match as well (x[t] beside
    x[t-1]) keeps the previous-token head: [2, 1]."""
    induction = "argmax(dot(x[t-1], x[T]) for t in T)"
    result = predict(induction, [2, 1], pe=True)
    assert result["efficient"].value and result["min_layers"].value == 2
    assert result["min_heads"].value == [1, 1]
    assert result["requires_positional_encoding"].value
    assert not value(induction, [3], "efficient", pe=True)
    assert result["information_sets"].value[-1] == ["t*", "x[T]"]
    after = "max(dot(x[t-1], x[T]) + dot(q, x[t]) for t in T)"
    assert value(after, [2, 1], "min_heads", pe=True) == [2, 1]


def test_an_argmax_returns_a_position_so_it_needs_positional_encoding() -> None:
    """Without positional encoding the model is permutation invariant and cannot return
    which token won; the max of the same score needs none, nor an argmax over a range index
    (its value is which parameter won, whatever the tokens' order)."""
    argmax = predict("argmax(dot(q, x[t]) for t in T)", [1])
    assert argmax["requires_positional_encoding"].value and not argmax["feasible"].value
    assert argmax["requires_positional_encoding"].provenance == "reconstruction:position_reads"
    assert not value("max(dot(q, x[t]) for t in T)", [1], "requires_positional_encoding")
    over_range = "argmax(max(dot(q[i], x[t]) for t in T) for i in range(4))"  # returns i
    assert value(over_range, [1], "feasible") and value(over_range, [1], "min_heads") == [1]


# ---- item 5: fast at any size -------------------------------------------------------------


def test_large_k_and_large_architectures_are_answered_in_closed_form() -> None:
    big = predict("kth_largest((dot(q, x[t]) for t in T), k=100000)", [16] * 16, seq_len=10**6)
    assert big["cost_exponent"].expression.has((T - 100001) / (n + 1))
    assert big["min_layers"].value == 100000 and set(big["min_heads"].value) == {1}
    terms = " + ".join(f"kth_largest((dot(q{i}, x[t]) for t in T), k={i + 2})" for i in range(20))
    many = predict(terms, [16] * 16, seq_len=1000)
    assert many["comparison_dimension"].value == 20
    assert many["min_layers"].value == 21  # the 21st largest takes 21 peels
    assert many["cost_exponent"].expression.has((T - 18) / (n + 1))  # ranks 17..21 are not peeled
    # k near T is a small rank from the other end; a rank past the engine's bound is refused
    near_end = predict("kth_largest((dot(q, x[t]) for t in T), k=999999999)", [1], seq_len=10**9)
    assert near_end["min_layers"].value == 2
    with pytest.raises(SpecError, match="the engine plans ranks up to 100,000"):
        predict("kth_largest((dot(q, x[t]) for t in T), k=100001)", [1], seq_len=10**9)


# ---- item 6: explain, graph and provenance tell the truth ---------------------------------


def test_provenance_separates_the_paper_from_reconstructions() -> None:
    pairwise = "min(dot(x[s], x[t]) for s in T for t in T if s != t)"
    one_layer = predict(pairwise, [1])["cost_exponent"]
    # Theorem 1 is a lower bound linear in T; its coefficient is the reconstruction's
    assert one_layer.provenance == "reconstruction:theorem1_coefficient"
    assert one_layer.bound == "lower"
    triangle = "min(norm(x[a] + x[b] + x[c]) for a in T for b in T for c in T)"
    assert predict(triangle, [2, 2])["cost_exponent"].provenance == (
        "reconstruction:global_aggregation"
    )
    assert predict(pairwise, [1, 1])["num_comparisons"].provenance == (
        "reconstruction:comparison_count"
    )


def test_explain_describes_each_step_as_what_it_does() -> None:
    text = explain(spec("max(dot(x[s], sum(x[t] for t in T)) for s in T)", [1, 1]))
    assert "every token pools t" in text and "the readout retrieves the best s" in text
    assert "pools s" not in text


def test_the_first_peeled_token_appears_in_the_graph() -> None:
    schedule = derive(spec("kth_largest((dot(q, x[t]) for t in T), k=3)", [1, 1, 1])).schedule
    dag = information_dag(schedule)
    assert dag.nodes["readout@1"]["info"] == ["t* (1st largest)"]
    assert "t* (3rd largest)" in dag.nodes["readout@3"]["info"]
