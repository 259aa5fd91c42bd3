"""k-th retrieval: the k-th largest (or smallest) of a score over one token.

It retrieves rank r, counted from the nearer end ([R] ``kth_symmetry``: the k-th largest of
T values is the (T + 1 - k)-th smallest, and negating a score is free); rank 1 is a max or a
min, resolved by max-position retrieval. Above rank 1 there are two ways:

- ``peel``: r steps in increasing layers, one head each, layer j learning the j-th largest
  ([R] ``kth_layers``); free in the exponent, like any retrieval;
- ``kth``: one head retrieves the r-th largest directly, priced by Theorem 2 as
  (T - r - 1)/(n + 1), a lower bound (option ``kth_cost: summary`` reads (r - 1)/n instead),
  with n = E/h the head width: on layers of different widths the widest head the
  architecture has ([R] ``kth_width``), so the term stays a lower bound wherever the step
  runs.

Peeling fewer than r leaves the (r - p)-th largest of T - p candidates, which Theorem 2
prices as the r-th of T, so a k-th step is peeled whole or not at all. Both costs may grow
with T, so the schedule without single-head k-th retrievals (each falling back to global
aggregation) is the other candidate for the cheapest: :func:`without_theorem2`.
"""

from __future__ import annotations

from dataclasses import replace

import sympy

from infoflow.retrieval.circuit import (
    ANCHOR,
    EVERY_TOKEN,
    POSITIONS,
    SELF_PENALTY,
    THE_READOUT,
    TOKENS,
    Circuit,
    Copy,
    Form,
    Head,
    Mlp,
)
from infoflow.retrieval.expression import TargetError
from infoflow.retrieval.laws import E, T, n
from infoflow.retrieval.mechanisms import max_position
from infoflow.retrieval.mechanisms.base import copies, holder, left_out, tagged
from infoflow.retrieval.types import (
    Comparison,
    CostOptions,
    CostTerm,
    Placement,
    Schedule,
    Step,
)

NAME = "k-th largest retrieval"
PARTNER_PEEL = "reconstruction:partner_peel"
BY_POSITION = (
    "a peel over a pair score leaves each token's earlier partners out of its later rounds, "
    "which a head does by their positions: without positional encoding no construction is "
    f"known [{PARTNER_PEEL}]"
)
EDGES = {"peel": "max-position", "kth": "k-th largest"}
ALREADY_GLOBAL = (
    "another part needs global aggregation, which costs less than a single-head k-th retrieval"
)
INSTEAD = "in place of its single-head k-th retrieval, where that costs more"


def limit(c: Comparison, separable_sum: str = "pool") -> str:
    """A k-th retrieval fails where a max-position retrieval does (order above 2)."""
    return max_position.limit(c, separable_sum)


MAX_RANK = 100_000  # peeled rounds the engine lists (a layer each); predict answers in seconds


def rank(k: int, seq_len: int | None, left_out: int = 0) -> int:
    """The rank a k-th step retrieves, from the nearer end: the k-th largest of N values is
    the (N + 1 - k)-th smallest, and negating a score is free ([R] kth_symmetry); rank 1 is
    the max or the min. N = T - ``left_out`` (a condition t != s leaves one candidate out on
    every draw); with two or more, N depends on whether the enclosing tokens coincide, so a
    k whose rank would differ between T - 1 and T - left_out is refused. With T symbolic, k
    counts from its own end (T >= 2k - 1 assumed). A rank above MAX_RANK is refused: its
    minimal architecture lists that many layers."""
    if seq_len is None:
        r = k
    else:
        fewest = seq_len - left_out
        if k > fewest:
            among = f", less {left_out} left out by t != s" if left_out else ""
            raise TargetError(
                f"k = {k} exceeds T = {seq_len}{among}: there is no {ordinal(k)} value of {fewest}"
            )
        r = min(k, fewest + 1 - k)
        if left_out > 1 and r != min(k, seq_len - k):
            raise TargetError(
                f"the {ordinal(k)} value over t is counted among {fewest} to {seq_len - 1} "
                f"candidates ({left_out} conditions t != s leave tokens out, which may be one "
                "token): its rank from the nearer end is not fixed"
            )
    if r > MAX_RANK:
        raise TargetError(
            f"the {ordinal(k)} value is rank {r:,} from its nearer end: its minimal "
            f"architecture has {r:,} layers, listed one by one; the engine plans ranks up to "
            f"{MAX_RANK:,}"
        )
    return r


