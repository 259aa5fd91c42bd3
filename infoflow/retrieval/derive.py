"""A retrieval spec -> its derivation: the stages in order, text -> expression -> canonical
form -> comparison tree -> steps -> schedule -> cost, plus the minimal architectures.

The symbolic work depends only on the target, the params, the architecture's shape, the
options and (through the ranks of k-th steps near the end of the sequence) T; it is derived
once per such key and cached, and each spec or sweep point substitutes its own numbers (T, d,
E, eps) afterwards.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import sympy

from infoflow.core.errors import SpecError
from infoflow.retrieval.canonical_to_tree import tree_of
from infoflow.retrieval.expression import TargetError
from infoflow.retrieval.expression_rewrite import BRANCH_READINGS
from infoflow.retrieval.laws import T
from infoflow.retrieval.layer_fit import SearchTooLarge
from infoflow.retrieval.mechanisms import kth
from infoflow.retrieval.schedule_to_cost import exponent, terms
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.retrieval.steps_to_schedule import minimal, schedule
from infoflow.retrieval.types import ComparisonTree, CostOptions, Derivation, Shape


def derive(spec: RetrievalSpec, source: str = "<spec>") -> Derivation:
    """The cached symbolic derivation for ``spec``; a SpecError naming ``source`` and the
    architecture when the exact layer search would not end in time. Where the target is read
    two ways (:data:`~infoflow.retrieval.expression_rewrite.BRANCH_READINGS`), the readings'
    derivations as one (:func:`_better`)."""
    found = derivations(spec, source)
    return found[0] if len(found) == 1 else _better(*found)


def derivations(spec: RetrievalSpec, source: str = "<spec>") -> tuple[Derivation, ...]:
    """The derivation of each reading of ``spec``'s target on its architecture: one, or two
    (in :data:`~infoflow.retrieval.expression_rewrite.BRANCH_READINGS` order) where a max of
    a pointwise max whose branches differ is read two ways."""
    arch, opts = spec.architecture, spec.options
    params = tuple(sorted(spec.params.items()))
    readings = (opts.separable_sum, opts.self_exclusion, opts.partner_peel)
    tree = tree_of(spec.target, params, *readings)
    try:  # checked with the spec where seq_len is given; with T symbolic, here (a review)
        counted = {(k, out): kth.rank(k, spec.seq_len, out) for k, out in tree.kth_values()}
    except TargetError as exc:
        raise SpecError(source, [("target", str(exc))]) from None
    far_end = frozenset((key, r) for key, r in counted.items() if key[1] and r < key[0])
    ranks = tuple(sorted(counted.items()))
    shape = Shape(arch.layers, tuple(arch.heads_per_layer), arch.positional_encoding)
    options = CostOptions(opts.decode_offset, opts.exponent_floor, opts.kth_cost)
    try:
        found = _derive(spec.target, params, shape, readings, options, ranks, far_end)
    except SearchTooLarge as exc:
        raise SpecError(source, [("architecture", str(exc))]) from None
    return tuple(_in_range(der, spec.seq_len) for der in found)


def _in_range(der: Derivation, seq_len: int | None) -> Derivation:
    """``der`` with the k-th terms its ranks at ``seq_len`` leave (:func:`kth.in_range`)."""
    found = kth.in_range(der.terms, seq_len)
    return der if found == der.terms else replace(der, terms=found)


@lru_cache(maxsize=4096)
def _derive(
    target: str,
    params: tuple[tuple[str, int], ...],
    shape: Shape,
    readings: tuple[str, str, str],
    options: CostOptions,
    ranks: tuple[tuple[tuple[int, int], int], ...],
    far_end: frozenset = frozenset(),
) -> tuple[Derivation, ...]:
    tree = tree_of(target, params, *readings, far_end)
    planned = _planned(tree, shape, dict(ranks), options)
    if not tree.branched:
        return (planned,)
    try:
        other = tree_of(target, params, *readings, far_end, BRANCH_READINGS[1])
    except TargetError:  # a guard the split branches leave on no index of theirs (a fuzz)
        other = tree
    if (other.parts, other.positions) == (tree.parts, tree.positions):  # merged again later
        return (replace(planned, tree=replace(tree, branched=False)),)
    return planned, _planned(other, shape, dict(ranks), options)


def _planned(tree: ComparisonTree, shape: Shape, ranks: dict, options: CostOptions) -> Derivation:
    """The derivation of one reading of the target (its comparison tree) on ``shape``."""
    best = schedule(tree, shape, ranks)
    found = terms(best, options)
    own = alpha = exponent(found)
    efficient = not alpha.has(T)
    fallback, other = [], None
    if best.theorem2:  # the smaller of the two exponents, whatever T is
        fallback = terms(kth.without_theorem2(best), options)
        other = exponent(fallback)
        efficient = efficient or not other.has(T)
        alpha = sympy.Min(alpha, other)
    ideal, alternatives = minimal(tree, ranks)
    return Derivation(
        tree,
        best,
        found,
        fallback,
        own,
        other,
        alpha,
        efficient and best.feasible,
        alternatives[0],
        alternatives,
        exponent(terms(ideal, options)),
        options,
    )


def _better(first: Derivation, second: Derivation) -> Derivation:
    """Two readings of one target (:data:`~infoflow.retrieval.expression_rewrite.
    BRANCH_READINGS`) as one: the spec's architecture takes the reading that serves it (the
    efficient one, else the feasible one, else the first); the minimal architectures are the
    fewest layers and the narrowest (one head a layer) of the readings whose best exponent
    does not grow with T (the first where neither's does), those without positional encoding
    where one needs none, as one reading's are (they differ in the cost law's finite-E terms
    only); the best exponent is the smaller of theirs."""
    chosen = first
    if (second.efficient, second.schedule.feasible) > (first.efficient, first.schedule.feasible):
        chosen = second
    ideal = [d for d in (first, second) if not d.minimal_exponent.has(T)] or [first]
    ideal = [d for d in ideal if not d.minimal.positional_encoding] or ideal
    shapes = [shape for d in ideal for shape in d.alternatives]
    fewest = min(shapes, key=lambda s: (s.layers, sum(s.heads)))
    narrow = [s for s in shapes if max(s.heads) == 1]
    narrowest = min(narrow, key=lambda s: s.layers, default=fewest)
    alternatives = [fewest] if narrowest == fewest else [fewest, narrowest]
    best = sympy.Min(*{d.minimal_exponent for d in ideal})
    return replace(chosen, minimal=fewest, alternatives=alternatives, minimal_exponent=best)
