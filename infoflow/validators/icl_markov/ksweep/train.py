"""Train a K sweep group (next-state predictors at every K and seed, one stacked model) with
the shared loop (:mod:`~infoflow.validators.icl_markov.training`), recording at log-spaced
checkpoints each member's KL to the truth and to the reference predictors on its ID and OOD
test sets, and the projection's weights (:func:`evaluate`). :func:`load_trained` gives a
finished group's data and model back, and :func:`position_kl` measures it position by
position.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from infoflow.validators.ensemble import Checkpoint
from infoflow.validators.icl_markov.criterion import PROJECTION_SEQUENCES, project
from infoflow.validators.icl_markov.ksweep.data import SPLITS, TARGETS, IclGroup, MemberData
from infoflow.validators.icl_markov.model import (
    PREVIOUS_SEQUENCES,
    StackedGPT,
    previous_token_attention,
)
from infoflow.validators.icl_markov.training import build_model, train_group
from infoflow.validators.protocol import Context


def train_sweep(group: IclGroup, context: Context) -> None:
    """Train ``group`` to the end, resuming from its checkpoint; the metrics of every
    checkpoint go to the store."""
    torch.manual_seed(group.spec.seed)
    data = MemberData(group, context.device)
    train_group(group, context, data, lambda model: evaluate(model, data), lambda rows: False)


def load_trained(group: IclGroup, context: Context) -> tuple[MemberData, StackedGPT]:
    """A finished group's data and model (its final weights)."""
    torch.manual_seed(group.spec.seed)
    data = MemberData(group, context.device)
    model = build_model(group, context.device)
    Checkpoint.of(group, context.checkpoints).load_weights(model, context.device)
    return data, model


@torch.no_grad()
def log_probabilities(model: StackedGPT, data: MemberData, chunk: int = 64) -> dict[str, Tensor]:
    """The model's next-state log-probabilities on each test split, at the scored positions
    (all but the last): {split: [members, sequences, positions, C]}."""
    model.eval()
    out = {}
    for split in SPLITS:
        x = data.x[split][..., :-1]  # as in training
        parts = [
            F.log_softmax(model(x[:, i : i + chunk]).float(), -1)
            for i in range(0, x.shape[1], chunk)
        ]
        out[split] = torch.cat(parts, 1)
    model.train()
    return out


def position_kl(model: StackedGPT, data: MemberData, logp: dict | None = None) -> dict:
    """The spec's KL between each target (truth, then the references) and the model, per
    member, target and position, weighted as the spec scores positions and averaged over the
    test sequences: {split: [members, targets, positions]}. ``logp``: the model's
    :func:`log_probabilities`, when already computed."""
    logp = logp or log_probabilities(model, data)
    out = {}
    for split in SPLITS:
        refs, weight = data.refs[split][..., :-1, :], data.scored[split][:, None]
        found = weight * data.divergence(refs, logp[split][:, None])  # [M, targets, n, L - 1]
        out[split] = found.mean(2)
    return out


def evaluate(model: StackedGPT, data: MemberData) -> list[dict[str, float]]:
    """Per member: the mean KL (the spec's direction and position weights) over sequences and
    positions for every target on both splits (``{"id:truth": ..., "ood:G2": ...}``), and the
    projection's weights and misfit on both splits together (``"w:M1"``, ``"fit:misfit"``:
    :func:`~infoflow.validators.icl_markov.criterion.project`); and layer 1's attention to the
    previous token (``"prev:attention"``, on ID sequences)."""
    logp = log_probabilities(model, data)
    out: list[dict[str, float]] = [{} for _ in range(data.x["id"].shape[0])]
    for split, kl in position_kl(model, data, logp).items():
        for member, row in enumerate(kl.mean(-1).tolist()):
            out[member].update({f"{split}:{t}": v for t, v in zip(TARGETS, row, strict=True)})
    with torch.no_grad():
        previous = previous_token_attention(model, data.x["id"][:, :PREVIOUS_SEQUENCES]).tolist()
    for row, value in zip(out, previous, strict=True):
        row["prev:attention"] = value
    first = PROJECTION_SEQUENCES
    model_p = torch.cat([logp[split][:, :first].exp().flatten(1, 2) for split in SPLITS], 1)
    weights, misfit = project(model_p, data.projected, data.projected_weights)
    for member, (row, miss) in enumerate(zip(weights.tolist(), misfit.tolist(), strict=True)):
        out[member].update({f"w:{p}": v for p, v in zip(data.phases, row, strict=True)})
        out[member]["fit:misfit"] = miss
    return out
