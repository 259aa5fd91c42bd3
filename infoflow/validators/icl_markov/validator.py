"""The icl_markov validator: the protocol object (:mod:`infoflow.validators.protocol`), which
hands each stage to the experiments. A spec -> its groups (:mod:`.experiment`) -> each trained
by its experiment -> judged: every K sweep group (:mod:`.ksweep.judge`), the race of the
clock runs at its setting (:mod:`.clocks.judge`), the decoder alone (:mod:`.decoder.judge`)
-> a report section (:mod:`.report`) and plots."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infoflow.icl_markov.spec import IclMarkovSpec
from infoflow.validators.claims import Section, labelled
from infoflow.validators.icl_markov import report
from infoflow.validators.icl_markov.clocks import plots as clocks_plots
from infoflow.validators.icl_markov.clocks.data import ClockGroup
from infoflow.validators.icl_markov.clocks.judge import (
    base_key,
    clock_records,
    measured_clocks,
    race_sweeps,
)
from infoflow.validators.icl_markov.clocks.train import train_clocks
from infoflow.validators.icl_markov.criterion import preregistration
from infoflow.validators.icl_markov.decoder.data import DecoderGroup
from infoflow.validators.icl_markov.decoder.judge import by_setting, judge_decoder
from infoflow.validators.icl_markov.decoder.train import train_decoder
from infoflow.validators.icl_markov.estimate import group_estimates
from infoflow.validators.icl_markov.experiment import SCALES, IclExperiment, IclScale, plan
from infoflow.validators.icl_markov.kinds import CLAIM_KINDS
from infoflow.validators.icl_markov.ksweep import plots as ksweep_plots
from infoflow.validators.icl_markov.ksweep.data import IclGroup
from infoflow.validators.icl_markov.ksweep.dose import dose_claims
from infoflow.validators.icl_markov.ksweep.judge import judge_sweep, sweep_records
from infoflow.validators.icl_markov.ksweep.train import train_sweep
from infoflow.validators.plots import save_all
from infoflow.validators.protocol import Context, Job
from infoflow.validators.steptime import step_time

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Each kind of group -> the experiment's training.
TRAINERS = {IclGroup: train_sweep, ClockGroup: train_clocks, DecoderGroup: train_decoder}


class IclMarkovValidator:
    kind = "icl_markov"
    run_options = ()  # it sizes nothing to a budget and compiles nothing

    def scale(
        self,
        name: str,
        steps: int | None,
        seeds: int | None,
        device: str,
        budget: float | None = None,
        compile: bool = False,
        pilot: bool = False,
    ) -> IclScale:
        scale = replace(SCALES[name], clock_group_per_k=not device.startswith("cuda"))
        scale = replace(scale, seeds=seeds) if seeds else scale
        return replace(scale, max_steps=steps, name=f"{name} ({steps} steps)") if steps else scale

    def plan(self, name: str, spec: IclMarkovSpec, scale: IclScale, base_dir: Path):
        return plan(name, spec, scale, base_dir)

    def estimates(self, experiment: IclExperiment, device: str) -> dict[str, float]:
        """Each group's seconds, as ``infoflow plan`` estimates them."""
        return group_estimates(experiment, step_time(device))

    def preregister(self, experiment: IclExperiment) -> dict:
        """The criterion that decides the phases and clocks, per setting of the K sweep."""
        found = {g.name: preregistration(g.spec) for g in experiment.groups}
        return found if len(set(map(str, found.values()))) > 1 else next(iter(found.values()))

    def train(self, job: Job, context: Context) -> None:
        TRAINERS[type(job.group)](job.group, context)

    def judge(self, experiment: IclExperiment, context: Context) -> Section:
        clocks = measured_clocks(experiment.clocks, context.store.metrics)
        sweeps = [judge_sweep(experiment, group, context) for group in experiment.groups]
        race_claims = race_sweeps(sweeps, clocks)
        race_claims += dose_claims(
            [
                (
                    base_key(s.group.spec),
                    s.group.spec.training.layer1_attention_lr,
                    s.measurement["k1_fit"],
                )
                for s in sweeps
            ]
        )
        race_claims = list(labelled(race_claims, CLAIM_KINDS))
        groups, found = sweep_records(experiment, sweeps)
        decoders = [judge_decoder(seeds, context) for seeds in by_setting(experiment.decoders)]
        found += race_claims + [claim for _, mine in decoders for claim in mine]
        body = {
            "capped": experiment.capped,
            "groups": groups,
            "clocks": clock_records(clocks),
            "decoders": [section for section, _ in decoders],
            "race_claims": [c.to_json() for c in race_claims],
        }
        return Section(self.kind, experiment.name, body, tuple(found))

    def describe(self, settings: dict[str, Any]) -> str:
        return report.describe(settings)

    def markdown(self, section: dict[str, Any]) -> list[str]:
        return report.markdown(section)

    def plot(self, out: Path, sections: list[dict[str, Any]]) -> list[Path]:
        return save_all(out, self.figures(sections))

    def figures(self, sections: list[dict[str, Any]]) -> dict[str, Figure]:
        found = {}
        for section in sections:
            found |= ksweep_plots.figures(section) | clocks_plots.figures(section)
        return found


VALIDATOR = IclMarkovValidator()
