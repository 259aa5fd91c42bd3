"""A condition's sides read as coefficients -> one :class:`~infoflow.retrieval.expression.
Condition` (``left op right + shift``), the stage of
:mod:`~infoflow.retrieval.text_to_expression` that puts an index condition in one form."""

from __future__ import annotations

from infoflow.retrieval.expression import SEQUENCE, Condition, TargetError

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
LINEAR = (
    "a condition compares an index with another index, a number or T, each shifted by a "
    "number: s < t + 2, t <= T - 1, abs(s - t) <= 4"
)


def as_condition(linear: dict[str, int], op: str, scope, column: int) -> Condition:
    """``linear op 0`` as ``left op right + shift`` (left an index with coefficient 1)."""
    constant, seq = linear.pop("", 0), linear.pop(SEQUENCE, 0)
    names = {n: c for n, c in linear.items() if c}
    if not names:  # t != t, 3 < 4: the same everywhere
        why = "a condition must compare a bound index"
        if linear:  # t != t: true nowhere, t == t everywhere
            why += f": {', '.join(sorted(linear))} is on both sides and cancels"
        raise TargetError(why, column)
    if all(c < 0 for c in names.values()):
        names = {n: -c for n, c in names.items()}
        constant, seq, op = -constant, -seq, _FLIP[op]
    ranges = {v.name for v in scope if not v.is_token}
    if len(names) == 1 and list(names.values()) == [1] and seq in (0, -1):
        (name,) = names
        if seq and name in ranges:
            raise TargetError(f"the range index {name!r} cannot be compared with T", column)
        return Condition(name, op, SEQUENCE, -constant) if seq else Condition(name, op, -constant)
    if len(names) == 2 and sorted(names.values()) == [-1, 1] and not seq:
        left, right = sorted(names, key=lambda n: -names[n])
        if op == "==" and constant:
            hint = f"{left} == {right} + {-constant}: read x[{right}{-constant:+d}] instead"
            raise TargetError(f"an index equal to another shifted ({hint})", column)
        return Condition(left, op, right, -constant)
    raise TargetError(LINEAR, column)
