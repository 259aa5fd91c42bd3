"""Train a K sweep group (next-state predictors at every K and seed, one stacked model) with
the shared loop (:mod:`~infoflow.validators.icl_markov.training`), recording at log-spaced
checkpoints each member's KL to the truth and to the reference predictors on its ID and OOD
test sets (:func:`evaluate`). :func:`load_trained` gives a finished group's data and model
back, and :func:`position_kl` measures it position by position.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from infoflow.validators.ensemble import Checkpoint
from infoflow.validators.icl_markov.ksweep.data import SPLITS, TARGETS, IclGroup, MemberData
from infoflow.validators.icl_markov.model import StackedGPT
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
def position_kl(model: StackedGPT, data: MemberData, chunk: int = 64) -> dict[str, Tensor]:
    """The spec's KL between each target (truth, then the references) and the model, per
    member, target and position, weighted as the spec scores positions and averaged over the
    test sequences: {split: [members, targets, positions]}."""
    model.eval()
    out = {}
    for split in SPLITS:
        x, refs = data.x[split][..., :-1], data.refs[split][..., :-1, :]  # as in training
        total = torch.zeros(refs.shape[:2] + refs.shape[-2:-1], device=x.device)
        for i in range(0, x.shape[1], chunk):
            logp = F.log_softmax(model(x[:, i : i + chunk]).float(), -1)[:, None]
            weight = data.scored[split][:, None, i : i + chunk]
            total += (weight * data.divergence(refs[:, :, i : i + chunk], logp)).sum(2)
        out[split] = total / x.shape[1]
    model.train()
    return out


def evaluate(model: StackedGPT, data: MemberData) -> list[dict[str, float]]:
    """Mean KL (the spec's direction and position weights) over sequences and positions, per
    member, for every target on both splits: ``{"id:truth": ..., "ood:G2": ...}``."""
    out: list[dict[str, float]] = [{} for _ in range(data.x["id"].shape[0])]
    for split, kl in position_kl(model, data).items():
        for member, row in enumerate(kl.mean(-1).tolist()):
            out[member].update({f"{split}:{t}": v for t, v in zip(TARGETS, row, strict=True)})
    return out
