"""Expression -> expression: the rewrites that give one spelling to one function before the
canonical form (:mod:`~infoflow.retrieval.expression_to_canonical`). All are
``reconstruction:canonical_form`` (theory note: "the function decides, not its spelling"):

- an index read only at one offset is renamed: ``max(f(x[t-1]) for t in T)`` is
  ``max(f(x[t]) for t in T if t <= T - 1)``, the boundary becoming a mask (and the index's
  other conditions shifted with it); at several offsets, none 0, at its largest (``x[t-1]``
  beside ``x[t+1]`` is ``x[u-2]`` beside ``x[u]``); an index read at offset 0 and another
  (the induction head's match x[t-1] and the token after it, x[t]) keeps its neighbour;
  under an argmax the value is the position found less the offset (:mod:`.shifted_indices`);
- a sum, max or min over tokens whose whole body is one of the same kind is one reduction
  over both generators, with both conditions (:mod:`.nested_reductions`);
- a pointwise max (min) of max (min) reductions over the same indices and conditions is one
  reduction of the pointwise max of their bodies (an unrolled ``for i in range(n)``);
- a max (min) of a pointwise max (min) whose branches' reductions are one function is that
  reduction: ``max(abs(f(s) - f(t)) for s, t)`` is max f - min f (``abs(e)`` being
  max(e, -e); :func:`~infoflow.retrieval.separable.pointwise_pieces`); where they differ,
  it is read two ways (:data:`BRANCH_READINGS`), one score or one reduction a branch, and
  so is a pointwise max of sums of maxima over tokens (``max(max f - min g, max g - min
  f)``: one score over s, t, or as written; :func:`~.pointwise.gathered`);
- a pointwise max (min) inside another is one (``max(max(a, b), c)`` is ``max(a, b, c)``),
  and a value at a fixed position beside the max of the same function over every position
  is one of its values (dropped);
- maxima (minima) of one function over one token index whose ranges join are one over their
  union, a value at a fixed position counting as the max over that position
  (``max(f(x[1]), max(f(x[t]) for t in T if t >= 2))`` is the max over every t;
  :func:`~infoflow.retrieval.pointwise.joined`);
- a pointwise max (min) of one function at several fixed positions is a max over a masked
  token index: ``max(f(x[1]), f(x[2]), f(x[3]))`` is ``max(f(x[t]) for t in T if t <= 3)``;
- a norm has one spelling: ``norm(v) ** 2`` is ``sqnorm(v)``, ``sqrt(sqnorm(v))`` is
  ``norm(v)``, ``abs(norm(v))`` is ``norm(v)``;
- a max or min of one term times a constant is the constant times the max of the term, the
  min for a negative one (``max(-f)`` is ``-min f``: one retrieval with ``min f``);
- a max, min or k-th of g(f), g nondecreasing, is g of it (:mod:`.increasing_functions`);
- identical additive terms (equal up to the names of their indices) are one term with the sum
  of their coefficients; terms that cancel vanish (``f - f`` is 0); sums of one function over
  ranges whose coefficients net to one weight on one range are one sum
  (:mod:`.summed_ranges`);
- terms of one max (min) that are one function once each is maximised over the indices only
  it reads are one term: ``max(f(a, b) + f(a, c) for a, b, c)`` is the max over a of
  2 max over b of f(a, b) (a chain's or a star's equal leaves share one head);
- an order test between two indices of a max or min whose score is symmetric in them reads
  no position: ``s < t`` is ``s != t``, ``s <= t`` every pair; the max over s != t of
  f(s) + f(t) is the largest f plus the second largest (:mod:`.diagonal`); a max or min
  that the pair (s, s) holds on every draw is the diagonal's value (the max of x(s).x(t)
  over every pair is the largest |x|^2; :mod:`.diagonal_extrema`); a token index of a max or
  min that only its order tests read leaves it, its tests projected on the others (the max
  over s of the max over t <= s is the max over every t; :mod:`.unread_indices`); a min over
  s of a max whose range only grows with s is that max at the smallest s (the min over s of
  the max over t <= s is the max over t <= 1; :mod:`.monotone_extrema`);
- a term that cancels keeps the range its neighbours gave its index: ``x[s-1] - x[s-1]``
  leaves s >= 2, as the validator evaluates the target (a fuzz found it dropped);
- a condition every value meets, or that the others imply, is dropped, and ``t == s``
  makes t the index s (:mod:`.conditions`); a sum over s != t of a score of both is the sum
  over every pair less the diagonal's (:mod:`.diagonal_sums`); best plus second best with
  unequal weights puts the larger on the best (:mod:`.weighted_pairs`);
- an index that nothing reads and whose only condition is ``t != s`` counts T - 1 copies of a
  sum (``sum(f(x[s]) for s in T for t in T if s != t)`` is ``(T - 1) * sum(f(x[s]) for s in
  T)``) and does not change a max or min.

The rewritten expression is what the engine plans; the validator evaluates the target as
written.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from infoflow.retrieval.algebra import (
    collect,
    collected,
    factored,
    key,
    names,
    one_norm,
    ranges_kept,
    reads,
    rebuilt,
    rename,
    terms,
)
from infoflow.retrieval.conditions import fold_conditions
from infoflow.retrieval.diagonal import separable_pair, unordered_reduce, unordered_sum
from infoflow.retrieval.diagonal_extrema import on_diagonal
from infoflow.retrieval.diagonal_sums import without_diagonal
from infoflow.retrieval.expression import (
    Apply,
    Const,
    Node,
    Param,
    Reduce,
    Variable,
)
from infoflow.retrieval.increasing_functions import taken_out
from infoflow.retrieval.monotone_extrema import at_extreme
from infoflow.retrieval.nested_reductions import nested_joined
from infoflow.retrieval.pointwise import (
    HOLE,
    absorbed,
    fill,
    flat,
    gathered,
    joined,
    match,
    membership,
    unnegated,
)
from infoflow.retrieval.separable import ADDITIVE, EXTREMA, pointwise_pieces, separate
from infoflow.retrieval.shifted_indices import renamed_shifts
from infoflow.retrieval.summed_ranges import netted, split_terms
from infoflow.retrieval.unread_indices import project

COUNT = Param("T_minus_1")  # the number of values an index t != s takes (a fixed number)


#: The two readings of a max (min) of a pointwise max whose branches differ
#: (``max(abs(f(s) - g(t)) for s, t)``): one score over the tuple, one head a layer
#: (``one_score``), or one reduction a branch (``per_branch``: max f - min g and max g - min f,
#: four one-token heads in one layer). The engine plans both and keeps the better
#: (:mod:`~infoflow.retrieval.derive`).
BRANCH_READINGS = ("one_score", "per_branch")


def rewrite(node: Node, branches: str = "one_score") -> Node:
    """``node`` with every rewrite applied, innermost first; separable maxima are split last
    (after unrolled maxima are merged over their joint domain)."""
    return reading(node, branches)[0]


def reading(node: Node, branches: str = "one_score") -> tuple[Node, bool]:
    """:func:`rewrite`'s result read the ``branches`` way (:data:`BRANCH_READINGS`), and
    whether the other way reads it differently (a max of a pointwise max whose branches
    differ was met)."""
    rewriter = _Rewriter(names(node), branches)
    rewritten = rewriter.rewrite(node)
    outside = taken_out(rewritten)  # max(exp(f)) is exp(max f)
    rewritten = rewritten if outside is rewritten else rewriter.rewrite(outside)
    return separate(rewritten), rewriter.branched


class _Rewriter:
    def __init__(self, used: set[str], branches: str = "one_score"):
        self.used = set(used)
        self.bound: dict[str, Variable] = {}  # the indices bound around the node rewritten
        self.around: tuple = ()  # the conditions of the reductions around it
        self.branches, self.branched = branches, False

    def fresh(self, base: str = "t") -> str:
        """A name no index of the target has."""
        name, n = base, 1
        while name in self.used:
            n += 1
            name = f"{base}{n}"
        self.used.add(name)
        return name

    def rewrite(self, node: Node) -> Node:
        if isinstance(node, Reduce):
            folded = fold_conditions(node, self.bound, self.around)
            if folded is not node:
                return self.rewrite(folded)
            joined_reduction = nested_joined(node)
            if joined_reduction is not node:
                return self.rewrite(joined_reduction)
            outer, around = self.bound, self.around
            self.bound = {**outer, **{v.name: v for v in node.variables}}
            self.around = (*around, *node.conditions)
            body = self.rewrite(node.body)
            self.bound, self.around = outer, around
            node = unordered_reduce(ranges_kept(node, body))
            factored = _factored(node)  # max(c f) is c max f, c min f for c < 0
            if factored is not node:
                return collect(self.rewrite(factored))
            spread = self.spread(node)
            if spread is not node:
                return spread
            halved = unordered_sum(node)
            if halved is not node:
                return self.rewrite(halved)
            undiagonal = without_diagonal(node)
            if undiagonal is not node:
                return self.rewrite(undiagonal)
            split = split_terms(node)
            if split is not node:
                return self.rewrite(split)
            pair = separable_pair(node)
            if pair is not node:
                return self.rewrite(pair)
            extreme = at_extreme(node)
            if extreme is not node:
                return self.rewrite(extreme)
            diagonal = on_diagonal(project(node))
            if diagonal is not node:
                return self.rewrite(diagonal)
            renamed = renamed_shifts(node)  # x[a-1] read alone is x[a] over a <= T - 1
            if renamed is not node:  # the diagonal's value, or the pair sum less the diagonal
                again = on_diagonal(renamed)  # (a property test; a fuzz, 2026-12-07)
                again = without_diagonal(renamed) if again is renamed else again
                if again is not renamed:
                    return self.rewrite(again)
            return _drop_diagonal(renamed)
        if isinstance(node, Apply):
            pointwise = node.fn in EXTREMA and len(node.args) > 1
            node = flat(node) if pointwise else node
            node = one_norm(Apply(node.fn, tuple(self.rewrite(a) for a in node.args)))
            if pointwise:
                return self.pointwise(node)
            if node.fn in ADDITIVE:
                return collect(netted(node))
        return node

    def spread(self, node: Reduce) -> Node:
        """A max (min) of a pointwise max (min) whose branches' reductions, rewritten, are one
        function: that reduction (``max(abs(f(s) - f(t)) for s in T for t in T)`` is
        max f - min f, one layer, where the pair took two). Branches that differ are read
        :attr:`branches` way: the node as it is (one score: max(f(s) - g(t), g(s) - f(t))),
        or the pointwise max of the branches' reductions."""
        pieces = pointwise_pieces(node)
        if pieces is None:
            return node
        rewritten = [self.rewrite(piece) for piece in pieces]
        alike = {_terms_key(separate(piece)) for piece in rewritten}
        if len(alike) == 1:
            return rewritten[0]
        self.branched = True
        return Apply(node.op, tuple(rewritten)) if self.branches == "per_branch" else node

    def pointwise(self, node: Apply) -> Node:
        """A pointwise max (min): reductions over one domain merged, reductions whose ranges
        join (a fixed position beside them counting as one) joined, fixed positions of one
        function made a masked index, repeated arguments dropped."""
        args = [unnegated(a) for a in node.args]
        if self.branches == "one_score":
            args = self.gather_sums(node.fn, args)
        args = self.merge_reductions(node.fn, absorbed(node.fn, args))
        args = self.merge_positions(node.fn, joined(node.fn, args))
        args = absorbed(node.fn, joined(node.fn, args))
        unique = list({key(a): a for a in args}.values())
        return unique[0] if len(unique) == 1 else Apply(node.fn, tuple(unique))

    def gather_sums(self, fn: str, args: list[Node]) -> list[Node]:
        """The one-score reading of sums of maxima (minima) side by side: each gathered into
        one reduction (:func:`~.pointwise.gathered`) where that joins it to another over the
        same domain, ``max(max f - min g, max g - min f)`` being the max over s, t of
        max(f(s) - g(t), g(s) - f(t)) (its per-branch reading is the spelling itself)."""
        found = [gathered(fn, a, self.fresh) for a in args]
        reductions = [g or a for g, a in zip(found, args, strict=True)]
        shared = Counter(_domain(r) for r in reductions if isinstance(r, Reduce) and r.op == fn)
        if not any(g is not None and shared[_domain(g)] > 1 for g in found):
            return args
        self.branched = True
        joins = [g is not None and shared[_domain(g)] > 1 for g in found]
        return [g if join else a for g, a, join in zip(found, args, joins, strict=True)]

    def merge_reductions(self, fn: str, args: list[Node]) -> list[Node]:
        """max(max(f) over D, max(g) over D) -> max(max(f, g)) over D."""
        groups: dict[tuple, list[Reduce]] = {}
        for arg in args:
            if isinstance(arg, Reduce) and arg.op == fn:
                groups.setdefault(_read_domain(arg), []).append(arg)
        out = []
        for arg in args:
            mine = isinstance(arg, Reduce) and arg.op == fn
            group = groups.get(_read_domain(arg)) if mine else None
            if not group or len(group) == 1:
                out.append(arg)
            elif arg is group[0]:
                out.append(self.merged(fn, group))
        return out

    def merged(self, fn: str, group: list[Reduce]) -> Reduce:
        """One reduction over the group's domain of the pointwise ``fn`` of their bodies,
        the additive terms they all share outside it (max(a + c, b + c) = c + max(a, b))."""
        base, bodies = group[0], [group[0].body]
        for other in group[1:]:
            mapping = {v.name: u.name for v, u in zip(other.variables, base.variables, strict=True)}
            bodies.append(rename(self.freshen(other.body, set(mapping.values())), mapping))
        each = [collected(terms(body)) for body in bodies]
        shared = {
            name: value
            for name, value in each[0].items()
            if name is not None and all(rest.get(name, (None,))[0] == value[0] for rest in each[1:])
        }
        rests = [rebuilt({n: c for n, c in e.items() if n not in shared}) for e in each]
        inner = self.pointwise(Apply(fn, tuple(rests)))
        if not shared:
            return replace(base, body=inner)
        return replace(base, body=Apply("+", (rebuilt(shared), inner)))

    def freshen(self, node: Node, avoid: set[str]) -> Node:
        """``node`` with every index it binds whose name is in ``avoid`` renamed."""
        if isinstance(node, Apply):
            return Apply(node.fn, tuple(self.freshen(a, avoid) for a in node.args))
        if not isinstance(node, Reduce):
            return node
        mapping = {v.name: self.fresh(v.name) for v in node.variables if v.name in avoid}
        node = rename(node, mapping, bound=True) if mapping else node
        return replace(node, body=self.freshen(node.body, avoid))

    def merge_positions(self, fn: str, args: list[Node]) -> list[Node]:
        """max(f(x[1]), f(x[2])) -> max(f(x[t]) for t in T if t <= 2)."""
        groups: list[list] = []  # [first argument, skeleton or None, positions]
        for arg in args:
            for group in groups:
                found = match(group[0], arg)
                if found and group[1] in (None, found[0]):
                    if group[1] is None:
                        group[1], group[2] = found[0], [found[1]]
                    group[2].append(found[2])
                    break
            else:
                groups.append([arg, None, []])
        out = []
        for first, skeleton, positions in groups:
            spots = sorted(set(positions))
            if skeleton is None or len({side for side, _ in spots}) != 1:
                out.append(first)
                out += [fill(skeleton, p) for p in positions[1:]] if skeleton else []
                continue
            name = self.fresh()
            mask = membership(name, spots)
            if mask is None:
                out += [first] + [fill(skeleton, p) for p in positions[1:]]
                continue
            out.append(Reduce(fn, (Variable(name),), rename(skeleton, {HOLE: name}), mask))
        return out


