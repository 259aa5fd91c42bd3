"""A retrieval spec, a scale and a device -> the experiment the theory says is worth running.

Candidate designs size the spec's points (the sequence lengths kept, the width E); each is
planned (:func:`~infoflow.validators.retrieval.experiment.plan`), the engine predicts the
exponent of every model, and each pair the claims will compare is a predicted separation,
a predicted equality, or nothing the theory lets a run test
(:func:`~infoflow.validators.retrieval.expect.expect`, which respects each prediction's
bound). The chosen design tests the most of the paper's claims, then the most claims, then
the largest separations (each counted up to :data:`DELTA_CAP`), within the scale's time
budget on the device, estimated at the cap with the device's step-time model
(:mod:`~infoflow.validators.steptime`) and the target's own evaluation time, measured; the
designs that fit are then timed on their own stacks, best first (:func:`timed`), and the
first that still fits is taken.
Without a budget (the paper scale) the spec's own sizes are the design: only the estimate is
added. The chosen design's floors (:mod:`~infoflow.validators.retrieval.floors`) are
computed from the target alone (:func:`with_floors`), printed by ``infoflow plan`` and
judged against after training.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import infoflow
from infoflow.core.units import MAX_DURATION
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.validators.protocol import CannotValidate
from infoflow.validators.retrieval.expect import Expectation, expectations
from infoflow.validators.retrieval.experiment import Design, Experiment, Scale, plan
from infoflow.validators.retrieval.floors import floors
from infoflow.validators.retrieval.pilot import can_train_here, pilot
from infoflow.validators.retrieval.timing import (
    COMPILE_GAINS,
    LONGEST_TIMED_STEP,
    group_flops,
    group_step,
    step_model,
    target_seconds,
)
from infoflow.validators.retrieval.train import Group
from infoflow.validators.retrieval.witness_plan import construction_seconds
from infoflow.validators.steptime import StepTime, duration, recorded_without

#: Sequence lengths a design may choose (within the spec's own largest T), and the range of
#: widths (multiples of every head count).
SEQ_LENS = (8, 16, 32, 64)
WIDTHS = range(16, 65)
#: A separation counts for the score up to this exponent difference.
DELTA_CAP = 3.0
#: Designs piloted at most, best first (each pilot trains).
PILOT_CANDIDATES = 3


def choose(name: str, spec: RetrievalSpec, scale: Scale, base_dir: Path | None) -> Experiment:
    """The experiment for ``spec`` at ``scale``: the best design within the budget (the
    cheapest when none fits), its groups' times estimated on the step-time model and then
    timed (:func:`timed`): the designs that fit by the model are timed best first, and the
    first that still fits is taken; when none does, the cheapest timed. On a device the
    spec's ``validation`` leaves out: the spec's own sizes, :func:`untrained`. The budget is
    the training's; the construction claims' time is estimated beside it."""
    if scale.device not in spec.validation.train_on:
        experiment = untrained(plan(name, spec, scale, base_dir))
    else:
        experiment = _designed(name, spec, scale, base_dir)
    if scale.device in spec.validation.build_on:
        cpu, device = step_model("cpu"), step_model(scale.device)
        experiment.construction_seconds = construction_seconds(experiment, cpu, device)
    else:
        why = spec.validation.why.strip()
        experiment.not_built = f"no construction claim on {scale.device}: {why}"
    return experiment


def _designed(name: str, spec: RetrievalSpec, scale: Scale, base_dir: Path | None) -> Experiment:
    steptime = step_model(scale.device)
    if scale.budget_seconds is None:
        return timed(estimate(plan(name, spec, scale, base_dir), steptime), steptime)
    candidates, refused = [], None
    for design in designs(spec, base_dir):
        try:
            candidates.append(estimate(plan(name, spec, scale, base_dir, design), steptime))
        except CannotValidate as exc:
            refused = refused or exc
    if not candidates:
        raise refused or CannotValidate("no design of this spec can be trained")
    lengths = sorted({p.seq_len or 16 for _, p in infoflow.expand(spec, base_dir)})
    fits = [e for e in candidates if seconds(e) <= scale.budget_seconds]
    fits.sort(key=lambda e: score(e, spec, lengths[-1]), reverse=True)
    taken = _taken(fits, scale, steptime)
    taken = taken or min((timed(e, steptime) for e in candidates), key=seconds)
    taken.left_out = left_out(taken, candidates, spec, lengths, steptime)
    return taken


#: What each place of :func:`score`'s tuple says where the design with every length loses.
LOSES_ON = (
    "tests fewer of the paper's claims",
    "tests fewer claims",
    "predicts smaller separations",
    "is not at the spec's width",
    "does not reach the spec's longest length",
    "costs more FLOPs for the same claims",
)


def left_out(
    taken: Experiment,
    candidates: list[Experiment],
    spec: RetrievalSpec,
    lengths: list[int],
    steptime: StepTime,
) -> str:
    """The spec's lengths the taken design does not train, and why the design with all of
    them at the spec's width was not taken: over the budget (its estimate with its groups
    timed as :func:`timed` times them: the model's alone can be 2x low, and the --budget it
    suggested did not fit, a review), its pilot did not learn, or it scores lower
    (:func:`score`, the first place it loses on). Empty when the taken design trains every
    length."""
    missing = [t for t in lengths if t not in (taken.design.seq_lens or lengths)]
    if not missing:
        return ""
    dropped = f"T = {', '.join(map(str, missing))}"
    whole = Design(tuple(lengths), None)
    full = next((e for e in candidates if e.design == whole), None)
    if full is None:
        return f"{dropped}: no design with every length of the spec can be planned"
    budget, estimated = taken.scale.budget_seconds, seconds(timed(full, steptime))
    if estimated > budget:
        return (
            f"{dropped}: the design with every length of the spec ({sizes(whole)}) is "
            f"estimated at {duration(estimated)}, over the budget of {duration(budget)} "
            f"({_whole(estimated)})"
        )
    if taken.pilot and sizes(whole) in taken.pilot.passed_over:
        return f"{dropped}: the design with every length of the spec did not learn in its pilot"
    ours, theirs = score(full, spec, lengths[-1]), score(taken, spec, lengths[-1])
    place = next((i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b), None)
    lower = place is not None and ours[place] < theirs[place]
    why = LOSES_ON[place] if lower else "ranks no lower, and was passed over"
    return f"{dropped}: the design with every length of the spec {why}"


def _taken(fits: list[Experiment], scale: Scale, steptime: StepTime) -> Experiment | None:
    """The best design that still fits once timed (each shape timed once). With
    ``scale.pilot`` on a device this machine has: the best such whose pilot calls it
    learnable (:mod:`~infoflow.validators.retrieval.pilot`), trying at most
    :data:`PILOT_CANDIDATES`, else the best that fits; the other designs piloted are named
    in the taken one's pilot."""
    piloting = scale.pilot and can_train_here(scale.device)
    fitting = (e for e in fits if seconds(timed(e, steptime)) <= scale.budget_seconds)
    tried: list[Experiment] = []
    for experiment in fitting:
        if not piloting:
            return experiment
        experiment.pilot = pilot(with_floors(experiment), scale.device)
        if experiment.pilot is None or experiment.pilot.learnable:
            return _also_piloted(experiment, tried)
        tried.append(experiment)
        if len(tried) == PILOT_CANDIDATES:
            break
    return _also_piloted(tried[0], tried[1:]) if tried else None


