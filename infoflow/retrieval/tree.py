"""Expression tree -> comparison tree: the reductions over tokens and how to resolve them.

Every reduction over token indices becomes a :class:`Comparison`. Its score is split into
additive factors, each with its scope (the token indices it couples). Resolving a min/max is
read as variable elimination in a min-sum problem (theory note, [R]): eliminating index v is
one max-position retrieval, done by every token holding the one other index its factors touch
(or by the readout when none is left). Eliminations that do not wait on each other share a
round; each round is one layer. The largest factor an elimination creates is the real order
beta'; above 2 no chain of retrievals resolves the comparison.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from infoflow.retrieval.parse import Apply, Const, Node, Param, Reduce, TargetError, Token

COMPARISONS = {"min", "max", "argmin", "argmax"}
KTH = {"kth_largest", "kth_smallest"}


@dataclass(frozen=True)
class Message:
    """One retrieval: every token holding ``holder`` (the readout when None) takes the
    position of the best ``variable``; ``count`` copies run side by side (one head each)."""

    variable: str
    holder: str | None
    count: int


@dataclass
class Comparison:
    """A reduction over token indices, with its elimination schedule."""

    label: str
    op: str
    variables: tuple[str, ...]
    free: frozenset[str]
    factors: tuple[frozenset[str], ...]
    children: list[Comparison]
    multiplicity: int
    k: int | None = None
    order: int = 1
    rounds: list[list[Message]] = field(default_factory=list)
    mode: str = "max-position"  # how it is resolved: max-position, k-th, pooled, global

    @property
    def efficient(self) -> bool:
        return self.mode in ("max-position", "pooled")

    @property
    def positions(self) -> int:
        """Token positions the readout ends up holding for this comparison (per copy)."""
        return len(self.variables) + sum(c.positions for c in self.children)

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass
class ComparisonTree:
    """The target's comparisons (top level), fixed positions read directly, and counts."""

    comparisons: list[Comparison]
    positions: frozenset[int]

    @property
    def order(self) -> int:
        """beta': the largest number of token indices one score couples after elimination."""
        orders = [c.order for top in self.comparisons for c in top.walk()]
        return max(orders, default=1 if self.positions else 0)

    @property
    def dimension(self) -> int:
        """beta1: the most comparisons that must be resolved side by side at one level."""
        levels: dict[int, int] = {}

        def visit(c: Comparison, level: int, copies: int) -> None:
            copies *= c.multiplicity
            levels[level] = levels.get(level, 0) + copies
            for child in c.children:
                visit(child, level + 1, copies)

        for top in self.comparisons:
            visit(top, 0, 1)
        return max(levels.values(), default=1 if self.positions else 0)


def build_tree(target: Node, separable_sum: str = "pool") -> ComparisonTree:
    """The comparison tree of a parsed target (raises TargetError for what it cannot plan)."""
    builder = _Builder(separable_sum)
    builder.top(target, 1)
    return ComparisonTree(builder.comparisons, frozenset(builder.positions))


class _Builder:
    def __init__(self, separable_sum: str):
        self.separable_sum = separable_sum
        self.comparisons: list[Comparison] = []
        self.positions: set[int] = set()

    def top(self, node: Node, copies: int) -> None:
        """Walk the part of the target outside every token reduction."""
        if isinstance(node, Token):
            if isinstance(node.index, str):  # pragma: no cover - the parser binds indices
                raise TargetError(f"index {node.index!r} is unbound")
            self.positions.add(node.index)
        elif isinstance(node, Apply):
            for arg in node.args:
                self.top(arg, copies)
        elif isinstance(node, Reduce):
            token_vars = [v for v in node.variables if v.is_token]
            copies *= _range_copies(node)
            if token_vars:
                self.comparisons.append(self.comparison(node, frozenset(), copies))
            else:
                self.top(node.body, copies)

    def comparison(self, node: Reduce, bound: frozenset[str], copies: int) -> Comparison:
        own = tuple(v.name for v in node.variables if v.is_token)
        scope = bound | set(own)
        children: list[Comparison] = []
        factors = []
        for term in _terms(node.body):
            factors.append(self._scope(term, scope, children, 1))
        used_free = frozenset().union(*factors) - set(own) if factors else frozenset()
        label = f"{node.op} over {', '.join(own)}"
        comparison = Comparison(
            label, node.op, own, used_free, tuple(factors), children, copies, node.k
        )
        _schedule(comparison, self.separable_sum)
        return comparison

    def _scope(self, node: Node, scope: frozenset[str], children: list, copies: int) -> frozenset:
        """Token indices a term couples; nested comparisons become children."""
        if isinstance(node, Token):
            if isinstance(node.index, int):
                raise TargetError(
                    f"the fixed position x[{node.index}] inside a reduction over tokens is not "
                    "supported yet; write fixed positions outside reductions"
                )
            return frozenset([node.index])
        if isinstance(node, Param | Const):
            return frozenset()
        if isinstance(node, Apply):
            return frozenset().union(*(self._scope(a, scope, children, copies) for a in node.args))
        if any(v.is_token for v in node.variables):
            child = self.comparison(node, scope, copies * _range_copies(node))
            children.append(child)
            return child.free
        return self._scope(node.body, scope, children, copies * _range_copies(node))


