"""The looped_kv validator: a spec small enough to train (or with a local checkpoint) -> a
looped model -> axis spectra, every codec against its controls at matched bytes, the latent
store's bytes (:mod:`~infoflow.validators.looped_kv.measure`) -> claims, a report section
and two plots. Its one job trains on the run's device (locally, or as a Ray task), and the
measurements run there too."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infoflow.core.errors import SpecError
from infoflow.core.files import read_json, write_cache
from infoflow.looped_kv.spec import LoopedKVSpec
from infoflow.validators.claims import Section, labelled
from infoflow.validators.ensemble import Checkpoint
from infoflow.validators.identity import content_name
from infoflow.validators.looped_kv import plots, report, structure
from infoflow.validators.looped_kv.claims import TEACHER_CHANGED, claims, over_seeds_table
from infoflow.validators.looped_kv.codec import DISTILL_WEIGHTING
from infoflow.validators.looped_kv.estimate import group_seconds
from infoflow.validators.looped_kv.experiment import (
    SCALES,
    LoopedExperiment,
    LoopedGroup,
    LoopedScale,
    corpus,
    plan,
)
from infoflow.validators.looped_kv.measure import measure
from infoflow.validators.looped_kv.model import load_looped, train_looped
from infoflow.validators.looped_kv.ouro import load_ouro
from infoflow.validators.protocol import Context, Job
from infoflow.validators.report import finite
from infoflow.validators.steptime import step_time

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: The kind of each claim (by its id's head): the byte counts, the full-rank SVD and LLA's
#: error falling with its rank (near a property of truncation, which the paper does not state)
#: are checks of the tool; the rest are the paper's claims about looped models.
CLAIM_KINDS = {
    "store_bytes": "engineering",
    "full_rank_exact": "engineering",
    "error_falls": "engineering",
    "loop_axis": "paper",
    "beats_final_loop": "paper",
    "beats_head_axis": "paper",
    "beats_quantize": "paper",
    "distillation_helps": "paper",
}
#: The version of the measurement code (measure.py, codec.py): part of a kept
#: measurement's key, so a change there (bump it) never reuses numbers measured before it.
MEASURE_VERSION = 2  # 2: the refinement weighs its terms relative to their start
#: The scale's fields a model's measurement depends on (the seeds, widths and snapshots say
#: which models are trained, which the model's own identity covers).
MEASURED_BY = ("length", "calibration", "evaluation", "distill_steps")


#: Claims that are exact for every seed (byte counts, a lossless reconstruction): one seed
#: decides them; the comparisons between methods need two.
EXACT = ("store_bytes:", "full_rank_exact")


def _exact(claim) -> bool:
    """A claim one seed decides: an exact check, or a teacher that distillation moved."""
    return claim.id.startswith(EXACT) or claim.reason == TEACHER_CHANGED


class LoopedKVValidator:
    kind = "looped_kv"
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
    ) -> LoopedScale:
        scale = SCALES[name]
        if seeds:  # the seeds the loop-axis structure is judged over
            scale = replace(scale, seeds=seeds)
        if steps:
            scale = replace(
                scale,
                name=f"{name} ({steps} steps)",
                steps=steps,
                distill_steps=min(scale.distill_steps, steps),
            )
        return scale

    def plan(self, name: str, spec: LoopedKVSpec, scale: LoopedScale, base_dir: Path):
        return plan(name, spec, scale)

    def estimates(self, experiment: LoopedExperiment, device: str) -> dict[str, float]:
        """Each model's training seconds, as ``infoflow plan`` estimates them."""
        steptime, scale = step_time(device), experiment.scale
        return {
            g.name: group_seconds(g, scale.steps, scale.batch, steptime)
            for g in experiment.structure
        }

    def train(self, job: Job, context: Context) -> None:
        group = job.group
        checkpoint = Checkpoint.of(group, context.checkpoints)
        progress = context.progress
        report_step = (
            None
            if progress is None
            else (lambda step, steps, loss, speed: progress(group.name, step, steps, loss, speed))
        )
        scale = group.scale
        train_looped(
            group.config,
            corpus(group.config.vocab, seed=0),
            scale.steps,
            scale.batch,
            scale.length + 1,
            checkpoint,
            seed=group.seed,
            progress=report_step,
            device=context.device,
            snapshots=group.snapshots,
            on_snapshot=lambda step, model: context.store.record_metrics(
                group.name, step, [structure.snapshot(model, scale.length)]
            ),
            on_loss=lambda step, loss: context.store.record_metrics(
                group.name, step, [{"train:loss": loss}]
            ),
            on_speed=lambda rates: context.store.record_throughput(group.name, rates),
            store=context.store,
        )
        context.store.finish_group(group.name, checkpoint.seconds())

    def judge(self, experiment: LoopedExperiment, context: Context) -> Section:
        """The main model measured for the tables and plots; the claims over every seed's
        model of the spec's width (docs/results/2026-12-05-seeds-and-widths-preregistered.md)."""
        group = experiment.group
        trained = None if group is None else context.store.seconds(group.name)
        seeds = _seed_models(experiment)
        measurements = [_measure_once(experiment, context, g) for g in seeds]
        measured = {**measurements[0], "training_seconds": trained}
        models = "1 loaded model" if group is None else f"{len(seeds)} seed{'s' * (len(seeds) > 1)}"
        found = claims(measurements, models)
        body: dict[str, Any] = {"measured": measured}
        if len(measurements) > 1:
            body["over_seeds"] = over_seeds_table([m["methods"] for m in measurements])
        if experiment.structure:
            body["structure"] = structure.table(_runs(experiment, context))
            found += structure.claims(body["structure"])
        if group is not None:  # trained seeds: a comparison needs two (a review)
            found = [c if _exact(c) else c.over_seeds(len(seeds)) for c in found]
        return Section(self.kind, experiment.name, body, labelled(found, CLAIM_KINDS))

    def describe(self, settings: dict[str, Any]) -> str:
        return report.describe(settings)

    def markdown(self, section: dict[str, Any]) -> list[str]:
        return report.markdown(section)

    def plot(self, out: Path, sections: list[dict[str, Any]]) -> list[Path]:
        return plots.plot(out, sections)

    def figures(self, sections: list[dict[str, Any]]) -> dict[str, Figure]:
        return plots.figures(sections)


