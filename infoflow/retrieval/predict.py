"""``retrieval`` spec -> predictions: order, dimension, layers, heads, cost exponent.

The symbolic work (parse, comparison tree, plan, exponent) depends only on the target, the
params, the architecture's shape and the options; it is derived once per such key and
cached, and each spec (or sweep point) only substitutes its numbers (T, d, E, eps).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy

from infoflow.core.results import Prediction, Result
from infoflow.retrieval import cost
from infoflow.retrieval.flow import minimal, readout_sets
from infoflow.retrieval.parse import parse_target
from infoflow.retrieval.schedule import Architecture, Plan, plan, without_theorem2
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.retrieval.tree import ComparisonTree, build_tree, rank

PLANNER = "reconstruction:variable_elimination"
SCHEDULES = "reconstruction:sequential_schedule"
EPS = sympy.Symbol("epsilon", positive=True)


@dataclass(frozen=True)
class Derivation:
    """Everything symbolic about one (target, architecture, options)."""

    tree: ComparisonTree
    plan: Plan
    terms: list[cost.Term]
    fallback_terms: list[cost.Term]  # the all-global alternative to Theorem-2 steps, if any
    exponent: sympy.Expr
    efficient: bool  # feasible, and some candidate's exponent does not grow with T
    minimal: Architecture
    alternatives: list[Architecture]
    minimal_exponent: sympy.Expr
    options: cost.CostOptions


def derive(spec: RetrievalSpec) -> Derivation:
    """The cached symbolic derivation for ``spec`` (numbers are not part of the key; T is,
    only through the ranks of k-th steps near the end of the sequence)."""
    arch = spec.architecture
    params = tuple(sorted(spec.params.items()))
    tree = comparison_tree(spec.target, params, spec.options.separable_sum)
    ranks = tuple(sorted({k: rank(k, spec.seq_len) for k in tree.kth_values()}.items()))
    return _derive(
        spec.target,
        params,
        Architecture(arch.layers, tuple(arch.heads_per_layer), arch.positional_encoding),
        spec.options.separable_sum,
        cost.CostOptions(
            spec.options.decode_offset, spec.options.exponent_floor, spec.options.kth_cost
        ),
        ranks,
    )


@lru_cache(maxsize=1024)
def comparison_tree(target: str, params: tuple[tuple[str, int], ...], separable_sum: str):
    return build_tree(parse_target(target, params), separable_sum)


@lru_cache(maxsize=4096)
def _derive(
    target: str,
    params: tuple[tuple[str, int], ...],
    arch: Architecture,
    separable_sum: str,
    options: cost.CostOptions,
    ranks: tuple[tuple[int, int], ...],
) -> Derivation:
    tree = comparison_tree(target, params, separable_sum)
    the_plan = plan(tree, arch, dict(ranks))
    terms = cost.terms(the_plan, options)
    alpha = cost.exponent(terms)
    efficient = not alpha.has(cost.T)
    fallback_terms = []
    if the_plan.theorem2:  # the smaller of the two exponents, whatever T is
        fallback_terms = cost.terms(without_theorem2(the_plan), options)
        efficient = efficient or not cost.exponent(fallback_terms).has(cost.T)
        alpha = sympy.Min(alpha, cost.exponent(fallback_terms))
    ideal, alternatives = minimal(tree, dict(ranks))
    return Derivation(
        tree,
        the_plan,
        terms,
        fallback_terms,
        alpha,
        efficient and the_plan.feasible,
        alternatives[0],
        alternatives,
        cost.exponent(cost.terms(ideal, options)),
        options,
    )


def predict_retrieval(spec: RetrievalSpec, source: str | None = None) -> Result:
    """Every ``retrieval`` prediction for ``spec``."""
    der = derive(spec)
    numbers = _numbers(spec, der.plan)
    alpha = der.exponent
    alpha_value = _value(alpha, numbers)
    bottleneck = _bottleneck(der, numbers)
    bound = "lower" if bottleneck.provenance == "paper:theorem-2" else "estimate"
    param_cost = EPS**-alpha
    out = {
        **_tree_predictions(der.tree, numbers),
        **_minimal_predictions(der, numbers),
        "feasible": Prediction(
            der.plan.feasible,
            "",
            "exact",
            PLANNER,
            "Whether the spec's architecture can represent the target at all.",
        ),
        "cost_exponent": Prediction(
            alpha_value,
            "",
            bound,
            bottleneck.provenance,
            "alpha with parameters ~ eps^-alpha on the spec's architecture: the largest of "
            "the plan's terms.",
            alpha,
        ),
        "param_cost": Prediction(
            _value(param_cost, {**numbers, EPS: spec.epsilon}),
            "params (order)",
            bound,
            bottleneck.provenance,
            f"eps^-alpha at eps = {spec.epsilon}.",
            param_cost,
        ),
        "efficient": Prediction(
            der.efficient,
            "",
            "exact",
            PLANNER,
            "True when the exponent on the spec's architecture does not grow with T.",
        ),
        "bottleneck": Prediction(
            bottleneck.what,
            "",
            "exact",
            bottleneck.provenance,
            "The part of the plan that sets the exponent.",
        ),
        "information_sets": Prediction(
            readout_sets(der.plan),
            "per layer",
            "exact",
            PLANNER,
            "The readout token's information set after each layer.",
        ),
    }
    return Result(kind=spec.kind, spec=spec, predictions=out, source=source)


def _minimal_predictions(der: Derivation, numbers: dict) -> dict[str, Prediction]:
    """What the smallest architectures that reach the best exponent look like."""
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
            "exact",
            PLANNER,
            "One head per retrieval in every layer that serves it, on the fewest layers.",
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
            "paper:summary",
            "Fixed positions, neighbours and index conditions need positional encoding.",
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


def _tree_predictions(tree: ComparisonTree, numbers: dict) -> dict[str, Prediction]:
    """What the comparison tree says: order, dimension, number of candidate tuples."""
    comparisons = tree.dimension * cost.T**tree.order
    return {
        "comparison_order": Prediction(
            tree.order,
            "indices",
            "exact",
            PLANNER,
            "beta': the largest number of token indices one score couples once the "
            "reductions are read as variable elimination.",
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


def _numbers(spec: RetrievalSpec, the_plan: Plan) -> dict[sympy.Symbol, sympy.Expr]:
    numbers: dict[sympy.Symbol, sympy.Expr] = {}
    if spec.seq_len is not None:
        numbers[cost.T] = sympy.Integer(spec.seq_len)
    if spec.input_dim is not None:
        numbers[cost.d] = sympy.Integer(spec.input_dim)
    if spec.architecture.embed_dim is not None:
        numbers[cost.E] = sympy.Integer(spec.architecture.embed_dim)
        numbers[cost.n] = cost.head_width(the_plan).xreplace({cost.E: numbers[cost.E]})
    return numbers


def _value(expr: sympy.Expr, numbers: dict) -> int | float | str | None:
    """A number when the spec fixes every symbol, else the expression as text."""
    value = sympy.sympify(expr).xreplace(numbers)
    if value == sympy.oo:
        return None
    if value.is_number:
        return int(value) if value.is_Integer else float(value)
    return str(value)


def _bottleneck(der: Derivation, numbers: dict) -> cost.Term:
    """The term that sets the exponent: infinite first, then one growing with T, then the
    largest at the spec's numbers (of the all-global alternative when that is smaller
    there)."""
    terms = der.terms
    if der.fallback_terms:
        mine = cost.exponent(der.terms).xreplace(numbers)
        other = cost.exponent(der.fallback_terms).xreplace(numbers)
        if mine.is_number and other.is_number and other < mine:
            terms = der.fallback_terms
    for term in terms:
        if term.expression == sympy.oo:
            return term
    growing = [t for t in terms if t.expression.has(cost.T)]
    candidates = growing or terms
    numeric = [t for t in candidates if t.expression.xreplace(numbers).is_number]
    if len(numeric) == len(candidates):
        return max(candidates, key=lambda t: float(t.expression.xreplace(numbers)))
    return candidates[-1]
