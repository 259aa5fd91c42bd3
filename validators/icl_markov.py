"""``icl_markov`` specs -> a K sweep trained as one ensemble -> phases, thresholds, claims.

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
- tau_2Gen is the first checkpoint labelled G2 (median over the K that generalize);
  tau_1Mem(K) the first checkpoint at which the model memorizes.

Each claim compares a prediction with these measurements and is inconclusive, with a
reason, when the measurement cannot decide it.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import statistics
from dataclasses import dataclass, field

from infoflow.validators.icl_train import IclGroup, log_spaced

import infoflow
from infoflow.icl_markov.fit import regression
from infoflow.icl_markov.spec import IclMarkovSpec

GAP = 0.5  # memorizing: ID KL to the truth at most this times the OOD KL
TIME_TOLERANCE = 2.0  # a predicted time is confirmed within this factor
PHASES = ("G1", "G2", "M1", "M2")
MEMORIZING = ("M1", "M2")


@dataclass(frozen=True)
class IclScale:
    """Caps that make a spec fit a budget (None: the spec's own value) and how densely
    to measure."""

    name: str
    max_steps: int | None
    max_context: int | None
    max_batch: int | None
    max_chains: int | None
    eval_sequences: int
    checkpoints: int
    seeds: int = 1


SCALES = {
    "smoke": IclScale("smoke", 1500, 64, 64, 1024, eval_sequences=128, checkpoints=24),
    "paper": IclScale("paper", None, None, None, None, eval_sequences=256, checkpoints=32),
}


@dataclass
class IclExperiment:
    """One spec's groups (a group per setting; its members are the K values and seeds) and
    the prediction at every (group, K)."""

    name: str
    base: IclMarkovSpec
    capped: list[str] = field(default_factory=list)
    groups: list[IclGroup] = field(default_factory=list)
    predictions: dict[tuple[str, int], infoflow.Result] = field(default_factory=dict)


def plan(name: str, spec: IclMarkovSpec, scale: IclScale, base_dir=None) -> IclExperiment:
    """Every group the spec's sweep needs, capped to ``scale``."""
    experiment = IclExperiment(name, spec)
    settings: dict[str, tuple[IclMarkovSpec, list[int]]] = {}
    for _, point in infoflow.expand(spec, base_dir):
        point = _cap(point, scale, experiment.capped)
        if scale.max_chains and point.chains > scale.max_chains:
            experiment.capped.append(f"K={point.chains} left out (more than {scale.max_chains})")
            continue
        training_only = point.model_copy(update={"calibration": None})  # predictions only
        key = training_only.model_dump_json(exclude={"chains", "sweep", "description"})
        settings.setdefault(key, (point, []))[1].append(point.chains)
        experiment.predictions[(key, point.chains)] = infoflow.predict(point)
    for key, (point, chains) in settings.items():
        digest = hashlib.sha1(key.encode()).hexdigest()[:8]
        group = IclGroup(f"{name}-{digest}", point, sorted(set(chains)),
                         [point.seed + s for s in range(scale.seeds)],
                         log_spaced(point.training.steps, scale.checkpoints),
                         scale.eval_sequences)  # fmt: skip
        experiment.groups.append(group)
        for k in group.chains:
            experiment.predictions[(group.name, k)] = experiment.predictions.pop((key, k))
    experiment.capped = sorted(set(experiment.capped))
    return experiment


def _cap(point: IclMarkovSpec, scale: IclScale, notes: list[str]) -> IclMarkovSpec:
    training = point.training
    updates = {}
    for limit, value, where in ((scale.max_steps, training.steps, "training.steps"),
                                (scale.max_batch, training.batch_size, "training.batch_size"),
                                (scale.max_context, point.context_len, "context_len")):  # fmt: skip
        if limit and value > limit:
            updates[where] = limit
            notes.append(f"{where} {value:,} capped to {limit:,} at the {scale.name} scale")
    if not updates:
        return point
    steps = updates.get("training.steps", training.steps)
    batch = updates.get("training.batch_size", training.batch_size)
    training = training.model_copy(update={"steps": steps, "batch_size": batch})
    context = updates.get("context_len", point.context_len)
    return point.model_copy(update={"training": training, "context_len": context})


# ---- measurement -----------------------------------------------------------------------


def phase(row: dict[str, float], g1_variant: str = "laplace") -> str:
    """The reference nearest to the model: the smallest mean KL over ID and OOD."""
    names = {"G1": "G1_park" if g1_variant == "park" else "G1", "G2": "G2", "M1": "M1",
             "M2": "M2"}  # fmt: skip
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
        gap = [s for s in steps if _memorizing(rows[s])]
        history.memorized_at = gap[0] if gap else None
        g2, mem = history.first_g2, history.memorized_at
        if g2 is not None and (mem is None or g2 < mem):
            history.outcome = "generalization"
            ends = [s for s, p in zip(steps, phases, strict=True)
                    if s > g2 and p == "M2" and _memorizing(rows[s])]  # fmt: skip
            if ends and phases[-1] == "M2" and _memorizing(rows[steps[-1]]):
                history.transient_duration = ends[0] - g2
        elif mem is not None and (g2 is None or mem < g2):
            history.outcome = "memorization"
        return history

    @property
    def trajectory(self) -> list[str]:
        """The phases in order, repeats collapsed."""
        return [p for i, p in enumerate(self.phases) if i == 0 or p != self.phases[i - 1]]


def _memorizing(row: dict[str, float]) -> bool:
    """The model does clearly better on its training chains than on fresh ones."""
    return row["id:truth"] <= GAP * row["ood:truth"]


def measure(histories: list[MemberHistory]) -> dict:
    """Per K (majority over seeds) and across K: the thresholds and timescales."""
    by_k: dict[int, list[MemberHistory]] = {}
    for h in histories:
        by_k.setdefault(h.chains, []).append(h)
    per_k = {
        k: {
            "outcome": _mode([h.outcome for h in hs]),
            "trajectory": hs[0].trajectory,
            "final_phase": _mode([h.phases[-1] for h in hs]),
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


def _mode(values: list[str]) -> str:
    return max(sorted(set(values)), key=values.count)


# ---- claims ----------------------------------------------------------------------------


def _claim(claim, predicted, measured, tolerance, verdict, reason="") -> dict:
    return {"claim": claim, "predicted": predicted, "measured": measured,
            "tolerance": tolerance, "verdict": verdict, "reason": reason}  # fmt: skip


def claims(experiment: IclExperiment, group: IclGroup, measurement: dict) -> list[dict]:
    """Every claim the predictions make about ``group``'s measurements."""
    first = experiment.predictions[(group.name, group.chains[0])]
    out = [_per_k(k, experiment.predictions[(group.name, k)], measurement["per_k"][k])
           for k in group.chains]  # fmt: skip
    out.append(_k1_star(first["k1_star"], measurement["k1_star"]))
    out.append(_k2_star(first["k2_star"].value, measurement["k2_star"]))
    out.append(_tau_2gen(first["tau_2gen"].value, measurement["tau_2gen"]))
    out.append(_tau_2gen_flat(measurement))
    out.append(_memorization_slows(measurement))
    return out


def _kind(phase: str) -> str:
    return "memorizing" if phase in MEMORIZING else phase


def _per_k(k: int, result: infoflow.Result, measured: dict) -> dict:
    """The phase at the end of training when the prediction times the phases; otherwise which
    mechanism comes first (the phase sequence)."""
    shown = {"final_phase": measured["final_phase"], "trajectory": measured["trajectory"],
             "outcome": measured["outcome"], "id_kl": measured["id_kl"],
             "ood_kl": measured["ood_kl"]}  # fmt: skip
    final, sequence = result["final_phase"], result["phase_sequence"].value
    low, high = result["k1_star"].interval or (None, None)
    near = low is not None and low <= k <= high
    near_reason = f"K lies within the predicted K*_1 range {low:.3g}..{high:.3g}" if near else ""
    if final.provenance == "uncalibrated":
        expected = "memorization" if sequence and "M1" in sequence else "generalization"
        path = " -> ".join(sequence or ["?"])
        claim = f"K={k} follows {path}: {expected} comes first"
        tolerance = "memorization wins when the model memorizes before G2 appears"
        if near or measured["outcome"] == "undecided" or not sequence:
            reason = near_reason or "the model has not left its first phase"
            return _claim(claim, path, shown, tolerance, "inconclusive", reason)
        verdict = "confirmed" if measured["outcome"] == expected else "refuted"
        return _claim(claim, path, shown, tolerance, verdict)
    claim = f"K={k} ends in phase {final.value}"
    tolerance = "same kind of phase at the last checkpoint (M1 and M2 both count as memorizing)"
    if near:
        return _claim(claim, final.value, shown, tolerance, "inconclusive", near_reason)
    same = _kind(measured["final_phase"]) == _kind(final.value)
    if (
        same
        and final.value in MEMORIZING
        and not _memorizing({"id:truth": measured["id_kl"], "ood:truth": measured["ood_kl"]})
    ):
        return _claim(claim, final.value, shown, tolerance, "refuted",
                      f"nearest reference {measured['final_phase']}, but ID KL is not below "
                      f"{GAP} x OOD KL")  # fmt: skip
    return _claim(claim, final.value, shown, tolerance, "confirmed" if same else "refuted")


def _k1_star(prediction, measured: dict) -> dict:
    predicted, low, high = prediction.value, measured["low"], measured["high"]
    claim = "K*_1: below it memorization wins, above it G2 forms first"
    tolerance = "the prediction lies in the measured bracket (one grid step)"
    if predicted is None:
        return _claim(claim, None, measured, tolerance, "inconclusive", "no prediction")
    if not measured["monotone"] and low and high:
        return _claim(claim, predicted, measured, tolerance, "inconclusive",
                      "which mechanism wins is not monotone in K on this grid")  # fmt: skip
    if low is not None and predicted < low:
        return _claim(claim, predicted, measured, tolerance, "refuted",
                      f"memorization still wins at K={low}")  # fmt: skip
    if high is not None and predicted > high:
        return _claim(claim, predicted, measured, tolerance, "refuted",
                      f"generalization already wins at K={high}")  # fmt: skip
    if low is None or high is None:
        return _claim(claim, predicted, measured, tolerance, "inconclusive",
                      "the grid does not reach the transition on that side")  # fmt: skip
    return _claim(claim, predicted, measured, tolerance, "confirmed")


def _k2_star(predicted: float | None, measured: dict) -> dict:
    claim = "K*_2: below it G2 gives way to M2, above it G2 persists"
    tolerance = "no transient G2 at K above the prediction"
    low = measured["low"]
    if predicted is None:
        return _claim(claim, None, measured, tolerance, "inconclusive", "no prediction")
    if low is not None and low >= predicted:
        return _claim(claim, predicted, measured, tolerance, "refuted",
                      f"G2 gave way to M2 at K={low}")  # fmt: skip
    return _claim(claim, predicted, measured, tolerance, "inconclusive",
                  "consistent, but a persisting G2 within the budget does not place K*_2: it "
                  "may give way later")  # fmt: skip


def _tau_2gen(predicted: float | None, measured: dict) -> dict:
    claim = "tau_2Gen, the steps until the G2 phase first appears"
    tolerance = f"within a factor {TIME_TOLERANCE}"
    value = measured["value"]
    if predicted is None or value is None:
        why = "no calibrated prediction" if predicted is None else "no K reached G2"
        return _claim(claim, predicted, measured, tolerance, "inconclusive", why)
    ratio = max(value / predicted, predicted / value)
    verdict = "confirmed" if ratio <= TIME_TOLERANCE else "refuted"
    return _claim(claim, predicted, measured, tolerance, verdict)


def _tau_2gen_flat(measurement: dict) -> dict:
    claim = "tau_2Gen does not depend on K (the K that generalize)"
    per_k = measurement["per_k"]
    times = {k: v["first_g2"] for k, v in per_k.items() if v["outcome"] == "generalization"}
    allowed = TIME_TOLERANCE * measurement["tau_2gen"]["checkpoint_ratio"]
    tolerance = f"largest / smallest first-G2 step <= {allowed:.2f} ({TIME_TOLERANCE} x spacing)"
    if len(times) < 2:
        return _claim(claim, "flat", times, tolerance, "inconclusive",
                      "fewer than two K generalize")  # fmt: skip
    ratio = max(times.values()) / min(times.values())
    return _claim(claim, "flat", times, tolerance, "confirmed" if ratio <= allowed else "refuted")


def _memorization_slows(measurement: dict) -> dict:
    claim = "memorization slows as K grows (tau_1Mem rises with K)"
    times = {k: v["memorized_at"] for k, v in measurement["per_k"].items()
             if v["outcome"] == "memorization"}  # fmt: skip
    tolerance = "least-squares slope of log tau_1Mem against log K > 0"
    if len(times) < 3:
        return _claim(claim, "rises", times, tolerance, "inconclusive",
                      "fewer than three K memorize")  # fmt: skip
    slope, _ = regression([math.log(k) for k in times], [math.log(t) for t in times.values()])
    shown = {"tau_1mem": times, "slope": slope}
    if slope == 0:
        return _claim(claim, "rises", shown, tolerance, "inconclusive", "flat on this grid")
    return _claim(claim, "rises", shown, tolerance, "confirmed" if slope > 0 else "refuted")