def _seed_models(experiment: LoopedExperiment) -> list[LoopedGroup | None]:
    """The models the claims read: every seed of the spec's width, the main model first;
    [None] for a loaded checkpoint."""
    if experiment.group is None:
        return [None]
    width = experiment.group.config.d_model
    return [g for g in experiment.structure if g.config.d_model == width]


def _measure_once(
    experiment: LoopedExperiment, context: Context, group: LoopedGroup | None
) -> dict:
    """The measurements of ``group``'s model (None: the spec's checkpoint), or the ones kept
    beside the checkpoints by an earlier run of the same model, scale, spec, device and
    measurement code (a resumed run does not measure again: the codec grid's distillation
    takes minutes). The file is named by that content, as a retrieval witness's is. A value
    that is not finite is None, the same in the run that measures and in one that reads the
    file back (strict JSON: a NaN would make the file unreadable, measured again each time)."""
    spec = experiment.spec
    key = {
        "model": _files(spec.model.checkpoint) if group is None else group.identity(),
        "scale": {field: getattr(experiment.scale, field) for field in MEASURED_BY},
        "spec": spec.model_dump(mode="json"),
        "device": str(context.device),
        "version": MEASURE_VERSION,
        "distill_weighting": DISTILL_WEIGHTING,
    }
    name = f"{experiment.name}-measured" if group is None else "measured"  # by content alone
    path = context.checkpoints / f"{content_name(name, key)}.json"
    try:
        kept = read_json(path, "kept measurement") if path.is_file() else None
    except SpecError:  # damaged: measured again and written over
        kept = None
    if isinstance(kept, dict):
        return kept
    if group is None:
        model = load_ouro(spec.model.checkpoint)
    else:
        model = load_looped(group.config, Checkpoint.of(group, context.checkpoints), context.device)
    measured, _ = finite(measure(spec, model, experiment.scale, context.device))
    write_cache(path, json.dumps(measured, allow_nan=False))  # a diverged value kept as null
    return measured


def _files(folder: str) -> dict[str, list[int]]:
    """A checkpoint folder's files by name, with their sizes and modification times."""
    stats = {p.name: p.stat() for p in sorted(Path(folder).iterdir()) if p.is_file()}
    return {name: [stat.st_size, stat.st_mtime_ns] for name, stat in stats.items()}


def _runs(experiment: LoopedExperiment, context: Context) -> list[dict]:
    """Each trained model's snapshots: {"seed", "width", "snapshots": {step: metrics},
    "steps": the steps it was scheduled to record}; the training loss, recorded at other
    steps too, is not a snapshot's."""
    base = experiment.spec.model.hidden_size
    return [
        {
            "seed": g.seed,
            "width": g.config.d_model // base,
            "snapshots": _snapshots(context.store.metrics(g.name).get(0, {})),
            "steps": g.snapshots,
        }
        for g in experiment.structure
    ]


def _snapshots(recorded: dict[int, dict[str, float]]) -> dict[int, dict[str, float]]:
    """The structure metrics of each step that has them."""
    kept = {
        step: {k: v for k, v in row.items() if k != "train:loss"} for step, row in recorded.items()
    }
    return {step: row for step, row in kept.items() if row}


VALIDATOR = LoopedKVValidator()