def _terms_key(node: Node) -> tuple:
    """Equal for two nodes whose additive terms are equal with equal coefficients, in any
    order and whatever their bound indices' names."""
    grouped = collected(terms(node))
    return tuple(sorted((repr(name), total) for name, (total, _) in grouped.items()))


def _domain(node: Reduce) -> tuple:
    """What a reduction runs over, names aside: the sizes of its indices in order, its k and
    its conditions."""
    mapping = {v.name: f"_{i}" for i, v in enumerate(node.variables)}
    named = rename(replace(node, body=Const(0)), mapping, bound=True)
    return (tuple(v.size for v in named.variables), node.k, frozenset(named.conditions))


def _factored(node: Reduce) -> Node:
    """:func:`~.algebra.factored` as an expression: c times the reduction (the node as it is
    where c is 1)."""
    factor, node = factored(node)
    if factor == 1:
        return node
    value = int(factor) if factor.denominator == 1 else float(factor)
    return Apply("*", (Const(value), node))


def _read_domain(node: Reduce) -> tuple:
    """:func:`_domain` with the range each index's offsets leave it (``x[s-2]`` beside
    ``x[s]``: s >= 3): reductions merged into one must run over the same positions (a
    review found max(max f(s), max g(s-2, s)) merged over every s)."""
    ranges = tuple(
        (min(reads(node.body, v.name) | {0}), max(reads(node.body, v.name) | {0}))
        for v in node.variables
    )
    return _domain(node), ranges


