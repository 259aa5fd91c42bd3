"""A retrieval spec's derivation -> predictions: order, dimension, layers, heads, cost
exponent, bottleneck, information sets, each with its provenance; the spec's numbers (T, d,
E, eps) are substituted here into the derivation's expressions. (The notes say "plan" for
what the code calls the schedule: the words users read are kept as they were.)"""

from __future__ import annotations

import math

import numpy as np
import sympy

from infoflow.core.results import INFINITE, Prediction, Result
from infoflow.retrieval import peel_firsts
from infoflow.retrieval.canonical_to_tree import (
    FIXED_POSITIONS,
    POSITION_READS,
    SELF_EXCLUSION,
    fixed_positions,
    position_reads,
    self_exclusions,
)
from infoflow.retrieval.derive import derive
from infoflow.retrieval.laws import E, T, d, n
from infoflow.retrieval.mechanisms import global_aggregation, kth
from infoflow.retrieval.schedule_to_cost import bottleneck
from infoflow.retrieval.schedule_to_flow import readout_sets
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.retrieval.types import (
    PLANNER,
    SCHEDULES,
    ComparisonTree,
    CostTerm,
    Derivation,
    Schedule,
)

EPS = sympy.Symbol("epsilon", positive=True)


def predict_retrieval(spec: RetrievalSpec, source: str | None = None) -> Result:
    """Every ``retrieval`` prediction for ``spec``."""
    return predictions(spec, derive(spec, source or "<spec>"), source)


def predictions(spec: RetrievalSpec, der: Derivation, source: str | None = None) -> Result:
    """The predictions of ``spec`` from its derivation ``der``."""
    numbers = _numbers(spec, der.schedule)
    alpha = der.exponent
    alpha_value = _value(alpha, numbers)
    neck = _bottleneck(der, numbers)
    setter = _setter(der, neck, alpha_value, numbers)
    bound = _bound(der, setter)
    out = {
        **_tree_predictions(der.tree, numbers),
        **_minimal_predictions(der, numbers, spec.seq_len),
        "feasible": Prediction(
            der.schedule.feasible,
            "",
            "exact",
            PLANNER,
            "Whether the spec's architecture can represent the target at all.",
        ),
        "cost_exponent": Prediction(
            alpha_value,
            "",
            bound,
            setter.provenance,
            "alpha with parameters ~ eps^-alpha on the spec's architecture: the largest of "
            "the plan's terms." + _infinite(alpha, numbers) + _under(neck, setter, numbers),
            alpha,
        ),
        "param_cost": _param_cost(spec, alpha, numbers, bound, setter.provenance),
        "efficient": Prediction(
            der.efficient,
            "",
            "exact",
            PLANNER,
            "True when the exponent on the spec's architecture does not grow with T.",
        ),
        "bottleneck": Prediction(
            neck.what,
            "",
            "exact",
            neck.provenance,
            "The part of the plan whose term grows with T, the largest such (else the largest "
            "term): what makes the exponent grow with T, not always its largest term.",
        ),
        "information_sets": Prediction(
            readout_sets(der.schedule),
            "per layer",
            "exact",
            PLANNER,
            "The readout token's information set after each layer.",
        ),
    }
    return Result(kind=spec.kind, spec=spec, predictions=out, source=source)


def _bound(der: Derivation, neck: CostTerm) -> str:
    """``lower`` where the exponent comes from a lower bound: a term that is one (Theorem 2's
    single-head k-th retrieval, Theorem 1's one layer), or a global-aggregation fallback whose
    exponent grows with T on an architecture predicted inefficient (the reconstruction: no
    chain of retrievals resolves it there); ``exact`` for an impossible plan (infinite); else
    ``estimate`` (a construction's cost, by the cost law)."""
    fallback = neck.provenance == global_aggregation.GLOBAL
    grows = fallback and not der.efficient and der.schedule.feasible and neck.expression.has(T)
    if neck.bound in ("lower", "exact"):
        return neck.bound
    return "lower" if grows else "estimate"


