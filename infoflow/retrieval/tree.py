"""Canonical form -> comparison tree: how each reduction over tokens can be resolved.

Resolving a min/max is read as variable elimination in a min-sum problem (theory note, [R]):
eliminating index v is one max-position retrieval made by every token holding the one other
index v's factors touch (or by the readout when none is left). The largest factor an
elimination creates is the order beta'; above 2 no chain of retrievals resolves the
comparison and it needs global aggregation. A sum over one token of a score of that token is
pooled by one averaging head; a k-th largest retrieval is a step of its own (Theorem 2).
Index conditions, neighbours (x[t-1]) and fixed positions inside a score read positions.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

from infoflow.retrieval.canonical import Canonical, Comparison, canonical
from infoflow.retrieval.parse import Node, TargetError


@dataclass(frozen=True)
class ComparisonTree:
    """The target's comparisons (top level), the fixed positions it reads directly, and the
    option that decides how a one-token sum is resolved."""

    parts: tuple[Comparison, ...]
    positions: frozenset[str]
    separable_sum: str = "pool"

    @property
    def order(self) -> int:
        """beta': the largest number of token indices one score couples after elimination."""
        orders = [order(c) for top in self.parts for c in top.walk()]
        return max(orders, default=1 if self.positions else 0)

    @property
    def dimension(self) -> int:
        """beta1: the most comparisons that must be resolved side by side at one level."""
        levels: dict[int, int] = {}

        def visit(c: Comparison, level: int, copies: int) -> None:
            copies *= c.copies
            levels[level] = levels.get(level, 0) + copies
            for child in c.children:
                visit(child, level + 1, copies)

        for top in self.parts:
            visit(top, 0, 1)
        return max(levels.values(), default=1 if self.positions else 0)

    def mode(self, c: Comparison) -> str:
        return mode(c, self.separable_sum)

    def kth_values(self) -> list[int]:
        """Every k of the target's k-th reductions."""
        return [c.k for top in self.parts for c in top.walk() if c.kind == "kth" and c.k]


def build_tree(target: Node, separable_sum: str = "pool") -> ComparisonTree:
    """The comparison tree of a parsed target (raises TargetError for what it cannot plan)."""
    form: Canonical = canonical(target)
    return ComparisonTree(form.parts, form.positions, separable_sum)


@lru_cache(maxsize=4096)
def order(c: Comparison) -> int:
    """The largest factor eliminating ``c``'s own indices creates (enclosing indices are held
    throughout): 1 for a score of one token, 2 for chains and stars, 3 for a triangle."""
    scopes = [f.scope for f in c.factors]
    if c.kind != "extremum":
        return max((len(s) for s in scopes), default=1)
    return _elimination_width(c.variables, scopes)


@lru_cache(maxsize=4096)
def mode(c: Comparison, separable_sum: str = "pool") -> str:
    """max-position, k-th, pooled, or global (nothing cheaper resolves it)."""
    if global_reason(c, separable_sum):
        return "global"
    return {"extremum": "max-position", "kth": "k-th", "sum": "pooled"}[c.kind]


def global_reason(c: Comparison, separable_sum: str = "pool") -> str:
    """Why ``c`` needs global aggregation whatever the architecture ('' when it does not)."""
    if c.kind == "sum":
        if len(c.variables) > 1:
            return "a sum over several tokens of a score coupling them needs every position"
        if c.free:
            return (
                f"a sum over {c.variables[0]} of a score that depends on "
                f"{', '.join(sorted(c.free))} needs every position in every token"
            )
        if separable_sum == "global":
            return "option separable_sum=global: a one-token sum is a global aggregation"
    elif order(c) > 2:
        return f"order {order(c)}: no chain of max-position retrievals resolves it"
    for child in c.children:
        reason = global_reason(child, separable_sum)
        if reason:
            return f"{child.label} inside it: {reason}"
    return ""


def position_reads(c: Comparison) -> list[str]:
    """What ``c`` (or anything nested in it) reads by position, in words."""
    reads = []
    for comparison in c.walk():
        for f in comparison.factors:
            reads += [f"the condition {text}" for text in f.conditions]
            reads += [f"the neighbour x[{v}{o:+d}]" for v, o in sorted(f.shifts)]
            reads += [f"the fixed position {p}" for p in sorted(f.fixed)]
    return list(dict.fromkeys(reads))


def rank(k: int, seq_len: int | None) -> int:
    """The rank a k-th step retrieves, from the nearer end: the k-th largest of T values is
    the (T + 1 - k)-th smallest, and negating a score is free ([R] kth_symmetry); rank 1 is
    the max or the min. With T symbolic, k counts from its own end (T >= 2k - 1 assumed)."""
    if seq_len is None:
        return k
    if k > seq_len:
        raise TargetError(f"k = {k} exceeds T = {seq_len}: there is no {k}-th value of {seq_len}")
    return min(k, seq_len + 1 - k)


def position_number(text: str, seq_len: int) -> int:
    """The 1-based position a fixed-position label names: ``x[3]`` -> 3, ``x[T-1]`` -> T - 1."""
    inside = text[2:-1]
    return seq_len + int(inside[1:] or 0) if inside.startswith("T") else int(inside)


def fixed_positions(tree: ComparisonTree) -> set[str]:
    """Every fixed position the target reads, directly or inside a score."""
    inside = {q for top in tree.parts for c in top.walk() for f in c.factors for q in f.fixed}
    return set(tree.positions) | inside


def _elimination_width(own: tuple[str, ...], scopes: list[frozenset[str]]) -> int:
    """The smallest possible largest factor created when eliminating ``own`` (exact for up
    to 7 indices, min-degree greedy above)."""

    def run(sequence) -> int:
        current = [set(s) for s in scopes]
        worst = max((len(s) for s in current), default=1)
        for v in sequence:
            merged = set().union(*[s for s in current if v in s]) | {v}
            worst = max(worst, len(merged))
            current = [s for s in current if v not in s] + [merged - {v}]
        return worst

    names = sorted(own)
    if len(names) <= 7:
        return min(run(sequence) for sequence in itertools.permutations(names))
    sequence, current, left = [], [set(s) for s in scopes], set(names)
    while left:
        v = min(sorted(left), key=lambda u: len(set().union(*[s for s in current if u in s])))
        sequence.append(v)
        merged = set().union(*[s for s in current if v in s]) - {v}
        current = [s for s in current if v not in s] + [merged]
        left.remove(v)
    return run(sequence)
