"""What passes between the engine's stages, as typed values: the canonical form (factors and
comparisons), the comparison tree, steps and fragments, the schedule (which step of which part
runs in which layer, on an architecture's shape), the cost options and terms, and the
derivation that holds them all for one spec. Which stage makes each: the package's
docstring (:mod:`infoflow.retrieval`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from infoflow.retrieval.expression import KTH

if TYPE_CHECKING:
    import sympy

#: The provenance of the planner's rules (the theory note's reconstructions): reading a min or
#: max as variable elimination; running eliminations one after another; the canonical form.
PLANNER = "reconstruction:variable_elimination"
SCHEDULES = "reconstruction:sequential_schedule"
CANONICAL = "reconstruction:canonical_form"
EVERY = "*"  # the holder of a step every token makes (a broadcast value)
FETCH = "fetch"  # the key of the shared step that brings the fixed positions
NO_THEOREM2 = -(10**18)  # the score of an option without single-head k-th retrievals


# ---- the canonical form and the comparison tree ------------------------------------------


@dataclass(frozen=True)
class Factor:
    """Terms of a score that couple the same token indices, and what they need first."""

    scope: frozenset[str]
    children: tuple[Comparison, ...] = ()
    shifts: frozenset[tuple[str, int]] = frozenset()  # neighbours read: x[t-1] -> ("t", -1)
    fixed: frozenset[str] = frozenset()  # fixed positions read: "x[1]", "x[T]"
    conditions: tuple[str, ...] = ()  # index conditions that read positions ("s < t")
    exclusions: tuple[str, ...] = ()  # s != t whose left-out pair (s, s) decides the value

    @property
    def reads_positions(self) -> bool:
        return bool(self.shifts or self.fixed or self.conditions or self.exclusions)


@dataclass(frozen=True)
class Comparison:
    """A reduction over token indices: ``op`` as written, its own indices, its score's
    factors (over its own and enclosing indices), and how many copies run side by side."""

    op: str
    variables: tuple[str, ...]
    factors: tuple[Factor, ...]
    copies: int = 1
    k: int | None = None
    ranges: frozenset[str] = frozenset()  # enclosing range indices (construction only)
    left_out: int = 0  # a k-th's conditions t != s: T - left_out candidates when all differ

    @property
    def kind(self) -> str:
        """extremum (min, max, argmin, argmax), sum, or kth."""
        return "kth" if self.op in KTH else ("sum" if self.op == "sum" else "extremum")

    @property
    def free(self) -> frozenset[str]:
        """Enclosing token indices its value depends on."""
        scopes = frozenset().union(*(f.scope for f in self.factors))
        return scopes - set(self.variables)

    @property
    def children(self) -> tuple[Comparison, ...]:
        return tuple(child for f in self.factors for child in f.children)

    @property
    def label(self) -> str:
        return f"{self.op} over {', '.join(self.variables)}"

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(frozen=True)
class Canonical:
    """The target's top-level comparisons and the fixed positions it reads directly."""

    parts: tuple[Comparison, ...]
    positions: frozenset[str]
    firsts: tuple[tuple[int, int, bool], ...] = ()  # a max a k-th's peel holds (peel_firsts)
    branched: bool = False  # read otherwise by the other BRANCH_READINGS


@dataclass(frozen=True)
class ComparisonTree:
    """The target's comparisons (top level), the fixed positions it reads directly, the
    option that decides how a one-token sum is resolved, two numbers of the whole tree:
    ``order`` (beta', the largest number of token indices one score couples after
    elimination) and ``dimension`` (beta1, the most comparisons resolved side by side at one
    level), the option that says how a peel over a pair score leaves partners out, the
    top-level maxima and minima a top-level k-th's peel may hold (:mod:`.peel_firsts`), and
    how a max of a pointwise max whose branches differ was read (``branches``; ``branched``:
    whether the other reading differs)."""

    parts: tuple[Comparison, ...]
    positions: frozenset[str]
    separable_sum: str = "pool"
    order: int = 0
    dimension: int = 0
    partner_peel: str = "positions"
    firsts: tuple[tuple[int, int, bool], ...] = ()
    branches: str = "one_score"  # how differing branches are read (BRANCH_READINGS)
    branched: bool = False  # whether the other reading differs

    def kth_values(self) -> list[tuple[int, int]]:
        """Every (k, left_out) of the target's k-th reductions: k and how many enclosing
        tokens the reduction's own must differ from (:attr:`Comparison.left_out`)."""
        return [
            (c.k, c.left_out) for top in self.parts for c in top.walk() if c.kind == "kth" and c.k
        ]


