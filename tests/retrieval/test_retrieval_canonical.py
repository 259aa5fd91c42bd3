"""The verdict depends on the function, not on its spelling (issue 13, item 1).

A hypothesis property writes random targets (factor graphs of unary, pairwise and three-way
scores inside a min or a max, sometimes with a k-th retrieval or another reduction beside)
and rewrites them without changing their meaning: generators reordered, variables renamed,
terms and arguments commuted, reductions nested or flattened, separable terms split, max
written as a negated min. Every prediction about the architecture must stay the same.
"""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import infoflow
from infoflow.core.errors import SpecError
from infoflow.retrieval.expression_to_canonical import canonical
from infoflow.retrieval.text_to_expression import parse_target

NAMES = ["a", "b", "c", "e"]
FRESH = ["p", "r", "u", "v", "w", "y", "z", "m"]
COMPARED = (
    "comparison_order",
    "comparison_dimension",
    "min_layers",
    "min_heads",
    "min_architectures",
    "efficient",
    "feasible",
    "cost_exponent",
)


class Term:
    """A term of a score: ``template`` with {0}, {1}, ... for the free indices it couples
    and {i0}, {i1} for indices bound inside it (renamed like the others)."""

    def __init__(self, template: str, free: list[str], bound: list[str]):
        self.template, self.free, self.bound = template, free, bound

    def text(self, names: dict[str, str], swap: bool) -> str:
        template = self.template
        if swap and template.startswith("dot(x[{0}], x[{1}])"):
            template = "dot(x[{1}], x[{0}])"
        inner = {f"i{j}": names[b] for j, b in enumerate(self.bound)}
        return template.format(*[names[v] for v in self.free], **inner)


@st.composite
def problems(draw):
    """(op, variables, terms): a min or max over variables of a sum of terms."""
    size = draw(st.integers(1, 4))
    variables = NAMES[:size]
    terms = []
    for n in range(draw(st.integers(1, 4))):
        scope = draw(st.lists(st.sampled_from(variables), min_size=1, max_size=3, unique=True))
        if len(scope) == 1:
            shape = draw(st.sampled_from(["unary", "kth", "pool"]))
            template = {
                "unary": f"dot(q{n}, x[{{0}}])",
                "kth": f"kth_largest((dot(x[{{0}}], x[{{i0}}]) for {{i0}} in T), k={n + 2})",
                "pool": "dot(x[{0}], sum(x[{i0}] for {i0} in T))",
            }[shape]
            bound = [] if shape == "unary" else [f"k{n}"]
            terms.append(Term(template, scope, bound))
        elif len(scope) == 2:
            template = draw(st.sampled_from(["dot(x[{0}], x[{1}])", "norm(x[{0}] - x[{1}])"]))
            terms.append(Term(template, scope, []))
        else:
            terms.append(Term("norm(x[{0}] + x[{1}] + x[{2}])", scope, []))
    return draw(st.sampled_from(["max", "min"])), variables, terms


def spell(problem, rng: random.Random, rewrites: set[str]) -> str:
    """One spelling of ``problem``, with the given meaning-preserving rewrites."""
    op, variables, terms = problem
    names = {v: v for v in variables} | {b: b for t in terms for b in t.bound}
    if "rename" in rewrites:
        pool = list(FRESH)
        rng.shuffle(pool)
        names = {v: pool.pop() for v in names}
    terms = list(terms)
    if "commute" in rewrites:
        rng.shuffle(terms)
    used = [v for v in variables if any(v in t.free for t in terms)]
    swap = "commute" in rewrites
    if "split" in rewrites:
        parts = [
            _reduce(
                op,
                group,
                [t for t in terms if set(t.free) <= set(group)],
                names,
                rng,
                rewrites,
                swap,
            )
            for group in _components(used, terms)
        ]
        return " + ".join(parts)
    return _reduce(op, used, terms, names, rng, rewrites, swap)


