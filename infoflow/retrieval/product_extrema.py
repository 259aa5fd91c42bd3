"""Expression -> expression: a max or min of a product of factors that are >= 0 on every draw
is the product of each factor's own extremum over the indices only it reads, a rewrite
before the canonical form (``reconstruction:canonical_form``).

For g >= 0, the max over a of g(b) f(a, b) is g(b) times the max over a of f(a, b) (the min
too), so ``max(norm(x[a] - x[b]) * norm(x[b] - x[c]) for a in T for b in T for c in T)`` is
the max over b of the farthest token from b, squared: order 2, one retrieval for the two
equal leaves (it was planned as order 3, not efficient at any size). A product is the log
domain's sum, and its factors eliminate as a sum's terms do. An index moves into its factor
only where no other factor reads it and its tests name no other index but an index that
stays outside, by ``!=`` (its range is then never empty where the target is not: a max
over nothing times a factor that may be 0 would be nan); a negative coefficient, or a
factor whose sign a draw decides, leaves the product as written.
"""

from __future__ import annotations

from fractions import Fraction

from infoflow.retrieval.algebra import collected, free_indices, key, normal, reads, rebuilt, terms
from infoflow.retrieval.expression import SEQUENCE, Apply, Const, Node, Reduce

EXTREMA = ("max", "min")
_POSITIVE = ("norm", "sqnorm", "abs", "exp", "relu")


def pushed(node: Reduce) -> Node:
    """``node`` with each index only one factor of its product reads moved into that factor
    (see the module's docstring); ``node`` itself where none moves."""
    found = terms(node.body)
    if node.op not in EXTREMA or len(found) != 1 or found[0][1] is None:
        return node
    (coefficient, term) = found[0]
    sign, factors = signed_factors(term)
    if coefficient * sign <= 0 or len(factors) < 2 or not all(map(nonnegative, factors)):
        return node
    own = {v.name for v in node.variables}
    readers = {
        v.name: [i for i, f in enumerate(factors) if v.name in free_indices(f)]
        for v in node.variables
    }
    stays = {name for name, found in readers.items() if len(found) > 1}
    moved: dict[int, list] = {}
    for v in node.variables:
        tests = [c for c in node.conditions if v.name in (c.left, c.right)]
        if len(readers[v.name]) == 1 and _never_empty(tests, v.name, stays, factors, readers):
            moved.setdefault(readers[v.name][0], []).append(v)
    if not moved or sum(1 for f in factors if free_indices(f) & own) < 2:
        return node  # one factor reads the indices: nothing to separate
    for i, variables in moved.items():
        names = {v.name for v in variables}
        tests = tuple(c for c in node.conditions if {c.left, c.right} & names)
        factors[i] = Reduce(node.op, tuple(variables), factors[i], tests)
    gone = {v.name for vs in moved.values() for v in vs}
    product = None
    for f, n in _powers(factors):
        f = f if n == 1 else Apply("**", (f, Const(n)))
        product = f if product is None else Apply("*", (product, f))
    body = rebuilt(collected([(Fraction(coefficient * sign), product)]))
    rest = tuple(v for v in node.variables if v.name not in gone)
    kept = tuple(c for c in node.conditions if not {c.left, c.right} & gone)
    if not rest:
        return node if kept else body  # a guard on an enclosing index needs an index to hold it
    return Reduce(node.op, rest, body, kept)


def _powers(factors: list[Node]) -> list[tuple[Node, int]]:
    """Equal factors (up to the names of their indices) as one, with how often it occurs:
    the farthest token from b times itself is its square, one retrieval."""
    found: dict[str, tuple[Node, int]] = {}
    for f in factors:
        name = repr(normal(key(f)))
        first, n = found.get(name, (f, 0))
        found[name] = (first, n + 1)
    return list(found.values())


def _never_empty(tests: list, name: str, stays: set[str], factors: list, readers: dict) -> bool:
    """Whether ``name``'s tests leave it a range that is never empty whatever the other
    indices: they name no other index (numbers and T aside: where they fail, the target runs
    over nothing), or the one test is ``name != u`` with u an index that stays outside and
    ``name`` is read at no offset (T - 1 values; beside ``name <= 1`` or ``x[name+1]`` it
    may be left none: a review found nan there)."""
    sides = [{x for x in (c.left, c.right) if isinstance(x, str) and x != SEQUENCE} for c in tests]
    if all(found == {name} for found in sides):
        return True
    (factor,) = [factors[i] for i in readers[name]]
    c = tests[0] if len(tests) == 1 else None
    return (
        c is not None
        and c.op == "!="
        and not c.shift
        and sides[0] - {name} <= stays
        and reads(factor, name) == {0}
    )


def is_product(node: Node) -> bool:
    return isinstance(node, Apply) and node.fn == "*"


def signed_factors(node: Node) -> tuple[int, list[Node]]:
    """The sign and the factors of a product, its own products flattened and its negations
    and negative numbers taken out into the sign."""
    if isinstance(node, Apply) and node.fn == "neg":
        sign, found = signed_factors(node.args[0])
        return -sign, found
    if isinstance(node, Const) and node.value < 0:
        return -1, [Const(-node.value)]
    if not is_product(node):
        return 1, [node]
    sign, found = 1, []
    for arg in node.args:
        s, f = signed_factors(arg)
        sign, found = sign * s, found + f
    return sign, found


def nonnegative(node: Node) -> bool:
    """Whether ``node`` is >= 0 and finite on every draw, by its form (a norm, an abs, exp,
    relu, an even power, a number >= 0, sums and products of these, an extremum or sum of
    one over a range its tests fix; nothing that divides, takes a log or a negative power)."""
    if isinstance(node, Const):
        return node.value >= 0
    if isinstance(node, Reduce):
        own = {v.name for v in node.variables}
        fixed = all(
            isinstance(side, int) or side in own or side == SEQUENCE
            for c in node.conditions
            for side in (c.left, c.right)
        )
        return node.op in (*EXTREMA, "sum") and fixed and nonnegative(node.body)
    if not isinstance(node, Apply) or not finite(node):
        return False
    if node.fn in _POSITIVE:
        return True
    if node.fn == "sqrt":  # nan below 0
        return nonnegative(node.args[0])
    if node.fn == "**":
        power = node.args[1]
        return isinstance(power, Const) and power.value == int(power.value) and power.value % 2 == 0
    return node.fn in ("+", "*") and all(nonnegative(arg) for arg in node.args)


def finite(node: Node) -> bool:
    """Whether nothing in ``node`` can be infinite where its arguments are finite: no
    division, log or negative power (1 / |x(s) - x(t)| is at s = t, and 0 times it nan)."""
    if isinstance(node, Reduce):
        return finite(node.body)
    if not isinstance(node, Apply):
        return True
    if node.fn in ("/", "log") or (node.fn == "**" and _negative(node.args[1])):
        return False
    return all(finite(arg) for arg in node.args)


def _negative(power: Node) -> bool:
    return not isinstance(power, Const) or power.value < 0