# ---- steps -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    kind: str  # retrieve | pool | peel | kth | fetch | shift (mechanisms/ says which is whose)
    heads: int = 1
    length: int = 1  # layers a peel takes (one head in each)
    variable: str | None = None
    holder: str | None = None  # a token index, EVERY, or None (the readout)
    rank: int | None = None  # peel and kth: the rank retrieved
    comparison: Comparison | None = None
    offset: int = 0  # shift: x[t + offset]


@dataclass(frozen=True)
class Fragment:
    """Steps resolving a comparison and everything nested in it: ``preds[i]`` are the
    steps step i waits for, ``shared[i]`` the shared steps (fetch, shift) it waits for;
    ``needs`` lists shared steps wanted without a consumer (fixed positions read directly)."""

    steps: tuple[Step, ...]
    preds: tuple[tuple[int, ...], ...]
    shared: tuple[tuple[str, ...], ...]
    root: int
    needs: tuple[str, ...] = ()

    @property
    def theorem2(self) -> tuple[int, ...]:
        """Ranks of the single-head k-th steps, smallest first (each copy counted)."""
        return tuple(sorted(s.rank for s in self.steps for _ in range(s.heads) if s.kind == "kth"))

    @property
    def heads(self) -> int:
        """Heads over all layers (a peel counts one per layer)."""
        return sum(s.heads * s.length for s in self.steps)

    def finish(self) -> list[int]:
        """The layer each step ends in when every step runs as early as it can (shared
        steps in layer 1)."""
        end: list[int] = []
        for i, step in enumerate(self.steps):
            start = max([end[p] for p in self.preds[i]] + [1 if self.shared[i] else 0]) + 1
            end.append(start + step.length - 1)
        return end

    @property
    def depth(self) -> int:
        return max(self.finish(), default=1 if self.needs else 0)

    def profile(self) -> list[int]:
        """Heads per layer when every step runs as early as it can."""
        diff = [0] * (self.depth + 2)
        for step, end in zip(self.steps, self.finish(), strict=True):
            diff[end - step.length + 1] += step.heads
            diff[end + 1] -= step.heads
        out, running = [], 0
        for value in diff[1 : self.depth + 1]:
            running += value
            out.append(running)
        return out

    def signature(self, i: int | None = None) -> tuple:
        """The structure below step ``i`` (the root by default), names left out: two
        fragments with one signature schedule alike."""
        i = self.root if i is None else i
        if i < 0:
            return ("needs", self.needs)
        step = self.steps[i]
        below = tuple(sorted(self.signature(p) for p in self.preds[i]))
        return (step.kind, step.heads, step.length, step.rank, self.shared[i], below)


