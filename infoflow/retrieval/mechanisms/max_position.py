"""Max-position retrieval: a min or max over tokens, read as variable elimination in a
min-sum problem ([R] ``variable_elimination``). Eliminating index v is one head (step
``retrieve``) in which every token holding the one other index v's factors touch, or the
readout when none is left, retrieves the best v. The elimination tree may be rooted at any
of the comparison's indices ([R] ``sequential_schedule``): a chain a-b-c rooted at b runs in
layers [2, 1], rooted at a in [1, 1, 1]. A retrieval costs nothing of its own in the
exponent: what it brings is decoded with the rest of the readout's state (Theorem 3). It
cannot resolve a comparison of order above 2 (a triangle): no chain of retrievals does, and
global aggregation takes over.
"""

from __future__ import annotations

from dataclasses import replace

import sympy

from infoflow.retrieval.canonical_to_tree import order
from infoflow.retrieval.circuit import (
    ANCHOR,
    CONST,
    EVERY_TOKEN,
    MASK,
    MIRROR,
    POSITION_NUMBER,
    POSITIONS,
    SELF_PENALTY,
    SQNORM,
    THE_READOUT,
    TOKENS,
    Circuit,
    Copy,
    Form,
    Head,
    Mlp,
)
from infoflow.retrieval.mechanisms.base import copies, holder, left_out, tagged
from infoflow.retrieval.types import (
    PLANNER,
    SCHEDULES,
    Comparison,
    CostOptions,
    Placement,
    Schedule,
    Step,
)

NAME = "max-position retrieval"
EDGES = {"retrieve": "max-position"}  # step kind -> the DAG's propagation mode


def limit(c: Comparison, separable_sum: str = "pool") -> str:
    """Why no chain of retrievals resolves ``c`` ('' when one does)."""
    if order(c) > 2:
        return f"order {order(c)}: no chain of max-position retrievals resolves it"
    return ""


def own_steps(c: Comparison, to: str | None, heads: int, ranks: dict) -> list[list]:
    """Every elimination tree of ``c`` whose result goes to ``to``, one per root (the
    enclosing indices, else every own index): its steps as (step, factors consumed), in
    elimination order."""
    roots = sorted(c.free) if c.free else list(c.variables)
    return [_rooted(c, root, to, heads) for root in roots]


def _rooted(c: Comparison, root: str, to: str | None, heads: int) -> list:
    """The elimination tree of ``c`` rooted at ``root`` (an own index, or the enclosing index
    the result goes to): (step, factors consumed) in elimination order."""
    edges: dict[str, set[str]] = {v: set() for v in (*c.variables, *c.free)}
    for f in c.factors:
        if len(f.scope) == 2:
            a, b = sorted(f.scope)
            edges[a].add(b)
            edges[b].add(a)
    parent, depth, queue = {root: None}, {root: 0}, [root]
    for v in queue:
        for u in sorted(edges[v]):
            if u not in parent:
                parent[u], depth[u] = v, depth[v] + 1
                queue.append(u)
    own = [v for v in reversed(queue) if v in c.variables]
    consumed: dict[str, list[int]] = {v: [] for v in own}
    for i, f in enumerate(c.factors):
        consumed[max((v for v in f.scope if v in c.variables), key=depth.get)].append(i)
    steps = []
    for v in own:
        up = parent[v] if parent[v] in c.variables else to
        steps.append((Step("retrieve", heads, 1, v, up, None, c), tuple(consumed[v])))
    return steps


def labels(step: Step, placement: Placement) -> list[str]:
    """What the step brings to whoever holds its result: ``s*(t*)``, the best s for t."""
    return [f"{step.variable}*{tagged(placement)}{holder(step, placement)}{copies(step)}"]


def sentence(step: Step, placement: Placement, j: int, who: str) -> str:
    """The step in explain's words, with its provenance."""
    tag = SCHEDULES if placement.sequential else PLANNER
    mine, extra = left_out(step, placement)
    return (
        f"{step.heads} head(s): {who} retrieves the best {step.variable}{mine} for "
        f"{placement.label} [{tag}{extra}]"
    )


def edge_cost(schedule: Schedule, part: str, layer: int, options: CostOptions) -> sympy.Expr:
    """A retrieval's edge adds nothing to the exponent."""
    return sympy.Integer(0)


