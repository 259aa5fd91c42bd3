"""The icl_markov validator: a spec -> its K sweep trained as one stacked ensemble per
setting -> each member's phases over training, the thresholds and timescales across K ->
claims (:mod:`~infoflow.validators.icl_markov.claims`), a report section and plots."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import infoflow
from infoflow.icl_markov.calibration import load_calibration
from infoflow.icl_markov.spec import IclMarkovSpec
from infoflow.validators.claims import Section
from infoflow.validators.icl_markov import plots, report
from infoflow.validators.icl_markov.claims import claims
from infoflow.validators.icl_markov.decoder import (
    DecoderGroup,
    decoder_claims,
    measure_decoder,
    train_decoder_group,
)
from infoflow.validators.icl_markov.experiment import SCALES, IclExperiment, IclScale, plan
from infoflow.validators.icl_markov.phases import MemberHistory, ceiling, measure, separation
from infoflow.validators.icl_markov.racing import (
    measured_clocks,
    race_claim,
    race_for,
    shift_claims,
    slowing_claims,
)
from infoflow.validators.icl_markov.train import load_trained, position_kl, train_icl_group
from infoflow.validators.protocol import Context, Job


class IclMarkovValidator:
    kind = "icl_markov"

    def scale(
        self,
        name: str,
        steps: int | None,
        seeds: int | None,
        device: str,
        budget: float | None = None,
    ) -> IclScale:
        scale = replace(SCALES[name], clock_group_per_k=not device.startswith("cuda"))
        scale = replace(scale, seeds=seeds) if seeds else scale
        return replace(scale, max_steps=steps, name=f"{name} ({steps} steps)") if steps else scale

    def plan(self, name: str, spec: IclMarkovSpec, scale: IclScale, base_dir: Path):
        return plan(name, spec, scale, base_dir)

    def train(self, job: Job, context: Context) -> None:
        if isinstance(job.group, DecoderGroup):
            train_decoder_group(job.group, context)
        else:
            train_icl_group(job.group, context)

    def judge(self, experiment: IclExperiment, context: Context) -> Section:
        groups, found, raced = [], [], {}
        clocks = measured_clocks(experiment.clocks, context.store.metrics)
        for group in experiment.groups:
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
            mine = claims(experiment, group, measurement)
            result = race_for(group.spec, clocks)
            if result is not None:
                measurement["race"] = result.to_json()
                mine.append(race_claim(result, measurement))
                raced[group.name] = (result, measurement["k1_fit"])
            if len(experiment.groups) > 1:
                mine = [claim.prefixed(group.name) for claim in mine]
            groups.append(
                report.group_section(
                    experiment, group, histories, measurement, levels, metrics, positions, mine
                )
            )
            found += mine
        race_claims = shift_claims(experiment.groups, raced) + slowing_claims(clocks)
        found += race_claims
        decoders = [_judge_decoder(group, context) for group in experiment.decoders]
        found += [claim for _, mine in decoders for claim in mine]
        decoders = [section for section, _ in decoders]
        body = {
            "capped": experiment.capped,
            "groups": groups,
            "clocks": [
                {k: v for k, v in entry.items() if k != "clocks"} for entry in clocks.values()
            ],
            "decoders": decoders,
            "race_claims": [c.to_json() for c in race_claims],
        }
        return Section(self.kind, experiment.name, body, tuple(found))

    def describe(self, settings: dict[str, Any]) -> str:
        return report.describe(settings)

    def markdown(self, section: dict[str, Any]) -> list[str]:
        return report.markdown(section)

    def plot(self, out: Path, sections: list[dict[str, Any]]) -> list[Path]:
        written = []
        for section in sections:
            written += plots.plot_phases(out, section) + plots.plot_positions(out, section)
            written += plots.plot_race(out, section)
        return written


def _judge_decoder(group: DecoderGroup, context: Context) -> tuple[dict, list]:
    """A decoder group's record for the report, and its claims (against the prediction of
    K*_2 at its setting)."""
    measured = measure_decoder(group, context.store.metrics(group.name))
    k2 = infoflow.predict(group.spec)["k2_star"].value
    capacity = load_calibration(group.spec.calibration).capacity
    here = capacity.provenance == "fit:decoder" and group.name in capacity.source
    mine = decoder_claims(measured, k2, group.spec.states, here)
    section = {
        "name": group.name,
        **group.describe(),
        "k2_star": k2,
        "measurement": measured,
        "claims": [c.to_json() for c in mine],
    }
    return section, mine


VALIDATOR = IclMarkovValidator()
