"""Sums the planner pools (``reconstruction:canonical_form``, a stage of
:mod:`~infoflow.retrieval.expression_to_canonical`):

- sums over one token index that read only that token and weigh positions alike are one
  averaging head however many there are (:func:`merge_pools`);
- a sum over a token index t that none of its terms reads, tested against one other token
  index s of the sum only (``sum(f(x[s]) for s in T for t in T if s < t)``), is the sum over
  s of f(s) times how many t pass: a weight on s's position (T - s here), so t leaves the
  reduction's indices and its tests read s's position (PE) (:func:`counted`). One head with
  PE does it: logits log(T - s) weigh the tokens, the readout scales the mean back (compile
  builds it: :mod:`.circuit_sums`). Until 2026-12-06 the pair was coupled, a global
  aggregation (not efficient at any size). Tested against numbers or T only (``t < 3``), t
  is a constant count (its tests read no position; until 2026-12-06 they were a position
  read, and a max of such a sum a second layer).
"""

from __future__ import annotations

import functools
import operator
import re
from dataclasses import replace
from fractions import Fraction

import numpy as np

from infoflow.retrieval.types import Comparison, Factor


def counted(own: dict, summaries: list, tests: list) -> tuple[dict, list]:
    """``own`` (a sum's indices) without each token index that no summary (term) reads and
    whose tests name one other token index of the sum, s; ``tests`` with those tests on s
    alone, reading its position (not where they are all ``t != s``: a count of T - 1).
    Where t's tests name no other index (``t < 3``), they go: the count is a constant.
    (summary, summed indices or None) pairs and tests as
    :mod:`~infoflow.retrieval.expression_to_canonical` makes them."""
    read = set().union(*((s.indices() if summed is None else summed) for s, summed in summaries))
    own, tests = dict(own), list(tests)
    while found := next(_countable(own, read, tests), None):
        name, s, mine = found
        del own[name]
        if s is None:  # tests on t alone: the same count at every s, a constant factor
            tests = [t for t in tests if t not in mine]
            continue
        constant = all(t.differs for t in mine)  # only t != s: T - 1 whatever s's position
        weight = {
            t: replace(
                t,
                tokens=frozenset({s}),
                ranges=frozenset(),
                text=f"{t.text} (counted over {name})",
                reads_positions=not constant,
                excludes=False,
                differs=False,
            )
            for t in mine
        }
        tests = [weight.get(t, t) for t in tests]
    return own, tests


def _countable(own: dict, read: set, tests: list):
    """(t, s, t's tests) for each index t ``counted`` can take out now (t's tests name one
    other token index s of the sum, or none: s is None; counting one index may make another
    countable: ``s < t and t < u`` counts u onto t, then t onto s, in any order of the
    generators)."""
    for name, variable in own.items():
        mine = [t for t in tests if name in t.indices]
        partners = {i for t in mine for i in t.indices} - {name}
        if not variable.is_token or name in read or not mine or len(partners) > 1:
            continue
        if not partners:
            yield name, None, mine
            continue
        (s,) = partners
        if s in own and own[s].is_token:
            yield name, s, mine


def merge_pools(children: list[Comparison]) -> list[Comparison]:
    """Sums over one token index that read only that token (nothing nested, no enclosing
    index) and weigh the positions alike (up to a factor, whatever the spelling:
    :func:`_weighting`) are one averaging head however many there are: ``sum f + sum
    g`` is ``sum (f + g)``, and D copies of such a sum are one head averaging D features.
    Pools that weigh positions differently are not (one head's softmax is one weighting:
    ``sum x[s][0] + sum x[v][1] over v <= 3`` needs two; until 2026-12-06 they were one
    head, an undercharge). Equal comparisons are one."""
    children = list(dict.fromkeys(children))  # a comparison met twice is planned once
    pools = [c for c in children if _poolable(c)]
    groups: dict[tuple, list[Comparison]] = {}
    for pool in pools:
        groups.setdefault(_weighting(pool) if len(pools) > 1 else (), []).append(pool)
    merged = {id(pools[0]): _merged(pools) for pools in groups.values()}
    return [merged.get(id(c), c) for c in children if id(c) in merged or not _poolable(c)]


def _merged(pools: list[Comparison]) -> Comparison:
    """Pools that weigh positions alike as one, over the first one's index."""
    (mine,) = pools[0].variables
    shifts, fixed = set(), set()
    for f in (f for pool in pools for f in pool.factors):
        shifts |= {(mine, offset) for _, offset in f.shifts}
        fixed |= f.fixed
    conditions = tuple(sorted(c for f in pools[0].factors for c in f.conditions))
    factor = Factor(frozenset({mine}), (), frozenset(shifts), frozenset(fixed), conditions)
    return replace(pools[0], factors=(factor,), copies=1)