def _reduce(op, variables, terms, names, rng, rewrites, swap) -> str:
    loops = [f"for {names[v]} in T" for v in variables]
    if "reorder" in rewrites:
        rng.shuffle(loops)
    if "nest" in rewrites and len(variables) > 1:
        cut = rng.randint(1, len(variables) - 1)
        outer, inner = variables[:cut], variables[cut:]
        inside = [t for t in terms if set(t.free) & set(inner)]
        outside = [t for t in terms if not set(t.free) & set(inner)]
        nested = _reduce(op, inner, inside, names, rng, rewrites - {"negate"}, swap)
        body = " + ".join([t.text(names, swap) for t in outside] + [nested])
        return f"{op}({body} {' '.join(f'for {names[v]} in T' for v in outer)})"
    body = " + ".join(t.text(names, swap) for t in terms)
    if "negate" in rewrites:
        other = "min" if op == "max" else "max"
        return f"(-{other}(-({body}) {' '.join(loops)}))"
    return f"{op}({body} {' '.join(loops)})"


def _components(variables, terms) -> list[list[str]]:
    groups = [{v} for v in variables]
    for t in terms:
        touched = [g for g in groups if g & set(t.free)]
        merged = set().union(*touched)
        groups = [g for g in groups if g not in touched] + [merged]
    return [sorted(g, key=variables.index) for g in groups if g]


def predictions(target: str, heads: list[int], seq_len: int, pe: bool = False) -> dict:
    architecture = {"layers": len(heads), "heads": heads, "embed_dim": 64}
    spec = {
        "kind": "retrieval",
        "target": target,
        "input_dim": 4,
        "seq_len": seq_len,
        "architecture": {**architecture, "positional_encoding": pe},
    }
    result = infoflow.predict(spec)
    return {name: result[name].value for name in COMPARED}


REWRITES = ["reorder", "rename", "commute", "nest", "split", "negate"]


# Derandomized (the same 120 examples every run, no example database): a random run found
# the gap below on 2026-12-05, and CI must not fail by chance on a gap already recorded.
@settings(max_examples=120, deadline=None, derandomize=True, database=None)
@given(
    problems(),
    st.sets(st.sampled_from(REWRITES), min_size=1),
    st.randoms(use_true_random=False),
    st.lists(st.integers(1, 3), min_size=1, max_size=4),
    st.sampled_from([8, 64]),
)
def test_meaning_preserving_rewrites_keep_every_verdict(problem, rewrites, rng, heads, T) -> None:
    plain = spell(problem, random.Random(0), set())
    rewritten = spell(problem, rng, rewrites)
    assert _verdicts(rewritten, heads, T) == _verdicts(plain, heads, T), (plain, rewritten)


def _verdicts(target: str, heads: list[int], seq_len: int, pe: bool = False) -> dict:
    """The predictions, or the refusal of a constant (the min of |x(a) - x(b)| over every
    pair is 0)."""
    try:
        return predictions(target, heads, seq_len, pe)
    except SpecError as exc:
        return {"refused": exc.problems}


@pytest.mark.parametrize(
    ("target", "heads"),
    [
        # max over a, b, c of f(a, b) + f(a, c) = max over a of 2 max over b of f(a, b)
        (
            "max(bilinear(x[b], A, x[a]) + bilinear(x[c], A, x[a]) for a in T for b in T "
            "for c in T)",
            [1, 1],
        ),
        (
            "max(max(bilinear(x[a], A, x[b]) for b in T) + max(bilinear(x[a], A, x[c]) "
            "for c in T) for a in T)",
            [1, 1],
        ),
        (
            "max(bilinear(x[a], A, x[b]) + bilinear(x[c], A, x[b]) for a in T for b in T "
            "for c in T)",
            [1, 1],
        ),
        # ... and with f = x(a).x(b), 2 max over a, b of f is 2 max |x|^2 (Cauchy-Schwarz)
        ("max(dot(x[b], x[a]) + dot(x[c], x[a]) for a in T for b in T for c in T)", [1]),
        (
            "max(max(dot(x[a], x[b]) for b in T) + max(dot(x[a], x[c]) for c in T) for a in T)",
            [1],
        ),
        ("max(dot(x[a], x[b]) + dot(x[b], x[c]) for a in T for b in T for c in T)", [1]),
        (
            "max(dot(x[a], x[b]) + dot(x[b], x[c]) for a in T for b in T for c in T "
            "if a != b if c != b)",
            [1, 1],
        ),
        # not one function: a max beside a min, another score, another condition
        ("max(dot(x[b], x[a]) - dot(x[c], x[a]) for a in T for b in T for c in T)", [2, 1]),
        ("max(dot(x[a], x[b]) + bilinear(x[b], A, x[c]) for a in T for b in T for c in T)", [2, 1]),
        (
            "max(dot(x[a], x[b]) + dot(x[b], x[c]) for a in T for b in T for c in T if a != b)",
            [2, 1],
        ),
    ],
)
def test_leaves_that_are_one_function_of_their_centre_share_one_head(target, heads) -> None:
    """Found by the rewrite property test on 2026-12-05: the joint spelling planned two
    heads where the nested one shared one. Leaves (indices one term reads alone) whose
    terms are one function of what they share are one retrieval."""
    assert predictions(target, [1], 8)["min_heads"] == heads


