"""Expression -> expression: a max or min that the pair (s, s) holds on every draw is the
diagonal's value, a rewrite before the canonical form (``reconstruction:canonical_form``),
by the classes of :mod:`.diagonal`:

- over a pair of tokens whose domain holds (a, a) and (b, b) beside each of its pairs
  (a, b) (no condition, a window ``abs(s - t) <= 2``, ``t <= s`` inside a max over s <= 4:
  each condition, either index read as the other, follows from them all; since 2026-12-07,
  before only none), whose score its diagonal decides on
  every draw (:func:`~.diagonal.role`: g(a, b) <= max(g(a, a), g(b, b)) for a max; the
  terms reading either read no other index), the extremum over one token of g(a, a): the
  max of x(s).x(t) over every pair is the largest |x|^2 (Cauchy-Schwarz), the max of
  |x(s) + x(t)| twice the largest norm;
- over a token t whose domain holds t = s wherever it holds a pair (s, t) (the same test),
  of a score whose only term reading t is a
  distance to another token s, c |x(s) - x(t)| (or its square), running down it (a min
  with c > 0, a max with c < 0): the value at t = s, where the distance is 0 (each token's
  nearest is itself: the min of |x(s) - x(t)| over every pair is 0); not where t is the
  reduction's only index and a condition on an enclosing index guards it (``for t in T if
  s >= 3``: the reduction is empty at the s it fails, and stays as written); so is a term
  that is such a distance times factors >= 0 on every draw (a norm, an abs, exp, relu, an
  even power), the term then 0: the min of |x(a) - x(b)| |x(b) - x(c)| is 0 (it was order
  3 until the night of 2026-12-05).

Until 2026-12-05 both were planned as pairs: two layers, Theorem 1's bound charged to one,
where one head computes the first and the second is a constant (a review found them).
"""

from __future__ import annotations

import itertools
from dataclasses import replace

from infoflow.retrieval.algebra import (
    EXTREMUM,
    collected,
    free_indices,
    names,
    reads,
    rebuilt,
    rename,
    terms,
)
from infoflow.retrieval.conditions import implied_by, renamed
from infoflow.retrieval.diagonal import EVERY_DRAW, dot_coefficient, norm_coefficients, role
from infoflow.retrieval.expression import Node, Reduce, Variable
from infoflow.retrieval.product_extrema import finite, is_product, nonnegative, signed_factors


def on_diagonal(node: Reduce) -> Node:
    """``node``'s value on the diagonal where the diagonal holds it (see the module's
    docstring), with the maxima among a max's terms pulled in (``max(f(b) + max(g(b, c)
    for c in T) for b in T)`` is the max over b, c of f + g, with their conditions:
    ``max(max(g(s, t) for t in T if abs(s - t) <= 2) for s in T)`` is over the window); else
    ``node``."""
    if node.op not in ("max", "min"):
        return node
    variables, found, pulled = _flat(node.op, node.variables, node.body)
    flat = replace(node, variables=variables, conditions=node.conditions + pulled)
    direction, named = EXTREMUM[node.op], {n for c in flat.conditions for n in (c.left, c.right)}
    if not all(v.is_token for v in variables):
        return node

    def reading(name: str) -> list:
        return [(c, f) for c, f in found if f is not None and name in free_indices(f)]

    zero = _zero_product(direction, found, [v for v in variables if v.name not in named])
    if zero is not None:  # min of |x(a) - x(b)| * |x(b) - x(c)| is 0, at a = b
        i, t = zero
        rest = tuple(v for v in variables if v.name != t)
        if not rest and flat.conditions:
            return node
        body = rebuilt(collected([term for j, term in enumerate(found) if j != i]))
        return replace(flat, variables=rest, body=body) if rest else body
    for v in variables:  # a token whose nearest is itself: min over t of |x(s) - x(t)| is 0
        s = _nearest_is_itself(direction, reading(v.name), v.name)
        if s is not None and _keeps_diagonal(flat, v.name, s):
            return _without(flat, found, v, s) or node
    for s, t in itertools.combinations(variables, 2):  # a pair its diagonal holds
        pair = (s.name, t.name)
        if not (_keeps_diagonal(flat, t.name, s.name) and _keeps_diagonal(flat, s.name, t.name)):
            continue  # a condition on the pair that may leave (s, s) out
        touching = [(c, f) for c, f in found if f is not None and free_indices(f) & set(pair)]
        if any(names(f) or free_indices(f) - set(pair) for _, f in touching):
            continue  # the pair's terms read another index: not the pair's extremum alone
        if role(direction, touching, pair) == EVERY_DRAW:
            return _without(flat, found, t, s.name) or node
    group = _dot_group(direction, found, [v for v in variables if v.name not in named])
    if len(group) < 2:
        return node
    keep, mapping = group[0], {v.name: group[0].name for v in group[1:]}
    rest = tuple(v for v in variables if v == keep or v not in group)
    body = rebuilt(collected([(c, f and rename(f, mapping)) for c, f in found]))
    return replace(flat, variables=rest, body=body)


