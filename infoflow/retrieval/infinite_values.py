"""Expression + T -> whether the target is infinite on every draw.

A max over nothing is -inf and a min +inf, as the validator evaluates them (a sum over
nothing is 0, an argmax's position finite; a k-th runs over the whole sequence, less a
token). A reduction may run over nothing for some values of the indices around it only
(``max(x[t][0] for t in T if t < s)`` at s = 1): an enclosing max drops a -inf there, but
a min, a sum or a difference carries it to the target, which is then infinite (or nan) on
every draw. There is nothing to learn: the target is refused, naming the reduction and
where it is empty. ``min(max(x[t][0] for t in T if t < s) for s in T)`` is -inf. Until the
night of 2026-12-05 such targets were planned as if finite (a review's fuzz found 15 in
1,000). Not refused: a target infinite on some draws only (``tanh(x[s][0])`` times such a
max, inside a max over s), nan on every draw where two infinities meet (``-inf - -inf`` is
read as ANY), or infinite by a sum over nothing (0) in a division or a log.

The check reads positions only, never the tokens: each node is evaluated on the grid of the
indices bound around it (numpy broadcasting, positions 1..T, range indices 0..n-1) to a
status, FINITE, PLUS (+inf), MINUS (-inf), NAN (infinite or nan, sign unknown) or ANY (what
a draw decides, maybe finite), and the target is refused where its status is PLUS, MINUS or
NAN. Where the grid would exceed ``MAX_CELLS`` the target is not checked.

The same grids count the tuples a reduction runs over (:func:`tuples`, and per value of one
index: :func:`counts`), so that what compile adds a sum's constant over, or weighs a
position by, is what this check calls empty or not.
"""

from __future__ import annotations

import math

import numpy as np

from infoflow.retrieval.algebra import reads
from infoflow.retrieval.expression import (
    SEQUENCE,
    Apply,
    Const,
    Node,
    Reduce,
    TargetError,
)

FINITE, PLUS, MINUS, NAN, ANY = range(5)
MAX_CELLS = 1 << 22  # grid cells (positions of every bound index) checked at most
_WORDS = {PLUS: "+inf", MINUS: "-inf", NAN: "infinite or nan"}


def _table(rule) -> np.ndarray:
    """The 5 x 5 table of a binary rule on statuses."""
    return np.array([[rule(a, b) for b in range(5)] for a in range(5)], dtype=np.int8)


def _add(a: int, b: int) -> int:
    infinite = {a, b} & {PLUS, MINUS, NAN}
    if not infinite:
        return ANY if ANY in (a, b) else FINITE
    return infinite.pop() if len(infinite) == 1 and ANY not in (a, b) else NAN


def _times(a: int, b: int) -> int:
    if {a, b} <= {PLUS, MINUS}:
        return PLUS if a == b else MINUS
    if {a, b} & {PLUS, MINUS, NAN}:
        return NAN  # inf times a value that may be 0 or negative
    return ANY if ANY in (a, b) else FINITE


def _larger(a: int, b: int) -> int:
    """The status of a pointwise max (torch.maximum carries a nan)."""
    if PLUS in (a, b):
        return PLUS if {a, b} <= {PLUS, FINITE, MINUS} else NAN
    if a == b:
        return a
    if MINUS in (a, b):
        return ({a, b} - {MINUS}).pop()  # -inf leaves the other (NAN stays NAN)
    return ANY


ADD, TIMES, LARGER = _table(_add), _table(_times), _table(_larger)
FLIP = np.array([FINITE, MINUS, PLUS, NAN, ANY], dtype=np.int8)
_UNARY = {  # status of f(status): FINITE, PLUS, MINUS, NAN, ANY
    "neg": FLIP,
    "abs": [FINITE, PLUS, PLUS, NAN, ANY],
    "exp": [FINITE, PLUS, FINITE, ANY, ANY],
    "log": [ANY, PLUS, NAN, NAN, ANY],
    "sqrt": [ANY, PLUS, NAN, NAN, ANY],
    "relu": [FINITE, PLUS, FINITE, ANY, ANY],
    "tanh": [FINITE, FINITE, FINITE, ANY, ANY],
    "norm": [FINITE, PLUS, PLUS, NAN, ANY],
    "sqnorm": [FINITE, PLUS, PLUS, NAN, ANY],
}


def check_infinite(node: Node, seq_len: int) -> None:
    """A TargetError where the target is infinite on every draw at T = seq_len (see the
    module's docstring)."""
    checker = _Checker(seq_len)
    try:
        status = checker.target(node)
    except _TooLarge:
        return
    if status in _WORDS and checker.empty:
        reduction, where = _culprit(node, seq_len, checker.empty)
        raise TargetError(
            f"the {reduction.op} over {', '.join(v.name for v in reduction.variables)} runs "
            f"over nothing at {where}, and the target is {_WORDS[status]} on every draw: "
            "there is nothing to learn"
        )


