"""Target text -> the engine's expression tree, by whitelist. Nothing is ever executed.

The language is Python expression syntax read by :func:`ast.parse`; only these forms pass:

- ``x[s]`` (token s, s bound by a generator ``for s in T``), ``x[s - 1]`` (its neighbour, a
  constant offset), ``x[3]`` (the fixed position 3, 1-based), ``x[T]`` and ``x[T - 1]`` (the
  last positions), ``x[s][0]`` (a coordinate); other free names are fixed parameters (``q``,
  ``A[i]``) or integer ``params`` of the spec (``D``).
- Reductions over generators: ``min``, ``max``, ``sum``, ``argmin``, ``argmax``,
  ``kth_largest(gen, k=K)``, ``kth_smallest(gen, k=K)`` (k = 1 read as ``max``, ``min``);
  generators run over ``T`` or ``range(n)`` with a constant n, with optional ``if``
  conditions comparing indices, each side an index, a number or ``T`` shifted by a number
  (``s < t``, ``t - s <= 4``, ``t < T``), or a window ``abs(s - t) <= w``.
- Functions: ``dot``, ``bilinear``, ``norm``, ``sqnorm``, ``abs``, ``exp``, ``log``, ``sqrt``,
  ``relu``, ``tanh``, and pointwise ``min``/``max`` of several arguments.
- Arithmetic ``+ - * /``, and ``**`` with a small constant exponent.

Anything else is a :class:`TargetError` that names the column of the offending part. Size
limits keep parsing fast on any input.
"""

from __future__ import annotations

import ast
import re
import warnings
from functools import lru_cache

from infoflow.retrieval.algebra import balanced
from infoflow.retrieval.expression import (
    SEQUENCE,
    TOKENS,
    Apply,
    Condition,
    Const,
    Node,
    Param,
    Reduce,
    TargetError,
    Token,
    Variable,
)
from infoflow.retrieval.text_to_conditions import LINEAR, as_condition

MAX_CHARS = 4000
MAX_NODES = 1000
MAX_DEPTH = 24
LONG_CHAIN = 16  # terms of a + b - c ... beyond which it is read as a balanced sum
MAX_EXPONENT = 16
MAX_CONSTANT = 10**6
MAX_K = 10**9
MAX_OFFSET = 64
MAX_RANGE = 10**4

REDUCTIONS = {"min", "max", "sum", "argmin", "argmax", "kth_largest", "kth_smallest"}
FUNCTIONS = {
    "dot": 2,
    "bilinear": 3,
    "norm": 1,
    "sqnorm": 1,
    "abs": 1,
    "exp": 1,
    "log": 1,
    "sqrt": 1,
    "relu": 1,
    "tanh": 1,
}
VECTORS = {"dot": (0, 1), "bilinear": (0, 2), "norm": (0,), "sqnorm": (0,)}  # by position
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_COMPARE = {ast.NotEq: "!=", ast.Eq: "==", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,15}")


def parse_target(text: str, params: tuple[tuple[str, int], ...] = ()) -> Node:
    """Parse ``text`` into the engine's tree; ``params`` are the spec's integer constants."""
    return _parse_cached(text, params)


@lru_cache(maxsize=1024)
def _parse_cached(text: str, params: tuple[tuple[str, int], ...]) -> Node:
    if not isinstance(text, str) or not text.strip():
        raise TargetError("the target is empty")
    if len(text) > MAX_CHARS:
        raise TargetError(f"the target is longer than {MAX_CHARS} characters")
    try:
        with warnings.catch_warnings():  # e.g. SyntaxWarning on '1 is 1': refused anyway
            warnings.simplefilter("ignore")
            tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise TargetError(f"not a valid expression ({exc.msg})", exc.offset or 0) from None
    except (RecursionError, MemoryError, ValueError):
        raise TargetError("the target is nested too deeply or is not text") from None
    count = sum(1 for _ in ast.walk(tree))
    if count > MAX_NODES:
        raise TargetError(f"the target has {count} syntax nodes; the limit is {MAX_NODES}")
    return _Reader(dict(params)).read(tree.body, frozenset(), 0)