def circuit_single(
    c: Circuit, tag: str, matrix: str, sign: int, skip: str = ""
) -> tuple[list[Head], list[Mlp]]:
    """Order 1, compiled: the readout's logit on token t is beta * sign * (M x(t)), less
    SELF_PENALTY on the positions the flag ``skip`` marks (if any); it copies M x(t*) into
    ``tag.out``. Its error falls as beta grows (the softmax tends to the max)."""
    out = c.add(f"{tag}.out", 1)
    head = Head(
        1,
        -1,
        "max-position retrieval",
        THE_READOUT,
        f"retrieves the best t and copies its score into {out}",
        score=(Form(ANCHOR, TOKENS, matrix, sign), *_skipped(skip)),
        values=(Copy(TOKENS, out, matrix),),
    )
    return [head], []


def circuit_norm_single(
    c: Circuit, tag: str, sign: int, squared: bool, scale: float = 1.0, skip: str = ""
) -> tuple[list[Head], list[Mlp]]:
    """Order 1 on a token's own norm, compiled (the diagonal's value of a pair: the max of
    x(s).x(t) is the largest |x|^2): the readout's logit on token t is beta * sign * |x(t)|^2,
    read from LayerNorm's scale (:data:`SQNORM`, as a norm pair's key), less SELF_PENALTY on
    the positions the flag ``skip`` marks (if any), and it copies ``scale`` |x(t*)|^2; the
    layer's MLP takes the square root (unless the norm is squared)."""
    c.add(MIRROR, c.channels[TOKENS])
    c.add(CONST, 1)
    square = c.add(f"{tag}.out" if squared else f"{tag}.square", 1)
    head = Head(
        1,
        -1,
        "max-position retrieval",
        THE_READOUT,
        f"retrieves the best t by |x(t)|^2 (read from LayerNorm's scale) into {square}",
        score=(Form(ANCHOR, SQNORM, "I", sign), *_skipped(skip)),
        values=(Copy(SQNORM, square, "I", scale),),
    )
    if squared:
        return [head], []
    out = c.add(f"{tag}.out", 1)
    return [head], [Mlp(1, "root", (square,), out, does=f"the square root of {square}")]


def circuit_fixed_query(
    c: Circuit, tag: str, query: str, matrix: str, sign: int, skip: str = ""
) -> tuple[list[Head], list[Mlp]]:
    """Order 1 against a fixed position the readout fetched into ``query`` (layer 1),
    compiled: in layer 2 the readout's logit on token t is beta * sign * query^T M x(t)
    (less SELF_PENALTY where ``skip`` marks), it copies x(t*) into ``tag.partner``, and the
    layer's MLP decodes ``tag.out`` = query^T M partner by regression."""
    partner = c.add(f"{tag}.partner", c.channels[TOKENS])
    out = c.add(f"{tag}.out", 1)
    head = Head(
        2,
        -1,
        "max-position retrieval",
        THE_READOUT,
        f"the readout retrieves the best t by {query} and copies it into {partner}",
        score=(Form(query, TOKENS, matrix, sign), *_skipped(skip)),
        values=(Copy(TOKENS, partner),),
    )
    decode = Mlp(2, "decode", (query, partner), out, matrix, does=f"{query}^T {matrix} x(t*)")
    return [head], [decode]


def _skipped(skip: str) -> tuple[Form, ...]:
    """The readout's penalty on the positions the flag ``skip`` marks (none without one)."""
    return (Form(ANCHOR, skip, "I", -1, SELF_PENALTY),) if skip else ()


def circuit_argmax(
    c: Circuit,
    tag: str,
    query: str,
    matrix: str,
    sign: int,
    shift: int,
    layer: int,
    seq_len: int,
    skip: str = "",
) -> tuple[list[Head], list[Mlp]]:
    """An argmax (``sign`` +1) or argmin (-1) over one token, compiled: the readout's logit on
    token t is beta * sign * query^T M x(t) (``query``: the anchor for a linear score M x(t),
    or the fixed position a head fetched), less SELF_PENALTY on the positions the flag
    ``skip`` marks (if any); it copies t's position (:data:`POSITION_NUMBER`, t / T, times
    ``seq_len``) plus ``shift`` (an index read at an offset o returns t - o) into
    ``tag.out``, in ``layer``."""
    out = c.add(f"{tag}.out", 1)
    score = (Form(query, TOKENS, matrix, sign), *_skipped(skip))
    values = (Copy(c.add(POSITION_NUMBER, 1), out, "I", float(seq_len)),)
    if shift:
        values += (Copy(ANCHOR, out, "I", float(shift)),)
    plus = f" {'+' if shift > 0 else '-'} {abs(shift)}" if shift else ""
    does = f"the readout retrieves the best t and copies its position{plus} into {out}"
    return [Head(layer, -1, "max-position retrieval", THE_READOUT, does, score, values)], []