# ---- issue 28: index renaming, unrolled maxima, fixed positions, repeats, the diagonal --------

UNARY = ["dot(q, x[{0}])", "norm(x[{0}] - w)", "relu(x[{0}][0])"]


@st.composite
def spellings(draw):
    """(one, other, pe): two spellings of one function, by one of issue 28's classes; a
    random problem rides along (renamed in the first class, beside the others)."""
    problem = draw(problems())
    plain = spell(problem, random.Random(0), set())
    kind = draw(st.sampled_from(["shift", "unroll", "positions", "repeat", "diagonal"]))
    if kind == "shift":  # x[v-1] read alone is x[v] over v < T
        v = draw(st.sampled_from(sorted({v for t in problem[2] for v in t.free})))
        masked = plain.replace(f"for {v} in T", f"for {v} in T if {v} < T", 1)
        return masked, plain.replace(f"x[{v}]", f"x[{v}-1]"), True
    if kind == "unroll":  # max over i in range(n) of a max, written out
        op, n = problem[0], draw(st.integers(2, 3))
        indexed = re.sub(r"\bq(\d+)\b", r"q\1[i]", plain)
        unrolled = ", ".join(indexed.replace("[i]", f"[{i}]") for i in range(n))
        return f"{op}({indexed} for i in range({n}))", f"{op}({unrolled})", False
    if kind == "positions":  # a max of f at fixed positions is a max over a masked index
        f = draw(st.sampled_from(UNARY))
        spots = sorted(draw(st.sets(st.integers(1, 6), min_size=2, max_size=4)))
        gaps = [p for p in range(spots[0], spots[-1] + 1) if p not in spots]
        mask = [f"p >= {spots[0]}", f"p <= {spots[-1]}"] + [f"p != {g}" for g in gaps]
        masked = f"max({f.format('p')} for p in T if {' and '.join(mask)})"
        written = f"max({', '.join(f.format(p) for p in spots)})"
        return f"{masked} + {plain}", f"{written} + {plain}", True
    if kind == "repeat":  # P + P is 2 P; a product of P with itself is P ** 2
        pairs = [(f"2 * {plain}", f"{plain} + {plain}"), (f"{plain} ** 2", f"{plain} * {plain}")]
        one, other = draw(st.sampled_from(pairs))
        return one, other, False
    f = draw(st.sampled_from(UNARY))  # a sum over s != t of f(s) is (T - 1) sum f
    counted = f"sum({f.format('s')} for s in T for t in T if s != t)"
    return f"sum({f.format('s')} for s in T) + {plain}", f"{counted} + {plain}", False


@settings(max_examples=100, deadline=None)
@given(spellings(), st.lists(st.integers(1, 3), min_size=1, max_size=3), st.sampled_from([8, 64]))
def test_spellings_of_issue_28_keep_every_verdict(spelled, heads, T) -> None:
    one, other, pe = spelled
    assert _verdicts(other, heads, T, pe) == _verdicts(one, heads, T, pe), (one, other)