def _in_conditions(node: Node, name: str) -> bool:
    """Whether a condition nested in ``node`` compares ``name``."""
    if isinstance(node, Apply):
        return any(_in_conditions(a, name) for a in node.args)
    if isinstance(node, Reduce):
        mine = any(name in (c.left, c.right) for c in node.conditions)
        return mine or _in_conditions(node.body, name)
    return False


# ---- the diagonal ------------------------------------------------------------------------


def _drop_diagonal(node: Reduce) -> Node:
    """A token index that nothing reads, compared only by ``t != s`` with another index of
    the same reduction, leaves it: T - 1 copies in a sum, nothing in a max or min."""
    if node.op not in ("sum", *EXTREMA) or len(node.variables) < 2:
        return node
    own = {v.name for v in node.variables if v.is_token}
    for v in node.variables:
        if not v.is_token or reads(node.body, v.name) or _in_conditions(node.body, v.name):
            continue
        mine = [c for c in node.conditions if v.name in (c.left, c.right)]
        if len(mine) != 1 or mine[0].op != "!=" or mine[0].shift:
            continue
        other = mine[0].right if mine[0].left == v.name else mine[0].left
        if other not in own or other == v.name:
            continue
        rest = replace(
            node,
            variables=tuple(u for u in node.variables if u != v),
            conditions=tuple(c for c in node.conditions if c is not mine[0]),
        )
        return Apply("*", (COUNT, rest)) if node.op == "sum" else rest
    return node
