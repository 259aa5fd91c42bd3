"""The decoder alone: its group and data. K*_2 as a capacity, and whether a task vector of
D_phi numbers lets the task-recognition head generalise (theory note ``icl_markov.md``,
"K*_2 as capacity").

The second MLP is trained by itself (:mod:`.train`) to map (a chain's code, the current
state) to that chain's transition row. A group holds one setting's two sweeps, a member per
point:

- capacity: K chains, each with a fixed random code of D_phi = d_model numbers (a task
  vector that carries no information about the chain);
- generalisation: :data:`GENERALISATION_CHAINS` chains whose code is a fixed random
  projection of the transition matrix to D_phi numbers, tested on :data:`FRESH_CHAINS` fresh
  chains whose codes are made the same way.

Both are read against G2's level (:func:`g2_level`): the in-context bigram's KL to the truth
at the spec's context length.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor

from infoflow.icl_markov.spec import IclMarkovSpec
from infoflow.validators.chains import ChainSampler, sample_chains
from infoflow.validators.icl_markov import references
from infoflow.validators.icl_markov.training import TRAINING_VERSION
from infoflow.validators.protocol import Group

STEPS = 3000  # full-batch Adam steps per fit
LR = 3e-3
GENERALISATION_CHAINS = 1024  # training chains of the D_phi sweep
FRESH_CHAINS = 256  # fresh chains it is tested on
LEVEL_SEQUENCES = 256  # sequences on which G2's level is measured


@dataclass
class DecoderGroup(Group):
    """The capacity grid (K) and the D_phi sweep of one setting."""

    kind: ClassVar[str] = "icl_markov"
    code: ClassVar[int] = TRAINING_VERSION
    prefix: str
    spec: IclMarkovSpec
    chains: list[int]  # the capacity grid
    task_dims: list[int]  # the D_phi sweep
    seed: int

    @property
    def members(self) -> list[tuple[str, int]]:
        return [("capacity", k) for k in self.chains] + [("task_dim", d) for d in self.task_dims]

    @property
    def checkpoints(self) -> list[int]:
        return [STEPS]

    def trained(self) -> dict:
        return {
            "decoder": 2,
            "steps": STEPS,
            "lr": LR,
            "generalisation_chains": GENERALISATION_CHAINS,
            "fresh_chains": FRESH_CHAINS,
            "level_sequences": LEVEL_SEQUENCES,
            **self.describe(),
        }

    def describe(self) -> dict:
        trained = {"states", "context_len", "dirichlet_alpha", "model"}
        setting = self.spec.model_dump(mode="json", include=trained)
        return {
            "setting": setting,
            "chains": self.chains,
            "task_dims": self.task_dims,
            "seed": self.seed,
        }

    def member_rows(self) -> list[dict]:
        return [
            {
                "label": f"decoder {what} {n}",
                "chains": n if what == "capacity" else None,
                "seed": self.seed,
            }
            for what, n in self.members
        ]


@dataclass
class DecoderTask:
    """What one member fits: the chains' codes [K, D_phi] and transition matrices [K, C, C];
    for a D_phi member, also the fresh chains it is tested on, coded the same way."""

    codes: Tensor
    P: Tensor
    fresh_codes: Tensor | None = None
    fresh_P: Tensor | None = None


def member_task(group: DecoderGroup, i: int) -> DecoderTask:
    """Member ``i``'s chains and codes, fixed by the group's seed and the member's place."""
    what, n = group.members[i]
    spec = group.spec
    c, alpha = spec.states, spec.dirichlet_alpha
    g = torch.Generator().manual_seed(group.seed * 1000 + i)
    if what == "capacity":
        P = sample_chains(n, c, alpha, group.seed + n)
        return DecoderTask(torch.randn(n, spec.model.d_model, generator=g), P)
    P = sample_chains(GENERALISATION_CHAINS, c, alpha, group.seed + 17)
    fresh = sample_chains(FRESH_CHAINS, c, alpha, group.seed + 1_000_003)
    project = torch.randn(c * c, n, generator=g) / c
    return DecoderTask(P.flatten(1).float() @ project, P, fresh.flatten(1).float() @ project, fresh)


def g2_level(spec: IclMarkovSpec, seed: int) -> float:
    """The in-context bigram's mean KL to the truth on fresh chains at the spec's context
    (every position but the last, as training scores them)."""
    n, c, alpha = LEVEL_SEQUENCES, spec.states, spec.dirichlet_alpha
    chains = sample_chains(n, c, alpha, seed + 2_000_003)
    generator = torch.Generator().manual_seed(seed)
    x = ChainSampler(chains).sample(torch.arange(n), spec.context_len, generator)
    truth = chains[torch.arange(n)[:, None], x]
    return float(references.kl(truth, references.bigram(x, c, alpha))[:, :-1].mean())