SAME = [
    # pull-out: a term without the inner index leaves the inner max
    (
        "max(dot(q, x[s]) + max(dot(x[s], x[t]) for t in T) for s in T)",
        "max(dot(q, x[s]) + dot(x[s], x[t]) for s in T for t in T)",
    ),
    # separable: max over s, t of f(s) + g(t) is max f + max g, nested or flat
    (
        "max(dot(q, x[s]) + dot(w, x[t]) for s in T for t in T)",
        "max(dot(q, x[s]) for s in T) + max(dot(w, x[t]) for t in T)",
    ),
    (
        "max(dot(q, x[s]) + max(dot(w, x[t]) for t in T) for s in T)",
        "max(dot(w, x[t]) for t in T) + max(dot(q, x[s]) for s in T)",
    ),
    # a min subtracted inside a max is a max
    (
        "max(dot(q, x[s]) - min(dot(x[s], x[t]) for t in T) for s in T)",
        "max(dot(q, x[s]) - dot(x[s], x[t]) for s in T for t in T)",
    ),
    # a sum distributes over a product of factors with disjoint indices
    ("sum(dot(x[s], x[t]) for s in T for t in T)", "sqnorm(sum(x[t] for t in T))"),
    (
        "sum(relu(dot(w, x[t])) + x[t][0] for t in T)",
        "sum(relu(dot(w, x[t])) for t in T) + sum(x[s][0] for s in T)",
    ),
    # a max over a range index joins the score; a sum over it makes copies
    (
        "max(max(bilinear(x[s], A[i], x[t]) for s in T for t in T) for i in range(3))",
        "max(bilinear(x[s], A[i], x[t]) for s in T for t in T for i in range(3))",
    ),
    # k-th largest of T values is the (T + 1 - k)-th smallest
    (
        "kth_largest((dot(q, x[t]) for t in T), k=63)",
        "kth_smallest((dot(q, x[t]) for t in T), k=2)",
    ),
    ("kth_largest((dot(q, x[t]) for t in T), k=64)", "min(dot(q, x[t]) for t in T)"),
]


@pytest.mark.parametrize(("one", "other"), SAME)
def test_spellings_of_one_function_get_one_verdict(one, other) -> None:
    for heads in ([1], [2], [1, 1], [2, 1], [3, 3]):
        assert predictions(one, heads, 64) == predictions(other, heads, 64), heads


def test_the_canonical_form_names_what_each_score_couples() -> None:
    form = canonical(
        parse_target(
            "max(bilinear(x[s], B, x[t]) + max(bilinear(x[t], B, x[t2]) for t2 in T) "
            "for s in T for t in T) "
            "+ sum(max(bilinear(x[a], A[i], x[b]) for a in T for b in T) for i in range(3))"
        )
    )
    summary = sorted(
        (p.op, p.variables, p.copies, sorted(sorted(f.scope) for f in p.factors))
        for p in form.parts
    )
    assert summary == [
        ("max", ("a", "b"), 3, [["a", "b"]]),
        ("max", ("s", "t", "t2"), 1, [["s", "t"], ["t", "t2"]]),
    ]


# ---- conditions that say nothing, and t == s (found by reviews on 2026-12-05) ------------


@pytest.mark.parametrize(
    ("written", "plain"),
    [
        ("max(dot(q, x[t]) for t in T if t <= T)", "max(dot(q, x[t]) for t in T)"),
        ("max(dot(q, x[t]) for t in T if t >= 1)", "max(dot(q, x[t]) for t in T)"),
        ("max(dot(q, x[t]) for t in T if t != 0)", "max(dot(q, x[t]) for t in T)"),
        ("max(dot(q, x[t]) for t in T if t < T + 1)", "max(dot(q, x[t]) for t in T)"),
        (
            "kth_largest((dot(q, x[t]) for t in T if t > 0), k=2)",
            "kth_largest((dot(q, x[t]) for t in T), k=2)",
        ),
        (
            "min(dot(x[s], x[t]) for s in T for t in T if s != t if t <= T)",
            "min(dot(x[s], x[t]) for s in T for t in T if s != t)",
        ),
        (
            "max(bilinear(x[s], A, x[t]) for s in T for t in T if s == t)",
            "max(bilinear(x[s], A, x[s]) for s in T)",
        ),
        ("sum(dot(x[s], x[t]) for s in T for t in T if s == t)", "sum(sqnorm(x[s]) for s in T)"),
        (
            "max(max(dot(q, x[s]) + dot(x[s], x[t]) for t in T if t == s) for s in T)",
            "max(dot(q, x[s]) + sqnorm(x[s]) for s in T)",
        ),
        (  # two bounds that pin the difference to 0 are the equality (2026-12-06)
            "max(dot(x[s], x[t]) for s in T for t in T if s <= t and s >= t)",
            "max(sqnorm(x[s]) for s in T)",
        ),
        (
            "max(bilinear(x[s], A, x[t]) for s in T for t in T if abs(s - t) < 1)",
            "max(bilinear(x[s], A, x[s]) for s in T)",
        ),
        (
            "sum(max(dot(q, x[s]) + dot(x[s], x[t]) for t in T if t - s <= 0 if s < t + 1) "
            "for s in T)",
            "sum(dot(q, x[s]) + sqnorm(x[s]) for s in T)",
        ),
    ],
)
@pytest.mark.parametrize("pe", [False, True])
def test_a_condition_every_position_meets_or_an_equality_changes_nothing(written, plain, pe):
    """A condition every value of its index meets at every T reads no position (it made the
    target impossible without PE); t == s is the index s (it was dropped: the pair planned)."""
    assert predictions(written, [1, 1], 16, pe) == predictions(plain, [1, 1], 16, pe)


