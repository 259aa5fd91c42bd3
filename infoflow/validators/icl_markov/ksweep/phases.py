"""A K sweep group's metrics -> each member's phases over training (its outcome, times and
final phase; :mod:`.thresholds` turns the members into thresholds across K).

The spec's criterion decides the phase call, "memorizes" and the ceiling: with
``projection`` (:mod:`..criterion`) they are :func:`projected_call`, :func:`memorizing_weight`
and :func:`projection_ceiling`; with ``gap``, the rules below that name GAP and MARGIN. The
rest is shared.

Rules (theory note ``icl_markov.md``; the gap criterion's thresholds, GAP and MARGIN, are
named constants of :mod:`..criterion`):

- the phase at a checkpoint is the reference nearest to the model (the smallest mean over the
  ID and OOD test sets of the spec's KL; G1 per the spec's ``g1_variant``), but only when it
  is nearer than every other phase reference by the margin: the model's position on the
  segment from that reference (0) to the nearest (1), the gap between the two distances
  interpolated between its values at either end (see :func:`position`), is at least
  ``(1 + MARGIN) / 2``; otherwise the checkpoint is ``UNDETERMINED``. Exact ties are
  undetermined, never decided by name;
- a model memorizes when its ID KL to the truth is at most ``GAP`` times its OOD KL (at
  large K, M1 and M2 approach G1 and G2, so the nearest reference alone cannot say it);
- generalization wins at K when G2 is the phase at a checkpoint before the model first
  memorizes (an undetermined checkpoint is never G2); memorization wins when it memorizes
  first; neither: undecided;
- G2 is transient when generalization won and the model ends in M2, memorizing;
- the ceiling: at K where even a perfect M2 has ID KL above GAP times its OOD KL, the rule
  cannot see memorization, and the claims that need it are untestable there, not refuted;
- a member's tau_2Gen is its first checkpoint labelled G2; tau_1Mem(K) the first checkpoint
  at which it memorizes.
"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import dataclass, field

from infoflow.validators.icl_markov.criterion import (
    GAP,
    KINDS,
    MARGIN,
    PROJECTIONS,
    WEIGHT,
    distinguishable,
    formed,
    kind_weights,
    named,
    phase_references,
    previous_head_time,
)

PHASES = ("G1", "G2", "M1", "M2")
UNDETERMINED = "undetermined"  # no phase reference is nearer than the others by the margin
SPLIT = "split"  # the final phase (or kind) when the seeds disagree, none the majority
MEMORIZING = ("M1", "M2")


@dataclass(frozen=True)
class Call:
    """The phase at a checkpoint: ``nearest`` and, when the margin holds, ``phase`` is it
    (else UNDETERMINED); ``contender`` is the reference it is least clearly nearer to than,
    at ``position`` (see :func:`position`); ``among`` the nearest and every phase within the
    margin of it."""

    phase: str
    nearest: str
    contender: str
    position: float
    among: tuple[str, ...]

    @property
    def label(self) -> str:
        """The phase, or for an undetermined call its candidates: "M1/M2?"."""
        return self.phase if self.phase != UNDETERMINED else "/".join(self.among) + "?"

    @property
    def kind(self) -> str:
        """The kind of phase: "memorizing" when every phase it may be is M1 or M2 (at K = 1
        the two coincide on the data, so the call is undetermined but the kind is not); else
        the phase."""
        return "memorizing" if set(self.among) <= set(MEMORIZING) else self.phase


def position(gap: float, toward: float, back: float) -> float:
    """Where a model sits on the segment from reference b (0) to the nearest reference a (1):
    ``gap`` = its distance to b minus its distance to a, which is ``back`` (b's score against
    a model equal to a) at a and ``-toward`` (a's score against a model equal to b) at b,
    interpolated linearly (in the local quadratic approximation of KL, the projection of the
    model onto the segment). 0.5 where the references coincide on the data."""
    span = toward + back
    return (gap + toward) / span if span > 0 else 0.5


def phase(row: dict[str, float], separation: dict[str, float], g1_variant: str = "laplace") -> Call:
    """The phase call at a checkpoint's ``row`` of metrics, given how far apart the references
    are on the same data (``separation``: ``"p>q"`` -> p's score against a model equal to q,
    from :meth:`MemberData.separations`)."""
    names = phase_references(g1_variant)
    distance = {p: (row[f"id:{ref}"] + row[f"ood:{ref}"]) / 2 for p, ref in names.items()}
    nearest = min(distance, key=distance.get)
    a = names[nearest]
    found = {
        p: position(
            distance[p] - distance[nearest], separation[f"{a}>{ref}"], separation[f"{ref}>{a}"]
        )
        for p, ref in names.items()
        if p != nearest
    }
    contender = min(found, key=found.get)
    close = [p for p in found if distance[p] == distance[nearest] or found[p] < (1 + MARGIN) / 2]
    among = tuple(p for p in PHASES if p == nearest or p in close)
    return Call(UNDETERMINED if close else nearest, nearest, contender, found[contender], among)


@dataclass
class MemberHistory:
    """One member's phases over its checkpoints and what they say."""

    chains: int
    seed: int
    steps: list[int]
    calls: list[Call]
    final: dict[str, float]  # the metrics at the last checkpoint
    phases: list[str] = field(init=False)
    first_g2: int | None = None
    memorized_at: int | None = None  # tau_1Mem: the first checkpoint with the ID/OOD gap
    outcome: str = "undecided"  # which mechanism came first: generalization or memorization
    previous_head: float | None = None  # when layer 1's previous-token attention formed
    transient_duration: int | None = None  # G2 -> M2

    def __post_init__(self) -> None:
        self.phases = [c.phase for c in self.calls]

    @classmethod
    def from_metrics(
        cls,
        chains: int,
        seed: int,
        rows: dict[int, dict[str, float]],
        separation: dict[str, float],
        g1_variant: str = "laplace",
        criterion: str = "gap",
    ) -> MemberHistory:
        steps = sorted(rows)
        if criterion in PROJECTIONS:
            calls, memorizes = [projected_call(rows[s]) for s in steps], memorizing_weight
        else:
            calls = [phase(rows[s], separation, g1_variant) for s in steps]
            memorizes = memorizing
        history = cls(chains, seed, steps, calls, rows[steps[-1]])
        history.previous_head = previous_head_time(rows)
        phases = history.phases
        history.first_g2 = next((s for s, p in zip(steps, phases, strict=True) if p == "G2"), None)
        gap = [s for s in steps if memorizes(rows[s])]
        history.memorized_at = gap[0] if gap else None
        g2, mem = history.first_g2, history.memorized_at
        if g2 is not None and (mem is None or g2 < mem):
            history.outcome = "generalization"
            ends = [
                s
                for s, p in zip(steps, phases, strict=True)
                if s > g2 and p == "M2" and memorizes(rows[s])
            ]
            if ends and phases[-1] == "M2" and memorizes(rows[steps[-1]]):
                history.transient_duration = ends[0] - g2
        elif mem is not None and (g2 is None or mem < g2):
            history.outcome = "memorization"
        return history

    @property
    def trajectory(self) -> list[str]:
        """The calls in order, repeats collapsed; an undetermined one shows its candidates
        ("M1/M2?")."""
        labels = [c.label for c in self.calls]
        return [p for i, p in enumerate(labels) if i == 0 or p != labels[i - 1]]


def memorizing(row: dict[str, float]) -> bool:
    """The model does clearly better on its training chains than on fresh ones."""
    return row["id:truth"] <= GAP * row["ood:truth"]


def memorizing_weight(row: dict[str, float]) -> bool:
    """The projection's call: M1 and M2 carry at least WEIGHT of the mixture."""
    return formed(named(row, "w:"), "memorizing")


def projected_call(row: dict[str, float]) -> Call:
    """The phase by the projection: the heaviest phase of the kind whose references carry at
    least WEIGHT of the mixture; else undetermined among the phases of weight at least
    WEIGHT / 2 (the two heaviest when none is). ``position`` is the leading kind's weight."""
    weights = named(row, "w:")
    kinds = kind_weights(weights)
    leading = max(kinds, key=kinds.get)
    order = sorted(weights, key=lambda p: -weights[p])
    if kinds[leading] >= WEIGHT:
        best = max((p for p in weights if KINDS[p] == leading), key=weights.get)
        best = "G1" if best == "U" else best  # the plateau is called G1, as by the gap rule
        return Call(best, order[0], order[1], kinds[leading], (best,))
    among = tuple(p for p in weights if weights[p] >= WEIGHT / 2) or tuple(sorted(order[:2]))
    return Call(UNDETERMINED, order[0], order[1], kinds[leading], among)


def ceiling(levels: dict[str, list[dict[str, float]]], members: list[tuple[int, int]]) -> dict:
    """Per K, what the data can tell: how far a perfect memorizer (the M2 reference itself)
    sits from the truth on ID and on OOD sequences, and whether the memorization rule can see
    it at all (its ID KL at most GAP times its OOD KL). ``levels`` is
    :meth:`MemberData.levels`; ``members`` the group's (K, seed) per member."""
    by_k: dict[int, list[tuple[float, float]]] = {}
    for i, (k, _seed) in enumerate(members):
        by_k.setdefault(k, []).append((levels["id"][i]["M2"], levels["ood"][i]["M2"]))
    out = {}
    for k, pairs in sorted(by_k.items()):
        id_kl = statistics.mean(p[0] for p in pairs)
        ood_kl = statistics.mean(p[1] for p in pairs)
        ratio = id_kl / max(ood_kl, 1e-12)
        out[k] = {
            "m2_id_kl": id_kl,
            "m2_ood_kl": ood_kl,
            "ratio": ratio,
            "detectable": id_kl <= GAP * ood_kl,
            "reason": f"even a perfect M2 has ID KL {id_kl:.3g}, {ratio:.2f} x its OOD KL (the "
            f"rule needs <= {GAP})",
        }
    return out


def projection_ceiling(
    separable: list[dict[str, float]], members: list[tuple[int, int]], tolerance: float
) -> dict:
    """Per K, what the projection can tell apart: each phase reference's separability (mean
    over the seeds' data, :meth:`MemberData.separability`), which kinds are testable at
    ``tolerance`` nats, and whether "which comes first" is (memorizing and generalizing
    both testable); a reason with the numbers where it is not."""
    by_k: dict[int, list[dict[str, float]]] = {}
    for (k, _seed), found in zip(members, separable, strict=True):
        by_k.setdefault(k, []).append(found)
    out = {}
    for k, rows in sorted(by_k.items()):
        mean = {p: statistics.mean(r[p] for r in rows) for p in rows[0]}
        kinds = {
            kind: distinguishable(mean, kind, tolerance) for kind in ("memorizing", "generalizing")
        }
        short = [p for p in mean if KINDS[p] != "plateau" and mean[p] < tolerance]
        numbers = ", ".join(f"{p} {mean[p]:.3g}" for p in short)
        reason = (
            f"{numbers} nats from the nearest reference of another kind, under the tolerance "
            f"{tolerance:g}: the projection cannot tell the phases apart here"
        )
        out[k] = {
            "separability": mean,
            "testable": kinds,
            "tolerance": tolerance,
            "detectable": all(kinds.values()),
            "reason": "" if all(kinds.values()) else reason,
        }
    return out


def separation(
    separations: list[dict[str, float]], members: list[tuple[int, int]], g1_variant: str = "laplace"
) -> dict[int, dict[str, float]]:
    """Per K (mean over seeds), how far apart the phase references are on the same data:
    ``"p-q"`` -> the mean of p's score against a model equal to q and q's against p (the
    symmetrised KL in the default direction). ``separations`` is
    :meth:`MemberData.separations`."""
    names = phase_references(g1_variant)
    by_k: dict[int, list[dict[str, float]]] = {}
    for (k, _seed), found in zip(members, separations, strict=True):
        by_k.setdefault(k, []).append(found)
    return {
        k: {
            f"{p}-{q}": statistics.mean(
                (s[f"{names[p]}>{names[q]}"] + s[f"{names[q]}>{names[p]}"]) / 2 for s in rows
            )
            for p, q in itertools.combinations(PHASES, 2)
        }
        for k, rows in sorted(by_k.items())
    }