def _also_piloted(experiment: Experiment, others: list[Experiment]) -> Experiment:
    """``experiment`` with the sizes of the ``others`` piloted (not learnable) in its pilot."""
    if experiment.pilot is not None and others:
        named = tuple(sizes(e.design) for e in others)
        experiment.pilot = replace(experiment.pilot, passed_over=named)
    return experiment


def _whole(estimated: float) -> str:
    """The --budget that fits ``estimated`` seconds: whole minutes, whole hours from two
    hours on (none past --budget's limit)."""
    minutes = math.ceil(estimated / 60)
    if minutes * 60 > MAX_DURATION:
        return "no --budget fits that estimate"
    budget = f"{math.ceil(minutes / 60)}h" if minutes >= 120 else f"{minutes}m"
    return f"--budget {budget} fits that estimate"


def untrained(experiment: Experiment) -> Experiment:
    """``experiment`` planned but not trained on its device (the spec's ``validation``
    leaves the device out, and says why): nothing to estimate, and every claim on its trained
    models will be inconclusive, with that reason."""
    device = experiment.scale.device
    why = experiment.base.validation.why.strip()
    experiment.not_trained = f"not trained on {device}: {why}"
    experiment.step_time = "nothing trains"
    return experiment


def timed(experiment: Experiment, steptime: StepTime) -> Experiment:
    """``experiment`` with its estimates changed in place: each group's training step timed
    on its own stack, where the step-time model was measured on this machine and puts the
    step under :data:`~infoflow.validators.retrieval.timing.LONGEST_TIMED_STEP` (the
    model's time per FLOP is a fit to two stacks: it was 1.5-2.7x low for narrow ones, at
    E = 8), unless the run being resumed started before groups were timed (it designs as it
    did). Its ``step_time`` says how many groups were timed."""
    if steptime.assumed or steptime.threads is None or recorded_without("step:"):
        return experiment  # an assumed or fixed model, or a run resumed from before timing
    count, compiled = 0, experiment.scale.compile
    for group in experiment.groups:
        shape = (group.members, group.seq_len, group.spec.input_dim or 4, group.settings.batch)
        if steptime.step(group_flops(*shape)) <= LONGEST_TIMED_STEP:
            step = group_step(*shape, experiment.scale.device)
            experiment.estimates[group.name] = group_seconds(group, steptime, step, compiled)
            count += 1
    if count == len(experiment.groups):
        experiment.step_time = f"{steptime.source}; each group's step timed on its own stack"
    elif count:
        timed_here = f"{count} of {len(experiment.groups)} groups' steps timed on their own stacks"
        experiment.step_time = f"{steptime.source}; {timed_here}"
    return experiment