def test_a_condition_true_only_at_the_specs_length_is_kept() -> None:
    """t <= 8 is every position at T = 8 only: the plan is one for every T, so it stays a
    position read (a documented overcharge)."""
    assert not predictions("max(dot(q, x[t]) for t in T if t <= 8)", [1], 8)["feasible"]


def test_an_equality_beside_another_condition_of_its_index_keeps_that_condition() -> None:
    """A review found t == s folded to the bare value with t <= 3 lost (no PE needed, the
    max over every s): the reduction over one value is left as written, a position read.
    Summed over s it runs over nothing at s >= 4, and the target is -inf: refused."""
    target = "max(max(dot(x[s], x[t]) for t in T if t == s if t <= 3) for s in T)"
    assert not predictions(target, [1, 1], 8)["feasible"]
    with pytest.raises(infoflow.SpecError, match="runs over nothing at s = 4"):
        predictions(target.replace("max(max", "sum(max", 1), [1, 1], 8)


def test_an_equality_that_leaves_a_kth_one_value_is_refused() -> None:
    target = "max(kth_largest((dot(x[s], x[t]) for t in T if t == s), k=2) for s in T)"
    with pytest.raises(infoflow.SpecError, match="leaves the kth_largest over t one value"):
        predictions(target, [1, 1], 8)


@pytest.mark.parametrize(
    "target",
    [  # a review's fuzz (2026-12-06): the first three were other functions, the last refused
        "max(dot(q, x[s]) + sum(x[t+1][0] for t in T if abs(t - s) < 1) for s in T)",
        "max(dot(q, x[s]) + sum(x[t+1][0] for t in T if t == s) for s in T)",
        "sum(x[t][0] + sum(x[u-1][1] for u in T if u == t) for t in T)",
        "argmax(x[s][0] + sum(dot(x[s], x[u]) for t in T for u in T "
        "if t < T and abs(s - t) < 1 and u > t) for s in T)",
        "max(max(dot(x[s], x[t-1]) for t in T if t <= s and t >= s) for s in T)",
        "max(max(x[t-1][0] - x[t-1][0] + x[s][0] for t in T if t == s) for s in T)",
        # a second review: a function between the empty max and the enclosing max
        "max(dot(q, x[s]) - exp(max(x[t+1][0] for t in T if t == s)) for s in T)",
        "max(dot(q, x[s]) + relu(max(x[t+1][0] for t in T if abs(t - s) < 1)) for s in T)",
    ],
)
def test_an_equality_is_folded_only_where_the_reading_is_the_written_function(target) -> None:
    """t == s makes t the index s, but not where the body reads t at an offset (at s = T
    x[t+1] leaves the reduction empty, a sum's 0 or a max's -inf, which exp or relu make
    finite, where x[s+1] would drop s), nor where a test of t would be left naming s alone."""
    from rewrite_checks import assert_reading_is_written

    assert_reading_is_written(target, pe=True)


def test_bounds_that_pin_a_pair_only_nearly_stay_a_pair_and_the_message_quotes_them() -> None:
    """Only bounds meeting at 0 are an equality: a window of 1, or bounds at 1 (a shifted
    equality, which the language spells x[s + 1]), stay conditions on a pair. Under an
    argmax the refusal quotes the two conditions as they were read. (A bilinear score: the
    max of a dot product over a window that holds (s, s) is the largest |x|^2.)"""
    for condition in ("abs(s - t) <= 1", "s <= t + 1 and s >= t + 1", "s < t and s >= t - 1"):
        target = f"max(bilinear(x[s], A, x[t]) for s in T for t in T if {condition})"
        assert predictions(target, [1, 1], 8)["comparison_order"] == 2, condition
    target = "max(argmax(dot(x[s], x[t]) for t in T if abs(t - s) < 1) for s in T)"
    message = "the conditions t < s [+] 1 and s < t [+] 1 leave the argmax over t one value"
    with pytest.raises(infoflow.SpecError, match=message):
        predictions(target, [1, 1], 8)
    written = "max(argmax(dot(x[s], x[t]) for t in T if t == s and abs(t - s) < 1) for s in T)"
    with pytest.raises(infoflow.SpecError, match="the condition t == s leaves the argmax"):
        predictions(written, [1, 1], 8)  # the pair beside t == s says nothing more
    outer = "sum(max(x[u][0] for u in T if s <= t and s >= t) for s in T for t in T)"
    with pytest.raises(infoflow.SpecError, match="the condition s <= t does not involve"):
        predictions(outer, [1, 1], 8)  # neither names u: quoted as written