def _range_copies(node: Reduce) -> int:
    copies = 1
    for v in node.variables:
        if not v.is_token:
            copies *= v.size
    return copies


def _terms(node: Node) -> list[Node]:
    """The additive terms of a score: a + b - c -> [a, b, c]."""
    if isinstance(node, Apply) and node.fn in ("+", "-"):
        return [t for arg in node.args for t in _terms(arg)]
    if isinstance(node, Apply) and node.fn == "neg":
        return _terms(node.args[0])
    return [node]


def _schedule(c: Comparison, separable_sum: str) -> None:
    """Fill in order, mode and rounds of one comparison (its children are done)."""
    own = set(c.variables)
    child_rounds = _merge([child.rounds for child in c.children])
    if c.op in KTH:
        c.order = max((len(f | own) for f in c.factors), default=1)
        if len(own) != 1 or c.order > 1 + (len(c.free) > 0) or len(c.free) > 1:
            raise TargetError(
                f"{c.op} is supported over one token index with a score of that index (and at "
                "most one enclosing index)"
            )
        c.mode = "k-th"
        (v,) = c.variables
        holder = next(iter(c.free), None)
        c.rounds = [*child_rounds, [Message(v, holder, c.multiplicity)]]
        return
    if c.op == "sum":
        c.order = max((len(f | own) for f in c.factors), default=1)
        separable = len(own) == 1 and all(f <= own for f in c.factors)
        c.mode = "pooled" if separable and separable_sum == "pool" else "global"
        message = Message(c.variables[0], None, c.multiplicity)
        c.rounds = (child_rounds if c.mode == "pooled" else []) + [[message]]
        return
    c.order = _elimination_order(own, c.factors)
    if c.order > 2 or any(not child.efficient for child in c.children):
        c.mode = "global"  # one averaging step over everything; the children's work is moot
        c.rounds = [[Message(c.variables[0], None, c.multiplicity)]]
        return
    c.rounds = child_rounds + _rounds(c)


def _rounds(c: Comparison) -> list[list[Message]]:
    """Greedy parallel elimination of a comparison whose order is at most 2."""
    factors = [set(f) for f in c.factors]
    remaining = list(c.variables)
    rounds = []
    while remaining:
        chosen: list[tuple[str, str | None]] = []
        for v in remaining:
            scope = set().union(*[f for f in factors if v in f]) | {v}
            others = scope - {v}
            busy = {u for u, _ in chosen} | {h for _, h in chosen if h}
            if len(others) <= 1 and v not in busy and not (others & {u for u, _ in chosen}):
                chosen.append((v, next(iter(others), None)))
        if not chosen:  # pragma: no cover - order <= 2 guarantees progress
            raise AssertionError(f"no elimination possible for {c.label}")
        for v, _ in chosen:
            merged = set().union(*[f for f in factors if v in f]) - {v}
            factors = [f for f in factors if v not in f] + [merged]
            remaining.remove(v)
        rounds.append([Message(v, h, c.multiplicity) for v, h in chosen])
    return rounds


def _elimination_order(own: set[str], factors: tuple[frozenset[str], ...]) -> int:
    """The smallest possible largest factor created when eliminating ``own`` (exact for up
    to 7 indices, min-degree greedy above)."""

    def run(order) -> int:
        scopes = [set(f) for f in factors]
        worst = max((len(f) for f in scopes), default=1)
        for v in order:
            touching = [f for f in scopes if v in f]
            merged = set().union(*touching) | {v}
            worst = max(worst, len(merged))
            scopes = [f for f in scopes if v not in f] + [merged - {v}]
        return worst

    names = sorted(own)
    if len(names) <= 7:
        return min(run(order) for order in itertools.permutations(names))
    greedy, scopes = [], [set(f) for f in factors]
    left = set(names)
    while left:
        v = min(sorted(left), key=lambda u: len(set().union(*[f for f in scopes if u in f])))
        greedy.append(v)
        merged = set().union(*[f for f in scopes if v in f]) - {v}
        scopes = [f for f in scopes if v not in f] + [merged]
        left.remove(v)
    return run(greedy)


def _merge(schedules: list[list[list[Message]]]) -> list[list[Message]]:
    """Run schedules side by side from the first round."""
    depth = max((len(s) for s in schedules), default=0)
    return [[m for s in schedules if r < len(s) for m in s[r]] for r in range(depth)]