def unfloored_exponent(spec: RetrievalSpec) -> float | None:
    """The cost exponent on ``spec``'s architecture at its numbers as if ``exponent_floor``
    were 0 (None: infinite), from the cached derivation: for an architecture predicted
    inefficient, the paper's lower bound that the reconstructed floor may lift."""
    der = derive(spec)
    numbers = _numbers(spec, der.schedule)
    without = [t.expression for t in der.terms if t.provenance != _FLOOR]
    alpha = sympy.Max(0, *without)
    if der.fallback_terms:
        fallback = [t.expression for t in der.fallback_terms if t.provenance != _FLOOR]
        alpha = sympy.Min(alpha, sympy.Max(0, *fallback))
    value = _value(alpha, numbers)
    return None if value is None else float(value)


_FLOOR = "reconstruction:exponent_floor"


UNPAIRED = (
    " An upper bound here: the target has a max or min beside a k-th that the planner does not "
    "pair with the k-th's peel (it pairs only top-level reductions over one token with the same "
    "score and as many copies, and a median of an odd count from its own end only), or that is "
    "the same extremum as a k-th of rank 1; a peel's first round, or one retrieval for both, "
    "may hold it, a head fewer."
)


def _minimal_predictions(
    der: Derivation, numbers: dict, seq_len: int | None
) -> dict[str, Prediction]:
    """What the smallest architectures that reach the best exponent look like."""
    unpaired = bool(peel_firsts.unpaired(der.tree, seq_len))
    return {
        "min_layers": Prediction(
            der.minimal.layers,
            "layers",
            "exact",
            PLANNER,
            "Layers of the smallest architecture that reaches the best exponent.",
        ),
        "min_heads": Prediction(
            list(der.minimal.heads),
            "heads per layer",
            "upper" if unpaired else "exact",
            PLANNER,
            "One head per retrieval in every layer that serves it, on the fewest layers."
            + (UNPAIRED if unpaired else ""),
        ),
        "min_architectures": Prediction(
            [list(a.heads) for a in der.alternatives],
            "heads per layer",
            "exact",
            SCHEDULES,
            "Architectures with the same, best exponent: the fewest layers, and the narrowest "
            "(one head per layer, the retrievals one after another).",
        ),
        "requires_positional_encoding": Prediction(
            der.minimal.positional_encoding,
            "",
            "exact",
            _positions_provenance(der),
            "Fixed positions (the papers), neighbours, index conditions, a condition s != t "
            "whose left-out pair decides, an argmax or argmin over a token (its value is a "
            "position), and a peel over a pair score (each token's own race; the "
            "reconstructions) need positional encoding.",
        ),
        "min_cost_exponent": Prediction(
            _value(der.minimal_exponent, numbers),
            "",
            "estimate",
            PLANNER,
            "The exponent on the minimal architecture.",
            der.minimal_exponent,
        ),
    }


def _positions_provenance(der: Derivation) -> str:
    """The papers' rule when the target reads a fixed position, the partner peel's when
    nothing is read by position (a peel over a pair score needs it), the self-exclusion's
    when only conditions s != t that decide need it, the reconstruction's when neighbours,
    other conditions or an argmax over a token read positions, the planner's when the
    minimal architecture has none."""
    if not der.minimal.positional_encoding:
        return PLANNER
    if fixed_positions(der.tree):
        return FIXED_POSITIONS
    parts = der.tree.parts
    if not any(position_reads(c) for c in parts):
        return kth.PARTNER_PEEL  # nothing reads positions: a peel over a pair score needs them
    if all(position_reads(c) == self_exclusions(c) for c in parts):
        return SELF_EXCLUSION
    return POSITION_READS


def reading_note(tree: ComparisonTree) -> str:
    """The sentence that says which reading a target read two ways was planned in."""
    if not tree.branched:
        return ""
    taken = BRANCHES[tree.branches]
    return (
        " The target is read two ways (a max of a pointwise max whose branches differ: one "
        "score over its indices, or one reduction a branch); the spec's architecture takes "
        f"{taken}, the one that serves it; the minimal architectures are both readings'."
    )


#: How :func:`reading_note` names each of BRANCH_READINGS.
BRANCHES = {"one_score": "one score", "per_branch": "one reduction a branch"}