@pytest.mark.parametrize(
    ("written", "plain"),
    [
        (
            "max(dot(x[a], x[b]) + dot(x[b], 2*x[c]) for a in T for b in T for c in T)",
            "max(dot(x[a], x[b]) + 2*dot(x[b], x[c]) for a in T for b in T for c in T)",
        ),
        (
            "max(dot(x[a] + x[c], x[b]) for a in T for b in T for c in T)",
            "max(dot(x[a], x[b]) + dot(x[c], x[b]) for a in T for b in T for c in T)",
        ),
        (
            "max(dot(q, x[s] - x[t]) for s in T for t in T)",
            "max(dot(q, x[s]) for s in T) - min(dot(q, x[t]) for t in T)",
        ),
        (
            "max(bilinear(x[s], A, x[t] + x[u]) for s in T for t in T for u in T)",
            "max(bilinear(x[s], A, x[t]) + bilinear(x[s], A, x[u]) "
            "for s in T for t in T for u in T)",
        ),
        (
            "max(dot(x[s] - x[t], x[s] - x[t]) for s in T for t in T if s != t)",
            "max(sqnorm(x[s] - x[t]) for s in T for t in T if s != t)",
        ),
    ],
)
@pytest.mark.parametrize("pe", [False, True])
def test_dot_and_bilinear_are_linear_in_each_vector(written, plain, pe) -> None:
    """A sum or a constant multiple inside dot or bilinear is the sum of the products (found
    by a review on 2026-12-05: dot(x[b], 2*x[c]) needed a head more than 2*dot(x[b], x[c]))."""
    assert predictions(written, [1, 1], 16, pe) == predictions(plain, [1, 1], 16, pe)


@pytest.mark.parametrize(
    ("written", "plain"),
    [
        (
            "max(max(dot(q, x[1]), dot(q, x[2])), dot(q, x[3]))",
            "max(dot(q, x[1]), dot(q, x[2]), dot(q, x[3]))",
        ),
        (
            "min(dot(q, x[1]), min(dot(q, x[2]), min(dot(q, x[3]), dot(q, x[4]))))",
            "min(dot(q, x[1]), dot(q, x[2]), dot(q, x[3]), dot(q, x[4]))",
        ),
        ("max(max(dot(q, x[t]) for t in T), dot(q, x[3]))", "max(dot(q, x[t]) for t in T)"),
        ("max(dot(q, x[T]), max(dot(q, x[t]) for t in T))", "max(dot(q, x[t]) for t in T)"),
    ],
)
@pytest.mark.parametrize("pe", [False, True])
def test_nested_pointwise_extrema_are_one(written, plain, pe) -> None:
    """Found by a review on 2026-12-05: the nested spelling needed a head more (and PE for a
    position the max over every token already holds)."""
    assert predictions(written, [1, 1], 16, pe) == predictions(plain, [1, 1], 16, pe)


@pytest.mark.parametrize(
    ("written", "plain"),
    [
        (
            "2 * sum(dot(x[s], x[t]) for s in T for t in T if s < t)",
            "sum(dot(x[s], x[t]) for s in T for t in T if s != t)",
        ),
        (
            "2 * sum(dot(x[s], x[t]) for s in T for t in T if s <= t)",
            "sum(dot(x[s], x[t]) for s in T for t in T) + sum(sqnorm(x[s]) for s in T)",
        ),
    ],
)
@pytest.mark.parametrize("pe", [False, True])
def test_a_sum_over_ordered_pairs_of_a_symmetric_score_is_half_the_unordered(written, plain, pe):
    """Found by a review on 2026-12-05: s < t made the sum a position read (impossible
    without PE) where the maxima already read it unordered."""
    assert predictions(written, [1, 1], 16, pe) == predictions(plain, [1, 1], 16, pe)