def own_steps(c: Comparison, to: str | None, heads: int, ranks: dict) -> list[list]:
    """Rank 1: the max-position retrievals; above it, the peel, then the single head."""
    r = ranks.get((c.k, c.left_out), c.k)
    if r == 1:
        return max_position.own_steps(c, to, heads, ranks)
    every = tuple(range(len(c.factors)))
    variable = c.variables[0]
    peel = Step("peel", heads, r, variable, to, r, c)
    single = Step("kth", heads, 1, variable, to, r, c)
    return [[(peel, every)], [(single, every)]]


def partner_peel(step: Step) -> bool:
    """Whether ``step`` peels a pair score: every token s has its own race over t (the
    score reads s), so round j must leave out the partners s retrieved in rounds before it,
    a different token for each s. A head's score is fixed-rank in the two tokens' states,
    so it can leave out a token only by something the two hold exactly in common: its
    position ([R] ``partner_peel``)."""
    return step.kind == "peel" and step.comparison is not None and bool(step.comparison.free)


def labels(step: Step, placement: Placement) -> list[str]:
    """One label per rank the step brings: every rank up to r for a peel, r for one head."""
    k = step.comparison.k if step.comparison else None
    end = _end(step, k)
    ranks = range(1, step.rank + 1) if step.kind == "peel" else [step.rank]
    v = f"{step.variable}*{tagged(placement)}{holder(step, placement)}"
    return [f"{v} ({ordinal(j)} {end}){copies(step)}" for j in ranks]


def _end(step: Step, k: int | None) -> str:
    """largest or smallest: the end a k-th step counts from (the nearer one, [R])."""
    smallest = step.comparison is not None and step.comparison.op == "kth_smallest"
    if k is not None and step.rank != k:
        smallest = not smallest
    return "smallest" if smallest else "largest"


def sentence(step: Step, placement: Placement, j: int, who: str) -> str:
    """A peel's j-th layer, or the single head, in explain's words."""
    mine, extra = left_out(step, placement)
    if step.kind == "peel":
        earlier = ""
        if partner_peel(step) and j > 1:
            earlier, extra = (
                ", leaving out the partners it retrieved before,",
                f"{extra}, {PARTNER_PEEL}",
            )
        end = _end(step, step.comparison.k if step.comparison else None)
        return (
            f"{step.heads} head(s): {who} learns the {ordinal(j)} {end} {step.variable}"
            f"{mine} (of {step.rank}){earlier} for {placement.label} "
            f"[reconstruction:kth_layers{extra}]"
        )
    symmetric = not (step.comparison and step.rank == step.comparison.k)
    tag = "reconstruction:kth_symmetry" if symmetric else "paper:theorem-2"
    return (
        f"{step.heads} head(s): {who} retrieves the {ordinal(step.rank)} largest "
        f"{step.variable}{mine} with one head for {placement.label} [{tag}{extra}]"
    )


def held(placement: Placement) -> str:
    """A max or min that a k-th's peel takes in its first round
    (:mod:`~infoflow.retrieval.peel_firsts`), in explain's words."""
    return (
        f"{placement.label}: no head of its own: the readout holds it from the first round of "
        f"the peel for {placement.held_by} [reconstruction:kth_layers]"
    )


def kth_exponent(r: int, width: sympy.Expr, options: CostOptions, left_out: int = 0) -> sympy.Expr:
    """Theorem 2's exponent for a single head retrieving the r-th largest (head width
    ``width``) among N = T - ``left_out`` candidates (a k-th over t != s has T - 1: it
    counted T, an audit, 2026-12-07)."""
    if options.kth_cost == "summary":
        return sympy.Integer(r - 1) / width
    return (T - left_out - r - 1) / (width + 1)


def head_width(schedule: Schedule) -> sympy.Expr:
    """n = E / h: the widest head of the architecture (its layer with the fewest heads)."""
    return E / fewest_heads(schedule)


