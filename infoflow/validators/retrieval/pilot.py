"""A candidate design -> whether the models it predicts efficient learn within its cap: a
short pilot, trained before the design is taken.

For every model the design predicts efficient, the largest rung of the ladder trains, every
seed, for :data:`PILOT_STEPS` steps with its group's own settings (the same cap, so the same
warmup and plateau rule: what the run's member sees in its first steps, up to float
rounding). Each member's held-out NMSE at half the pilot and at its end is extrapolated to
the cap on a power law in steps (:func:`extrapolated`); the pilot calls the design learnable
when every member's extrapolation is below its floor's ``learns_below``. The rule and its
pass mark were written down before the runs that tested it
(docs/results/2026-12-04-pilot-designs-preregistered.md). Each member's extrapolation is
cached beside the device's step-time model and pinned in a resumed run, so ``plan`` and a
later ``validate`` design the same experiment.
"""

from __future__ import annotations

import hashlib
import json
import math
import tempfile
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path

import torch

from infoflow.core.notes import progress_note
from infoflow.validators.protocol import Context
from infoflow.validators.retrieval.experiment import Experiment
from infoflow.validators.retrieval.timing import cached_number
from infoflow.validators.retrieval.train import Group, train_group
from infoflow.validators.steptime import cache_file, remembered
from infoflow.validators.store import Recorder

#: The pilot's steps: the evaluations at half of them and at the last are extrapolated.
PILOT_STEPS = 600
#: What a member whose NMSE is not finite is recorded as (it does not learn).
DIVERGED = 1e9


@dataclass(frozen=True)
class PilotMember:
    label: str
    seq_len: int
    extrapolated: float  # the held-out NMSE the pilot's curve reaches at the cap
    learns_below: float

    @property
    def learns(self) -> bool:
        return self.extrapolated < self.learns_below


@dataclass(frozen=True)
class Pilot:
    """A design's pilot: each member's call, and the design's (every member learns)."""

    steps: int
    members: tuple[PilotMember, ...]
    passed_over: tuple[str, ...] = ()  # the other designs piloted, not learnable

    @property
    def learnable(self) -> bool:
        return all(m.learns for m in self.members)

    def describe(self) -> dict:
        return {
            "steps": self.steps,
            "learnable": self.learnable,
            "passed_over": list(self.passed_over),
            "members": [
                {
                    "label": m.label,
                    "seq_len": m.seq_len,
                    "extrapolated_nmse": m.extrapolated,
                    "learns_below": m.learns_below,
                }
                for m in self.members
            ],
        }

    def sentence(self) -> str:
        return sentence(self.describe())


def sentence(pilot: dict) -> str:
    """A pilot (report.json's form) in a line: its call, its worst member against its
    threshold, and the other designs piloted. A report from before design-level pilots
    (the member-level pilot of 2026-12-04: a note and each model's worst seed) gives its
    note."""
    if "members" not in pilot:
        return f"pilot ({pilot.get('steps', '?')} steps): {pilot.get('note', 'no call recorded')}"
    members = pilot["members"]
    worst = max(members, key=lambda m: m["extrapolated_nmse"] / m["learns_below"])
    call = "learnable" if pilot["learnable"] else "not learnable"
    passed = "; ".join(pilot["passed_over"])
    over = f" (other designs piloted, not learnable: {passed})" if passed else ""
    return (
        f"pilot ({pilot['steps']} steps of the largest rung of every model predicted "
        f"efficient, {len(members)} members): {call}; worst {worst['label']} extrapolated "
        f"to NMSE {worst['extrapolated_nmse']:.3g} at the cap, learns below "
        f"{worst['learns_below']:.3g}{over}"
    )


