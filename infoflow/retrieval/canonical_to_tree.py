"""Canonical form -> comparison tree: the target's comparisons with the order and the
dimension of the whole, and what each reads by position.

Resolving a min/max is read as variable elimination in a min-sum problem (theory note, [R]):
the largest factor an elimination creates is a comparison's order; the largest over the tree
is beta'. beta1 counts the comparisons resolved side by side at one level. Index conditions,
neighbours (x[t-1]) and fixed positions inside a score read positions. How each comparison is
resolved is its mechanism's to say (:mod:`~infoflow.retrieval.mechanisms`).
"""

from __future__ import annotations

import itertools
from functools import lru_cache

from infoflow.retrieval.expression import Node
from infoflow.retrieval.expression_to_canonical import canonical
from infoflow.retrieval.text_to_expression import parse_target
from infoflow.retrieval.types import Canonical, Comparison, ComparisonTree


def build_tree(
    target: Node,
    separable_sum: str = "pool",
    self_exclusion: str = "often",
    partner_peel: str = "positions",
    far_end: frozenset = frozenset(),
    branches: str = "one_score",
) -> ComparisonTree:
    """The comparison tree of a parsed target (raises TargetError for what it cannot plan);
    ``far_end``: the k-ths counted from their far end, ``branches``: how differing branches
    are read (:func:`canonical`)."""
    form: Canonical = canonical(target, self_exclusion, far_end, branches)
    parts, positions = form.parts, form.positions
    orders = [order(c) for top in parts for c in top.walk()]
    beta = max(orders, default=1 if positions else 0)
    dimension = _dimension(parts, positions)
    return ComparisonTree(
        parts,
        positions,
        separable_sum,
        beta,
        dimension,
        partner_peel,
        form.firsts,
        branches,
        form.branched,
    )


@lru_cache(maxsize=1024)
def tree_of(
    target: str,
    params: tuple[tuple[str, int], ...],
    separable_sum: str,
    self_exclusion: str = "often",
    partner_peel: str = "positions",
    far_end: frozenset = frozenset(),
    branches: str = "one_score",
) -> ComparisonTree:
    """The comparison tree of a target's text with the spec's ``params`` (cached)."""
    written = parse_target(target, params)
    return build_tree(written, separable_sum, self_exclusion, partner_peel, far_end, branches)


def _dimension(parts: tuple[Comparison, ...], positions: frozenset[str]) -> int:
    """beta1: the most comparisons that must be resolved side by side at one level."""
    levels: dict[int, int] = {}

    def visit(c: Comparison, level: int, copies: int) -> None:
        copies *= c.copies
        levels[level] = levels.get(level, 0) + copies
        for child in c.children:
            visit(child, level + 1, copies)

    for top in parts:
        visit(top, 0, 1)
    return max(levels.values(), default=1 if positions else 0)


@lru_cache(maxsize=4096)
def order(c: Comparison) -> int:
    """The largest factor eliminating ``c``'s own indices creates (enclosing indices are held
    throughout): 1 for a score of one token, 2 for chains and stars, 3 for a triangle."""
    scopes = [f.scope for f in c.factors]
    if c.kind != "extremum":
        return max((len(s) for s in scopes), default=1)
    return _elimination_width(c.variables, scopes)


#: Why a read needs positional encoding: a fixed position is specific-position aggregation
#: (the papers' summary); a neighbour or an index condition is the theory note's [R].
FIXED_POSITIONS = "paper:summary"
POSITION_READS = "reconstruction:position_reads"
SELF_EXCLUSION = "reconstruction:self_exclusion"


def position_reads(c: Comparison) -> list[str]:
    """What ``c`` (or anything nested in it) reads by position, in words, fixed positions
    first, the self-exclusions (:func:`self_exclusions`) last. An argmax or argmin reads its
    own index's position: its value is one ([R] ``position_reads``; without positional
    encoding the model is permutation invariant and cannot return it)."""
    fixed, other = [], []
    for comparison in c.walk():
        if comparison.op in ("argmax", "argmin"):
            other.append(f"the position the {comparison.op} returns")
        for f in comparison.factors:
            fixed += [f"the fixed position {p}" for p in sorted(f.fixed)]
            other += [f"the condition {text}" for text in f.conditions]
            other += [f"the neighbour x[{v}{o:+d}]" for v, o in sorted(f.shifts)]
    return list(dict.fromkeys(fixed + other + self_exclusions(c)))


def self_exclusions(c: Comparison) -> list[str]:
    """The conditions s != t in ``c`` (or nested in it) whose left-out pair (s, s) decides the
    value, in words: with positional encoding a head leaves its own token out; without, no
    head can, and the comparison falls back to global aggregation ([R] ``self_exclusion``)."""
    found = [
        f"the condition {text}, whose left-out pair ({_first(text)}, {_first(text)}) decides "
        "the value"
        for comparison in c.walk()
        for f in comparison.factors
        for text in f.exclusions
    ]
    return list(dict.fromkeys(found))


def _first(condition: str) -> str:
    """The index a condition's text names first ("a != b" -> "a")."""
    return condition.split(" ", 1)[0]


def positions_provenance(c: Comparison | None) -> str:
    """Whose rule says that ``c`` needs positional encoding (None: the fixed positions the
    target reads directly): the papers' when it reads a fixed position, the self-exclusion's
    when that is all it reads, else the reconstruction's."""
    reads = position_reads(c) if c is not None else ["the fixed position"]
    if reads and reads[0].startswith("the fixed"):
        return FIXED_POSITIONS
    if c is not None and reads and reads == self_exclusions(c):
        return SELF_EXCLUSION
    return POSITION_READS


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
