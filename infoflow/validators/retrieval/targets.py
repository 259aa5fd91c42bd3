"""A parsed retrieval target -> a batched torch function, and the data it is trained on.

The engine's expression tree is evaluated on tensors, never as text: every bound index gets
its own tensor axis, reductions reduce those axes, conditions become masks. Fixed
parameters (``q``, ``A[i]``) are drawn once from the seed: vectors for ``dot`` (through sums,
differences and constant multiples: ``dot(p - 2 * q, x[t])``), matrices for the middle
argument of ``bilinear`` (``A - B`` too), scalars elsewhere. :mod:`.target_checks` says why a
target cannot be learned at a size (before anything trains).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from infoflow.retrieval.algebra import additive
from infoflow.retrieval.expression import SEQUENCE, Apply, Const, Node, Param, Reduce, Token
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.retrieval.text_to_expression import parse_target

Tensor = torch.Tensor
CHUNK = 256  # sequences evaluated at once


@dataclass(frozen=True)
class Axis:
    """A bound index and its tensor axis: over the tokens (positions 1..T) or a range."""

    name: str
    size: int
    is_token: bool


_ARITHMETIC = {"+": torch.add, "-": torch.sub, "*": torch.mul, "/": torch.div}
_ELEMENTWISE = {
    "neg": torch.neg,
    "abs": torch.abs,
    "exp": torch.exp,
    "log": torch.log,
    "sqrt": torch.sqrt,
    "relu": torch.relu,
    "tanh": torch.tanh,
}


class TargetFunction:
    """``f(x)`` for x of shape [batch, T, d]; returns [batch] or [batch, d]."""

    def __init__(
        self,
        spec: RetrievalSpec,
        seed: int,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float32,
    ):
        """``dtype``: of the parameters and of what the target is evaluated on (the same
        draws in any dtype: drawn in float32, then cast)."""
        self.dtype = dtype
        self.tree = parse_target(spec.target, tuple(sorted(spec.params.items())))
        self.d = spec.input_dim or 4
        self.squared_norm = spec.options.squared_norm
        self.device = torch.device(device)
        self._generator = torch.Generator().manual_seed(seed)  # parameters: the same anywhere
        self._params: dict[str, Tensor] = {}

    def __call__(self, x: Tensor, chunk: int = CHUNK) -> Tensor:
        """The target on x, ``chunk`` sequences at a time (pairs and triples grow as T^k)."""
        return torch.cat([self._evaluate(x[i : i + chunk]) for i in range(0, x.shape[0], chunk)])

    def _evaluate(self, x: Tensor) -> Tensor:
        self._x = x
        value, _ = self._eval(self.tree, [])
        return value.reshape(x.shape[0], *value.shape[1:])

    def term_values(self, x: Tensor) -> list[tuple[Node, Tensor]] | None:
        """The target's additive terms, each with its values on x (without the term's sign or
        constant factor, as :func:`~infoflow.retrieval.algebra.additive` splits them):
        [batch, D] for a sum over a range index of one token reduction (its copies side by
        side, column i at index value i), [batch, 1] for any other term; None for a vector
        target."""
        if self.output_dim(x.shape[1]) != 1:
            return None  # output_dim also draws the parameters, in evaluation's order
        return [(term, self._term_values(term, x)) for _, term in additive(self.tree)]

    def _term_values(self, term: Node, x: Tensor) -> Tensor:
        node, axes = term, []
        if _copies(term):
            node, axes = term.body, [Axis(v.name, v.size, False) for v in term.variables]
        out = []
        for start in range(0, x.shape[0], CHUNK):
            self._x = x[start : start + CHUNK]
            value, _ = self._eval(node, axes)
            rows = self._x.shape[0]
            out.append(value.expand(rows, *value.shape[1:]).reshape(rows, -1))
        return torch.cat(out)

    def parameter(self, name: str, index: tuple[int, ...], vdims: int, seq_len: int) -> Tensor:
        """The numbers of the parameter ``name[index]`` (a vector when ``vdims`` is 1, a
        matrix when 2), as the target uses them: drawn by evaluating the target once, in the
        order evaluation draws them."""
        if f"{name}/{vdims}" not in self._params:
            self(torch.zeros(1, seq_len, self.d, device=self.device, dtype=self.dtype))
        family = self._params.get(f"{name}/{vdims}")
        if family is None:
            raise KeyError(f"the target has no parameter {name} with {vdims} value dimension(s)")
        return family[index] if index else family

    def output_dim(self, seq_len: int) -> int:
        """1 for a scalar target, d for a vector one."""
        out = self(torch.zeros(1, seq_len, self.d, device=self.device, dtype=self.dtype))
        return 1 if out.dim() == 1 else out.shape[-1]

    # each value is (tensor, vdims): shape [B or 1, *one axis per bound index, *value dims]

    def _eval(self, node: Node, axes: list[Axis]) -> tuple[Tensor, int]:
        if isinstance(node, Const):
            value = torch.tensor(float(node.value), device=self.device, dtype=self.dtype)
            return self._lift(value, axes, 0), 0
        if isinstance(node, Token):
            return self._token(node, axes)
        if isinstance(node, Param):
            return self._param(node, axes, 0)
        if isinstance(node, Reduce):
            return self._reduce(node, axes)
        if isinstance(node, Apply):
            return self._apply(node, axes)
        raise TypeError(f"cannot evaluate {node!r}")  # pragma: no cover

    def _lift(self, t: Tensor, axes: list[Axis], vdims: int) -> Tensor:
        """Reshape a value without index axes to [1, 1 per axis, *value dims]."""
        return t.reshape((1,) + (1,) * len(axes) + tuple(t.shape[t.dim() - vdims :]))

    def _token(self, node: Token, axes: list[Axis]) -> tuple[Tensor, int]:
        x = self._x
        shape = [x.shape[0]] + [1] * len(axes) + [self.d]
        if node.is_fixed:
            position = node.index if isinstance(node.index, int) else x.shape[1] + node.offset
            t = x[:, position - 1, :].reshape(shape)
        else:
            shape[1 + [a.name for a in axes].index(node.index)] = x.shape[1]
            t = _shifted(x, node.offset).reshape(shape)
        if not node.component:
            return t, 1
        if len(node.component) > 1 or not isinstance(node.component[0], int):
            raise NotImplementedError("a coordinate must be one integer: x[t][0]")
        return t[..., node.component[0]], 0

    def _param(self, node: Param, axes: list[Axis], vdims: int) -> tuple[Tensor, int]:
        by_name = {a.name: a for a in axes}
        sizes = [i + 1 if isinstance(i, int) else by_name[i].size for i in node.index]
        key = f"{node.name}/{vdims}"
        family = self._params.get(key)
        if family is not None and family.dim() != len(sizes) + vdims:
            raise NotImplementedError(f"parameter {node.name} used with different index counts")
        drawn = () if family is None else family.shape[: len(sizes)]
        if family is None or any(s > f for s, f in zip(sizes, drawn, strict=True)):
            family = self._grown(key, sizes, vdims, family)
        # a range index takes the rows of its range, however far the family has grown
        rows = zip(node.index, sizes, strict=True)
        picked = family[tuple(slice(0, n) if isinstance(i, str) else i for i, n in rows)]
        positions = [[a.name for a in axes].index(i) for i in node.index if isinstance(i, str)]
        if positions != sorted(positions):
            raise NotImplementedError("parameters indexed out of binding order")
        shape = [1] + [1] * len(axes) + [self.d] * vdims
        for dim, axis in enumerate(positions):
            shape[1 + axis] = picked.shape[dim]
        return picked.reshape(shape), vdims

    def _grown(self, key: str, sizes: list[int], vdims: int, family: Tensor | None) -> Tensor:
        """The parameter family ``key`` drawn (or grown, keeping what was drawn before: w[0]
        then w[1]) to hold indices of ``sizes``."""
        old = sizes if family is None else family.shape[: len(sizes)]
        shape = (*(max(s, f) for s, f in zip(sizes, old, strict=True)), *[self.d] * vdims)
        scale = 1 / math.sqrt(self.d) if vdims else 1.0
        drawn = (torch.randn(shape, generator=self._generator) * scale).to(self.device, self.dtype)
        if family is not None:
            drawn[tuple(slice(0, n) for n in family.shape)] = family
        self._params[key] = drawn
        return drawn

    def _apply(self, node: Apply, axes: list[Axis]) -> tuple[Tensor, int]:
        fn = node.fn
        if fn == "bilinear":
            (a, _), (b, _) = self._eval(node.args[0], axes), self._eval(node.args[2], axes)
            m = self._matrix(node.args[1], axes)
            a, b = torch.broadcast_tensors(a, b)  # no [..., d, d] intermediate
            return torch.einsum("...i,...ij,...j->...", a, m, b), 0
        if fn == "dot":
            (a, _), (b, _) = (self._vector(arg, axes) for arg in node.args)
            return (a * b).sum(-1), 0
        args = [self._eval(arg, axes) for arg in node.args]
        vdims = max(v for _, v in args)
        values = [t if fn == "**" else t.reshape(t.shape + (1,) * (vdims - v)) for t, v in args]
        if fn in ("norm", "sqnorm"):
            squared = (values[0] ** 2).sum(-1)
            return (squared if fn == "sqnorm" or self.squared_norm else squared.sqrt()), 0
        if fn in _ELEMENTWISE:
            return _ELEMENTWISE[fn](values[0]), vdims
        if fn in ("min", "max"):
            op = torch.minimum if fn == "min" else torch.maximum
            out = values[0]
            for v in values[1:]:
                out = op(out, v)
            return out, vdims
        a, b = values
        if fn == "**":
            return a ** node.args[1].value, vdims
        return _ARITHMETIC[fn](a, b), vdims

    def _vector(self, node: Node, axes) -> tuple[Tensor, int]:
        """A dot's argument: a parameter there is a vector, through sums, differences and
        constant multiples too (``dot(p - 2 * q, x[t])``, as the engine expands it)."""
        return self._combined(node, axes, 1)

    def _matrix(self, node: Node, axes) -> Tensor:
        """Bilinear's middle argument: a parameter, or a combination of them (``A - B``)."""
        value, vdims = self._combined(node, axes, 2)
        if vdims != 2:
            raise NotImplementedError(
                "the middle argument of bilinear must be a parameter or a combination of them"
            )
        return value

    def _combined(self, node: Node, axes, vdims: int) -> tuple[Tensor, int]:
        """``node`` with each parameter it combines linearly taken with ``vdims`` value
        dimensions; anything else evaluated as elsewhere."""
        if isinstance(node, Param):
            return self._param(node, axes, vdims)
        if not isinstance(node, Apply) or node.fn not in ("+", "-", "neg", "*", "/"):
            return self._eval(node, axes)
        scaled = isinstance(node.args[-1], Const) or (
            node.fn == "*" and isinstance(node.args[0], Const)
        )
        if node.fn in ("*", "/") and not scaled:  # a product of two values: not linear
            return self._eval(node, axes)
        args = [self._combined(arg, axes, vdims) for arg in node.args]
        if node.fn == "neg":
            return -args[0][0], args[0][1]
        most = max(v for _, v in args)
        a, b = (t.reshape(t.shape + (1,) * (most - v)) for t, v in args)
        return _ARITHMETIC[node.fn](a, b), most

    def _reduce(self, node: Reduce, axes: list[Axis]) -> tuple[Tensor, int]:
        seq = self._x.shape[1]
        inner = axes + [Axis(v.name, v.size or seq, v.is_token) for v in node.variables]
        body, vdims = self._eval(node.body, inner)
        value_shape = list(body.shape[body.dim() - vdims :])
        body = body.expand([self._x.shape[0]] + [a.size for a in inner] + value_shape)
        dims = tuple(range(1 + len(axes), 1 + len(inner)))
        mask = self._mask(node, inner)
        op = node.op
        if op == "sum":  # filled, not multiplied: a -inf outside the range is not a nan
            outside = ~mask.reshape(mask.shape + (1,) * vdims).expand(body.shape)
            return body.masked_fill(outside, 0).sum(dims), vdims
        if vdims:
            raise NotImplementedError(f"{op} of a vector")
        if op in ("min", "max", "argmin", "argmax"):
            fill = math.inf if op.endswith("min") else -math.inf
            body = body.masked_fill(~mask.expand(body.shape), fill)
            if op in ("min", "max"):
                return (body.amin(dims) if op == "min" else body.amax(dims)), 0
            if len(dims) != 1:
                raise NotImplementedError(f"{op} over several indices")
            best = body.argmin(dims[0]) if op == "argmin" else body.argmax(dims[0])
            return (best + 1).to(body.dtype), 0
        if len(dims) != 1:  # pragma: no cover - the engine refuses these
            raise NotImplementedError(f"{op} over several indices")
        largest = op == "kth_largest"
        body = body.masked_fill(~mask.expand(body.shape), -math.inf if largest else math.inf)
        kth = body.topk(node.k, dim=dims[0], largest=largest).values
        return kth.select(dims[0], node.k - 1), 0

    def _mask(self, node: Reduce, inner: list[Axis]) -> Tensor:
        """Where the reduction's conditions hold; token indices count positions from 1."""
        shape = [1] + [a.size for a in inner]
        names = [a.name for a in inner]
        seq = self._x.shape[1]

        def index(value: str | int) -> Tensor:
            if isinstance(value, int) or value == SEQUENCE:
                return torch.tensor(seq if value == SEQUENCE else value, device=self.device)
            axis = inner[names.index(value)]
            view = [1] * len(shape)
            view[1 + names.index(value)] = axis.size
            positions = torch.arange(axis.size, device=self.device) + int(axis.is_token)
            return positions.reshape(view)

        compare = {
            "!=": torch.ne,
            "==": torch.eq,
            "<": torch.lt,
            "<=": torch.le,
            ">": torch.gt,
            ">=": torch.ge,
        }
        mask = torch.ones(shape, dtype=torch.bool, device=self.device)
        for c in node.conditions:
            mask = mask & compare[c.op](index(c.left), index(c.right) + c.shift)
        for name, offset in _offsets(node.body):  # x[t-1] exists from t = 2 on
            if name in [v.name for v in node.variables]:
                position = index(name) + offset
                mask = mask & (position >= 1) & (position <= seq)
        return mask


