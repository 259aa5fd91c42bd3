"""The four reference predictors of the icl_markov family, against direct computations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from infoflow.validators.chains import ChainSampler, sample_chains, stationary  # noqa: E402
from infoflow.validators.icl_markov import references  # noqa: E402

C, ALPHA = 3, 1.0


def sample_sequences(P, weights, batch: int, length: int, generator):
    """``batch`` sequences of ``length`` states: a chain drawn from ``weights`` per sequence,
    the first state from its stationary distribution. Returns (states [B, L], chains [B])."""
    chain = torch.multinomial(weights.float(), batch, replacement=True, generator=generator)
    return ChainSampler(P).sample(chain, length, generator), chain


@pytest.fixture
def setting():
    P = sample_chains(chains=4, states=C, alpha=ALPHA, seed=0)
    weights = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)
    x, _chain = sample_sequences(
        P, weights, batch=5, length=7, generator=torch.Generator().manual_seed(1)
    )
    return P, weights, x


def test_stationary_distribution_is_stationary(setting) -> None:
    P, _, _ = setting
    pi = stationary(P)
    assert torch.allclose(pi.sum(-1), torch.ones(4, dtype=torch.float64))
    assert torch.allclose(torch.einsum("kc,kcd->kd", pi, P), pi)


def test_in_context_predictors_match_counting(setting) -> None:
    _, _, x = setting
    g1, g2 = references.unigram(x, C, ALPHA), references.bigram(x, C, ALPHA)
    park = references.unigram_park(x, C, ALPHA)
    for b in range(x.shape[0]):
        seq = x[b].tolist()
        for t in range(len(seq)):
            prefix = seq[: t + 1]
            counts = [prefix.count(j) for j in range(C)]
            expected = [(n + ALPHA) / (len(prefix) + C * ALPHA) for n in counts]
            assert g1[b, t].tolist() == pytest.approx(expected)
            pairs = list(itertools.pairwise(prefix))
            matrix = np.array(
                [[sum(p == (i, j) for p in pairs) + ALPHA for j in range(C)] for i in range(C)]
            )
            row = matrix[seq[t]]
            assert g2[b, t].tolist() == pytest.approx((row / row.sum()).tolist())
            transition = matrix / matrix.sum(1, keepdims=True)
            values, vectors = np.linalg.eig(transition.T)
            pi = np.real(vectors[:, np.argmin(abs(values - 1))])
            assert park[b, t].tolist() == pytest.approx((pi / pi.sum()).tolist())


def test_memorizing_predictors_match_bayes(setting) -> None:
    P, weights, x = setting
    pi = stationary(P)
    m1, m2 = references.memorize_unigram(x, P, weights), references.memorize_bigram(x, P, weights)
    for b in range(x.shape[0]):
        seq = x[b].tolist()
        for t in range(len(seq)):
            w1 = [weights[k] * math.prod(pi[k, s] for s in seq[: t + 1]) for k in range(4)]
            w2 = [
                weights[k]
                * pi[k, seq[0]]
                * math.prod(P[k, a, c] for a, c in itertools.pairwise(seq[: t + 1]))
                for k in range(4)
            ]
            expect1 = sum(w * pi[k] for k, w in enumerate(w1)) / sum(w1)
            expect2 = sum(w * P[k, seq[t]] for k, w in enumerate(w2)) / sum(w2)
            assert torch.allclose(m1[b, t], expect1) and torch.allclose(m2[b, t], expect2)


def test_m2_posterior_concentrates_on_the_true_chain() -> None:
    P = sample_chains(chains=8, states=5, alpha=1.0, seed=3)
    true = 5
    only = torch.zeros(8, dtype=torch.float64)
    only[true] = 1
    x, chain = sample_sequences(
        P, only, batch=16, length=200, generator=torch.Generator().manual_seed(4)
    )
    assert (chain == true).all()
    uniform = torch.full((8,), 1 / 8, dtype=torch.float64)
    prediction = references.memorize_bigram(x, P, uniform)[:, -1]
    assert torch.allclose(prediction, P[true][x[:, -1]], atol=1e-6)
    assert references.kl(P[true][x[:, -1]], prediction).max() < 1e-6
    # while the in-context bigram estimate is still noisy after 200 steps
    assert references.kl(P[true][x[:, -1]], references.bigram(x, 5, 1.0)[:, -1]).mean() > 1e-3


def test_references_stay_finite_where_no_chain_can_produce_the_sequence() -> None:
    """Exact zeros (a small Dirichlet alpha gives them) make evidence -inf; the posterior must
    not become NaN when every chain rules the sequence out."""
    P = torch.tensor(
        [[[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]] * 2, dtype=torch.float64
    )  # a deterministic cycle 0 -> 1 -> 2 -> 0
    x = torch.tensor([[0, 0, 2, 1, 1]])  # transitions no chain makes
    refs = references.predictions(x, P, torch.tensor([0.5, 0.5], dtype=torch.float64), alpha=0.01)
    for name, value in refs.items():
        assert torch.isfinite(value).all(), name
        assert torch.allclose(value.sum(-1), torch.ones_like(value.sum(-1))), name
    tiny = sample_chains(chains=8, states=5, alpha=1e-3, seed=0)
    assert (tiny == 0).any()  # the setting where it happens without a hand-made chain
    fresh = sample_chains(chains=1, states=5, alpha=1e-3, seed=1)
    ood, _ = sample_sequences(
        fresh, torch.ones(1, dtype=torch.float64), 16, 32, torch.Generator().manual_seed(2)
    )
    weights = torch.full((8,), 1 / 8, dtype=torch.float64)
    assert all(
        torch.isfinite(v).all() for v in references.predictions(ood, tiny, weights, 1e-3).values()
    )


def test_the_papers_m1_predicts_the_retrieved_chains_rows(setting) -> None:
    """M1: unigram evidence picks the chain, its memorised transition row predicts; the
    stationary-predicting variant is kept as M1_unigram."""
    P, weights, x = setting
    pi = stationary(P)
    m1 = references.memorize_unigram_bigram(x, P, weights)
    for b in range(x.shape[0]):
        seq = x[b].tolist()
        for t in range(len(seq)):
            w = [weights[k] * math.prod(pi[k, s] for s in seq[: t + 1]) for k in range(4)]
            expected = sum(v * P[k, seq[t]] for k, v in enumerate(w)) / sum(w)
            assert torch.allclose(m1[b, t], expected)
    refs = references.predictions(x, P, weights, ALPHA)
    assert torch.allclose(refs["M1"], m1.float())
    assert torch.allclose(refs["M1_unigram"], references.memorize_unigram(x, P, weights).float())


def test_the_bayes_unigram_is_the_posterior_over_fresh_chains() -> None:
    """G1_bayes before any evidence is the prior mean of a stationary distribution (uniform
    by symmetry); with evidence it follows the counts but stays smoother than Laplace."""
    x = torch.tensor([[0, 0, 0, 0, 0, 0, 0, 0]])
    bayes = references.bayes_unigram(x, C, ALPHA)
    assert torch.allclose(bayes[0, 0].sum(), torch.tensor(1.0, dtype=torch.float64))
    pool = sample_chains(2048, C, ALPHA, seed=references.BAYES_POOL_SEED)
    pi = stationary(pool)
    w = pi[:, 0] / pi[:, 0].sum()  # one observation of state 0, uniform prior over the pool
    assert torch.allclose(bayes[0, 0], (w[:, None] * pi).sum(0))
    assert bayes[0, -1, 0] > bayes[0, 0, 0] > 1 / C  # more zeros, more weight on state 0
    laplace = references.unigram(x, C, ALPHA)
    assert bayes[0, -1, 0] < laplace[0, -1, 0]