def fewest_heads(schedule: Schedule) -> int:
    """h in n = E / h: the heads of the layer with the fewest ([R] ``kth_width``)."""
    return min(schedule.shape.heads)


def terms(placement: Placement, options: CostOptions) -> list[CostTerm]:
    """Theorem 2's term for every single-head k-th retrieval of a scheduled part."""
    if placement.mode != "scheduled" or not placement.fragment:
        return []
    out = []
    for step, layers in zip(placement.fragment.steps, placement.layers, strict=True):
        if step.kind != "kth":
            continue
        c = step.comparison
        inner = f": {c.label}" if c is not None and c is not placement.comparison else ""
        own = "smallest" if c is not None and c.op == "kth_smallest" else "largest"
        far = c is not None and step.rank != c.k  # the k-th counted from the other end
        end = {"largest": "smallest", "smallest": "largest"}[own] if far else own
        what = (
            f"{placement.label}{inner} as one head retrieving the "
            f"{ordinal(step.rank)} {end} in layer {layers[-1]}"
        )
        if options.kth_cost == "summary":
            tag = "paper:summary"
        elif far:
            tag = "reconstruction:kth_symmetry"
            what += f" (the {ordinal(c.k)} {own}, counted from the other end)"
        else:
            tag = "paper:theorem-2"
        left_out = c.left_out if c is not None else 0
        exponent = kth_exponent(step.rank, n, options, left_out)
        out.append(CostTerm(exponent, what, tag, "lower", step.rank, left_out))
    return out


def in_range(found: list[CostTerm], seq_len: int | None) -> list[CostTerm]:
    """The terms with Theorem 2's outside its range 2 <= k <= N - 2 (N = T less the tokens
    left out: T = 3, k = 2) tagged ``reconstruction:kth_range``, an estimate: the formula,
    not the theorem."""
    if seq_len is None:
        return found
    return [
        replace(
            t,
            provenance="reconstruction:kth_range",
            bound="estimate",
            what=f"{t.what} (Theorem 2's form outside its range k <= N - 2, "
            f"N = {seq_len - t.left_out} candidates at T = {seq_len})",
        )
        if t.rank and t.rank > seq_len - t.left_out - 2 and t.provenance.startswith("paper:")
        else t
        for t in found
    ]


def edge_cost(schedule: Schedule, part: str, layer: int, options: CostOptions) -> sympy.Expr:
    """A single head's edge into ``layer`` costs Theorem 2's term; a peel's, nothing."""
    placement = next(q for q in schedule.placements if q.label == part)
    for step, layers in zip(placement.fragment.steps, placement.layers, strict=True):
        if step.kind == "kth" and layer in layers:
            c = step.comparison
            return kth_exponent(step.rank, n, options, c.left_out if c is not None else 0)
    return sympy.Integer(0)


def without_theorem2(schedule: Schedule, reason: str = INSTEAD) -> Schedule:
    """``schedule`` with every part that makes a single-head k-th retrieval falling back to
    global aggregation instead: the other candidate for the cheapest schedule, since both
    exponents grow with T and either may be the smaller one at a given T, E and d."""
    placements = [
        replace(q, mode="global", fragment=None, layers=(), reason=reason)
        if q.fragment and q.fragment.theorem2
        else q
        for q in schedule.placements
    ]
    needed = {
        key
        for q in placements
        if q.fragment
        for keys in (*q.fragment.shared, q.fragment.needs)
        for key in keys
    }
    shared = {key: v for key, v in schedule.shared.items() if key in needed}
    return Schedule(schedule.shape, placements, shared, schedule.positions)


