"""A retrieval spec -> why the validator cannot learn its target at the spec's size (before
anything trains): a position beyond the input, an evaluation too large, an operation the
evaluator (:mod:`.targets`) does not carry out, values not all finite or all equal."""

from __future__ import annotations

import math

import torch

from infoflow.retrieval.expression import Apply, Node, Reduce, Token
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.retrieval.text_to_expression import parse_target
from infoflow.validators.retrieval.targets import CHUNK, TargetFunction, sample_inputs

MAX_TARGET_BYTES = 2 * 2**30  # the largest tensor the evaluator may build


def footprint(tree: Node, seq_len: int, input_dim: int, chunk: int = CHUNK) -> int:
    """About the bytes of the largest tensor the evaluator builds for a chunk of sequences:
    one axis per index bound at that depth (T for tokens, the range for the others) and the
    vector's d, in float32."""

    def largest(node: Node, axes: int) -> int:
        if isinstance(node, Reduce):
            axes *= math.prod(seq_len if v.is_token else v.size for v in node.variables)
            return max(axes, largest(node.body, axes))
        if isinstance(node, Apply):
            return max([axes, *(largest(arg, axes) for arg in node.args)])
        return axes

    return chunk * largest(tree, 1) * input_dim * 4


def fixed_positions(tree: Node) -> set[int]:
    """The positions counted from the start that the target reads (``x[3]``), 1-based."""
    if isinstance(tree, Token):
        return {tree.index} if isinstance(tree.index, int) else set()
    if isinstance(tree, Reduce):
        return fixed_positions(tree.body)
    if isinstance(tree, Apply):
        return set().union(*(fixed_positions(arg) for arg in tree.args))
    return set()


_PROBLEMS: dict[str, str | None] = {}


def problem_at(point: RetrievalSpec) -> str | None:
    """:func:`cannot_evaluate`, once per target and size (the architecture plays no part)."""
    key = point.model_dump_json(exclude={"architecture", "description", "sweep", "epsilon"})
    if key not in _PROBLEMS:
        _PROBLEMS[key] = cannot_evaluate(point)
    return _PROBLEMS[key]


def cannot_evaluate(spec: RetrievalSpec) -> str | None:
    """Why the validator cannot learn this target at the spec's size (None when it can): an
    operation it does not evaluate, a position or coordinate beyond the input, tensors beyond
    MAX_TARGET_BYTES, values not all finite or all equal on sampled inputs."""
    seq_len, d = spec.seq_len or 16, spec.input_dim or 4
    tree = parse_target(spec.target, tuple(sorted(spec.params.items())))
    beyond = sorted(p for p in fixed_positions(tree) if p > seq_len)
    if beyond:
        return f"the target reads x[{beyond[0]}], beyond the T = {seq_len} trained at this scale"
    needed = footprint(tree, seq_len, d)
    if needed > MAX_TARGET_BYTES:
        return (
            f"evaluating the target at T = {seq_len} needs about {needed / 2**30:,.1f} GiB per "
            f"chunk of {CHUNK} sequences (the limit is {MAX_TARGET_BYTES / 2**30:g} GiB)"
        )
    x = sample_inputs(spec, 64, seq_len, torch.Generator().manual_seed(0))
    try:
        y = TargetFunction(spec, seed=0)(x)
    except NotImplementedError as exc:
        return f"the validator cannot evaluate this target yet: {exc}"
    except (RuntimeError, IndexError, ValueError) as exc:  # k beyond T, a coordinate beyond d
        return f"the target cannot be evaluated at T = {seq_len}, d = {d} ({exc})"
    finite = float(torch.isfinite(y).float().mean())
    if finite < 1:
        return (
            f"the target is not a finite number on {1 - finite:.0%} of sampled inputs "
            "(a logarithm or root of a negative number, a division by zero, an empty "
            "reduction?): there is nothing to regress on"
        )
    if float(y.reshape(len(y), -1).var(0).max()) == 0:
        return "the target is the same number on every sampled input (its terms cancel?)"
    return None
