"""Markov chains, the data two families train on: K transition matrices with rows drawn
from Dirichlet(alpha), their stationary distributions, and sequences sampled from them on any
device, every row from its own chain (theory note ``icl_markov.md``; the looped_kv validator's
corpus is drawn the same way)."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor


def sample_chains(chains: int, states: int, alpha: float, seed: int) -> Tensor:
    """K transition matrices [K, C, C], each row from Dirichlet(alpha), fixed by ``seed``."""
    rng = np.random.default_rng(seed)
    rows = rng.dirichlet(np.full(states, alpha), size=(chains, states))
    return torch.tensor(rows, dtype=torch.float64)


def stationary(P: Tensor) -> Tensor:
    """The stationary distributions [..., C] of transition matrices [..., C, C]: pi P = pi.
    A chain with more than one closed class (a small Dirichlet alpha draws exact zeros) has
    many: then the least-squares one, a mixture of its classes' own (the system is singular,
    and its solutions are exactly those mixtures)."""
    c = P.shape[-1]
    A = P.transpose(-1, -2) - torch.eye(c, dtype=P.dtype)
    A = torch.cat([A[..., :-1, :], torch.ones_like(A[..., :1, :])], dim=-2)  # sum(pi) = 1
    b = torch.zeros(*P.shape[:-2], c, dtype=P.dtype)
    b[..., -1] = 1
    try:
        return torch.linalg.solve(A, b)
    except torch.linalg.LinAlgError:
        found = torch.linalg.lstsq(A.cpu(), b.cpu().unsqueeze(-1), driver="gelsd").solution
        pi = found.squeeze(-1).clamp_min(0).to(P.device)  # rounding's negatives
        return pi / pi.sum(-1, keepdim=True)


class ChainSampler:
    """Draws sequences from a fixed set of chains [K, C, C], on any device: the first state
    from the chain's stationary distribution, then one transition per position, all rows at
    once (inverse CDF on uniforms from ``generator``)."""

    def __init__(self, P: Tensor, device: torch.device | str = "cpu"):
        self.states = P.shape[-1]
        self.cdf = P.float().cumsum(-1).to(device)  # [K, C, C]
        self.start = stationary(P).float().cumsum(-1).to(device)  # [K, C]

    def sample(self, chain: Tensor, length: int, generator: torch.Generator) -> Tensor:
        """States [R, length], row r from chain ``chain[r]``."""
        u = torch.rand(chain.shape[0], length, 1, generator=generator, device=self.cdf.device)
        last = self.states - 1
        x = torch.empty(chain.shape[0], length, dtype=torch.long, device=self.cdf.device)
        x[:, 0] = (self.start[chain] < u[:, 0]).sum(-1).clamp_max(last)
        for t in range(1, length):
            x[:, t] = (self.cdf[chain, x[:, t - 1]] < u[:, t]).sum(-1).clamp_max(last)
        return x