def circuit_pair(
    c: Circuit, tag: str, matrix: str, sign: int, exclude_self: int = 0, window: str = ""
) -> tuple[list[Head], list[Mlp]]:
    """Order 2, compiled: in layer 1 every token s retrieves its best partner t (logit beta *
    sign * x(s)^T M x(t)) into ``tag.partner``, and the MLP decodes ``tag.value`` =
    x(s)^T M partner by regression (the decode step, the construction's size); in layer 2
    the readout retrieves the best s by that value and copies it into ``tag.out``. With
    ``exclude_self`` = T (the target says s != t; positional encoding), the first score also
    has -SELF_PENALTY pos(s).pos(t) over the T position channels: t = s never wins. With
    ``window`` (a mask of ``c``: the pairs the target's conditions leave out, and a row
    ``window.alone`` of the tokens left without a partner), the first score has -SELF_PENALTY
    on every pair the mask leaves out instead, and the readout's on every token alone."""
    partner = c.add(f"{tag}.partner", c.channels[TOKENS])
    value, out = c.add(f"{tag}.value", 1), c.add(f"{tag}.out", 1)
    score, other = self_penalty(c, (Form(TOKENS, TOKENS, matrix, sign),), exclude_self, window)
    first = Head(
        1,
        -1,
        "max-position retrieval",
        EVERY_TOKEN,
        f"every token s retrieves its best t{other} into {partner}",
        score=score,
        values=(Copy(TOKENS, partner),),
    )
    decode = Mlp(1, "decode", (TOKENS, partner), value, matrix, does=f"x(s)^T {matrix} x(t*(s))")
    return [first, alone(c, best_value(out, sign, value), window)], [decode]


def circuit_star(
    c: Circuit,
    tag: str,
    hub: str,
    scores: list[tuple[str, str, int, int, int]],
    best: int,
    last: int,
) -> tuple[list[Head], list[Mlp]]:
    """A star, compiled (``scores``: (leaf_i, M_i, sign_i, layer_i, n_i), the target's term i
    being sign_i x(hub)^T M_i x(leaf_i), n_i times: n_i leaves with one score are one
    retrieval; ``best``: +1 for a max, -1 for a min): in layer_i every token retrieves leaf
    i's best partner by its own head (logit beta * best * sign_i * x^T M_i x(t)) into
    ``tag.partner<i>``, and that layer's MLP decodes ``tag.value<i>`` = x^T M_i partner; in
    layer ``last`` the readout retrieves the best centre by the sum of the values times
    sign_i n_i and copies that sum into ``tag.out``. The leaves are independent given the
    centre, so the max over all of them is the max over the centre of each leaf's own max,
    whether the leaves are retrieved side by side or one a layer."""
    out = c.add(f"{tag}.out", 1)
    heads, mlps, total = [], [], []
    for i, (leaf, matrix, sign, layer, times) in enumerate(scores, 1):
        partner = c.add(f"{tag}.partner{i}", c.channels[TOKENS])
        value = c.add(f"{tag}.value{i}", 1)
        does = f"every token {hub} retrieves its best {leaf} into {partner}"
        score = (Form(TOKENS, TOKENS, matrix, best * sign),)
        copy = (Copy(TOKENS, partner),)
        heads.append(Head(layer, -1, "max-position retrieval", EVERY_TOKEN, does, score, copy))
        does = f"x({hub})^T {matrix} x({leaf}*)"
        mlps.append(Mlp(layer, "decode", (TOKENS, partner), value, matrix, does=does))
        total.append((value, sign * times))
    does = f"the readout retrieves the best centre by its leaves' values, their sum into {out}"
    score = tuple(Form(ANCHOR, v, "I", best * sign) for v, sign in total)
    values = tuple(Copy(v, out, "I", float(sign)) for v, sign in total)
    heads.append(Head(last, -1, "max-position retrieval", THE_READOUT, does, score, values))
    return heads, mlps


