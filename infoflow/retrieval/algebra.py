"""Expression algebra for the canonical form: additive terms with their signs (and, exactly,
with their coefficients), which nested reductions flatten into their parent, renaming bound
indices and the name-free key of an expression, and connected groups of indices."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from fractions import Fraction
from itertools import count

from infoflow.retrieval.expression import (
    SEQUENCE,
    Apply,
    Condition,
    Const,
    Node,
    Param,
    Reduce,
    Token,
    Variable,
)

EXTREMUM = {"max": 1, "argmax": 1, "min": -1, "argmin": -1}


def additive(node: Node, sign: int = 1) -> list[tuple[int, Node]]:
    """The additive terms of an expression with their signs: a - 2 * b -> [(1, a), (-1, b)]
    (a constant factor only scales a term; a zero constant drops it)."""
    if isinstance(node, Apply):
        if node.fn == "+":
            return additive(node.args[0], sign) + additive(node.args[1], sign)
        if node.fn == "-":
            return additive(node.args[0], sign) + additive(node.args[1], -sign)
        if node.fn == "neg":
            return additive(node.args[0], -sign)
        if node.fn in ("*", "/") and isinstance(node.args[1], Const):
            return _scaled(node.args[0], node.args[1].value, sign)
        if node.fn == "*" and isinstance(node.args[0], Const):
            return _scaled(node.args[1], node.args[0].value, sign)
    return [(sign, node)]


def _scaled(node: Node, factor: float, sign: int) -> list[tuple[int, Node]]:
    if factor == 0:
        return []
    return additive(node, sign if factor > 0 else -sign)


def signed(node: Node, sign: int) -> Node:
    return node if sign > 0 else Apply("neg", (node,))


def flattens(op: str, sign: int, term: Node) -> bool:
    """Whether ``term`` (with ``sign``) is a reduction that merges into an ``op`` reduction."""
    if not isinstance(term, Reduce):
        return False
    if op == "sum":
        return term.op == "sum"
    if op in EXTREMUM and term.op in ("max", "min"):
        return sign * EXTREMUM[term.op] == EXTREMUM[op]
    return False


def rename(node: Node, mapping: dict, bound: bool = False) -> Node:
    """``node`` with the indices it reads renamed (or bound to a number) as ``mapping``
    says; with ``bound``, the indices its outermost reduction binds too. An index a
    reduction inside binds is its own there (a review's fuzz, 2026-12-07: renaming s to u
    around ``min(x[s][0] for s in T)`` renamed the min's s in its body). No index bound
    inside ``node`` may have a new name (callers freshen first)."""
    if isinstance(node, Token):
        index = mapping.get(node.index, node.index) if isinstance(node.index, str) else node.index
        return Token(index, tuple(mapping.get(i, i) for i in node.component), node.offset)
    if isinstance(node, Param):
        return Param(node.name, tuple(mapping.get(i, i) for i in node.index))
    if isinstance(node, Apply):
        return Apply(node.fn, tuple(rename(a, mapping) for a in node.args))
    if isinstance(node, Reduce):
        variables = node.variables
        if bound:
            variables = tuple(Variable(mapping.get(v.name, v.name), v.size) for v in variables)
        else:
            own = {v.name for v in variables}
            mapping = {k: v for k, v in mapping.items() if k not in own}
        conditions = tuple(
            replace(c, left=mapping.get(c.left, c.left), right=mapping.get(c.right, c.right))
            for c in node.conditions
        )
        body = rename(node.body, mapping)
        return replace(node, variables=variables, body=body, conditions=conditions)
    return node


def names(node: Node) -> set[str]:
    """Every index name the expression binds."""
    if isinstance(node, Apply):
        return set().union(*(names(a) for a in node.args))
    if isinstance(node, Reduce):
        return {v.name for v in node.variables} | names(node.body)
    return set()


def free_indices(node: Node) -> set[str]:
    """The indices ``node`` reads that it does not bind (``T`` aside)."""
    if isinstance(node, Token):
        index = {node.index} if isinstance(node.index, str) and not node.is_fixed else set()
        return index | {i for i in node.component if isinstance(i, str)}
    if isinstance(node, Param):
        return {i for i in node.index if isinstance(i, str)}
    if isinstance(node, Apply):
        return set().union(*(free_indices(a) for a in node.args))
    if isinstance(node, Reduce):
        sides = {s for c in node.conditions for s in (c.left, c.right) if isinstance(s, str)}
        inner = (free_indices(node.body) | sides) - {SEQUENCE}
        return inner - {v.name for v in node.variables}
    return set()


def key(node: Node, prefix: str = "_") -> Node:
    """``node`` with its bound indices named by order of binding (``prefix`` and a number):
    equal keys, equal functions. A prefix of its own keeps the names apart from those of an
    enclosing node's key, which its free indices may carry."""
    fresh = count()

    def walk(n: Node) -> Node:
        if isinstance(n, Apply):
            return Apply(n.fn, tuple(walk(a) for a in n.args))
        if not isinstance(n, Reduce):
            return n
        names = {v.name: f"{prefix}{next(fresh)}" for v in n.variables}
        renamed = rename(n, names, bound=True)
        return replace(renamed, body=walk(renamed.body))

    return walk(node)


def one_norm(node: Apply) -> Apply:
    """One spelling of a norm: norm(v) ** 2 is sqnorm(v); sqrt(sqnorm(v)) and
    sqnorm(v) ** 0.5 are norm(v); abs of either is itself."""
    inner = node.args[0] if node.args and isinstance(node.args[0], Apply) else None
    if inner is None or inner.fn not in ("norm", "sqnorm"):
        return node
    power = node.args[1].value if node.fn == "**" and isinstance(node.args[1], Const) else None
    if (inner.fn, power) == ("norm", 2):
        return Apply("sqnorm", inner.args)
    if inner.fn == "sqnorm" and (node.fn == "sqrt" or power == 0.5):
        return Apply("norm", inner.args)
    return inner if node.fn == "abs" else node


COMMUTATIVE = ("+", "*", "dot", "min", "max")
EVEN = ("norm", "sqnorm", "abs")  # f(a - b) = f(b - a)


def normal(node: Node) -> Node:
    """``node`` with commutative arguments sorted, even functions of a difference oriented and
    index conditions in one form (``b != a`` as ``a != b``, ``a < b`` as ``a <= b - 1``,
    ``b > a`` as ``a <= b - 1``), inside reductions too: equal spellings of these kinds
    compare equal (with :func:`key`, whatever the bound indices' names)."""
    if isinstance(node, Reduce):
        conditions = tuple(sorted((normal_condition(c) for c in node.conditions), key=repr))
        return replace(node, body=normal(node.body), conditions=conditions)
    if not isinstance(node, Apply):
        return node
    args = tuple(normal(a) for a in node.args)
    if node.fn == "dot" and args[0] == args[1]:  # x.x = |x|^2
        return Apply("sqnorm", args[:1])
    if node.fn in COMMUTATIVE:
        args = tuple(sorted(args, key=repr))
    inner = args[0] if len(args) == 1 else None
    if node.fn in EVEN and isinstance(inner, Apply) and inner.fn == "-":
        args = (Apply("-", tuple(sorted(inner.args, key=repr))),)
    return Apply(node.fn, args)


def normal_condition(c: Condition) -> Condition:
    """``left op right + shift`` as ``<=``, ``!=`` or ``==`` (order tests between integers:
    ``<`` is ``<=`` one less), two indices in sorted order, a constant with its shift."""
    left, op, right, shift = c.left, c.op, c.right, c.shift
    if op in (">", ">=") and not (isinstance(right, str) and right != SEQUENCE):
        if op == ">":  # t > 1 is t >= 2
            op, shift = ">=", shift + 1
        if isinstance(right, int):
            right, shift = right + shift, 0
        return Condition(left, op, right, shift)  # a lower bound stays one
    if op in (">", ">="):  # left > right + s  <=>  right < left - s
        left, right, shift, op = right, left, -shift, "<" if op == ">" else "<="
    if op == "<":
        op, shift = "<=", shift - 1
    if isinstance(right, int):  # t <= 3 - 1 is t <= 2
        right, shift = right + shift, 0
    two = isinstance(right, str) and right != SEQUENCE
    if op in ("!=", "==") and two and str(right) < str(left):
        left, right, shift = right, left, -shift
    return Condition(left, op, right, shift)


def collect(node: Node) -> Node:
    """Identical additive terms as one, with the sum of their coefficients; a term whose
    coefficients cancel is dropped (0 when nothing is left)."""
    found = terms(node)
    grouped = collected(found)
    if len(grouped) == len(found) and all(c for c, _ in grouped.values()):
        return node
    return rebuilt(grouped)


Collected = dict[Node | None, tuple[Fraction, Node | None]]


def collected(found: list[tuple[Fraction, Node | None]]) -> Collected:
    """Per term's key (None: the constant), in order of appearance: the sum of its
    coefficients and its first spelling."""
    grouped: Collected = {}
    for coefficient, term in found:
        name = None if term is None else normal(key(term))
        total, first = grouped.get(name, (Fraction(0), term))
        grouped[name] = (total + coefficient, first)
    return grouped


def rebuilt(grouped: Collected) -> Node:
    """The sum of ``coefficient * term`` (0 when every coefficient is 0)."""
    parts: list[Node] = []
    for coefficient, term in grouped.values():
        if not coefficient:
            continue
        value = int(coefficient) if coefficient.denominator == 1 else float(coefficient)
        if term is None:
            parts.append(Const(value))
        else:
            parts.append(term if value == 1 else Apply("*", (Const(value), term)))
    out = parts[0] if parts else Const(0)
    for part in parts[1:]:
        out = Apply("+", (out, part))
    return out


def product_factors(node: Node) -> tuple[Fraction, list[Node]]:
    """``node`` as a constant times the product of its other factors (through ``*`` and a
    division by a constant): ``x * (2 * y) / 4`` is 1/2 and [x, y]."""
    if isinstance(node, Const):
        return Fraction(str(node.value)), []
    if isinstance(node, Apply) and node.fn == "*":
        scale, factors = Fraction(1), []
        for arg in node.args:
            more, found = product_factors(arg)
            scale, factors = scale * more, factors + found
        return scale, factors
    divisor = node.args[1] if isinstance(node, Apply) and node.fn == "/" else None
    if isinstance(divisor, Const) and divisor.value:
        scale, factors = product_factors(node.args[0])
        return scale / Fraction(str(divisor.value)), factors
    return Fraction(1), [node]


def terms(node: Node, coefficient: Fraction = Fraction(1)) -> list[tuple[Fraction, Node | None]]:
    """The additive terms of ``node`` with exact coefficients (None: the constant term)."""
    if isinstance(node, Const):
        return [(coefficient * Fraction(str(node.value)), None)]
    if isinstance(node, Apply):
        args = node.args
        if node.fn in ("+", "-"):
            sign = 1 if node.fn == "+" else -1
            return terms(args[0], coefficient) + terms(args[1], sign * coefficient)
        if node.fn == "neg":
            return terms(args[0], -coefficient)
        if node.fn == "*" and isinstance(args[0], Const):
            return terms(args[1], coefficient * Fraction(str(args[0].value)))
        if node.fn == "*" and isinstance(args[1], Const):
            return terms(args[0], coefficient * Fraction(str(args[1].value)))
        if node.fn == "/" and isinstance(args[1], Const) and args[1].value:
            return terms(args[0], coefficient / Fraction(str(args[1].value)))
        if node.fn in LINEAR_IN:
            return _expanded(node, coefficient)
    return [(coefficient, node)]


#: Functions linear in each vector argument (by position): expanded over sums, differences
#: and constant multiples, so that dot(x[a] + x[c], x[b]) is dot(x[a], x[b]) + dot(x[c], x[b])
LINEAR_IN = {"dot": (0, 1), "bilinear": (0, 2)}
MAX_EXPANDED = 64  # terms an expansion may make; beyond, the product is kept as written


def _expanded(node: Apply, coefficient: Fraction) -> list[tuple[Fraction, Node | None]]:
    """``coefficient * node`` for a function linear in its vector arguments, as the sum of
    its values at the arguments' additive terms (itself when that is one term, or when an
    argument holds a constant, which is not a vector)."""
    choices = []
    for i, arg in enumerate(node.args):
        found = terms(arg) if i in LINEAR_IN[node.fn] else [(Fraction(1), arg)]
        if any(term is None for _, term in found):
            return [(coefficient, node)]
        choices.append(found)
    if math.prod(len(c) for c in choices) > MAX_EXPANDED:
        return [(coefficient, node)]
    out = []
    for combination in itertools.product(*choices):
        scale = math.prod((c for c, _ in combination), start=coefficient)
        out.append((scale, Apply(node.fn, tuple(t for _, t in combination))))
    return out


def balanced(items: list[tuple[int, Node]]) -> Node:
    """The signed sum of ``items`` (the first one positive) as a tree of depth log2 n: what
    reads it recursively (the validator's evaluation) stays shallow however long the sum."""
    if len(items) == 1:
        return items[0][1]
    half = len(items) // 2
    left, right = balanced(items[:half]), items[half:]
    if right[0][0] < 0:  # a - (b - c) = a - b + c
        return Apply("-", (left, balanced([(-sign, n) for sign, n in right])))
    return Apply("+", (left, balanced(right)))


class UnionFind:
    """Connected groups of names, in the order the names were given."""

    def __init__(self, names):
        self.parent = {name: name for name in names}

    def find(self, name: str) -> str:
        while self.parent[name] != name:
            self.parent[name] = self.parent[self.parent[name]]
            name = self.parent[name]
        return name

    def join(self, names) -> None:
        names = sorted(names)
        for name in names[1:]:
            self.parent[self.find(name)] = self.find(names[0])

    def roots(self) -> list[str]:
        order = list(self.parent)
        return sorted({self.find(n) for n in self.parent}, key=order.index)

    def members(self, root: str) -> set[str]:
        return {n for n in self.parent if self.find(n) == root}


def planned_op(node: Reduce) -> str:
    """The op a reduction is planned as: an argmax or argmin over range indices only (its
    value an index of the target's parameters, not a token's position) as its max or min;
    anything else as written."""
    if node.op in ("argmax", "argmin") and not any(v.is_token for v in node.variables):
        return node.op.removeprefix("arg")
    return node.op


def reads(node: Node, name: str) -> set[int]:
    """The offsets at which ``node`` reads the token index ``name`` (conditions aside)."""
    if isinstance(node, Token):
        return {node.offset} if node.index == name else set()
    if isinstance(node, Apply):
        return set().union(*(reads(a, name) for a in node.args))
    if isinstance(node, Reduce):
        return reads(node.body, name)
    return set()


def ranges_kept(node: Reduce, body: Node) -> Reduce:
    """``node`` with ``body``, each of its token indices kept in the range the neighbours
    its body read gave it: ``x[s-1] - x[s-1]`` cancels, but s >= 2 stays (the validator
    evaluates the target as written; a review's fuzz found the range dropped)."""
    conditions = list(node.conditions)
    for v in node.variables:
        if not v.is_token:
            continue
        before, after = reads(node.body, v.name) | {0}, reads(body, v.name) | {0}
        if min(before) < min(after):
            conditions.append(Condition(v.name, ">=", 1 - min(before)))
        if max(before) > max(after):
            conditions.append(Condition(v.name, "<=", SEQUENCE, -max(before)))
    return replace(node, body=body, conditions=tuple(conditions))


#: The other extremum: a max of a term scaled by a negative number is a min.
OTHER_EXTREMUM = {"max": "min", "min": "max"}


def factored(node: Reduce) -> tuple[Fraction, Reduce]:
    """A max or min of one term times a constant c as (c, the max of the term), the min for
    c < 0: max(-x) and min(x) are one retrieval, and cancel where they should (a review found
    them planned twice); (1, the node) for anything else."""
    found = terms(node.body)
    if node.op not in ("max", "min") or len(found) != 1 or found[0][1] is None:
        return Fraction(1), node
    coefficient, term = found[0]
    if coefficient == 1:
        return Fraction(1), node
    op = node.op if coefficient > 0 else OTHER_EXTREMUM[node.op]
    return coefficient, replace(node, op=op, body=term)