def ordinal(k: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 21st."""
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def circuit_peel(
    c: Circuit, tag: str, matrix: str, sign: int, rounds: int
) -> tuple[list[Head], list[Mlp]]:
    """The peel, compiled: s(t) = sign * M x(t). In layer j < ``rounds`` every token (the
    readout too) retrieves the largest s still in the race into ``tag.m<j>``, and the MLP
    takes a token whose s reached it out of the race (``tag.key`` = s minus a penalty, four
    exact ReLUs; round 1 also writes s itself). In layer ``rounds`` the readout retrieves the
    best key, the r-th largest s, and copies M x(t) into ``tag.out``. Every token peels, not
    only the readout: the key a later round reads is the token's own."""
    key, out = c.add(f"{tag}.key", 1), c.add(f"{tag}.out", 1)
    heads, mlps = [], []
    for j in range(1, rounds):
        m = c.add(f"{tag}.m{j}", 1)
        score = Form(ANCHOR, TOKENS, matrix, sign) if j == 1 else Form(ANCHOR, key)
        heads.append(
            Head(
                j,
                -1,
                "k-th retrieval (peel)",
                EVERY_TOKEN,
                f"every token learns the {ordinal(j)} largest score into {m}",
                score=(score,),
                values=(Copy(TOKENS, m, matrix, float(sign)),),
            )
        )
        does = f"takes a token whose score reached {m} out of the race ({key})"
        mlps.append(Mlp(j, "peel", (TOKENS, m), key, matrix, sign, first=j == 1, does=does))
    heads.append(
        Head(
            rounds,
            -1,
            "k-th retrieval (peel)",
            THE_READOUT,
            f"the readout retrieves the {ordinal(rounds)} largest score and copies it into {out}",
            score=(Form(ANCHOR, key),),
            values=(Copy(TOKENS, out, matrix),),
        )
    )
    return heads, mlps


def circuit_partner_peel(
    c: Circuit,
    tag: str,
    pair: tuple[str, int],
    best: int,
    rounds: int,
    seq_len: int,
    distinct: bool,
) -> tuple[list[Head], list[Mlp]]:
    """A token's k-th partner, compiled (``pair`` = (M, sign): the score sign * x(s)^T M x(t);
    ``best``: the sign of the readout's max or min over s; ``distinct``: the target says
    t != s; ``seq_len`` position channels). Every token s runs its own race: in layer j <
    ``rounds`` it retrieves its j-th best t and copies that partner's position (one channel a
    position) into ``tag.m<j>``, and the MLP marks it in ``tag.taken`` where its softmax
    weight is above 1/2 (a near tie leaves the second token in the race: whichever of the two
    is taken, the other's value is within the gap); in layer ``rounds`` it copies the partner
    x(t) into ``tag.partner``, and the MLP decodes ``tag.value`` = x(s)^T M partner. From
    round 2 on, the score has -SELF_PENALTY taken(s).pos(t): the partners taken before never
    win ([R] ``partner_peel``). With ``distinct``, every round also has the positional
    self-penalty. In layer ``rounds + 1`` the readout retrieves the best s by the value and
    copies it into ``tag.out``."""
    matrix, sign = pair
    first = (Form(TOKENS, TOKENS, matrix, sign),)
    first, other = max_position.self_penalty(c, first, seq_len if distinct else 0)
    if rounds > 1:
        c.add(POSITIONS, seq_len)
    taken = c.add(f"{tag}.taken", seq_len) if rounds > 1 else ""
    partner = c.add(f"{tag}.partner", c.channels[TOKENS])
    value, out = c.add(f"{tag}.value", 1), c.add(f"{tag}.out", 1)
    penalty = Form(taken, POSITIONS, "I", -1, SELF_PENALTY)  # the partners taken before
    heads, mlps = [], []
    for j in range(1, rounds + 1):
        score = (*first, penalty) if j > 1 else first
        dest = partner if j == rounds else c.add(f"{tag}.m{j}", seq_len)
        copy = Copy(TOKENS, partner) if j == rounds else Copy(POSITIONS, dest)
        what = "the partner" if j == rounds else "its position"
        does = (
            f"every token s retrieves its {ordinal(j)} best t{other} and copies {what} into {dest}"
        )
        heads.append(
            Head(j, -1, "k-th retrieval (partner peel)", EVERY_TOKEN, does, score, (copy,))
        )
        if j < rounds:
            does = f"marks the position in {dest} taken ({taken}) where its weight is above 1/2"
            mlps.append(Mlp(j, "threshold", (dest,), taken, does=does))
    does = f"x(s)^T {matrix} x(t) of the {ordinal(rounds)} best t"
    mlps.append(Mlp(rounds, "decode", (TOKENS, partner), value, matrix, does=does, rank=rounds))
    heads.append(max_position.best_value(out, best, value, layer=rounds + 1))
    return heads, mlps
