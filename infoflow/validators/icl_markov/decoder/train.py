"""Train the decoder alone: the second MLP as a residual block (input projection, LayerNorm,
the MLP of the spec's d_model and mlp_width, unembedding), fitted full batch to map (a
chain's code, the current state) to that chain's transition row, cross-entropy against the
exact row (:func:`fit`), once per member of a group (:mod:`.data`).

A group trains in a few minutes on a CPU and records each member's numbers as it finishes; an
interrupted group is trained again from the start.
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F

from infoflow.icl_markov.spec import IclMarkovSpec
from infoflow.validators.icl_markov import references
from infoflow.validators.icl_markov.decoder.data import (
    LR,
    STEPS,
    DecoderGroup,
    g2_level,
    member_task,
)
from infoflow.validators.protocol import Context


class Decoder(torch.nn.Module):
    """The second MLP as a residual block between an input projection and the unembedding."""

    def __init__(self, code_dim: int, states: int, d_model: int, mlp_width: int):
        super().__init__()
        self.W_in = torch.nn.Linear(code_dim, d_model)
        self.W_E = torch.nn.Embedding(states, d_model)
        self.ln = torch.nn.LayerNorm(d_model)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(d_model, mlp_width),
            torch.nn.GELU(),
            torch.nn.Linear(mlp_width, d_model),
        )
        self.ln_f = torch.nn.LayerNorm(d_model)
        self.W_U = torch.nn.Linear(d_model, states)

    def forward(self, code: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """code [n, D_phi], state [n] -> logits [n, C]."""
        h = self.W_in(code) + self.W_E(state)  # [n, d]
        return self.W_U(self.ln_f(h + self.mlp(self.ln(h))))


def train_decoder(group: DecoderGroup, context: Context) -> None:
    """Fit every member and record its numbers (member i at step STEPS) as it finishes."""
    started, spec = time.perf_counter(), group.spec
    g2 = g2_level(spec, group.seed)
    for i in range(len(group.members)):
        torch.manual_seed(group.seed * 1000 + i)  # the decoder's initialisation
        task = member_task(group, i)
        train_kl, fresh_kl = fit(
            spec, task.codes, task.P, task.fresh_codes, task.fresh_P, context.device
        )
        row = {"decoder:train_kl": train_kl}
        if fresh_kl is not None:
            row["decoder:fresh_kl"] = fresh_kl
        row["decoder:g2_level"] = g2
        context.store.record_metrics(group.name, STEPS, [{}] * i + [row])
        if context.progress:
            context.progress(group.name, i + 1, len(group.members), row["decoder:train_kl"], "")
    context.store.finish_group(group.name, time.perf_counter() - started)


def fit(
    spec: IclMarkovSpec, codes, P, fresh_codes, fresh_P, device: torch.device | str = "cpu"
) -> tuple[float, float | None]:
    """Train a decoder on (codes, every state) -> P's rows on ``device``; its mean KL on the
    training chains and, when given, on fresh ones."""
    c = spec.states
    model = Decoder(codes.shape[1], c, spec.model.d_model, spec.model.mlp_width).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    inputs = _pairs(codes.to(device), c)
    target = P.float().flatten(0, 1).to(device)  # [K C, C]: row of (chain, state)
    for _ in range(STEPS):
        loss = F.cross_entropy(model(*inputs), target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        train = float(references.kl(target, F.softmax(model(*inputs), -1)).mean())
        if fresh_codes is None:
            return train, None
        fresh_target = fresh_P.float().flatten(0, 1).to(device)
        fresh = references.kl(
            fresh_target, F.softmax(model(*_pairs(fresh_codes.to(device), c)), -1)
        )
        return train, float(fresh.mean())


def _pairs(codes: torch.Tensor, states: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Every (chain's code, state) pair, chain-major: ([K C, D], [K C])."""
    k = codes.shape[0]
    return codes.repeat_interleave(states, 0), torch.arange(states, device=codes.device).repeat(k)