# ---- the schedule ------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """An architecture as the planner reads it: layers, heads per layer, positional encoding
    (the width E enters only the cost)."""

    layers: int
    heads: tuple[int, ...]
    positional_encoding: bool


@dataclass(frozen=True)
class Option:
    """One way to place a part: ``scheduled`` (a fragment), ``global``, ``impossible``, or
    ``held`` (no step of its own: the first round of a peel of one of the parts ``hosts``
    holds its value, :mod:`.peel_firsts`)."""

    mode: str
    fragment: Fragment | None = None
    reason: str = ""
    hosts: tuple[int, ...] = ()  # held: the groups whose peel may hold it

    def score(self, copies: int) -> tuple[int, int, int, int]:
        """What this option costs, smaller first: impossible parts, global aggregations,
        minus the smallest rank left to a single-head k-th retrieval (its Theorem-2 term
        grows the most), the number of such retrievals."""
        ranks = self.fragment.theorem2 if self.fragment else ()
        worst = -min(ranks) if ranks else NO_THEOREM2
        return (int(self.mode == "impossible"), copies * (self.mode == "global"), worst, len(ranks))


@dataclass(frozen=True)
class Part:
    """Something the schedule must place (a top-level comparison, one copy of it, or the
    fixed positions read directly), with its options, cheapest first."""

    label: str
    comparison: Comparison | None
    copies: int
    options: tuple[Option, ...]
    group: int  # copies of one comparison share a group
    tag: str = ""
    copy: int = 0  # which copy of its group (0 when not split)


@dataclass
class Placement:
    """Where one part runs: ``mode`` scheduled, global or impossible; ``layers[i]`` the
    layers step i of the fragment runs in (several for a peel); ``held_by`` the part whose
    peel holds its value in its first round (scheduled, with no fragment of its own)."""

    label: str
    mode: str
    copies: int = 1
    comparison: Comparison | None = None
    fragment: Fragment | None = None
    layers: tuple = ()
    reason: str = ""
    tag: str = ""
    sequential: bool = False
    held_by: str = ""

    @property
    def last_layer(self) -> int:
        return max((ls[-1] for ls in self.layers if len(ls)), default=0)


@dataclass
class Schedule:
    """The target laid out on an architecture's ``shape``: where each part runs, and the
    shared steps (fetch, shift) with the layer each runs in."""

    shape: Shape
    placements: list[Placement]
    shared: dict[str, tuple[Step, int]] = field(default_factory=dict)  # key -> (step, layer)
    positions: frozenset[str] = frozenset()

    @property
    def feasible(self) -> bool:
        return all(p.mode != "impossible" for p in self.placements)

    @property
    def uses_global(self) -> bool:
        return any(p.mode == "global" for p in self.placements)

    @property
    def theorem2(self) -> bool:
        """Whether some part makes a single-head k-th retrieval."""
        return any(q.fragment and q.fragment.theorem2 for q in self.placements)

    def heads_used(self) -> list[int]:
        """Heads in use per layer."""
        used = [0] * self.shape.layers
        for p in self.placements:
            if p.fragment:
                for step, layers in zip(p.fragment.steps, p.layers, strict=True):
                    for layer in layers:
                        used[layer - 1] += step.heads
        for step, layer in self.shared.values():
            used[layer - 1] += step.heads
        return used


# ---- cost and derivation ------------------------------------------------------------------


@dataclass(frozen=True)
class CostOptions:
    """The spec's options that change the cost (docs/retrieval.md, "Options")."""

    decode_offset: int = 1
    exponent_floor: int = 1
    kth_cost: str = "theorem2"


@dataclass(frozen=True)
class CostTerm:
    """One contribution to the exponent, with what it comes from."""

    expression: sympy.Expr
    what: str
    provenance: str
    bound: str = "estimate"  # lower: a lower bound's term (Theorem 1's or Theorem 2's)
    rank: int = 0  # a single-head k-th retrieval's rank (Theorem 2 holds for 2 <= r <= N - 2)
    left_out: int = 0  # tokens its own must differ from (t != s): N = T - left_out candidates


@dataclass(frozen=True)
class Derivation:
    """Everything symbolic about one (target, architecture, options)."""

    tree: ComparisonTree
    schedule: Schedule
    terms: list[CostTerm]
    fallback_terms: list[CostTerm]  # the all-global alternative to Theorem-2 steps, if any
    terms_exponent: sympy.Expr  # the largest of ``terms``
    fallback_exponent: sympy.Expr | None  # the largest of ``fallback_terms`` (None: none)
    exponent: sympy.Expr  # the smaller of the two
    efficient: bool  # feasible, and some candidate's exponent does not grow with T
    minimal: Shape
    alternatives: list[Shape]
    minimal_exponent: sympy.Expr
    options: CostOptions
