"""The criterion that decides which mechanism a model has formed, shared by the K sweep and
the clock runs, and its ceiling: what the data of a run can tell apart at all.

The criterion is named in the spec (``options.criterion``) and written into the run folder
before anything trains (:func:`preregistration`); a new criterion is a new spec, never a
change made after a run.

``projection`` (the default; Park et al.'s method of reading a model as a mixture of the
algorithms): at a checkpoint, the model's next-state distributions on the test positions (ID
and OOD together, weighted as the spec scores positions) are fitted by a convex mixture of the
references (:data:`PROJECTIONS`: the plateau's uniform and Bayes-unigram, G2, M1 and M2; in
``projection_global``, the later version, the training mixture's bigram B joins the plateau),
the weights minimising the mean
KL(model || mixture) (:func:`project`, exact EM for mixture proportions). A mechanism has
formed when its references carry at least :data:`WEIGHT` of the mixture: memorization when M1
and M2 together do, generalization when G2 does. The two cannot both hold, so "which comes
first" is always decided by the first checkpoint at which one does. A clock is the first
(log-interpolated) step at which its mechanism's weight reaches :data:`WEIGHT`, on the
references its model can be compared with (no M1 or M2 at K = infinity, where no training
chain exists).

``gap`` (the rule before, kept as a named option): the phase is the nearest reference by a
margin, memorization is an ID KL at most GAP x the OOD KL (:mod:`.ksweep.phases`), and a clock
is halfway from the plateau to its mechanism's Bayes level (:mod:`.clocks.measure`).

The ceiling (:func:`separability`): a trained model never equals a reference; it sits some
KL away. How far it may stray from reference X, towards a reference Y of another kind,
before the projection gives Y the larger weight, is KL(X || (X + Y) / 2) at the crossing; the
smallest over Y is X's separability on the run's data, computed from the ideal Bayesians
alone. A kind of phase is testable at K when each of its references is separable by at least
the spec's ``criterion_tolerance`` (nats): where it is not, a claim that needs it is
"untestable here", with the numbers, never a verdict.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

#: A mechanism has formed when its references carry at least this share of the mixture.
WEIGHT = 0.5
#: The previous-token head has formed when layer 1 puts at least this much attention on the
#: previous token (the largest over its heads, mean over positions).
PREVIOUS_FORMED = 0.5
#: The projection's references -> the reference predictor each is
#: (:mod:`..references`; None: the uniform distribution). The plateau has two: where an
#: untrained model sits (U) and where a barely trained one does (G1, the Bayes unigram; a
#: pilot found a near-uniform model given weight 0.55 on M1 when the plateau was the Laplace
#: unigram alone).
SOURCES = {"U": None, "G1": "G1_bayes", "B": "B", "G2": "G2", "M1": "M1", "M2": "M2"}
#: The kind of each: what the claims ask about.
KINDS = {
    "U": "plateau",
    "G1": "plateau",
    "B": "plateau",
    "G2": "generalizing",
    "M1": "memorizing",
    "M2": "memorizing",
}
#: The references each projection criterion reads. ``projection_global`` (a later version)
#: adds the training mixture's bigram B to the plateau: a model that predicts from the
#: current state alone, for which the first version has no reference (its best mixture
#: misses such a model by about 0.02 nats, twice the tolerance, and gives M1 and M2 a tenth).
PROJECTIONS = {
    "projection": ("U", "G1", "G2", "M1", "M2"),
    "projection_global": ("U", "G1", "B", "G2", "M1", "M2"),
}
PROJECTED = PROJECTIONS["projection"]
#: At most this many rounds of the projection's accelerated EM (three EM steps each); it
#: stops once no weight moves by CONVERGED in a round (the calls compare weights with 1/2).
ROUNDS = 50
CONVERGED = 1e-5
#: Test sequences per test set the projection reads (of the first ones): its weights move
#: by about 1e-3 between subsets of this size, and a checkpoint's projection stays a small
#: part of training.
PROJECTION_SEQUENCES = 32
TINY = 1e-12
#: The ``gap`` criterion's rules (their use: :mod:`.ksweep.phases`, :mod:`.clocks.measure`).
GAP = 0.5  # memorizing: ID KL to the truth at most this times the OOD KL
#: A phase is called when the model sits at least (1 + MARGIN) / 2 of the way from every
#: other phase reference to the nearest one: 1/3 leaves the middle third of each segment
#: undetermined, so a called model is at least twice as close (along the segment) to the
#: nearest reference as to any other.
MARGIN = 1 / 3
HALFWAY = 0.5  # a clock stops this far from the plateau to the mechanism's level


def rule(criterion: str) -> str:
    """How a checkpoint's phase is called under ``criterion``, for plots and reasons (the
    phase plot said "margin 0.33" under the projection too: an audit, 2026-12-07)."""
    if criterion == "gap":
        return f"margin {MARGIN:.2g}"
    return f"{criterion}: a kind formed at weight >= {WEIGHT:g}"


def projected(criterion: str, memorised: bool = True) -> tuple[str, ...]:
    """The references a projection ``criterion`` reads (under ``gap``, which records the
    projection without deciding by it, the first version's); without M1 and M2 when no
    training chain exists to recall (``memorised`` False: K = infinity)."""
    names = PROJECTIONS["projection" if criterion == "gap" else criterion]
    return names if memorised else tuple(n for n in names if KINDS[n] != "memorizing")


def phase_references(g1_variant: str = "laplace") -> dict[str, str]:
    """Each phase -> the reference that stands for it (G1 per ``g1_variant``)."""
    g1 = {"park": "G1_park", "bayes": "G1_bayes"}.get(g1_variant, "G1")
    return {"G1": g1, "G2": "G2", "M1": "M1", "M2": "M2"}


def stacked(refs: dict[str, Tensor], names: tuple[str, ...] = PROJECTED) -> Tensor:
    """The references ``names`` (:data:`SOURCES`) from a predictor's outputs ``refs`` (name ->
    [..., C] probabilities), stacked on a new axis before the last three."""
    like = refs["G2"]
    found = [
        torch.full_like(like, 1 / like.shape[-1]) if SOURCES[n] is None else refs[SOURCES[n]]
        for n in names
    ]
    return torch.stack(found, dim=-4 if like.dim() >= 4 else 0)


def project(model: Tensor, refs: Tensor, weights: Tensor) -> tuple[Tensor, Tensor]:
    """The convex mixture of ``refs`` closest to ``model``: (weights [..., R], misfit [...]).

    ``model`` [..., N, C] and ``refs`` [..., R, N, C] are probabilities at N positions,
    ``weights`` [..., N] the positions' weights. The mixture weights w minimise the weighted
    mean of KL(model || sum_r w_r ref_r), which is convex in w; misfit is that KL at the
    optimum. EM for mixture proportions (w_r <- sum_n weight_n sum_c model_nc w_r ref_rnc /
    mixture_nc) converges slowly where references nearly coincide, so each round takes two EM
    steps and extrapolates along them (SQUAREM, Varadhan and Roland 2008), keeping the
    extrapolation only where it lowers the objective."""
    refs, model = refs.float(), model.float()
    share = (weights / weights.sum(-1, keepdim=True)).float()
    w = torch.full(refs.shape[:-2], 1 / refs.shape[-3], device=refs.device)
    for _ in range(ROUNDS):
        w1 = _em_step(w, model, refs, share)
        w2 = _em_step(w1, model, refs, share)
        r, v = w1 - w, w2 - 2 * w1 + w
        alpha = -(r.norm(dim=-1) / v.norm(dim=-1).clamp_min(TINY)).clamp_min(1.0)[..., None]
        jump = (w - 2 * alpha * r + alpha**2 * v).clamp_min(0)
        jump = _em_step(jump / jump.sum(-1, keepdim=True), model, refs, share)
        better = _misfit(jump, model, refs, share) <= _misfit(w2, model, refs, share)
        w, before = torch.where(better[..., None], jump, w2), w
        if (w - before).abs().max() < CONVERGED:
            break
    return w, _misfit(w, model, refs, share)


def _em_step(w: Tensor, model: Tensor, refs: Tensor, share: Tensor) -> Tensor:
    parts = w[..., None, None] * refs  # [..., R, N, C]
    mixture = parts.sum(-3, keepdim=True).clamp_min(TINY)  # [..., 1, N, C]
    return ((model[..., None, :, :] * parts / mixture).sum(-1) * share[..., None, :]).sum(-1)


def _misfit(w: Tensor, model: Tensor, refs: Tensor, share: Tensor) -> Tensor:
    mixture = (w[..., None, None] * refs).sum(-3).clamp_min(TINY)
    kl = (model * ((model + TINY).log() - mixture.log())).sum(-1)  # [..., N]
    return (kl * share).sum(-1)


def rising_crossing(points: list[tuple[int, float]], level: float) -> float | None:
    """The step at which a value first reaches ``level``, log-interpolated between the
    (step, value) ``points`` around it (in order of step); None when it never does."""
    previous = None
    for step, value in points:
        if value >= level:
            if previous is None:
                return float(step)
            s0, v0 = previous
            share = (level - v0) / (value - v0)
            return math.exp(math.log(s0) + share * (math.log(step) - math.log(s0)))
        previous = (step, value)
    return None


def previous_head_time(rows: dict[int, dict[str, float]]) -> float | None:
    """The step at which layer 1's attention to the previous token first reaches
    PREVIOUS_FORMED (log-interpolated); None when it never does or was not recorded."""
    points = [(s, rows[s]["prev:attention"]) for s in sorted(rows) if "prev:attention" in rows[s]]
    return rising_crossing(points, PREVIOUS_FORMED)


def named(row: dict[str, float], prefix: str) -> dict[str, float]:
    """A row of metrics' values for the projection's references under ``prefix``: "w:" (the
    weights) or "sep:" (the separabilities), reference -> value, the recorded ones only."""
    return {p: row[prefix + p] for p in SOURCES if prefix + p in row}


def kind_weights(weights: dict[str, float]) -> dict[str, float]:
    """Phase weights -> the weight of each kind (plateau, generalizing, memorizing)."""
    out = {kind: 0.0 for kind in dict.fromkeys(KINDS.values())}
    for phase, value in weights.items():
        out[KINDS[phase]] += value
    return out


def formed(weights: dict[str, float], kind: str) -> bool:
    """Whether the references of ``kind`` carry at least :data:`WEIGHT` of the mixture."""
    return kind_weights(weights)[kind] >= WEIGHT


def separability(refs: Tensor, weights: Tensor, names: tuple[str, ...]) -> dict[str, float]:
    """Each reference's separability on the data: the smallest KL(X || (X + Y) / 2) over the
    references Y of another kind (mean over the positions, by ``weights``), for ``refs``
    [R, N, C] named ``names`` (phases) and position weights [N]."""
    share = (weights / weights.sum()).double()
    out = {}
    for i, x in enumerate(names):
        found = []
        for j, y in enumerate(names):
            if KINDS[y] == KINDS[x]:
                continue
            middle = (refs[i].double() + refs[j].double()) / 2
            kl = (refs[i] * ((refs[i] + TINY).log() - (middle + TINY).log())).sum(-1)
            found.append(float((kl * share).sum()))
        out[x] = min(found) if found else float("inf")
    return out


def distinguishable(separable: dict[str, float], kind: str, tolerance: float) -> bool:
    """Whether every reference of ``kind`` is separable by at least ``tolerance`` nats."""
    return all(v >= tolerance for p, v in separable.items() if KINDS[p] == kind)


def preregistration(spec) -> dict:
    """What decides the verdicts, as the run folder records it before training starts."""
    options = spec.options
    if options.criterion == "gap":
        return {"criterion": "gap", "gap": GAP, "margin": MARGIN, "clock_halfway": HALFWAY}
    return {
        "criterion": options.criterion,
        "weight": WEIGHT,
        "references": {p: SOURCES[p] or "uniform" for p in projected(options.criterion)},
        "tolerance_nats": options.criterion_tolerance,
        "rounds": ROUNDS,
        "sequences_per_test_set": PROJECTION_SEQUENCES,
    }
