"""The reference predictors of in-context learning on Markov chains.

Theory note ``icl_markov.md``: K chains over C states, each row of each transition matrix
drawn once from Dirichlet(alpha); sequences start from the chain's stationary distribution.
A trained model's phase is the reference predictor it is closest to:

- G1, in-context unigram (Laplace-smoothed counts), or Park et al.'s variant: the
  stationary distribution of the smoothed in-context bigram estimate, or the Bayes unigram:
  the posterior over a pool of fresh chains from unigram evidence, predicting their
  stationary distributions (where a near-uniform early model sits);
- G2, in-context bigram (statistical induction head);
- M1, the paper's: the posterior over the K training chains from unigram evidence,
  predicting the chosen chains' transition rows (retrieval with unigram evidence, bigram
  prediction); M1_unigram, the same posterior predicting their stationary distributions;
- M2, posterior over the K training chains from bigram evidence (task recognition);
- B, the training mixture's bigram: the next state from the current one alone, as the
  training sequences' pair frequencies give it (no inference from the context).

Every predictor returns, for sequences x of shape [B, L], the predictive distribution of the
next state after each prefix x_1..x_t: a tensor [B, L, C], computed exactly and vectorised;
:func:`predictions` gives all of them at once.
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor

from infoflow.validators.chains import sample_chains, stationary


def _one_hot(x: Tensor, states: int) -> Tensor:
    return torch.nn.functional.one_hot(x, states).to(torch.float64)


def unigram(x: Tensor, states: int, alpha: float) -> Tensor:
    """G1: p(j) = (n_j + alpha) / (t + C alpha) over the prefix x_1..x_t."""
    counts = _one_hot(x, states).cumsum(1)
    t = torch.arange(1, x.shape[1] + 1, dtype=torch.float64)[None, :, None]
    return (counts + alpha) / (t + states * alpha)


def _bigram_counts(x: Tensor, states: int) -> Tensor:
    """n_{ij} over the prefix: transitions x_{s-1} -> x_s with s <= t, [B, L, C, C]."""
    hot = _one_hot(x, states)
    pairs = hot[:, :-1, :, None] * hot[:, 1:, None, :]
    zero = torch.zeros_like(pairs[:, :1])
    return torch.cat([zero, pairs], dim=1).cumsum(1)


def bigram(x: Tensor, states: int, alpha: float) -> Tensor:
    """G2: p(j | x_t) = (n_{x_t j} + alpha) / (n_{x_t} + C alpha)."""
    counts = _bigram_counts(x, states)
    rows = counts.gather(2, x[:, :, None, None].expand(-1, -1, 1, states))[:, :, 0]
    return (rows + alpha) / (rows.sum(-1, keepdim=True) + states * alpha)


def unigram_park(x: Tensor, states: int, alpha: float) -> Tensor:
    """G1 as Park et al. compute it: the stationary distribution of the smoothed in-context
    bigram estimate."""
    counts = _bigram_counts(x, states) + alpha
    return stationary(counts / counts.sum(-1, keepdim=True))


#: The floor of a probability before its logarithm: a transition a chain never makes (an exact
#: zero, common for a small Dirichlet alpha) makes its evidence very negative, not -inf, so a
#: sequence no chain can produce still has a finite posterior.
TINY = 1e-300


def _log(p: Tensor) -> Tensor:
    return p.clamp_min(TINY).log()


def _posterior(log_evidence: Tensor, weights: Tensor) -> Tensor:
    """Posterior over chains [B, L, K] from cumulative log evidence [B, L, K]."""
    return torch.softmax(log_evidence + _log(weights)[None, None], dim=-1)


def _unigram_evidence(x: Tensor, pi: Tensor) -> Tensor:
    """sum_{s<=t} log pi_k(x_s) [B, L, K] for distributions pi [K, C]: the prefix's state
    counts times log pi, one matmul rather than a cumulative sum over K."""
    return _one_hot(x, pi.shape[-1]).cumsum(1) @ _log(pi).T


def memorize_unigram(x: Tensor, P: Tensor, weights: Tensor) -> Tensor:
    """M1_unigram: w_k ∝ prior_k prod_s pi_k(x_s); predict sum_k w_k pi_k."""
    pi = stationary(P)  # [K, C]
    return _posterior(_unigram_evidence(x, pi), weights) @ pi


def memorize_unigram_bigram(x: Tensor, P: Tensor, weights: Tensor) -> Tensor:
    """M1 (the paper's): w_k ∝ prior_k prod_s pi_k(x_s); predict sum_k w_k P_k[x_t]."""
    evidence = _unigram_evidence(x, stationary(P))
    return _rows(_posterior(evidence, weights), P, x)


def bayes_unigram(x: Tensor, states: int, alpha: float) -> Tensor:
    """G1 as Bayes: the posterior predictive of the in-context unigram under the prior of a
    chain's stationary distribution (rows Dirichlet(alpha)), estimated on a pool of fresh
    chains (:func:`bayes_pool`): M1_unigram over that pool, uniformly weighted."""
    pi = bayes_pool(states, alpha)
    uniform = torch.full((pi.shape[0],), 1 / pi.shape[0], dtype=torch.float64)
    # one sequence at a time: its [L, pool] blocks are small enough to be reused by the
    # allocator, where a chunk's are mapped afresh on every call (four times the time)
    return torch.cat([_posterior(_unigram_evidence(s, pi), uniform) @ pi for s in x.split(1)])


@functools.lru_cache(maxsize=16)
def bayes_pool(states: int, alpha: float, size: int = 2048) -> Tensor:
    """The stationary distributions [size, C] of ``size`` fresh chains drawn once (a fixed
    seed); rows floored at 1e-12 so that every chain has exactly one stationary
    distribution, even when a small alpha gives exact zeros."""
    fresh = sample_chains(size, states, alpha, seed=BAYES_POOL_SEED).clamp_min(1e-12)
    return stationary(fresh / fresh.sum(-1, keepdim=True))


def memorize_bigram(x: Tensor, P: Tensor, weights: Tensor) -> Tensor:
    """M2: w_k ∝ prior_k pi_k(x_1) prod_s P_k(x_{s-1}, x_s); predict sum_k w_k P_k[x_t]."""
    pi = stationary(P)
    first = _log(pi).T[x[:, :1]]  # [B, 1, K]
    steps = _log(P).permute(1, 2, 0)[x[:, :-1], x[:, 1:]]  # [B, L-1, K]
    evidence = torch.cat([first, first + steps.cumsum(1)], dim=1)
    return _rows(_posterior(evidence, weights), P, x)


def training_bigram(x: Tensor, P: Tensor, weights: Tensor) -> Tensor:
    """B: the training mixture's bigram, p(j | x_t) = sum_k w_k pi_k(x_t) P_k(x_t, j) /
    sum_k w_k pi_k(x_t), the pair frequencies of the training sequences: what a model
    predicts from the current state alone, with no inference from the context (M1 at the
    first position, before any evidence)."""
    joint = torch.einsum("k,ki,kij->ij", weights, stationary(P), P)
    return (joint / joint.sum(-1, keepdim=True))[x]


def _rows(w: Tensor, P: Tensor, x: Tensor) -> Tensor:
    """sum_k w_k P_k[x_t] for posteriors w [B, L, K]: the next-state row of the current one."""
    k, c = P.shape[0], P.shape[-1]
    mixed = (w @ P.reshape(k, c * c)).unflatten(-1, (c, c))  # [B, L, C, C]: sum_k w_k P_k
    return mixed.gather(2, x[:, :, None, None].expand(-1, -1, 1, c))[:, :, 0]


def predictions(
    x: Tensor,
    P: Tensor,
    weights: Tensor,
    alpha: float,
    chunk: int = 32,
    context: dict[str, Tensor] | None = None,
) -> dict[str, Tensor]:
    """Every reference's predictions on sequences x [B, L] for the training chains P with
    mixture ``weights``: :data:`REFERENCES` -> [B, L, C] (float32), computed in
    float64 a ``chunk`` of sequences at a time (the posteriors are [chunk, L, K]).
    ``context``: :func:`in_context`'s on the same x, when already computed (they do not
    depend on the chains)."""
    context = context or in_context(x, P.shape[-1], alpha, chunk)
    memorised = _by_chunk(
        x,
        chunk,
        lambda xs: {
            "M1": memorize_unigram_bigram(xs, P, weights),
            "M1_unigram": memorize_unigram(xs, P, weights),
            "M2": memorize_bigram(xs, P, weights),
            "B": training_bigram(xs, P, weights),
        },
    )
    found = {**context, **memorised}
    return {name: found[name] for name in REFERENCES}


def in_context(x: Tensor, states: int, alpha: float, chunk: int = 32) -> dict[str, Tensor]:
    """The references that read only the context (no training chain): G1, G1_park, G1_bayes
    and G2 on sequences x [B, L] -> [B, L, C] (float32)."""
    return _by_chunk(
        x,
        chunk,
        lambda xs: {
            "G1": unigram(xs, states, alpha),
            "G1_park": unigram_park(xs, states, alpha),
            "G1_bayes": bayes_unigram(xs, states, alpha),
            "G2": bigram(xs, states, alpha),
        },
    )


def _by_chunk(x: Tensor, chunk: int, predict) -> dict[str, Tensor]:
    """``predict(xs)`` (name -> [chunk, L, C]) on ``chunk`` sequences of x at a time, joined
    and in float32."""
    parts = [predict(x[i : i + chunk]) for i in range(0, x.shape[0], chunk)]
    return {name: torch.cat([p[name].float() for p in parts]) for name in parts[0]}


#: The reference predictors, by the name the theory note gives them.
REFERENCES = ("G1", "G1_park", "G1_bayes", "G2", "M1", "M1_unigram", "M2", "B")
#: The seed of the pool of fresh chains behind G1_bayes.
BAYES_POOL_SEED = 20_251_130


def kl(p: Tensor, q: Tensor, eps: float = 1e-12) -> Tensor:
    """KL(p || q) over the last axis."""
    return (p * ((p + eps).log() - (q + eps).log())).sum(-1)