def tuples(node: Reduce, seq_len: int) -> int | None:
    """How many tuples of its own indices ``node`` runs over at T = ``seq_len``, its
    conditions and its neighbour reads applied (``sum(f(x[t-1]) + 1 for t in T)`` adds 1 over
    T - 1 tokens); None where a condition names an index bound around it, or the grid exceeds
    MAX_CELLS."""
    grid = _own_grid(node, seq_len)
    return None if grid is None else int(grid.sum())


def counts(node: Reduce, seq_len: int, name: str) -> list[int] | None:
    """Per value of the index ``name`` of ``node`` (positions 1..T), how many tuples of the
    other indices ``node`` runs over with it (``sum(f(x[s]) for s in T for t in T if s < t)``:
    T - s); None where :func:`tuples` is."""
    grid = _own_grid(node, seq_len)
    if grid is None:
        return None
    axis = [v.name for v in node.variables].index(name)
    others = tuple(i for i in range(grid.ndim) if i != axis)
    return [int(n) for n in grid.sum(axis=others)]


def _own_grid(node: Reduce, seq_len: int) -> np.ndarray | None:
    """Where ``node``'s own indices meet its conditions and neighbour reads (None where
    :func:`tuples` says)."""
    own = {v.name for v in node.variables}
    for c in node.conditions:
        named = [side for side in (c.left, c.right) if isinstance(side, str) and side != SEQUENCE]
        if not set(named) <= own:
            return None  # a count that depends on an index bound around the reduction
    if math.prod(v.size or seq_len for v in node.variables) > MAX_CELLS:
        return None
    checker = _Checker(seq_len)
    return checker.domain(node, [(v.name, checker.positions(v)) for v in node.variables])


def _culprit(node: Node, seq_len: int, empty: list) -> tuple[Reduce, str]:
    """The first of the reductions over nothing somewhere (``empty``: reduction, where) that
    alone makes the target infinite, the others' empty cells read as finite."""
    for i, (reduction, where) in enumerate(empty):
        others = {id(r) for j, (r, _) in enumerate(empty) if j != i}
        if _Checker(seq_len, ignored=others).target(node) in _WORDS:
            return reduction, where
    return empty[0]


class _TooLarge(Exception):
    """The grid of bound indices exceeds MAX_CELLS."""


class _Checker:
    def __init__(self, seq_len: int, ignored: frozenset | set = frozenset()):
        self.seq_len = seq_len
        self.ignored = ignored  # ids of reductions whose empty cells are read as finite
        self.empty: list[tuple[Reduce, str]] = []  # reductions over nothing somewhere, where

    def target(self, node: Node) -> int:
        """The status of the whole target."""
        return int(self.status(node, [], np.ones((), dtype=bool)))

    def status(self, node: Node, axes: list, active: np.ndarray) -> np.ndarray:
        """Statuses of ``node`` over the grid of ``axes`` ((name, positions) each);
        ``active`` marks where the enclosing reductions' domains hold."""
        if isinstance(node, Reduce):
            return self.reduce(node, axes, active)
        if not isinstance(node, Apply):
            return np.zeros((1,) * len(axes), dtype=np.int8)  # a token, a parameter, a number
        args = [self.status(arg, axes, active) for arg in node.args]
        return _apply(node, args)

    def reduce(self, node: Reduce, axes: list, active: np.ndarray) -> np.ndarray:
        sizes = [len(p) for _, p in axes] + [v.size or self.seq_len for v in node.variables]
        if math.prod(sizes) > MAX_CELLS:
            raise _TooLarge
        inner = axes + [(v.name, self.positions(v)) for v in node.variables]
        domain = self.domain(node, inner)
        own = tuple(range(len(axes), len(inner)))
        empty = ~domain.any(axis=own) & active
        if empty.any() and node.op not in ("sum", "argmax", "argmin"):
            self.empty.append((node, _where(axes, np.argwhere(empty)[0])))
        inside = active.reshape(active.shape + (1,) * len(own)) & domain
        body = np.broadcast_to(self.status(node.body, inner, inside), inside.shape)
        out = _reduced(node, body, inside, own)
        return np.where(empty, FINITE, out).astype(np.int8) if id(node) in self.ignored else out

    def positions(self, v) -> np.ndarray:
        return np.arange(1, self.seq_len + 1) if v.is_token else np.arange(v.size)

    def domain(self, node: Reduce, inner: list) -> np.ndarray:
        """Where the reduction's conditions hold and the neighbours it reads exist."""
        names = [name for name, _ in inner]

        def value(side):
            if isinstance(side, int) or side == SEQUENCE:
                return self.seq_len if side == SEQUENCE else side
            shape = [1] * len(inner)
            shape[names.index(side)] = -1
            return inner[names.index(side)][1].reshape(shape)

        mask = np.ones([len(p) for _, p in inner], dtype=bool)
        for c in node.conditions:  # a window is written as its two conditions
            mask &= _COMPARE[c.op](value(c.left), value(c.right) + c.shift)
        for v in node.variables:
            for offset in reads(node.body, v.name) if v.is_token else ():
                position = value(v.name) + offset
                mask &= (position >= 1) & (position <= self.seq_len)
        return mask