class _Reader:
    """Turns whitelisted ``ast`` nodes into the engine's tree."""

    def __init__(self, params: dict[str, int]):
        self.params = params

    def read(self, node: ast.AST, bound: frozenset[Variable], depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise TargetError(f"nested deeper than {MAX_DEPTH} levels", _col(node))
        depth += 1
        if isinstance(node, ast.Constant):
            return Const(self._number(node))
        if isinstance(node, ast.Name):
            return self._name(node, bound)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, bound)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            operand = self.read(node.operand, bound, depth)
            if isinstance(node.op, ast.UAdd):
                return operand
            return Const(-operand.value) if isinstance(operand, Const) else Apply("neg", (operand,))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            op = _BINOPS[type(node.op)]
            if op == "**":
                exponent, sign = node.right, 1
                if isinstance(exponent, ast.UnaryOp) and isinstance(exponent.op, ast.USub):
                    exponent, sign = exponent.operand, -1  # x**-2: a number with its sign
                if not isinstance(exponent, ast.Constant):
                    raise TargetError("an exponent must be a number", _col(exponent))
                value = sign * self._number(exponent)
                if abs(value) > MAX_EXPONENT:
                    raise TargetError(f"exponent {value} is above {MAX_EXPONENT}", _col(exponent))
            chain = _chain(node) if op in "+-" else []
            if len(chain) > LONG_CHAIN:  # one level, read as a balanced sum (the same one)
                return balanced([(sign, self.read(n, bound, depth)) for sign, n in chain])
            # a chain a + b + c nests to the left as Python parses it: one level, not n
            left = self.read(node.left, bound, depth - 1 if len(chain) > 2 else depth)
            return Apply(op, (left, self.read(node.right, bound, depth)))
        if isinstance(node, ast.Call):
            return self._call(node, bound, depth)
        raise TargetError(_refusal(node), _col(node))

    def _number(self, node: ast.Constant) -> int | float:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TargetError(f"only numbers are allowed, not {value!r}", _col(node))
        if abs(value) > MAX_CONSTANT:
            shown = "(beyond a float's range)" if abs(value) == float("inf") else value  # 1e400
            raise TargetError(f"the constant {shown} is above {MAX_CONSTANT}", _col(node))
        return value

    def _identifier(self, node: ast.Name) -> str:
        name = node.id
        if "__" in name or not _NAME.fullmatch(name):
            raise TargetError(f"the name {name!r} is not allowed", _col(node))
        return name

    def _name(self, node: ast.Name, bound: frozenset[Variable]) -> Node:
        name = self._identifier(node)
        if name in self.params:
            return Const(self.params[name])
        if name == TOKENS:
            raise TargetError("x needs an index: x[t]", _col(node))
        if name == SEQUENCE or any(v.name == name for v in bound):
            raise TargetError(f"the index {name!r} can only subscript x or a parameter", _col(node))
        if name in FUNCTIONS or name in REDUCTIONS:
            raise TargetError(f"{name!r} is a function: call it", _col(node))
        return Param(name)

    def _subscript(self, node: ast.Subscript, bound: frozenset[Variable]) -> Node:
        slices: list[ast.AST] = []
        while isinstance(node, ast.Subscript):
            slices.insert(0, node.slice)
            node = node.value
        if isinstance(node, ast.Name) and node.id == TOKENS:
            index, offset = self._position(slices[0], bound)
            component = tuple(self._index(s, bound) for s in slices[1:])
            return Token(index, component, offset)
        indices = [self._index(s, bound) for s in slices]
        if not isinstance(node, ast.Name):
            raise TargetError("only x[...] and parameters can be indexed", _col(node))
        name = self._identifier(node)
        if name in self.params or name == SEQUENCE or name in FUNCTIONS or name in REDUCTIONS:
            raise TargetError(f"{name!r} cannot be indexed", _col(node))
        if any(_is_token_variable(i, bound) for i in indices if isinstance(i, str)):
            raise TargetError(f"parameter {name!r} cannot depend on a token index", _col(node))
        return Param(name, tuple(indices))

    def _position(self, node: ast.AST, bound: frozenset[Variable]) -> tuple[str | int, int]:
        """The index of x: a token variable, a fixed position or T, plus a constant offset."""
        offset = 0
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
            if not isinstance(node.right, ast.Constant):
                raise TargetError("x[...] takes an index plus or minus a number", _col(node))
            value = self._number(node.right)
            if not isinstance(value, int) or not 1 <= value <= MAX_OFFSET:
                raise TargetError(f"an offset must be an integer in 1..{MAX_OFFSET}", _col(node))
            offset = value if isinstance(node.op, ast.Add) else -value
            node = node.left
        if isinstance(node, ast.Name) and node.id == SEQUENCE:
            if offset > 0:
                message = f"x[T + {offset}] lies beyond the sequence (x[T] is its last token)"
                raise TargetError(message, _col(node))
            return SEQUENCE, offset
        index = self._index(node, bound)
        if isinstance(index, str) and not _is_token_variable(index, bound):
            raise TargetError(f"x is indexed by {index!r}, not a token index", _col(node))
        if isinstance(index, int):
            if offset:
                raise TargetError(f"write x[{index + offset}], not an offset", _col(node))
            if index < 1:
                raise TargetError("positions are 1-based: x[1] is the first token", _col(node))
        return index, offset

    def _index(self, node: ast.AST, bound: frozenset[Variable]) -> str | int:
        if isinstance(node, ast.Constant):
            value = self._number(node)
            if not isinstance(value, int):
                raise TargetError("an index must be an integer", _col(node))
            return value
        if isinstance(node, ast.Name):
            name = self._identifier(node)
            if name in self.params:
                return self.params[name]
            if any(v.name == name for v in bound):
                return name
            raise TargetError(f"the index {name!r} is not bound by a generator", _col(node))
        raise TargetError("an index must be a bound name or an unsigned integer", _col(node))

    def _call(self, node: ast.Call, bound: frozenset[Variable], depth: int) -> Node:
        if not isinstance(node.func, ast.Name):
            raise TargetError(_refusal(node.func), _col(node.func))
        fn = self._identifier(node.func)
        generators = [a for a in node.args if isinstance(a, ast.GeneratorExp)]
        if fn in REDUCTIONS and generators:
            return self._reduce(fn, node, bound, depth)
        if node.keywords:
            raise TargetError(f"{fn}() takes no keyword arguments", _col(node))
        if fn in ("min", "max") and len(node.args) >= 2:
            return Apply(fn, tuple(self.read(a, bound, depth) for a in node.args))
        if fn in REDUCTIONS:
            for arg in node.args:
                self.read(arg, bound, depth)  # refuses list comprehensions with a hint
            raise TargetError(f"{fn}() reduces a generator: {fn}(f for t in T)", _col(node))
        if fn not in FUNCTIONS:
            known = ", ".join(sorted(set(FUNCTIONS) | REDUCTIONS))
            raise TargetError(f"unknown function {fn!r}; known: {known}", _col(node.func))
        if len(node.args) != FUNCTIONS[fn]:
            raise TargetError(f"{fn}() takes {FUNCTIONS[fn]} arguments", _col(node))
        args = tuple(self.read(a, bound, depth) for a in node.args)
        for i in VECTORS.get(fn, ()):
            if isinstance(args[i], Const):  # a number, or a spec param (which is one)
                shown = ast.unparse(node.args[i])
                message = f"{fn}() takes vectors; {shown} is a number (a constant or a spec param)"
                raise TargetError(message, _col(node.args[i]))
        return Apply(fn, args)

    def _reduce(self, fn: str, node: ast.Call, bound: frozenset[Variable], depth: int) -> Node:
        kth = fn.startswith("kth_")
        if len(node.args) != 1:
            raise TargetError(f"{fn}() takes one generator", _col(node))
        k = None
        for keyword in node.keywords:
            if not kth or keyword.arg != "k" or k is not None:  # k twice: the last one won
                why = "is given k twice" if kth and keyword.arg == "k" else "takes no such keyword"
                raise TargetError(f"{fn}() {why}", _col(keyword.value))
            value = keyword.value
            if isinstance(value, ast.Name) and value.id in self.params:
                k = self.params[value.id]  # a spec parameter: k=K with params {"K": 2}
            elif isinstance(value, ast.Constant):
                k = value.value
            else:
                message = f"k must be an integer from 1 to {MAX_K:,} or a parameter of the spec"
                raise TargetError(message, _col(value))
            if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
                message = f"k must be an integer from 1 to {MAX_K:,}"
                raise TargetError(message, _col(keyword.value))
        if kth and k is None:
            raise TargetError(f"{fn}() needs k=...", _col(node))
        gen = node.args[0]
        variables: list[Variable] = []
        conditions: list[Condition] = []
        scope = set(bound)
        for comp in gen.generators:
            if comp.is_async or not isinstance(comp.target, ast.Name):
                raise TargetError("a generator binds one plain name", _col(comp.target))
            name = self._identifier(comp.target)
            taken = {v.name for v in scope} | set(self.params) | {TOKENS, SEQUENCE}
            if name in taken or name in FUNCTIONS or name in REDUCTIONS:
                raise TargetError(f"the index {name!r} is already taken", _col(comp.target))
            variable = Variable(name, self._domain(comp.iter))
            variables.append(variable)
            scope.add(variable)
            for test in comp.ifs:
                conditions.extend(self._conditions(test, frozenset(scope)))
        body = self.read(gen.elt, frozenset(scope), depth)
        if k == 1:  # the largest is the max: one function, one spelling
            fn, k = ("max" if fn == "kth_largest" else "min"), None
        return Reduce(fn, tuple(variables), body, tuple(conditions), k)

    def _domain(self, node: ast.AST) -> int | None:
        if isinstance(node, ast.Name) and node.id == SEQUENCE:
            return None
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "range"
            and len(node.args) == 1
            and not node.keywords
        ):
            arg = node.args[0]
            if isinstance(arg, ast.Name) and arg.id in self.params:
                size = self.params[arg.id]
            elif isinstance(arg, ast.Constant):
                size = self._number(arg)
            else:
                raise TargetError("range() takes a constant or a spec param", _col(arg))
            if not isinstance(size, int) or not 1 <= size <= MAX_RANGE:
                raise TargetError(f"range size must be an integer in 1..{MAX_RANGE}", _col(arg))
            return size
        raise TargetError("a generator runs over T or range(n)", _col(node))

    def _conditions(self, node: ast.AST, scope: frozenset[Variable]) -> list[Condition]:
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            return [c for value in node.values for c in self._conditions(value, scope)]
        if isinstance(node, ast.Compare) and len(node.ops) > 1:
            message = "one comparison a condition: write 'if 3 < t if t < 5', not '3 < t < 5'"
            raise TargetError(message, _col(node))
        if not (isinstance(node, ast.Compare) and type(node.ops[0]) in _COMPARE):
            message = "a condition is one comparison of indices (s != t, t <= T - 1); "
            raise TargetError(message + "'not', 'or' and bare names are not read", _col(node))
        op, left, right = _COMPARE[type(node.ops[0])], node.left, node.comparators[0]
        if isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == "abs":
            return self._window(left, op, right, scope)
        linear = self._linear(left, scope, 1)
        for name, coefficient in self._linear(right, scope, -1).items():
            linear[name] = linear.get(name, 0) + coefficient
        return [as_condition(linear, op, scope, _col(node))]

    def _window(self, node: ast.Call, op: str, right: ast.AST, scope) -> list[Condition]:
        """``abs(s - t) <= w``: the two conditions s - t <= w and t - s <= w."""
        width = self._linear(right, scope, 1)
        if op not in ("<", "<=") or len(node.args) != 1 or set(width) - {""}:
            message = "a window is written abs(s - t) <= w (or <), with w a number"
            raise TargetError(message, _col(node))
        inside = self._linear(node.args[0], scope, 1)
        out = []
        for sign in (1, -1):
            linear = {name: sign * c for name, c in inside.items()}
            linear[""] = linear.get("", 0) - width.get("", 0)
            out.append(as_condition(linear, op, scope, _col(node)))
        return out

    def _linear(self, node: ast.AST, scope, sign: int) -> dict[str, int]:
        """A side of a condition as coefficients: {"t": 1, "s": -1, "T": 0, "": 3}."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
            out = self._linear(node.left, scope, sign)
            flip = -sign if isinstance(node.op, ast.Sub) else sign
            for name, coefficient in self._linear(node.right, scope, flip).items():
                out[name] = out.get(name, 0) + coefficient
            return out
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return self._linear(node.operand, scope, -sign)
        if isinstance(node, ast.Name) and node.id == SEQUENCE:
            return {SEQUENCE: sign}
        if not isinstance(node, ast.Name | ast.Constant):
            raise TargetError(LINEAR, _col(node))
        index = self._index(node, scope)
        return {"": sign * index} if isinstance(index, int) else {index: sign}


def _chain(node: ast.BinOp) -> list[tuple[int, ast.AST]]:
    """The terms of ``a + b - c ...`` with their signs, in order."""
    out = []
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        out.append((1 if isinstance(node.op, ast.Add) else -1, node.right))
        node = node.left
    return [(1, node), *out[::-1]]


def _is_token_variable(name: str, bound: frozenset[Variable]) -> bool:
    return any(v.name == name and v.is_token for v in bound)


def _col(node: ast.AST) -> int:
    return getattr(node, "col_offset", -1) + 1


def _refusal(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        name = node.attr if node.attr not in ("matmul", "inner") else "dot"
        if name in FUNCTIONS or name in REDUCTIONS or name in ("amax", "amin"):
            plain = {"amax": "max", "amin": "min"}.get(name, name)
            return f"attribute access is not allowed: write {plain}(...), which the target has"
        return "attribute access is not allowed"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return "@ is not part of the target language: write dot(a, b), or bilinear(a, A, b)"
    if isinstance(node, ast.Lambda):
        return "lambdas are not allowed"
    if isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp):
        return "write reductions as generators: min(f for t in T)"
    return f"{type(node).__name__} is not part of the target language"
