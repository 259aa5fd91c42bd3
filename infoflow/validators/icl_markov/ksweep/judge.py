"""A trained K sweep group -> each member's phases over training and the thresholds across K
(:mod:`.phases`) -> the claims the predictions make about them (:mod:`.claims`) -> the
group's record in report.json, from which :mod:`.report` writes its Markdown and
:mod:`.plots` draws it.

:func:`judge_sweep` loads and measures one group; the race (:mod:`..clocks.judge`) may then add
its own measurement and claim to it, before :func:`sweep_records` writes the records.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from infoflow.validators.claims import Claim, labelled
from infoflow.validators.icl_markov.criterion import (
    PROJECTIONS,
    kind_weights,
    named,
    preregistration,
)
from infoflow.validators.icl_markov.experiment import IclExperiment
from infoflow.validators.icl_markov.kinds import CLAIM_KINDS
from infoflow.validators.icl_markov.ksweep.claims import claims
from infoflow.validators.icl_markov.ksweep.data import TARGETS, IclGroup
from infoflow.validators.icl_markov.ksweep.phases import (
    PHASES,
    MemberHistory,
    ceiling,
    projection_ceiling,
    separation,
)
from infoflow.validators.icl_markov.ksweep.thresholds import measure
from infoflow.validators.icl_markov.ksweep.train import load_trained, position_kl
from infoflow.validators.protocol import Context


@dataclass
class JudgedSweep:
    """One K sweep group, measured and judged: what its record in the report is made of."""

    group: IclGroup
    histories: list[MemberHistory]
    measurement: dict
    levels: dict[str, list[dict[str, float]]]  # :meth:`MemberData.levels`
    metrics: dict  # the store's, per member and step
    positions: dict  # :func:`position_kl` of the final model
    claims: list[Claim]

    def record(self, experiment: IclExperiment, named: list[Claim]) -> dict:
        """The group's record for report.json, with its claims as the report names them
        (``named``): enough to redraw its plots and to refit the calibration from report.json
        alone."""
        members = []
        for i, h in enumerate(self.histories):
            rows = self.metrics[i]
            kl = {
                p: [(rows[s][f"id:{p}"] + rows[s][f"ood:{p}"]) / 2 for s in h.steps]
                for p in (*PHASES, "G1_park")
            }
            members.append(
                {
                    "chains": h.chains,
                    "seed": h.seed,
                    "steps": h.steps,
                    "phases": h.phases,
                    "trajectory": h.trajectory,
                    "outcome": h.outcome,
                    "first_g2": h.first_g2,
                    "memorized_at": h.memorized_at,
                    "transient_duration": h.transient_duration,
                    "final": h.final,
                    "kl": kl,
                    "id_truth": [rows[s]["id:truth"] for s in h.steps],
                    "ood_truth": [rows[s]["ood:truth"] for s in h.steps],
                    "levels": {split: self.levels[split][i] for split in self.levels},
                    "positions": _positions(self.positions, i),
                    "weights": _kind_weights(rows, h.steps),
                    "misfit": [rows[s].get("fit:misfit") for s in h.steps],
                    "previous_attention": [rows[s].get("prev:attention") for s in h.steps],
                    "previous_head": h.previous_head,
                }
            )
        predictions = {
            k: {
                name: {"value": p.value, "provenance": p.provenance, "interval": p.interval}
                for name, p in experiment.predictions[(self.group.name, k)].predictions.items()
            }
            for k in self.group.chains
        }
        section = {
            "name": self.group.name,
            **self.group.describe(),
            "predictions": predictions,
            "members": members,
            "measurement": self.measurement,
            "claims": [c.to_json() for c in named],
        }
        return json.loads(json.dumps(section))  # as report.json will hold it: string keys


def judge_sweep(experiment: IclExperiment, group: IclGroup, context: Context) -> JudgedSweep:
    """``group``'s final model and metrics -> its phases, thresholds and claims."""
    data, model = load_trained(group, context)
    levels, positions = data.levels(), position_kl(model, data)
    apart = data.separations()
    metrics = context.store.metrics(group.name)
    variant = group.spec.options.g1_variant
    options = group.spec.options
    histories = [
        MemberHistory.from_metrics(k, seed, metrics[i], apart[i], variant, options.criterion)
        for i, (k, seed) in enumerate(group.members)
    ]
    if options.criterion in PROJECTIONS:
        separable = data.separability()
        limit = projection_ceiling(separable, group.members, options.criterion_tolerance)
    else:
        limit = ceiling(levels, group.members)
    measurement = measure(histories, limit)
    measurement["criterion"] = preregistration(group.spec)
    measurement["separation"] = separation(apart, group.members, variant)
    found = claims(experiment, group, measurement)
    return JudgedSweep(group, histories, measurement, levels, metrics, positions, found)


def sweep_records(
    experiment: IclExperiment, sweeps: list[JudgedSweep]
) -> tuple[list[dict], list[Claim]]:
    """Each group's record for report.json, and every group's claims in order, with their
    kinds (:mod:`..kinds`); a claim's id is prefixed with its group's name when the
    experiment has several groups."""
    records, found = [], []
    for sweep in sweeps:
        mine = list(labelled(sweep.claims, CLAIM_KINDS))
        if len(sweeps) > 1:
            mine = [claim.prefixed(sweep.group.name) for claim in mine]
        records.append(sweep.record(experiment, mine))
        found += mine
    return records, found


def _kind_weights(rows: dict, steps: list[int]) -> dict[str, list[float]]:
    """Each kind's projection weight at every step ({} for a run that recorded none)."""
    if "w:G2" not in rows[steps[0]]:
        return {}
    per_step = [kind_weights(named(rows[s], "w:")) for s in steps]
    return {kind: [w[kind] for w in per_step] for kind in per_step[0]}


def _positions(positions: dict, member: int) -> dict[str, list[float]]:
    """The final model's KL per position: to the truth on each split, and to each reference
    as the mean of the two splits (as the phase rule weighs them)."""
    out = {f"{split}:truth": positions[split][member, 0].tolist() for split in positions}
    for i, target in enumerate(TARGETS[1:], start=1):
        both = (positions["id"][member, i] + positions["ood"][member, i]) / 2
        out[target] = both.tolist()
    return out