_COMPARE = {
    "!=": np.not_equal,
    "==": np.equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}


def _where(axes: list, cell: np.ndarray) -> str:
    """``s = 1, u = 3`` for a grid cell (the whole target where nothing encloses it)."""
    named = [f"{name} = {positions[i]}" for (name, positions), i in zip(axes, cell, strict=True)]
    return ", ".join(named) or "every value"


def _apply(node: Apply, args: list[np.ndarray]) -> np.ndarray:
    fn = node.fn
    if fn in _UNARY:
        return np.asarray(_UNARY[fn], dtype=np.int8)[args[0]]
    if fn in ("max", "min"):  # pointwise
        out = args[0] if fn == "max" else FLIP[args[0]]
        for arg in args[1:]:
            out = LARGER[out, arg if fn == "max" else FLIP[arg]]
        return out if fn == "max" else FLIP[out]
    if fn == "+":
        return ADD[args[0], args[1]]
    if fn == "-":
        return ADD[args[0], FLIP[args[1]]]
    if fn == "**":
        return _power(args[0], node.args[1])
    if fn == "/" and isinstance(node.args[1], Const) and node.args[1].value:
        return args[0] if node.args[1].value > 0 else FLIP[args[0]]  # its sign decides
    if fn == "/":
        return _divided(*args)
    scale = [a.value for a in node.args if isinstance(a, Const)] if fn == "*" else []
    if scale and len(args) == 2:  # a number times a value: its sign decides
        value = args[1] if isinstance(node.args[0], Const) else args[0]
        return value if scale[0] > 0 else (FLIP[value] if scale[0] < 0 else _times_zero(value))
    out = args[0]
    for arg in args[1:]:  # a product, a dot, a bilinear form
        out = TIMES[out, arg]
    return out


def _times_zero(value: np.ndarray) -> np.ndarray:
    return np.where(np.isin(value, (PLUS, MINUS, NAN)), NAN, value).astype(np.int8)


def _power(base: np.ndarray, exponent: Node) -> np.ndarray:
    k = exponent.value if isinstance(exponent, Const) else None
    if k is None:
        return np.where(base == FINITE, ANY, base).astype(np.int8)
    if k == 0:
        return np.zeros_like(base)  # even nan ** 0 is 1
    if k < 0:  # inf ** -k is 0
        return np.asarray([FINITE, FINITE, FINITE, ANY, ANY], dtype=np.int8)[base]
    minus = PLUS if k == int(k) and int(k) % 2 == 0 else (MINUS if k == int(k) else NAN)
    return np.asarray([FINITE, PLUS, minus, NAN, ANY], dtype=np.int8)[base]


def _divided(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """An infinite value (or nan) over anything is infinite or nan; a value over an infinite
    one is 0; over one that may be nan, what a draw decides."""
    out = np.where(np.isin(b, (NAN, ANY)), ANY, a)
    out = np.where(np.isin(b, (PLUS, MINUS)), a, out)
    return np.where(np.isin(a, (PLUS, MINUS, NAN)), NAN, out).astype(np.int8)


def _reduced(node: Reduce, body: np.ndarray, inside: np.ndarray, own: tuple) -> np.ndarray:
    """The reduction of ``body`` over the ``own`` axes where ``inside`` holds."""
    count = {s: (inside & (body == s)).sum(axis=own) for s in range(5)}
    op = node.op
    if op in ("argmax", "argmin"):
        return np.zeros(count[FINITE].shape, dtype=np.int8)  # a position
    if op == "sum":
        out = np.full(count[FINITE].shape, FINITE, dtype=np.int8)
        for s in (ANY, PLUS, MINUS, NAN):
            out = ADD[out, np.where(count[s] > 0, s, FINITE)]
        return out
    top, bottom = (PLUS, MINUS) if op in ("max", "kth_largest") else (MINUS, PLUS)
    k = node.k or 1
    unsure = count[NAN] + count[ANY]
    total = sum(count.values())
    out = np.where(count[top] >= k, top, np.where(count[top] + count[FINITE] >= k, FINITE, bottom))
    if k == 1:  # a max: nan beside +inf, what a draw decides beside a finite value
        out = np.where(unsure > 0, np.where(count[top] > 0, NAN, _unsure(count)), out)
    else:
        out = np.where(unsure > 0, ANY, out)
    return np.where(total < k, bottom, out).astype(np.int8)


def _unsure(count: dict) -> np.ndarray:
    """A max over values some of which a draw decides, none +inf: NAN where the rest are
    -inf and some value is nan or infinite on every draw, else what a draw decides."""
    only_nan = (count[FINITE] == 0) & (count[ANY] == 0)
    return np.where(only_nan, NAN, ANY)