def extrapolated(curve: dict[int, float], pilot: int, cap: int) -> float | None:
    """The NMSE at ``cap`` on the power law through the evaluations at pilot / 2 and at the
    last one not after the pilot (no rise: a curve going up is held flat); None without two
    such evaluations, positive and finite."""
    steps = [s for s in sorted(curve) if s <= pilot]
    early = [s for s in steps if s <= pilot // 2]
    if not early or steps[-1] == early[-1]:
        return None
    a, b = early[-1], steps[-1]
    if not all(math.isfinite(v) and v > 0 for v in (curve[a], curve[b])):
        return None
    slope = math.log(curve[b] / curve[a]) / math.log(b / a)
    return curve[b] * (cap / b) ** min(slope, 0.0)


def pilot(experiment: Experiment, device: str) -> Pilot | None:
    """The pilot of ``experiment``'s design (with its floors) on ``device``; None when there
    is nothing to pilot (no model predicted efficient) or the cap is under twice
    :data:`PILOT_STEPS`."""
    members = []
    for group in experiment.trained_groups:
        piloted = pilot_group(experiment, group)
        if piloted is None or piloted.settings.steps < 2 * PILOT_STEPS:
            continue
        threshold = experiment.floors[group.seq_len].learns_below
        for index, value in enumerate(_extrapolations(piloted, device)):
            members.append(PilotMember(piloted.labels[index], group.seq_len, value, threshold))
    return Pilot(PILOT_STEPS, tuple(members)) if members else None


def can_train_here(device: str) -> bool:
    """Whether this machine has ``device`` ("cpu" or "cuda") to train a pilot on."""
    return device == "cpu" or torch.cuda.is_available()


def not_piloted(experiment: Experiment) -> str:
    """Why a design asked to pilot (``scale.pilot`` under a budget) has no pilot."""
    scale = experiment.scale
    if not can_train_here(scale.device):
        return "no CUDA device here to pilot on"
    if scale.settings.steps < 2 * PILOT_STEPS:
        return f"the cap, {scale.settings.steps:,} steps, is under twice the pilot's {PILOT_STEPS}"
    return "no model predicted efficient"


def pilot_group(experiment: Experiment, group: Group) -> Group | None:
    """The members of ``group`` a pilot trains: the largest rung of every model predicted
    efficient, every seed (None when there are none)."""
    largest = len(experiment.scale.rungs) - 1
    chosen = []
    for index in range(len(group.members)):
        model, rung, _ = experiment.model_of(group, index)
        if rung == largest and experiment.expected[model].efficient:
            chosen.append(index)
    if not chosen:
        return None
    return Group(
        f"{group.prefix}-pilot",
        group.spec,
        group.seq_len,
        [group.members[i] for i in chosen],
        [group.labels[i] for i in chosen],
        group.settings,
        group.data_seed,
    )


def pilot_key(group: Group) -> str:
    """What a pilot's numbers are cached and pinned under: the pilot group's content, the
    training code's version, the pilot's steps and torch's version (not the thread count:
    a pilot is a learning curve, not a timing, and ``plan`` and ``validate`` may train on
    different counts)."""
    text = json.dumps([group.trained(), group.code, PILOT_STEPS, torch.__version__], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _extrapolations(group: Group, device: str) -> list[float]:
    """Each member's extrapolated NMSE: trained once, cached in ``pilots-<device>.json``
    beside the step-time models, pinned in a resumed run."""
    key = pilot_key(group)
    path = cache_file(device, load=0.0).parent / f"pilots-{device}.json"
    trained = cache(partial(_train, group, device))
    return [
        remembered(
            f"pilot:{device}:{key}:{i}",
            partial(cached_number, path, f"{key}:{i}", lambda i=i: trained()[i]),
        )
        for i in range(len(group.members))
    ]


def recorded_curves(recorder: Recorder, members: int) -> list[dict[int, float]]:
    """Each member's held-out NMSE by step, from what a group's training recorded."""
    curves: list[dict[int, float]] = [{} for _ in range(members)]
    for method, args in recorder.rows:
        if method == "record_metrics":
            _, step, rows = args
            for curve, row in zip(curves, rows, strict=True):
                curve[step] = row["eval:nmse"]
    return curves


def _train(group: Group, device: str) -> list[float]:
    """Train ``group`` to half of :data:`PILOT_STEPS`, then on to all of them (resumed: so
    both are evaluated whatever ``eval_every``), away from the run's store and checkpoints;
    each member's extrapolation, or its last NMSE where it stopped before half the pilot
    (:data:`DIVERGED` where that is not finite). Says so on stderr first: a plan that pilots
    was silent for minutes (4.5 on a 2-core CPU for kth-largest's three designs)."""
    progress_note(
        f"piloting {group.name}: {len(group.members)} members, T = {group.seq_len}, "
        f"{PILOT_STEPS} steps (once: cached; --no-pilot skips it)..."
    )
    recorder = Recorder()
    with tempfile.TemporaryDirectory() as folder:
        context = Context(torch.device(device), recorder, Path(folder))
        for until in (PILOT_STEPS // 2, PILOT_STEPS):
            train_group(group, context, until=until)
    values = []
    for curve in recorded_curves(recorder, len(group.members)):
        value = extrapolated(curve, PILOT_STEPS, group.settings.steps)
        value = curve[max(curve)] if value is None and curve else value
        ok = value is not None and math.isfinite(value)
        values.append(value if ok else DIVERGED)
    return values