def circuit_norm_pair(
    c: Circuit,
    tag: str,
    plus: int,
    squared: bool,
    sign: int,
    exclude_self: int = 0,
    window: str = "",
) -> tuple[list[Head], list[Mlp]]:
    """Order 2 on a norm, compiled: ``||x(s) + plus * x(t)||`` (squared or not), whose square
    is ``|x(s)|^2 + 2 plus x(s).x(t) + |x(t)|^2``. In layer 1 every token s retrieves its best
    t by the logit beta * sign * (2 plus x(s).x(t) + |x(t)|^2) (the first term is the same for
    every t), the key's |x(t)|^2 read from LayerNorm's scale (:data:`SQNORM`), and copies
    x(t) into ``tag.partner`` and |x(t)|^2 into ``tag.key``: what the softmax blends, it
    blends linearly in the score. The MLP decodes the rest, |x(s)|^2 + 2 plus x(s).partner,
    into ``tag.value``; in layer 2 the readout retrieves the best s by value + key and copies
    their sum, and its MLP takes the square root (unless the norm is squared). With
    ``exclude_self`` = T, the first score also has the positional self-penalty, with
    ``window`` a window's masks instead (:func:`circuit_pair`)."""
    c.add(MIRROR, c.channels[TOKENS])
    c.add(CONST, 1)
    partner, key = c.add(f"{tag}.partner", c.channels[TOKENS]), c.add(f"{tag}.key", 1)
    value = c.add(f"{tag}.value", 1)
    square = c.add(f"{tag}.out" if squared else f"{tag}.square", 1)
    pair = "x(s) + x(t)" if plus > 0 else "x(s) - x(t)"
    score = (Form(TOKENS, TOKENS, "I", sign * plus, 2.0), Form(ANCHOR, SQNORM, "I", sign))
    score, other = self_penalty(c, score, exclude_self, window)
    first = Head(
        1,
        -1,
        "max-position retrieval",
        EVERY_TOKEN,
        f"every token s retrieves its best t{other} by ||{pair}||^2 (|x(t)|^2 read from "
        f"LayerNorm's scale) into {partner} and {key}",
        score=score,
        values=(Copy(TOKENS, partner), Copy(SQNORM, key)),
    )
    does = f"|x(s)|^2 {'+' if plus > 0 else '-'} 2 x(s).x(t*(s))"
    decode = Mlp(
        1, "decode", (TOKENS, partner), value, sign=plus, does=does, function="sqnorm_less_key"
    )
    second = alone(c, best_value(square, sign, value, key), window)
    if squared:
        return [first, second], [decode]
    out = c.add(f"{tag}.out", 1)
    root = Mlp(2, "root", (square,), out, does=f"the square root of {square}")
    return [first, second], [decode, root]


def self_penalty(c: Circuit, score: tuple, positions: int, window: str = "") -> tuple[tuple, str]:
    """``score`` with the positional self-penalty over ``positions`` channels (0: none), or
    with ``window`` (a mask of ``c``) the penalty on every pair it leaves out, and the words
    for it; the partner peel's rounds share it."""
    if window:
        c.add(POSITIONS, len(c.masks[window]))
        form = Form(POSITIONS, POSITIONS, MASK + window, -1, SELF_PENALTY)
        return (*score, form), " among the t its conditions allow"
    if not positions:
        return score, ""
    c.add(POSITIONS, positions)
    return (*score, Form(POSITIONS, POSITIONS, "I", -1, SELF_PENALTY)), " other than s"


def alone(c: Circuit, head: Head, window: str) -> Head:
    """The readout's ``head`` penalised on every token ``window``'s conditions leave without
    a partner (the mask ``window.alone``; none: the head as it is). A row over the position
    channels the window has anyway, not a flag like an offset's skipped positions
    (:func:`_skipped`): every token holds one position channel at 1, so the LayerNorm scale a
    norm pair reads stays the same at every position, which a flag would change."""
    if not any(c.masks.get(f"{window}.alone", ())):
        return head
    form = Form(ANCHOR, POSITIONS, f"{MASK}{window}.alone", -1, SELF_PENALTY)
    return replace(head, score=(*head.score, form))


def best_value(out: str, sign: int, *values: str, layer: int = 2) -> Head:
    """The readout retrieves the best s by the sum of ``values`` (in ``layer``) and copies the
    sum into ``out``."""
    total = " + ".join(values)
    return Head(
        layer,
        -1,
        "max-position retrieval",
        THE_READOUT,
        f"the readout retrieves the best s by {total} and copies it into {out}",
        score=tuple(Form(ANCHOR, v, "I", sign) for v in values),
        values=tuple(Copy(v, out) for v in values),
    )