def _dot_group(direction: int, found: list, free: list[Variable]) -> list[Variable]:
    """The tokens of ``free`` whose every term is c x(i).x(j) with another of them, c
    running up the extremum (c > 0 in a max): sum c x(i).x(j) <= (sum c) max |x|^2, which
    the diagonal reaches (a chain, a cycle or a star of dot products)."""
    group = {v.name: v for v in free}
    while True:
        edges, out = [], set()
        for c, f in found:
            reads = free_indices(f) if f is not None else set()
            if not reads & set(group):
                continue
            coefficient = dot_coefficient(f, tuple(reads)) if len(reads) == 2 else None
            if reads <= set(group) and coefficient and direction * c * coefficient > 0:
                edges.append(reads)
            else:
                out |= reads & set(group)
        if not out:
            return [v for v in free if any(v.name in e for e in edges)]
        group = {name: v for name, v in group.items() if name not in out}


def _flat(op: str, variables: tuple, body: Node) -> tuple[tuple, list, tuple]:
    """The indices, additive terms and conditions of a max (min) over ``variables`` of
    ``body``, the positive multiples of maxima (minima) among its terms pulled in with their
    conditions (where one is empty, the written term is -inf there, as the pair's domain
    leaves it out: not beside a term that may be infinite itself, a log or a division, whose
    -inf + inf is nan) unless they bind a name already taken."""
    out, found, tests = tuple(variables), [], ()
    finite_terms = all(t is None or finite(t) for _, t in terms(body))
    for c, term in terms(body):
        pulls = isinstance(term, Reduce) and term.op == op and c > 0
        pulls = pulls and (not term.conditions or finite_terms)  # -inf + inf is nan (a fuzz)
        if pulls and not {v.name for v in term.variables} & {v.name for v in out}:
            inner, pulled, more = _flat(op, term.variables, term.body)
            out, found = out + inner, found + [(c * k, f) for k, f in pulled]
            tests += term.conditions + more
        else:
            found.append((c, term))
    return out, found, tests


def _without(flat: Reduce, found: list, gone: Variable, stays: str) -> Node | None:
    """``flat``, an extremum of the terms ``found``, over its indices but ``gone``, read as
    ``stays``; None where no index would be left to hold its conditions (a test on an
    enclosing index, ``if s >= 3``, leaves the reduction empty at the s it fails: dropping it
    would count them)."""
    rest = tuple(v for v in flat.variables if v != gone)
    kept = [renamed(c, {gone.name: stays}) for c in flat.conditions]  # t <= 4: s <= 4
    kept = tuple(c for c in kept if not implied_by((), {}, c))  # s <= s + 2: dropped
    if not rest and kept:
        return None
    body = rebuilt(collected([(c, f and rename(f, {gone.name: stays})) for c, f in found]))
    return replace(flat, variables=rest, body=body, conditions=kept) if rest else body


def _keeps_diagonal(flat: Reduce, gone: str, stays: str) -> bool:
    """Whether every tuple of ``flat``'s domain keeps it with ``gone`` read as ``stays``:
    each condition naming ``gone``, renamed, follows from them all (``abs(s - t) <= 2``;
    ``t <= s`` inside a max over s <= 4: t <= 4 too). Since 2026-12-07: a window holding the
    diagonal was planned as a pair read through positions, where it is the diagonal's
    extremum."""
    own = {v.name: v for v in flat.variables}
    return all(
        implied_by(flat.conditions, own, renamed(c, {gone: stays}))
        for c in flat.conditions
        if gone in (c.left, c.right)
    )


def _zero_product(direction: int, found: list, free: list) -> tuple[int, str] | None:
    """(i, t) when term i of ``found`` is c times a product of factors that are >= 0 on every
    draw, one of them |x(s) - x(t)| (or its square) for a token t of ``free`` that no other
    term reads, the term reading every index at no offset (dropped, an offset would take the
    range it gives with it), and the extremum runs down it (a min with c > 0): the term's
    least value is 0, at t = s, whatever the rest."""
    for i, (c, term) in enumerate(found):
        if term is None or not is_product(term):
            continue
        sign, factors = signed_factors(term)
        if direction * c * sign > 0 or not all(nonnegative(f) for f in factors):
            continue
        others = [f for j, (_, f) in enumerate(found) if j != i and f is not None]
        read = set().union(*(free_indices(f) for f in others))
        for f in factors:
            for t in (v.name for v in free if v.is_token and v.name not in read):
                if any(reads(term, n) != {0} for n in free_indices(term)):
                    continue  # x[t+1] leaves t = s out at s = T; x[a+1] narrows a, dropped
                s = free_indices(f) - {t}
                pair = norm_coefficients(f, (s.pop(), t)) if len(s) == 1 else None
                if pair is not None and pair[0] == -pair[1]:
                    return i, t
    return None


def _nearest_is_itself(direction: int, touching: list, t: str) -> str | None:
    """s when the only term reading t (``touching``: coefficient, term) is c |x(s) - x(t)| (or
    its square) and the extremum of ``direction`` runs down it; else None."""
    if len(touching) != 1:
        return None
    (c, term) = touching[0]
    others = free_indices(term) - {t}
    if len(others) != 1:
        return None
    s = others.pop()
    pair = norm_coefficients(term, (s, t))
    if pair is None or pair[0] != -pair[1] or direction * c > 0:
        return None
    return s
