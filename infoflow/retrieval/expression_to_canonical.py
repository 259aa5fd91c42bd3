"""Expression -> canonical form: the reductions the planner places, whatever the spelling.

The rules (theory note, "Canonical form and schedules"; all ``reconstruction:canonical_form``):

- an additive term that does not involve a reduction's indices leaves it: max over t of
  f(s) + g(s, t) is f(s) + max over t of g(s, t) (for sums and k-th reductions too);
- a reduction inside another of the same kind is flattened into it: a max inside a max, a
  min subtracted inside a max, a sum inside a sum (also a sum that is a factor of a
  product: f * sum g is sum f g);
- a max, min or sum over several indices splits into one reduction per connected group of
  indices: max over s, t of f(s) + g(t) is max f + max g; a sum splits at every ``+``; a
  sum distributes over products of factors with disjoint indices: the sum over s, t of
  dot(x[s], x[t]) is dot(sum x[s], sum x[t]), also where each condition tests one summed
  index (the sum over s, t with t <= 3 of f(s) g(t) is sum f times the sum over t <= 3
  of g; since 2026-12-07, a coupled pair before); an index no term reads is counted
  (:mod:`.pooled_sums`);
- a range index (``for i in range(D)``) reduced together with token indices joins the score
  (a score is any function of the tokens it couples); reduced on its own, around token
  reductions of another kind, it makes D copies of them;
- names and the order of generators and terms do not matter: only the structure is kept
  (every bound index gets a name unique in the target: ``t``, then ``t2``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from infoflow.retrieval import kth_candidates, peel_firsts
from infoflow.retrieval.algebra import (
    UnionFind,
    flattens,
    free_indices,
    key,
    planned_op,
    signed,
)
from infoflow.retrieval.algebra import terms as exact_terms
from infoflow.retrieval.conditions import windows
from infoflow.retrieval.diagonal import excludes
from infoflow.retrieval.domains import check_values
from infoflow.retrieval.expression import (
    KTH,
    Apply,
    Const,
    Node,
    Param,
    Reduce,
    TargetError,
    Token,
    Variable,
)
from infoflow.retrieval.expression_rewrite import reading
from infoflow.retrieval.nested_reductions import held_inside
from infoflow.retrieval.pooled_sums import counted, merge_pools
from infoflow.retrieval.summed_ranges import counted_product
from infoflow.retrieval.types import Canonical, Comparison, Factor

PRODUCTS = {"*", "dot", "bilinear"}


def canonical(
    target: Node,
    self_exclusion: str = "often",
    far_end: frozenset = frozenset(),
    branches: str = "one_score",
) -> Canonical:
    """The canonical form of a parsed target (TargetError for what cannot be planned);
    ``self_exclusion`` says which conditions s != t are kept ([R], :mod:`.diagonal`);
    ``far_end`` holds ((k, left_out), rank) of the k-ths over t != s counted from their far
    end at the spec's T, read as that end's (:mod:`.kth_candidates`); ``branches``: how a
    max of a pointwise max whose branches differ is read
    (:data:`~infoflow.retrieval.expression_rewrite.BRANCH_READINGS`)."""
    rewritten, branched = reading(target, branches)
    written = kth_candidates.far_extrema(rewritten, dict(far_end))
    check_values(written)
    far = frozenset(key for key, _ in far_end)
    canon = _Canonicalizer(self_exclusion=self_exclusion, far_end=far)
    summary = canon.summary(written, {})
    parts = tuple(sorted(merge_pools(summary.children), key=structure_key))
    if not parts and not summary.fixed:
        raise TargetError(
            "the target reads no token once identical terms cancel, a token's nearest is "
            "itself (at distance 0) and a sum over an index nothing reads is a count: it is a "
            "constant, there is nothing to learn"
        )
    firsts = peel_firsts.firsts(canon.closed, parts)
    return Canonical(parts, frozenset(summary.fixed), firsts, branched)


def structure_key(c: Comparison) -> tuple:
    """Orders comparisons by structure, never by names."""
    factors = sorted(
        (
            len(f.scope),
            tuple(sorted(map(structure_key, f.children))),
            tuple(sorted(f.shifts)),
            tuple(sorted(f.fixed)),
            len(f.conditions),
            len(f.exclusions),
        )
        for f in c.factors
    )
    return (c.kind, len(c.variables), c.copies, c.k or 0, tuple(factors))


# ---- construction ----------------------------------------------------------------------


@dataclass
class _Summary:
    """What an expression depends on: indices, the comparisons inside, positions read."""

    tokens: set[str] = field(default_factory=set)
    ranges: set[str] = field(default_factory=set)
    children: list[Comparison] = field(default_factory=list)
    shifts: set[tuple[str, int]] = field(default_factory=set)
    fixed: set[str] = field(default_factory=set)
    conditions: list[str] = field(default_factory=list)

    def merge(self, other: _Summary) -> _Summary:
        self.tokens |= other.tokens
        self.ranges |= other.ranges
        self.children += other.children
        self.shifts |= other.shifts
        self.fixed |= other.fixed
        self.conditions += other.conditions
        return self

    def token_indices(self) -> frozenset[str]:
        """Token indices it couples, directly or through its nested comparisons."""
        return frozenset(self.tokens).union(*(c.free for c in self.children))

    def range_indices(self) -> frozenset[str]:
        return frozenset(self.ranges).union(*(c.ranges for c in self.children))

    def indices(self) -> frozenset[str]:
        return self.token_indices() | self.range_indices()


@dataclass(frozen=True)
class _Test:
    """An index condition: the indices it compares, its text, whether it reads positions
    (an order test, a constant, a range index: anything but s != t between tokens)."""

    tokens: frozenset[str]
    ranges: frozenset[str]
    text: str
    reads_positions: bool
    excludes: bool = False  # s != t whose left-out pair (s, s) decides (:mod:`.diagonal`)
    differs: bool = False  # s != t between two tokens: one candidate fewer on every draw

    @property
    def indices(self) -> frozenset[str]:
        return self.tokens | self.ranges


Env = dict[str, Variable]  # user name -> the bound variable (with its unique name)


class _Canonicalizer:
    def __init__(
        self,
        used: set[str] | None = None,
        self_exclusion: str = "often",
        far_end: frozenset = frozenset(),
    ):
        self.used: set[str] = set(used or ())
        self.self_exclusion, self.far_end = self_exclusion, far_end
        self.binders: dict[str, str] = {}  # a bound index -> the op of its reduction
        self.closed: dict[Node, _Summary] = {}  # by key: reductions without free indices
        self.open: dict[tuple, _Summary] = {}  # by key and the bindings of its free indices

    def bind(self, variables: tuple[Variable, ...], env: Env) -> tuple[Env, list[Variable]]:
        """Give each variable a name unique in the target."""
        env, bound = dict(env), []
        for v in variables:
            name, n = v.name, 1
            while name in self.used:
                n += 1
                name = f"{v.name}{n}"
            self.used.add(name)
            env[v.name] = Variable(name, v.size)
            bound.append(env[v.name])
        return env, bound

    def summary(self, node: Node, env: Env) -> _Summary:
        if isinstance(node, Token):
            return self._token(node, env)
        if isinstance(node, Param):
            return _Summary(ranges={env[i].name for i in node.index if isinstance(i, str)})
        if isinstance(node, Const):
            return _Summary()
        if isinstance(node, Apply):
            out = _Summary()
            for arg in node.args:
                out.merge(self.summary(arg, env))
            return out
        # a reduction is one comparison however often it appears with the same enclosing
        # indices (none, or the same bindings: since 2026-12-07): planned once, shared
        free = sorted((i, env[i].name) for i in free_indices(node))
        cache, name = (self.open, (key(node), tuple(free))) if free else (self.closed, key(node))
        if name not in cache:
            cache[name] = self.reduce(node, env)
        return replace(cache[name], children=list(cache[name].children))

    def _token(self, node: Token, env: Env) -> _Summary:
        out = _Summary(ranges={env[i].name for i in node.component if isinstance(i, str)})
        if node.is_fixed:
            out.fixed.add(node.text())
        else:
            out.tokens.add(env[node.index].name)
            if node.offset:
                out.shifts.add((env[node.index].name, node.offset))
        return out

    def fresh(self) -> _Canonicalizer:
        """A canonicalizer that binds no name this one has bound."""
        fresh = _Canonicalizer(self.used, self.self_exclusion, self.far_end)
        fresh.binders = dict(self.binders)
        return fresh

    def reduce(self, node: Reduce, env: Env) -> _Summary:
        inner, variables = self.bind(node.variables, env)
        terms, conditions = [], [(c, inner) for c in windows(node.conditions)]
        queue = [(node.body, inner)]
        while queue:
            body, scope = queue.pop()
            inside = held_inside(body)
            for coefficient, term in exact_terms(body):
                if term is None or not coefficient:
                    continue  # a constant leaves the reduction
                sign = 1 if coefficient > 0 else -1
                term = counted_product(term) if node.op == "sum" else term
                if flattens(node.op, sign, term) and key(term) not in inside:
                    deeper, more = self.bind(term.variables, scope)
                    variables += more
                    conditions += [(c, deeper) for c in windows(term.conditions)]
                    queue.append((signed(term.body, sign), deeper))
                else:
                    terms.append((term, scope, coefficient))
        if node.op in KTH and (len(variables) != 1 or not variables[0].is_token):
            raise TargetError(f"{node.op} is supported over one token index")
        if node.op in KTH:
            kth_candidates.whole_sequence(node, conditions, variables[0].name)
        self.binders.update({v.name: node.op for v in variables})
        option, own = self.self_exclusion, {v.name for v in variables}
        far = node.op in KTH and (node.k, kth_candidates.left_out(conditions)) in self.far_end
        tests = [
            _condition(c, scope, excludes(option, node.op, c, scope, terms, own, self.binders, far))
            for c, scope in conditions
        ]
        terms = [(term, scope) for term, scope, _ in terms]
        own = {v.name: v for v in variables}
        if node.op == "sum" and all(len(t.indices & own.keys()) < 2 for t in tests):
            summaries = self._distribute(terms, own)
        else:
            summaries = [(self.summary(term, scope), None) for term, scope in terms]
        return self._components(planned_op(node), node.k, own, summaries, tests)

    def _distribute(self, terms, own: dict[str, Variable]) -> list:
        """The terms of a sum whose conditions each test one summed index at most (``t <=
        3``), each product of factors that share no summed index taken apart: (summary, the
        summed indices it is summed over)."""
        out = []
        for term, scope in terms:
            pieces = self._product(term, scope, own) or [term]
            for piece in pieces:
                summary = self.summary(piece, scope)
                out.append((summary, summary.indices() & own.keys()))
        return out

    def _product(self, term: Node, env: Env, own: dict[str, Variable]) -> list[Node] | None:
        """A product (``*``, ``dot``, ``bilinear``) as factors that share no summed index;
        None when it does not come apart."""
        if not (isinstance(term, Apply) and term.fn in PRODUCTS):
            return None
        uses = [self.fresh().summary(a, env).indices() & own.keys() for a in term.args]
        if any(a & b for i, a in enumerate(uses) for b in uses[:i]):
            return None
        pieces = []
        for arg, summed in zip(term.args, uses, strict=True):
            pieces += (self._product(arg, env, own) if summed else None) or [arg]
        return pieces

    def _components(self, op, k, own: dict[str, Variable], summaries, tests) -> _Summary:
        """Pull out what does not involve the reduction's indices, split the rest into
        connected groups, and make each group a comparison (or, over range indices only,
        copies of the comparisons inside)."""
        out = _Summary()
        own, tests = counted(own, summaries, tests) if op == "sum" else (own, tests)
        groups = UnionFind(own)
        kept = []
        for summary, summed in summaries:
            touched = (summary.indices() if summed is None else summed) & own.keys()
            if not touched:
                out.merge(summary)  # pulled out of the reduction
                continue
            groups.join(touched)
            kept.append((touched, summary))
        for test in tests:
            if not test.indices & own.keys():
                raise TargetError(f"the condition {test.text} does not involve its generator")
            groups.join(test.indices & own.keys())
        for root in groups.roots():
            members = groups.members(root)
            parts = [s for touched, s in kept if touched & members]
            mine = [t for t in tests if t.indices & members]
            if parts or mine:
                variables = [v for name, v in own.items() if name in members]
                out.merge(_group(op, k, variables, parts, mine))
        out.children = merge_pools(out.children)
        return out


def _group(op, k, variables: list[Variable], parts: list[_Summary], tests) -> _Summary:
    """One connected group of a reduction's indices -> a comparison (or copies)."""
    tokens = tuple(v.name for v in variables if v.is_token)
    folded = {v.name: v.size for v in variables if not v.is_token}
    if not tokens:  # over range indices only: the comparisons inside run once per value
        out = _Summary()
        for summary in parts:
            out.merge(_with_copies(summary, folded))
        out.ranges -= folded.keys()
        return out
    ranges = frozenset().union(*(s.range_indices() for s in parts), *(t.ranges for t in tests))
    factors = _factors(folded, parts, tests)
    left_out = len({t.tokens for t in tests if t.differs}) if op in KTH else 0  # t != s, s != t
    return _Summary(
        children=[Comparison(op, tokens, factors, 1, k, frozenset(ranges - set(folded)), left_out)]
    )