def with_floors(experiment: Experiment) -> Experiment:
    """The experiment with its target's floors at every length it trains, with the held
    shortcut of every architecture it trains there (computed once)."""
    for seq_len in sorted({m.seq_len for m in experiment.models}):
        if seq_len not in experiment.floors:
            at = {
                (m.heads, m.positional_encoding) for m in experiment.models if m.seq_len == seq_len
            }
            experiment.floors[seq_len] = floors(experiment.base, seq_len, tuple(sorted(at)))
    return experiment


def designs(spec: RetrievalSpec, base_dir: Path | None) -> list[Design]:
    """Every (lengths, E) worth trying. Lengths: for a spec of one T, that T or any shorter
    one in :data:`SEQ_LENS`; for a sweep over T, its lengths up to each of them, or the
    shortest and that one. E: the spec's own, or, for a spec of one width that does not
    sweep E (a sweep over E, even of one value, fixes it), any in :data:`WIDTHS` that is a
    multiple of every head count (the least such multiple of at least 8 being the step) with
    heads at least d wide."""
    points = [point for _, point in infoflow.expand(spec, base_dir)]
    lengths = sorted({p.seq_len or 16 for p in points})
    if len(lengths) == 1:
        choices = {(t,) for t in {*lengths, *(t for t in SEQ_LENS if t < lengths[0])}}
    else:
        choices = {tuple(lengths[: i + 1]) for i in range(len(lengths))}
        choices |= {(lengths[0], t) for t in lengths[1:]}
    widths: list[int | None] = [None]
    own = {p.architecture.embed_dim for p in points}
    if len(own) == 1 and "architecture.embed_dim" not in (spec.sweep or {}):
        heads = {h for p in points for h in p.architecture.heads_per_layer}
        step = math.lcm(*heads) * math.ceil(8 / math.lcm(*heads))
        d = spec.input_dim or 4
        fits = lambda e: all(e // h >= d for h in heads)  # noqa: E731
        widths += [e for e in WIDTHS if e % step == 0 and e not in own and fits(e)]
    return [Design(seq_lens, width) for seq_lens in sorted(choices) for width in widths]


def score(experiment: Experiment, spec: RetrievalSpec, longest: int) -> tuple:
    """More of the paper's claims, then more claims, then larger separations, then the
    spec's own width and lengths, then less work (FLOPs, not seconds: the choice must not
    depend on the machine's load)."""
    found = [e for _, _, e in expectations(experiment) if isinstance(e, Expectation)]
    paper = sum(e.kind == "paper" for e in found)
    separations = [
        min(abs(experiment.exponent(e.worse) - experiment.exponent(e.better)), DELTA_CAP)
        for e in found
        if e.outcome == "separation"
    ]
    design = experiment.design
    own_width = design.embed_dim in (None, spec.architecture.embed_dim)
    own_lengths = design.seq_lens is None or max(design.seq_lens) >= longest
    work = sum(
        group_flops(g.members, g.seq_len, spec.input_dim or 4, g.settings.batch)
        for g in experiment.groups
    )
    size = round(sum(separations), 9)
    return (paper, len(found), size, own_width, own_lengths, -work)


def seconds(experiment: Experiment) -> float:
    return sum(experiment.estimates.values())


def estimate(experiment: Experiment, steptime: StepTime) -> Experiment:
    """Fill ``experiment.estimates``: each group's training time on the step-time model."""
    compiled = experiment.scale.compile
    for group in experiment.groups:
        experiment.estimates[group.name] = group_seconds(group, steptime, compiled=compiled)
    experiment.step_time = steptime.source
    return experiment


def group_seconds(
    group: Group, steptime: StepTime, step: float | None = None, compiled: bool = False
) -> float:
    """Training steps (``step`` seconds each, else the model's; ``compiled``: that step sped
    up and its compile time added, as recorded in :data:`~infoflow.validators.retrieval.
    timing.COMPILE_GAINS`), the evaluations every ``eval_every`` steps and the target's own
    time."""
    s, d = group.settings, group.spec.input_dim or 4
    train = (
        step
        if step is not None
        else steptime.step(group_flops(group.members, group.seq_len, d, s.batch))
    )
    compiling = 0.0
    if compiled:
        gain = COMPILE_GAINS[steptime.device_type]
        train, compiling = train / gain.speedup, gain.seconds
    chunks = math.ceil(s.eval_size / 512)
    evaluation = chunks * steptime.step(group_flops(group.members, group.seq_len, d, 512) / 3)
    evaluations = math.ceil(s.steps / s.eval_every) + 1
    target = (
        0.0
        if steptime.assumed
        else target_seconds(group.spec, group.seq_len, s.batch, steptime.device_type)
    )
    return compiling + s.steps * (train + target) + evaluations * evaluation


def sizes(design: Design) -> str:
    """A design's sizes in words: ``T = 8, 16, E = 24``."""
    lengths = ", ".join(map(str, design.seq_lens)) if design.seq_lens else "the spec's"
    width = design.embed_dim or "the spec's"
    return f"T = {lengths}, E = {width}"
