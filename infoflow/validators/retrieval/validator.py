"""The retrieval validator: a spec -> ensembles of small transformers trained on the target,
every model as a ladder of decoder sizes over seeds, each member until its loss stops
improving -> each model's ladder (NMSE per rung and seed), the target's floors and the
readout's attention on fixed positions -> claims
(:mod:`~infoflow.validators.retrieval.claims`), a report section and a plot of the ladders."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from infoflow.retrieval.canonical_to_tree import position_number
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.validators.claims import Section
from infoflow.validators.plots import Floors
from infoflow.validators.protocol import Context, Job
from infoflow.validators.retrieval import plots, report
from infoflow.validators.retrieval.claims import claims, untested
from infoflow.validators.retrieval.design import choose, seconds, with_floors
from infoflow.validators.retrieval.experiment import SCALES, Experiment, Model, Scale
from infoflow.validators.retrieval.exponents import Ladder
from infoflow.validators.retrieval.plan_text import describe, readout_positions
from infoflow.validators.retrieval.train import Group, load_trained, train_group
from infoflow.validators.retrieval.witness import construction_claims

if TYPE_CHECKING:
    from matplotlib.figure import Figure


class RetrievalValidator:
    kind = "retrieval"
    run_options = ("--budget", "--compile", "--pilot")

    def scale(
        self,
        name: str,
        steps: int | None,
        seeds: int | None,
        device: str,
        budget: float | None = None,
        compile: bool = False,
        pilot: bool = False,
    ) -> Scale:
        scale = replace(SCALES[name], device=device, compile=compile, pilot=pilot)
        if budget:
            scale = replace(scale, budget_seconds=budget)
        if steps:
            every = max(1, min(scale.settings.eval_every, steps // 4))
            settings = replace(scale.settings, steps=steps, eval_every=every)
            scale = replace(scale, settings=settings, name=f"{scale.name} ({steps} steps)")
        return replace(scale, seeds=seeds) if seeds else scale

    def plan(self, name: str, spec: RetrievalSpec, scale: Scale, base_dir: Path) -> Experiment:
        return choose(name, spec, scale, base_dir)

    def estimates(self, experiment: Experiment, device: str) -> dict[str, float]:
        """Each group's seconds, as the design estimated them on the scale's device."""
        return experiment.estimates

    def train(self, job: Job, context: Context) -> None:
        train_group(job.group, context)

    def judge(self, experiment: Experiment, context: Context) -> Section:
        ladders, improving = measured_ladders(experiment, context.store)
        attention: dict[Model, dict[int, list[float]]] = {}
        for group in experiment.trained_groups:
            attention.update(_attention(experiment, group, context))
        floors = with_floors(experiment).floors
        found = claims(experiment, ladders, floors, improving, attention)
        if experiment.not_trained:  # every claim on trained models stays undecided
            device = experiment.scale.device
            why = f"not trained on {device} (the spec's validation): the design says why"
            found = [replace(c, verdict="inconclusive", reason=why) for c in found]
        built, witnesses = construction_claims(experiment, context)
        body = {
            **report.body(experiment, ladders, floors, improving),
            "untested": untested(experiment, found),
            "witnesses": witnesses,
        }
        found += built
        return Section(self.kind, experiment.name, body, tuple(found))

    def describe(self, settings: dict[str, Any]) -> str:
        return report.describe(settings)

    def markdown(self, section: dict[str, Any]) -> list[str]:
        return report.markdown(section)

    def plot(self, out: Path, sections: list[dict[str, Any]]) -> list[Path]:
        return plots.plot(out, sections)

    def figures(self, sections: list[dict[str, Any]]) -> dict[str, Figure]:
        return plots.figures(sections)

    def floors(self, section: dict[str, Any]) -> dict[str, Floors]:
        return plots.floors(section)


def measured_ladders(experiment: Experiment, store) -> tuple[dict[Model, Ladder], dict]:
    """Each model's ladder (the last held-out NMSE of every rung it trained, per seed) and
    how many of its members the cap stopped while their loss was still falling (an
    experiment not trained on this device: its rungs, with no NMSE)."""
    seeds = experiment.scale.seeds
    rows: dict[Model, dict[int, tuple[int, list[float | None]]]] = {}
    capped: dict[Model, dict[int, list[bool]]] = {}
    improving: dict[Model, int] = {}
    for group in experiment.groups:
        if experiment.not_trained:
            values = stopped = [None] * len(group.members)
        else:
            values = store.last_values(group.name, "eval:nmse")
            stopped = store.last_values(group.name, "plateau:improving")
        for i, member in enumerate(group.members):
            model, rung, seed = experiment.model_of(group, i)
            size = member.decoder_parameters()
            rows.setdefault(model, {}).setdefault(rung, (size, [None] * seeds))[1][seed] = values[i]
            capped.setdefault(model, {}).setdefault(rung, [False] * seeds)[seed] = bool(stopped[i])
            if not experiment.not_trained:  # nothing stopped or still improving
                improving[model] = improving.get(model, 0) + int(bool(stopped[i]))
    ladders = {
        model: Ladder(
            [by[r][0] for r in sorted(by)],
            [by[r][1] for r in sorted(by)],
            [capped[model][r] for r in sorted(by)],
        )
        for model, by in rows.items()
    }
    return ladders, improving


@torch.no_grad()
def _attention(experiment: Experiment, group: Group, context: Context) -> dict:
    """For targets that read fixed positions: the readout's mean first-layer attention on
    each of them, over the heads in use, for each seed of the largest rung (judged seed by
    seed: an average of two seeds hid one below the threshold, a review)."""
    positions = sorted(
        position_number(p, group.seq_len) for p in readout_positions(experiment.base)
    )
    if not positions:
        return {}
    model, x_eval = load_trained(group, context.device, context.checkpoints)
    _, probs = model(x_eval[:512], return_attention=True)  # [members, batch, heads, T + 1]
    seeds: dict = {}
    for i, member in enumerate(group.members):
        if member.positional_encoding and member.hidden == max(experiment.scale.rungs):
            active = probs[i, :, : member.heads[0]].float().mean((0, 1))
            seeds.setdefault(experiment.model_of(group, i)[0], []).append(active)
    return {
        key: {p: [float(share[p - 1]) for share in values] for p in positions}
        for key, values in seeds.items()
    }


VALIDATOR = RetrievalValidator()


def plan_command(
    spec: RetrievalSpec,
    source: str,
    scale: str,
    device: str | None,
    budget: float | None,
    steps: int | None,
    seeds: int | None,
    compile: bool = False,
    pilot: bool = False,
    overrides: tuple[str, ...] = (),  # the families that print a GPU command repeat them
) -> tuple[str, float]:
    """``infoflow plan`` for one retrieval spec on ``device`` (None: the one validate would
    use, CUDA where there is one): its description and estimated seconds; a SpecError (exit
    2) when the validator cannot train it."""
    from infoflow.validators.run import plan_one

    args = (scale, device, budget, steps, seeds)
    experiment, _, _ = plan_one(VALIDATOR, spec, source, *args, "target", compile, pilot)
    return describe(experiment, source), seconds(experiment) + experiment.construction_seconds