#: A pool's condition as the canonical form writes it: ``s <= T - 1``, ``abs(s - t) <= 2``,
#: each index a counted one names followed by `` (counted over t)``.
_TEST = re.compile(r"^(?:abs\((\w+) - (\w+)\)|(\w+)) (<=|>=|<|>|==|!=) (\w+)(?: ([+-]) (\d+))?$")
_COUNTED = re.compile(r" \(counted over (\w+)\)")
_COMPARE = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
#: The T at which pools' weightings are compared: every T up to twice the largest number
#: their conditions may name (:data:`_LARGEST`), and one past (pools naming larger ones, or
#: whose tuple grid at the last T exceeds :data:`_MAX_CELLS`, are alike only as written).
_LARGEST, _MAX_CELLS = 16, 200_000
_LENGTHS = (*range(1, 2 * _LARGEST + 3), 55)


def _weighting(pool: Comparison) -> tuple:
    """How a pool weighs each position, up to a constant factor: the offsets it reads at and,
    at every T up to twice the largest number conditions may name and one past
    (:data:`_LENGTHS`), each position's share of the tuples its conditions
    (with the indices they count) leave; the conditions' text, its indices renamed by order
    of appearance, where it is not read that way. Pools alike at those T are alike at every
    T (until 2026-12-06 only the three were compared, and pools that differ at the spec's T
    were one head: a review)."""
    (mine,) = pool.variables
    offsets = frozenset(offset for f in pool.factors for _, offset in f.shifts)
    texts = tuple(sorted({c for f in pool.factors for c in f.conditions}))
    shares = _shares(mine, texts)
    return offsets, shares if shares is not None else _anonymous(mine, texts)


def _anonymous(mine: str, texts: tuple[str, ...]) -> tuple[str, ...]:
    """``texts`` with ``mine`` and the indices counted over renamed by order of appearance
    (a pool's indices have names unique in the target: two alike pools differ in them)."""
    names = [mine, *dict.fromkeys(_COUNTED.findall(" ".join(texts)))]
    renamed = texts
    for i, name in enumerate(names):
        renamed = tuple(re.sub(rf"\b{re.escape(name)}\b", f"_{i}", t) for t in renamed)
    return tuple(sorted(renamed))


@functools.lru_cache(maxsize=4096)
def _shares(mine: str, texts: tuple[str, ...]) -> tuple | None:
    """Each position's share of the tuples at each T :func:`_weighting` names; None where a
    condition is not of the forms :data:`_TEST` reads, names a number over :data:`_LARGEST`,
    or the grid exceeds :data:`_MAX_CELLS`."""
    tests, counted = [], set()
    for text in texts:
        counted |= set(_COUNTED.findall(text))
        found = _TEST.match(_COUNTED.sub("", text))
        if found is None:
            return None
        tests.append(found.groups())
    named = [name for test in tests for name in (*test[:3], test[4], test[6]) if name]
    if any(name not in {mine, "T", *counted} and not name.isdigit() for name in named):
        return None
    largest = max((int(name) for name in named if name.isdigit()), default=0)
    if largest > _LARGEST or _LENGTHS[-1] ** (len(counted) + 1) > _MAX_CELLS:
        return None
    names = sorted(counted)
    return tuple(_shares_at(length, mine, names, tests) for length in _LENGTHS)


def _shares_at(length: int, mine: str, names: list[str], tests: list[tuple]) -> tuple:
    """Each position's share of the tuples the tests leave at T = ``length`` (the tuples as
    a grid, one axis an index: ``mine``'s first)."""
    axes = [mine, *names]
    grid = np.ix_(*[np.arange(1, length + 1)] * len(axes))
    at = {name: grid[i] for i, name in enumerate(axes)} | {"T": length}
    kept = np.ones((length,) * len(axes), dtype=bool)
    for test in tests:
        kept &= _holds(test, at)
    weights = kept.reshape(length, -1).sum(axis=1).tolist()
    total = sum(weights)
    return tuple(Fraction(w, total) if total else Fraction(0) for w in weights)


def _holds(test: tuple, at: dict) -> np.ndarray:
    """Where a condition (:data:`_TEST`'s groups) holds on the grid of the indices' values
    ``at``."""
    first, second, left, op, right, sign, shift = test

    def value(name: str):
        return at[name] if name in at else int(name)

    bound = value(right) + (int(shift) if sign == "+" else -int(shift) if sign else 0)
    side = abs(value(first) - value(second)) if first else value(left)
    return _COMPARE[op](side, bound)


def _poolable(c: Comparison) -> bool:
    return (
        c.kind == "sum" and len(c.variables) == 1 and not c.free and not c.children and not c.ranges
    )
