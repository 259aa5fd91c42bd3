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
from infoflow.retrieval.laws import T
from infoflow.retrieval.layer_fit import SearchTooLarge
from infoflow.retrieval.mechanisms import kth
from infoflow.retrieval.schedule_to_cost import exponent, terms
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.retrieval.steps_to_schedule import minimal, schedule
from infoflow.retrieval.types import CostOptions, Derivation, Shape


def derive(spec: RetrievalSpec, source: str = "<spec>") -> Derivation:
    """The cached symbolic derivation for ``spec``; a SpecError naming ``source`` and the
    architecture when the exact layer search would not end in time."""
    arch, opts = spec.architecture, spec.options
    params = tuple(sorted(spec.params.items()))
    readings = (opts.separable_sum, opts.self_exclusion, opts.partner_peel)
    tree = tree_of(spec.target, params, *readings)
    counted = {(k, out): kth.rank(k, spec.seq_len, out) for k, out in tree.kth_values()}
    far_end = frozenset((key, r) for key, r in counted.items() if key[1] and r < key[0])
    ranks = tuple(sorted(counted.items()))
    shape = Shape(arch.layers, tuple(arch.heads_per_layer), arch.positional_encoding)
    options = CostOptions(opts.decode_offset, opts.exponent_floor, opts.kth_cost)
    try:
        der = _derive(spec.target, params, shape, readings, options, ranks, far_end)
    except SearchTooLarge as exc:
        raise SpecError(source, [("architecture", str(exc))]) from None
    found = kth.in_range(der.terms, spec.seq_len)
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
) -> Derivation:
    tree = tree_of(target, params, *readings, far_end)
    best = schedule(tree, shape, dict(ranks))
    found = terms(best, options)
    own = alpha = exponent(found)
    efficient = not alpha.has(T)
    fallback, other = [], None
    if best.theorem2:  # the smaller of the two exponents, whatever T is
        fallback = terms(kth.without_theorem2(best), options)
        other = exponent(fallback)
        efficient = efficient or not other.has(T)
        alpha = sympy.Min(alpha, other)
    ideal, alternatives = minimal(tree, dict(ranks))
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
