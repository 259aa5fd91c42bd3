"""A pointwise max (min) of two branches -> the readout's MLP that takes the larger: a stage
of :mod:`~infoflow.retrieval.schedule_to_circuit`, for the engine's reading of a max whose
branches differ one reduction a branch (``max(abs(x[s][0] - x[t][1]) for s, t)`` as
max(max f - min g, max g - min f)).

Each branch is a sum of terms built as the target's are (a term two branches share, once),
and one ReLU of the MLP after the last of them joins them exactly: max(A, B) = A + relu(B -
A), min(A, B) = A - relu(A - B), A the branch of the smaller values (:func:`_size`). The
max of three is not one hidden layer's (max(0, x1, x2) has no such representation:
Mukherjee and Basu, 2017), so three branches or more are refused.
"""

from __future__ import annotations

from infoflow.retrieval.algebra import OTHER_EXTREMUM, collected, rebuilt, terms
from infoflow.retrieval.circuit import Circuit, Mlp, deferred_scales
from infoflow.retrieval.circuit_forms import Unbuildable
from infoflow.retrieval.expression import Apply, Node

#: A branch as compile built it: the channels the output reads, with their coefficients, and
#: its constant.
Built = tuple[list[tuple[str, float]], float]


def pointwise_branches(tree: Node) -> tuple[str, tuple[Node, ...]] | None:
    """(max or min, the branches) when one additive term of ``tree`` is a pointwise max or min
    (c max(A, B) + R is max(c A + R, c B + R) for c > 0, the min for c < 0); None otherwise."""
    found = terms(tree)
    at = [i for i, (_, t) in enumerate(found) if isinstance(t, Apply) and t.fn in OTHER_EXTREMUM]
    at = [i for i in at if len(found[i][1].args) > 1]
    if len(at) != 1:
        return None
    coefficient, node = found[at[0]]
    rest = found[: at[0]] + found[at[0] + 1 :]
    branches = tuple(
        rebuilt(collected([*rest, *((coefficient * c, t) for c, t in terms(arg))]))
        for arg in node.args
    )
    return (node.fn if coefficient > 0 else OTHER_EXTREMUM[node.fn]), branches


def join_branches(circuit: Circuit, fn: str, branches: list[Built]) -> None:
    """The output of ``circuit`` as the ``fn`` of two built ``branches``: the one of smaller
    values (:func:`_size`) read as it is, and one ReLU of the MLP of the first layer after
    every channel they read is written (a head's layer, or the layer after an MLP's)."""
    if len(branches) != 2:
        why = "one hidden layer takes the larger of two exactly, not of three"
        raise Unbuildable(f"a pointwise {fn} of {len(branches)} branches: {why}")
    scales = deferred_scales(circuit)
    (first, a), (second, b) = sorted(branches, key=lambda built: _size(built, scales))
    if any(circuit.channels[group] != 1 for group, _ in first + second):
        raise Unbuildable(f"a pointwise {fn} of vectors: it is taken of numbers")
    sign = 1.0 if fn == "max" else -1.0  # max(A, B) = A + relu(B - A); min: A - relu(A - B)
    weights: dict[str, float] = {}
    for group, coefficient in second:
        weights[group] = weights.get(group, 0.0) + sign * coefficient
    for group, coefficient in first:
        weights[group] = weights.get(group, 0.0) - sign * coefficient
    layer = max(_written(circuit, group) for group in weights)
    if layer > circuit.layers:
        raise Unbuildable(
            f"the {fn} of the branches needs a layer after their last ({layer - 1}): the "
            f"architecture has {circuit.layers}"
        )
    gap = circuit.add("branches.gap", 1)
    does = f"the readout's {'excess of the second branch' if sign > 0 else 'shortfall'}"
    circuit.mlps.append(
        Mlp(
            layer,
            "relu",
            tuple(weights),
            gap,
            does=f"{does} over the first into {gap}",
            weights=tuple(weights.values()),
            bias=sign * (b - a),
        )
    )
    circuit.output = [*first, (gap, sign)]
    circuit.constant = a


def _size(built: Built, scales: dict[str, float]) -> float:
    """How large a branch's values may be: its constant, and each channel's coefficient at
    the scale the output applies to it. The smaller branch is read as it is and the larger
    through the ReLU: where the smaller wins (a min of a sum and a product of sums) the ReLU
    is 0 and the output exact; read the other way the output was the product less nearly
    itself, LayerNorm's errors at the product's size (NMSE 0.02 to 95: a fuzz, 2026-12-07).
    ``scales``: the circuit's :func:`~infoflow.retrieval.circuit.deferred_scales`."""
    channels, constant = built
    return abs(constant) + sum(abs(c) * scales.get(group, 1.0) for group, c in channels)


def _written(circuit: Circuit, group: str) -> int:
    """The first layer whose MLP can read ``group``: the last layer a head writes it in, or
    the layer after the last MLP that writes it."""
    heads = [h.layer for h in circuit.heads for c in h.values if c.dest == group]
    mlps = [m.layer + 1 for m in circuit.mlps if m.output == group]
    return max(heads + mlps, default=1)