def _tree_predictions(tree: ComparisonTree, numbers: dict) -> dict[str, Prediction]:
    """What the comparison tree says: order, dimension, number of candidate tuples."""
    comparisons = tree.dimension * T**tree.order
    return {
        "comparison_order": Prediction(
            tree.order,
            "indices",
            "exact",
            PLANNER,
            "beta': the largest number of token indices one score couples once the "
            "reductions are read as variable elimination." + reading_note(tree),
        ),
        "comparison_dimension": Prediction(
            tree.dimension,
            "comparisons",
            "exact",
            PLANNER,
            "beta1: comparisons resolved side by side at one level.",
        ),
        "num_comparisons": Prediction(
            _value(comparisons, numbers),
            "tuples",
            "estimate",
            "reconstruction:comparison_count",
            "About beta1 * T^beta' candidate tuples.",
            comparisons,
        ),
    }


def _numbers(spec: RetrievalSpec, schedule: Schedule) -> dict[sympy.Symbol, sympy.Expr]:
    """The spec's numbers for the symbols it fixes: T, d, E and the head width n."""
    numbers: dict[sympy.Symbol, sympy.Expr] = {}
    if spec.seq_len is not None:
        numbers[T] = sympy.Integer(spec.seq_len)
    if spec.input_dim is not None:
        numbers[d] = sympy.Integer(spec.input_dim)
    if spec.architecture.embed_dim is not None:
        numbers[E] = sympy.Integer(spec.architecture.embed_dim)
        numbers[n] = kth.head_width(schedule).xreplace({E: numbers[E]})
    return numbers


def _param_cost(spec, alpha: sympy.Expr, numbers: dict, bound: str, provenance: str):
    """eps^-alpha at the spec's eps: a finite value beyond a float is null, its size said."""
    cost, at = EPS**-alpha, {**numbers, EPS: spec.epsilon}
    why = _infinite(alpha, numbers) or _beyond_float(cost, at)
    note = f"eps^-alpha at eps = {spec.epsilon}.{why}"
    return Prediction(_value(cost, at), "params (order)", bound, provenance, note, cost)


def _value(expr: sympy.Expr, numbers: dict) -> int | float | str | None:
    """A number when the spec fixes every symbol (None when infinite, or beyond a float),
    else the expression as text."""
    value = sympy.sympify(expr).xreplace(numbers)
    if value == sympy.oo:
        return None
    if value.is_number:
        number = int(value) if value.is_Integer else float(value)
        return None if isinstance(number, float) and math.isinf(number) else number
    return str(value)


def _beyond_float(expr: sympy.Expr, numbers: dict) -> str:
    """What a finite value too large for a float was (null in JSON)."""
    value = sympy.sympify(expr).xreplace(numbers)
    if not (value.is_number and value.is_finite and math.isinf(float(value))):
        return ""
    return f" About 10^{float(sympy.log(value, 10)):.4g}: beyond a float (null in JSON)."


def _infinite(alpha: sympy.Expr, numbers: dict) -> str:
    """What a value left out (null in JSON) was, where alpha is infinite at the numbers."""
    if sympy.sympify(alpha).xreplace(numbers) != sympy.oo:
        return ""
    return f" {INFINITE}: this architecture cannot represent the target."


def _setter(der: Derivation, neck: CostTerm, alpha_value, numbers: dict) -> CostTerm:
    """The term whose value is the exponent at the spec's numbers: the bottleneck, unless a
    larger term sets it (the floor over a lower bound under it: it was credited to the
    bound's theorem, a review)."""
    neck_value = _value(neck.expression, numbers)
    if not isinstance(alpha_value, int | float) or not isinstance(neck_value, int | float):
        return neck
    if neck_value >= alpha_value:
        return neck
    for term in (*der.terms, *der.fallback_terms):
        if _value(term.expression, numbers) == alpha_value:
            return term
    return neck


def _under(neck: CostTerm, setter: CostTerm, numbers: dict) -> str:
    """What the bottleneck's term is where a larger term sets the exponent ("" elsewhere)."""
    if setter is neck:
        return ""
    value = sympy.sympify(neck.expression).xreplace(numbers)
    return (
        f" Set here by {setter.provenance} ({setter.what}); the bottleneck's term "
        f"({neck.provenance}) is {float(value):.3g}, under it."
    )


def _bottleneck(der: Derivation, numbers: dict) -> CostTerm:
    """The term that sets the exponent at the spec's numbers
    (:func:`~infoflow.retrieval.schedule_to_cost.bottleneck`)."""

    def values(expression: sympy.Expr) -> np.ndarray | None:
        value = sympy.sympify(expression).xreplace(numbers)
        return np.array([float(value)]) if value.is_number else None

    return bottleneck(der, values)[0]
