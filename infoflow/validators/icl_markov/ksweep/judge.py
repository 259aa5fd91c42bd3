"""A trained K sweep group -> each member's phases over training and the thresholds across K
(:mod:`.phases`) -> the claims the predictions make about them (:mod:`.claims`) -> the
group's record in report.json (:mod:`.report`).

:func:`judge_sweep` loads and measures one group; the race (:mod:`..clocks.race`) may then add
its own measurement and claim to it, before :func:`sweep_records` writes the records.
"""

from __future__ import annotations

from dataclasses import dataclass

from infoflow.validators.claims import Claim
from infoflow.validators.icl_markov.experiment import IclExperiment
from infoflow.validators.icl_markov.ksweep.claims import claims
from infoflow.validators.icl_markov.ksweep.data import IclGroup
from infoflow.validators.icl_markov.ksweep.phases import (
    MemberHistory,
    ceiling,
    measure,
    separation,
)
from infoflow.validators.icl_markov.ksweep.report import group_section
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


def judge_sweep(experiment: IclExperiment, group: IclGroup, context: Context) -> JudgedSweep:
    """``group``'s final model and metrics -> its phases, thresholds and claims."""
    data, model = load_trained(group, context)
    levels, positions = data.levels(), position_kl(model, data)
    apart = data.separations()
    metrics = context.store.metrics(group.name)
    variant = group.spec.options.g1_variant
    histories = [
        MemberHistory.from_metrics(k, seed, metrics[i], apart[i], variant)
        for i, (k, seed) in enumerate(group.members)
    ]
    measurement = measure(histories, ceiling(levels, group.members))
    measurement["separation"] = separation(apart, group.members, variant)
    found = claims(experiment, group, measurement)
    return JudgedSweep(group, histories, measurement, levels, metrics, positions, found)


def sweep_records(
    experiment: IclExperiment, sweeps: list[JudgedSweep]
) -> tuple[list[dict], list[Claim]]:
    """Each group's record for report.json, and every group's claims in order; a claim's id
    is prefixed with its group's name when the experiment has several groups."""
    records, found = [], []
    for sweep in sweeps:
        mine = sweep.claims
        if len(sweeps) > 1:
            mine = [claim.prefixed(sweep.group.name) for claim in mine]
        records.append(
            group_section(
                experiment,
                sweep.group,
                sweep.histories,
                sweep.measurement,
                sweep.levels,
                sweep.metrics,
                sweep.positions,
                mine,
            )
        )
        found += mine
    return records, found
