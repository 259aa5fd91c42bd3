"""The expression tree a target is read into (:mod:`~infoflow.retrieval.text_to_expression`
makes it; :mod:`~infoflow.retrieval.expression_to_canonical` reads it), and the error a target
the engine does not accept raises."""

from __future__ import annotations

from dataclasses import dataclass

TOKENS = "x"  # the name of the token sequence
SEQUENCE = "T"  # the name of its length, and of the last position
KTH = frozenset({"kth_largest", "kth_smallest"})  # the k-th reductions


class TargetError(ValueError):
    """A target the engine does not accept; ``column`` is 1-based (0 when unknown)."""

    def __init__(self, message: str, column: int = 0):
        self.column = column
        super().__init__(f"at column {column}: {message}" if column else message)


@dataclass(frozen=True)
class Token:
    """``x[index + offset]``: index is a bound token variable, a fixed 1-based position, or
    ``T`` (the last position; offset <= 0)."""

    index: str | int
    component: tuple[str | int, ...] = ()
    offset: int = 0

    @property
    def is_fixed(self) -> bool:
        """A position that does not move with a bound index (``x[3]``, ``x[T - 1]``)."""
        return isinstance(self.index, int) or self.index == SEQUENCE

    def text(self) -> str:
        """``x[t-1]``, ``x[3]``, ``x[T]`` (without the coordinate)."""
        shift = f"{self.offset:+d}" if self.offset else ""
        return f"x[{self.index}{shift}]"


@dataclass(frozen=True)
class Param:
    """A fixed parameter (independent of the tokens), maybe indexed: ``q``, ``A[i]``."""

    name: str
    index: tuple[str | int, ...] = ()


@dataclass(frozen=True)
class Const:
    value: int | float


@dataclass(frozen=True)
class Apply:
    """A function or operator applied to arguments (``+``, ``dot``, ``norm``, ...)."""

    fn: str
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Variable:
    """A bound index: over the tokens (``size`` None) or over ``range(size)``."""

    name: str
    size: int | None = None

    @property
    def is_token(self) -> bool:
        return self.size is None


@dataclass(frozen=True)
class Condition:
    """``left op right + shift``: ``left`` a bound index, ``right`` a bound index, a constant
    or ``T`` (the last position). ``t < s + 3`` has shift 3; ``abs(s - t) <= w`` is read as
    two conditions."""

    left: str | int
    op: str
    right: str | int
    shift: int = 0

    def text(self, left: str | int | None = None, right: str | int | None = None) -> str:
        """``s <= t + 3`` (with the sides renamed when given)."""
        left = self.left if left is None else left
        right = self.right if right is None else right
        shift = f" {'+' if self.shift > 0 else '-'} {abs(self.shift)}" if self.shift else ""
        return f"{left} {self.op} {right}{shift}"


@dataclass(frozen=True)
class Window(Condition):
    """``abs(left - right) op shift`` (op ``<`` or ``<=``): the two conditions ``left op
    right + shift`` and ``right op left + shift`` that a window is read as, named as one
    where the engine plans them (:func:`~infoflow.retrieval.conditions.windows`)."""

    def text(self, left: str | int | None = None, right: str | int | None = None) -> str:
        """``abs(s - t) <= 2`` (with the sides renamed when given)."""
        left = self.left if left is None else left
        right = self.right if right is None else right
        return f"abs({left} - {right}) {self.op} {self.shift}"


@dataclass(frozen=True)
class Reduce:
    """A reduction over a generator: ``op(body for variables if conditions)``."""

    op: str
    variables: tuple[Variable, ...]
    body: Node
    conditions: tuple[Condition, ...] = ()
    k: int | None = None


Node = Token | Param | Const | Apply | Reduce