def _copies(term: Node) -> bool:
    """Whether ``term`` is a sum over range indices of one token reduction (its copies)."""
    return (
        isinstance(term, Reduce)
        and term.op == "sum"
        and not term.conditions
        and not any(v.is_token for v in term.variables)
        and isinstance(term.body, Reduce)
        and any(v.is_token for v in term.body.variables)
    )


def _shifted(x: Tensor, offset: int) -> Tensor:
    """x[:, p + offset] at position p, zero where that lies outside the sequence."""
    if offset == 0:
        return x
    out = torch.zeros_like(x)
    if offset < 0:
        out[:, -offset:] = x[:, : x.shape[1] + offset]
    else:
        out[:, : x.shape[1] - offset] = x[:, offset:]
    return out


def _offsets(node: Node) -> set[tuple[str, int]]:
    """(index, offset) of every neighbour ``x[t + offset]`` read in ``node``."""
    if isinstance(node, Token):
        return {(node.index, node.offset)} if node.offset and not node.is_fixed else set()
    if isinstance(node, Reduce):
        return _offsets(node.body)
    if isinstance(node, Apply):
        return set().union(*(_offsets(arg) for arg in node.args))
    return set()


def sample_inputs(spec: RetrievalSpec, batch: int, seq_len: int, generator) -> Tensor:
    """Tokens x ~ N(0, std^2 I), norms clamped as the spec's ``data`` says, drawn on the
    generator's device (so a GPU run makes its data on the GPU)."""
    d = spec.input_dim or 4
    x = torch.randn(batch, seq_len, d, generator=generator, device=generator.device)
    x = x * spec.data.std
    if spec.data.norm_clamp:
        low, high = spec.data.norm_clamp
        norms = x.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        x = x * (norms.clamp(low, high) / norms)
    return x