@pytest.mark.parametrize(
    "written",
    [
        "max(norm(x[s] - x[t])**2 {P})",
        "max(abs(norm(x[s] - x[t])) {P})",
        "max(sqrt(sqnorm(x[s] - x[t])) {P})",
        "max(norm(x[s] + (-1)*x[t]) {P})",
    ],
)
def test_a_norm_has_one_spelling(written) -> None:
    """Found by a review on 2026-12-05: each spelling was charged s != t (PE, or global
    aggregation) where the distance's diagonal, 0, never decides its max."""
    pairs = "for s in T for t in T if s != t"
    plain = f"max(norm(x[s] - x[t]) {pairs})"
    found = predictions(written.format(P=pairs), [1, 1], 16)
    assert found == predictions(plain, [1, 1], 16) and found["efficient"]


@pytest.mark.parametrize(
    ("written", "plain"),
    [
        (
            "sum(dot(x[s], x[t]) for s in T for t in T if s + 1 <= t)",
            "sum(dot(x[s], x[t]) for s in T for t in T if s < t)",
        ),
        (
            "sum(sum(dot(x[s], x[t]) for t in T if t < s) for s in T)",
            "sum(dot(x[s], x[t]) for s in T for t in T if s < t)",
        ),
        (
            "max(dot(x[s], x[t]) for s in T for t in T if s <= t - 1)",
            "max(dot(x[s], x[t]) for s in T for t in T if s < t)",
        ),
        (
            "max(dot(x[a], x[b]) + dot(x[b], x[c]) for a in T for b in T for c in T "
            "if a <= 3 if c < 4)",
            "max(dot(x[a], x[b]) + dot(x[b], x[c]) for a in T for b in T for c in T "
            "if a <= 3 if c <= 3)",
        ),
        (
            "max(sqnorm(x[s]) + dot(x[t], x[t]) - 2*dot(x[s], x[t]) "
            "for s in T for t in T if s != t)",
            "max(sqnorm(x[s] - x[t]) for s in T for t in T if s != t)",
        ),
        (
            "min(dot(x[s], x[t]) + bilinear(q, A, x[s]) + bilinear(q, A, x[t]) "
            "for s in T for t in T if s != t)",
            "min(dot(x[s], x[t]) + dot(q, x[s]) + dot(q, x[t]) for s in T for t in T if s != t)",
        ),
        (
            "max(sqnorm(x[t]) - dot(x[t], x[t]) + dot(q, x[t]) for t in T)",
            "max(dot(q, x[t]) for t in T)",
        ),
        ("max(dot(x[1], q), max(dot(q, x[t]) for t in T))", "max(dot(q, x[t]) for t in T)"),
        ("min(norm(x[T] - w), min(norm(w - x[t]) for t in T))", "min(norm(x[t] - w) for t in T)"),
    ],
)
@pytest.mark.parametrize("pe", [False, True])
def test_shifted_order_tests_bounds_and_squares_have_one_reading(written, plain, pe) -> None:
    """Found by a second review on 2026-12-05: s + 1 <= t is s < t, c < 4 is c <= 3,
    x.x is |x|^2 (so |x|^2 - x.x cancels), q^T A x is linear in x; a value at a fixed position
    beside the max of the same function is one of its values however its commutative
    arguments are spelled (2026-12-06; a review's list of 2026-12-05)."""
    assert predictions(written, [1, 1], 16, pe) == predictions(plain, [1, 1], 16, pe)


def test_a_fixed_position_beyond_the_sequence_is_refused_even_beside_a_max() -> None:
    """x[9] beside the max over every token was absorbed by the rewrite, and not refused."""
    with pytest.raises(infoflow.SpecError, match=r"x\[9\] lies beyond the sequence"):
        predictions("max(dot(q, x[9]), max(dot(q, x[t]) for t in T))", [1], 8)


def test_a_kth_over_a_neighbour_is_refused_in_the_users_words() -> None:
    """It named the condition t <= T - 1, which the rewrite made and the user never wrote."""
    with pytest.raises(infoflow.SpecError, match=r"reads a neighbour of x\[t\]"):
        predictions("kth_largest((dot(q, x[t-1]) for t in T), k=2)", [1, 1], 8)
