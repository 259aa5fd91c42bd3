"""An icl_markov group's metrics -> each member's phases over training -> the thresholds
and timescales across K.

Rules (theory note ``icl_markov.md``; thresholds are named constants below):

- the phase at a checkpoint is the reference nearest to the model: the smallest mean of
  KL(reference || model) over the ID and OOD test sets (G1 per the spec's ``g1_variant``);
- a model memorizes when its ID KL to the truth is at most ``GAP`` times its OOD KL (at
  large K, M1 and M2 approach G1 and G2, so the nearest reference alone cannot say it);
- generalization wins at K when G2 is the phase at a checkpoint before the model first
  memorizes; memorization wins when it memorizes first; neither: undecided. The measured
  K*_1 lies between the largest K where memorization wins and the smallest K from which
  generalization wins at every larger K (the grid resolution is its uncertainty);
- G2 is transient at K when generalization won and the model ends in M2, memorizing: K*_2
  lies above the largest such K; at this budget G2 persists from the smallest larger K;
- per K the seeds vote (outcome, final phase); a tie is "undecided" (outcome) or "split"
  (final phase), never broken by the names;
- the ceiling: at K where even a perfect M2 has ID KL above GAP times its OOD KL, the rule
  cannot see memorization, and the claims that need it are untestable there, not refuted;
- tau_2Gen is the first checkpoint labelled G2 (median over the K that generalize);
  tau_1Mem(K) the first checkpoint at which the model memorizes.
"""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import dataclass

GAP = 0.5  # memorizing: ID KL to the truth at most this times the OOD KL
PHASES = ("G1", "G2", "M1", "M2")
SPLIT = "split"  # the final phase when the seeds end in different phases, none the majority
MEMORIZING = ("M1", "M2")


def phase(row: dict[str, float], g1_variant: str = "laplace") -> str:
    """The reference nearest to the model: the smallest mean KL over ID and OOD."""
    g1 = {"park": "G1_park", "bayes": "G1_bayes"}.get(g1_variant, "G1")
    names = {"G1": g1, "G2": "G2", "M1": "M1", "M2": "M2"}
    distance = {p: (row[f"id:{ref}"] + row[f"ood:{ref}"]) / 2 for p, ref in names.items()}
    return min(distance, key=distance.get)


@dataclass
class MemberHistory:
    """One member's phases over its checkpoints and what they say."""

    chains: int
    seed: int
    steps: list[int]
    phases: list[str]
    final: dict[str, float]  # the metrics at the last checkpoint
    first_g2: int | None = None
    memorized_at: int | None = None  # tau_1Mem: the first checkpoint with the ID/OOD gap
    outcome: str = "undecided"  # which mechanism came first: generalization or memorization
    transient_duration: int | None = None  # G2 -> M2

    @classmethod
    def from_metrics(cls, chains: int, seed: int, rows: dict[int, dict[str, float]],
                     g1_variant: str) -> MemberHistory:  # fmt: skip
        steps = sorted(rows)
        phases = [phase(rows[s], g1_variant) for s in steps]
        history = cls(chains, seed, steps, phases, rows[steps[-1]])
        history.first_g2 = next((s for s, p in zip(steps, phases, strict=True) if p == "G2"), None)
        gap = [s for s in steps if memorizing(rows[s])]
        history.memorized_at = gap[0] if gap else None
        g2, mem = history.first_g2, history.memorized_at
        if g2 is not None and (mem is None or g2 < mem):
            history.outcome = "generalization"
            ends = [s for s, p in zip(steps, phases, strict=True)
                    if s > g2 and p == "M2" and memorizing(rows[s])]  # fmt: skip
            if ends and phases[-1] == "M2" and memorizing(rows[steps[-1]]):
                history.transient_duration = ends[0] - g2
        elif mem is not None and (g2 is None or mem < g2):
            history.outcome = "memorization"
        return history

    @property
    def trajectory(self) -> list[str]:
        """The phases in order, repeats collapsed."""
        return [p for i, p in enumerate(self.phases) if i == 0 or p != self.phases[i - 1]]


def memorizing(row: dict[str, float]) -> bool:
    """The model does clearly better on its training chains than on fresh ones."""
    return row["id:truth"] <= GAP * row["ood:truth"]


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
        out[k] = {"m2_id_kl": id_kl, "m2_ood_kl": ood_kl, "ratio": id_kl / max(ood_kl, 1e-12),
                  "detectable": id_kl <= GAP * ood_kl}  # fmt: skip
    return out


def measure(histories: list[MemberHistory]) -> dict:
    """Per K (majority over seeds) and across K: the thresholds and timescales."""
    by_k: dict[int, list[MemberHistory]] = {}
    for h in histories:
        by_k.setdefault(h.chains, []).append(h)
    per_k = {
        k: {
            "outcome": _mode([h.outcome for h in hs]) or "undecided",
            "trajectory": hs[0].trajectory,
            "final_phase": _mode([h.phases[-1] for h in hs]) or SPLIT,
            "first_g2": _median([h.first_g2 for h in hs]),
            "memorized_at": _median([h.memorized_at for h in hs]),
            "transient_duration": _median([h.transient_duration for h in hs]),
            "id_kl": statistics.mean(h.final["id:truth"] for h in hs),
            "ood_kl": statistics.mean(h.final["ood:truth"] for h in hs),
        }
        for k, hs in sorted(by_k.items())
    }
    decided = [k for k in per_k if per_k[k]["outcome"] != "undecided"]
    won = [per_k[k]["outcome"] == "generalization" for k in decided]
    start = next((i for i in range(len(decided)) if all(won[i:])), len(decided))
    k1 = {
        "low": decided[start - 1] if start > 0 else None,
        "high": decided[start] if start < len(decided) else None,
        "monotone": won == sorted(won),
        "undecided": [k for k in per_k if k not in decided],
    }
    k1["value"] = math.sqrt(k1["low"] * k1["high"]) if k1["low"] and k1["high"] else None
    winners = decided[start:]
    transient = [k for k in winners if per_k[k]["transient_duration"] is not None]
    k2_low = max(transient, default=None)
    persists = [k for k in winners if k2_low is None or k > k2_low]
    times = [per_k[k]["first_g2"] for k in winners]
    steps = histories[0].steps
    spacing = max((b / a for a, b in itertools.pairwise(steps)), default=1.0)
    tau = {"value": statistics.median(times) if times else None, "min": min(times, default=None),
           "max": max(times, default=None), "checkpoint_ratio": spacing}  # fmt: skip
    k2 = {"low": k2_low, "g2_persists_from": min(persists, default=None)}
    return {"per_k": per_k, "k1_star": k1, "k2_star": k2, "tau_2gen": tau}


def _median(values):
    found = [v for v in values if v is not None]
    return statistics.median(found) if found else None


def _mode(values: list[str]) -> str | None:
    """The most common value; None when two or more tie (never decided by name)."""
    counts = sorted((values.count(v) for v in set(values)), reverse=True)
    if len(counts) > 1 and counts[0] == counts[1]:
        return None
    return max(set(values), key=values.count)
