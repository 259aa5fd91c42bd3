"""A designed retrieval experiment (:mod:`~infoflow.validators.retrieval.design`) -> what
``infoflow plan`` prints for it: the design's sizes and what it leaves out, its groups'
estimated times, the floors, the models' exponents and the comparisons its claims will
make."""

from __future__ import annotations

from dataclasses import replace

from infoflow.retrieval.canonical_to_tree import tree_of
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.validators.retrieval.design import seconds, sizes, with_floors
from infoflow.validators.retrieval.expect import Expectation, expectations
from infoflow.validators.retrieval.experiment import Experiment
from infoflow.validators.retrieval.floors import ALL_OR_NONE
from infoflow.validators.retrieval.pilot import not_piloted
from infoflow.validators.retrieval.timing import COMPILE_GAINS
from infoflow.validators.retrieval.witness_plan import plan_lines
from infoflow.validators.steptime import duration


def _budget(scale) -> str:
    """The budget in plan's first line: the training's (the constructions come on top: a
    review read "budget 5.0 min", then "estimated time: 5.9 min")."""
    return (
        f"budget {duration(scale.budget_seconds)} for the training"
        if scale.budget_seconds
        else "no budget"
    )


def describe(experiment: Experiment, source: str) -> str:
    """What ``infoflow plan`` prints for one spec: the design, each group with its models'
    exponents and estimated time, and the comparisons the claims will make."""
    scale, design = experiment.scale, with_floors(experiment).design
    lines = [
        f"{source}: retrieval at scale {scale.name} on {scale.device}, {_budget(scale)}",
        f"  step time: {experiment.step_time}",
        f"  design: {sizes(design)}; {len(experiment.models)} models x {scale.seeds} seeds",
        *([f"  left out: {experiment.left_out}"] if experiment.left_out else []),
        *_pilot_lines(experiment),
    ]
    if scale.compile:
        lines.insert(2, f"  {COMPILE_GAINS[scale.device].describe()}")
    if experiment.not_trained:
        lines.append(f"  {experiment.not_trained}")
    for group in experiment.trained_groups:
        is_rescue = experiment.model_of(group, 0)[0] == experiment.rescue
        rescue = " (rescue: twice the width, the largest rung)" if is_rescue else ""
        lines.append(
            f"  group T={group.seq_len}{rescue}: {len(group.members)} members, "
            f"{group.settings.steps:,} steps, about "
            f"{duration(experiment.estimates[group.name])}"
        )
    rungs = ", ".join(map(str, scale.rungs))
    lines.append(f"  ladder: MLP widths {rungs}; each member until its loss stops improving")
    for seq_len, floor in sorted(experiment.floors.items()):
        lines.append(
            f"  floors at T={seq_len}: pooling shortcut NMSE {floor.shortcut:.3g}, "
            f"learns below {floor.learns_below:.3g}"
        )
        for name, held in floor.held.items():
            if held["shortcut"] is not None:
                lines.append(
                    f"    held by {name} ({held['resolved']} parts resolved): NMSE "
                    f"{held['shortcut']:.3g}; a model compared with it must be below "
                    f"{held['learns_below']:.3g}"
                )
            elif held["why"] != ALL_OR_NONE:
                lines.append(f"    held by {name}: not computed ({held['why']})")
    lines.append("  models (alpha at their own T, d, E, heads; without the floor; bound):")
    for model, expected in experiment.expected.items():
        bound = "upper" if expected.efficient else "lower"
        lines.append(
            f"    {model.label():<36} {expected.alpha:>7.3g} {expected.raw:>7.3g} {bound:<6}"
            f" {expected.expression}"
        )
    lines.append("  comparisons the claims make:")
    for a, b, e in expectations(experiment):
        pair = f"{a.label()} vs {b.label()}"
        if isinstance(e, Expectation):
            lines.append(f"    {e.outcome} ({e.kind}): {pair}: {e.why}")
        else:
            lines.append(f"    untested: {pair}: {e}")
    positions = _position_lines(experiment)
    lines += positions
    if not experiment.pairs and not positions:
        lines.append("    none: no two models trained here differ in one thing only")
    lines += plan_lines(experiment)
    lines.append(_estimated(experiment))
    return "\n".join(lines) + "\n"


def _position_lines(experiment: Experiment) -> list[str]:
    """The plan's lines for the claims about fixed positions (judge_positions): a model the
    engine says needs PE against its twin without, and where its readout attends (the plan
    said "none" where validate judged both: a fresh-user audit, 2026-12-07)."""
    lines, fixed = [], readout_positions(experiment.base)
    for model in experiment.points:
        needs = experiment.models[model]["requires_positional_encoding"].value
        if not (needs and model.positional_encoding):
            continue
        twin = replace(model, positional_encoding=False)
        if twin in experiment.models:
            lines.append(
                f"    learns only with PE (paper): {model.label()} vs {twin.label()}: "
                "every seed learns with PE, none without"
            )
        if fixed:  # not a neighbour's, an index condition's
            lines.append(
                f"    attends to the fixed positions (reproduction): {model.label()}: its "
                "readout's attention, about 1/|P| on each, seed by seed at the largest rung"
            )
    return lines


def readout_positions(spec: RetrievalSpec) -> tuple[str, ...]:
    """The fixed positions the target's readout reads (``x[1]``, ``x[T]``): where there are
    some, validate measures the readout's attention on them."""
    opts = spec.options
    params = tuple(sorted(spec.params.items()))
    return tuple(tree_of(spec.target, params, opts.separable_sum, opts.self_exclusion).positions)


def _pilot_lines(experiment: Experiment) -> list[str]:
    """The pilot's line in a plan, or why there is none where one was asked for."""
    scale = experiment.scale
    if experiment.pilot:
        return [f"  {experiment.pilot.sentence()}"]
    if scale.pilot and scale.budget_seconds and not experiment.not_trained:
        return [f"  pilot: none ({not_piloted(experiment)})"]
    return []


def _estimated(experiment: Experiment) -> str:
    """The plan's estimated time: training and construction claims."""
    training, built = seconds(experiment), experiment.construction_seconds
    budget = experiment.scale.budget_seconds
    fits = budget is None or training <= budget
    verdict = "" if fits else " (over the budget: no design fits, this is the cheapest)"
    return (
        f"  estimated time: {duration(training + built)} (training {duration(training)}"
        f"{verdict}, construction claims {duration(built)})"
    )