def _factors(folded: dict[str, int], parts, tests) -> tuple[Factor, ...]:
    """A comparison's terms as factors: terms that share a range index folded into the score
    are one (the max over it couples them), then groups that couple the same token indices
    are one."""
    indices = [(s.token_indices(), s.range_indices()) for s in parts]
    indices += [(t.tokens, t.ranges) for t in tests]
    groups = UnionFind([str(i) for i in range(len(indices))])
    for i, (_, ranges) in enumerate(indices):
        for j in range(i):
            if ranges & indices[j][1] & folded.keys():
                groups.join({str(i), str(j)})
    scopes: dict[frozenset[str], list[str]] = {}
    for root in groups.roots():
        members = groups.members(root)
        scope = frozenset().union(*(indices[int(m)][0] for m in members))
        scopes.setdefault(scope, []).append(root)
    for roots in scopes.values():
        groups.join(set(roots))
    factors = []
    for root in groups.roots():
        members = sorted(int(m) for m in groups.members(root))
        summary, texts, exclusions = _Summary(), [], []
        for m in members:
            if m < len(parts):
                summary.merge(_with_copies(parts[m], folded))
            elif tests[m - len(parts)].reads_positions:
                texts.append(tests[m - len(parts)].text)
            elif tests[m - len(parts)].excludes:
                exclusions.append(tests[m - len(parts)].text)
        scope = frozenset().union(*(indices[m][0] for m in members))
        once = list({id(c): c for c in summary.children}.values())  # a shared one planned once
        children = tuple(sorted(merge_pools(once), key=structure_key))
        conditions = tuple(sorted(texts + summary.conditions))
        shifts, fixed = frozenset(summary.shifts), frozenset(summary.fixed)
        factors.append(
            Factor(scope, children, shifts, fixed, conditions, tuple(sorted(exclusions)))
        )
    return tuple(sorted(factors, key=lambda f: (len(f.scope), sorted(f.scope))))


def _with_copies(summary: _Summary, folded: dict[str, int]) -> _Summary:
    """Comparisons that depend on a reduced range index run once per value of it."""
    children = []
    for child in summary.children:
        copies = 1
        for name, size in folded.items():
            if name in child.ranges:
                copies *= size
        children.append(
            replace(
                child, copies=child.copies * copies, ranges=frozenset(child.ranges - set(folded))
            )
        )
    return replace(summary, children=children, ranges=summary.ranges - folded.keys())


def _condition(c, env: Env, decides: bool = False) -> _Test:
    sides = [env[s] if isinstance(s, str) and s in env else s for s in (c.left, c.right)]
    variables = [s for s in sides if isinstance(s, Variable)]
    tokens = frozenset(v.name for v in variables if v.is_token)
    ranges = frozenset(v.name for v in variables if not v.is_token)
    text = c.text(*(s.name if isinstance(s, Variable) else s for s in sides))
    invariant = c.op == "!=" and len(tokens) == 2 and not c.shift  # == is folded before
    return _Test(tokens, ranges, text, not invariant, invariant and decides, invariant)
