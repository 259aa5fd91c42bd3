"""A retrieval experiment's measurements (each model's ladder of NMSE over seeds, the
readout's attention) -> claims, each derived from the engine's numbers at the models it
compares and judged against the target's own floors.

- **separation** (:mod:`~infoflow.validators.retrieval.expect`): the model with the
  smaller exponent has the steeper ladder: the seed-paired difference of the slopes (log
  NMSE against log decoder size) is positive for every seed. Refuted when it is negative
  for every seed; judged only when the better model learns, below the worse model's held
  shortcut too where the worse resolves part of the target (:mod:`~infoflow.validators.
  retrieval.floors`), and its ladder is steep (a slope below ``-STEEP`` for every seed: a
  flat ladder is limited by training, not by size, and measures no exponent).
- **equality**: the paired difference of the measured exponents (alpha = -2 / slope,
  infinite for a ladder that does not fall) lies within :data:`~infoflow.validators.
  retrieval.expect.MARGIN`, the gap the engine needs to predict a separation, for every
  seed; refuted when every seed's difference is ``MARGIN`` or more, on one side. Judged
  only when one of the two learns and has a steep ladder (two ladders that do not fall are
  equal for no reason). The floor's own equality
  claims (``exponent_floor:``) are judged the same way, as reconstructions.
- **learns** (an engineering check): a model predicted efficient learns the target: its
  largest rung is below the learning threshold (:data:`~infoflow.validators.retrieval.
  floors.LEARNS_FACTOR` times below the pooling shortcut) for every seed; refuted when it is
  above for every seed and no seed was still improving at the cap.
- **needs positional encoding** (the paper's): with PE the model learns, without it not.
- **attends to positions** (a reproduction of the paper's figure): the readout puts about
  1/|P| of its attention on each fixed position.
- **lower bound** (the paper's): a model predicted inefficient does not beat its lower bound
  (without the floor; a bound under the floor predicts nothing and makes no claim, since the
  evening of 2026-12-07: a review found such bounds counted as paper claims): its measured
  exponent -2/slope is at least the bound, i.e. its slope is not steeper than -2/bound, for
  every seed. Training is not optimal, so a construction's
  upper bound cannot be tested this way; a lower bound can, but only where the training
  budget can show a steep ladder at all: judged only when a model predicted efficient at the
  same T has a steep one (else a flat ladder would confirm it for no reason).
- **no rescue** (the paper's): where no architecture is efficient, the model at the longest
  T with twice the width and twice the steps still does not learn.
- **rises with T** (a reproduction of the paper's triangle figure: NMSE rises towards 1 as T
  grows, whatever the heads or E): where no architecture is efficient, each architecture's
  largest rung ends higher at the longer of two consecutive lengths, every seed above every
  seed, the higher of the two stopped at its plateau (a model still improving at the cap
  could close the gap), or, where it had not, the rescue at that length and with those
  heads stopped above every seed of the shorter length too (twice the width and the steps
  did not close it; since the night of 2026-12-07, pre-registered); refuted when every seed
  ends lower, the shorter length stopped. At a fixed budget
  an efficient target's NMSE can rise with T too (the triangle's order-2 control did on a
  CPU), so this reproduces the figure, not the exponent's growth.

"Every seed" is the interval of :mod:`~infoflow.validators.retrieval.exponents` (the range
over seeds) clearing the threshold; otherwise the claim is inconclusive and says why.
Medians, never the best seed. The rules, and ``STEEP``, are
:mod:`~infoflow.validators.retrieval.judge`'s.
"""

from __future__ import annotations

from itertools import pairwise

from infoflow.validators.claims import Claim
from infoflow.validators.retrieval.expect import Expectation, expect
from infoflow.validators.retrieval.experiment import Experiment, Model, by_architecture
from infoflow.validators.retrieval.exponents import Ladder
from infoflow.validators.retrieval.floors import Floors
from infoflow.validators.retrieval.judge import Judge
from infoflow.validators.retrieval.judge_positions import attends, needs_pe
from infoflow.validators.retrieval.judge_untrainable import no_rescue, rises


def claims(
    experiment: Experiment,
    ladders: dict[Model, Ladder],
    floors: dict[int, Floors],
    improving: dict[Model, int],
    attention=None,
) -> list[Claim]:
    """Every claim the predictions make, with measured values and a verdict. ``improving``
    counts, per model, the members whose loss was still falling when the cap stopped them;
    ``attention`` maps a model to the mean share of the readout's attention on each fixed
    position (when measured)."""
    judge = Judge(experiment, ladders, floors, improving)
    out = [judge.learns(m) for m in experiment.points if experiment.expected[m].efficient]
    for model, expected in experiment.expected.items():
        bounded = not expected.efficient and expected.feasible and expected.raw > 0
        bounded = bounded and not expected.floor_hides  # under the floor it predicts nothing
        if bounded and model in ladders and model != experiment.rescue:  # a rescue: one rung
            out.append(judge.lower_bound(model))
    for a, b in experiment.pairs:
        expectation = expect(experiment, a, b)
        if isinstance(expectation, Expectation):
            out.append(judge.compare(expectation))
    for model in experiment.points:
        if experiment.models[model]["requires_positional_encoding"].value:
            twin = Model(model.seq_len, model.embed_dim, model.heads, False)
            if model.positional_encoding and twin in ladders:
                out.append(needs_pe(judge, model, twin))
            if attention and model in attention:
                out.append(attends(judge, model, attention[model]))
    if experiment.rescue:
        lengths = _consecutive_lengths(experiment)
        rescue = experiment.rescue
        out += [
            rises(judge, a, b, rescue if _rescues(rescue, b) else None)
            for a, b in lengths
            if {a, b} <= ladders.keys()
        ]
        out.append(no_rescue(judge, experiment.rescue))
    return out


def _rescues(rescue: Model | None, model: Model) -> bool:
    """``rescue`` is ``model``'s architecture at its length (twice the width and steps)."""
    return rescue is not None and (rescue.seq_len, rescue.architecture()) == (
        model.seq_len,
        model.architecture(),
    )


def _consecutive_lengths(experiment: Experiment) -> list[tuple[Model, Model]]:
    """Each trained architecture at two consecutive lengths, the shorter first (the rescue,
    trained at one length, aside)."""
    trained = [m for m in experiment.models if m != experiment.rescue]
    return [pair for models in by_architecture(trained) for pair in pairwise(models)]


def untested(experiment: Experiment, found: list[Claim]) -> list[str]:
    """The pairs the theory does not let this experiment test, each with the reason."""
    out = [
        f"{model.label()}: its lower bound {e.raw:.3g} is under the floor {e.alpha:.3g}, so the "
        "paper's bound predicts nothing the reconstruction does not (no lower_bound claim)"
        for model, e in experiment.expected.items()
        if not e.efficient and e.feasible and e.raw > 0 and e.floor_hides
    ]
    for a, b in experiment.pairs:
        expectation = expect(experiment, a, b)
        if isinstance(expectation, str):
            out.append(f"{a.label()} against {b.label()}: {expectation}")
    if not found:
        out.append("no claim: no model is predicted efficient and no pair is predicted apart")
    return out
