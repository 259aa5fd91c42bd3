"""Clock runs: each mechanism's formation time, measured in isolation on a model where only
that mechanism can form -> the clocks of the race (:mod:`infoflow.icl_markov.race`).

One group per clock and setting, its members the K values and seeds (theory note
``icl_markov.md``, "Corrections and the mechanistic predictor"):

- ``G``: the full model at K = infinity (a fresh chain per sequence): tau_G;
- ``G_prev``: layer-1 attention hard-wired to the previous token (the paper's minimal model),
  K = infinity: tau_G|prev;
- ``M2_prev``: the same with layer-2 attention uniform, so it can pool the context's bigrams
  but cannot match the current state (no G2), on K chains: tau_M2|prev(K);
- ``M1``: layer-1 attention sees only the current token (no previous-token head, so neither
  G2 nor M2), on K chains: tau_M1(K);
- ``G@r``: the full model at K = infinity with layer 1's attention at r times the learning
  rate, for every r the spec's sweep asks for.

One criterion for every clock (:data:`HALFWAY`): the first step at which the model's
KL(truth || model) on the clock's test set (fresh chains for G, the member's own chains for
M1 and M2) is halfway from the unigram plateau (the Bayes unigram G1_bayes) to the
mechanism's exact Bayes level (G2, M2 or M1), interpolated in log step between evaluations.
K = infinity is a pool of :data:`POOL` fresh chains drawn uniformly, far more than the
sequences a small model could memorise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from infoflow.icl_markov.spec import IclMarkovSpec
from infoflow.validators import markov
from infoflow.validators.icl_markov.data import TRAINING_VERSION, mixture_weights
from infoflow.validators.protocol import content_name

HALFWAY = 0.5  # the clock stops this far from the plateau to the mechanism's level
POOL = 65_536  # fresh chains standing in for K = infinity
#: A mechanism is timed only where its level is at least this share of the plateau below
#: the plateau (otherwise noise crosses the halfway line).
MIN_DROP = 0.1
#: clock -> (layer attention patterns, the mechanism's reference, K = infinity)
CLOCKS = {
    "G": (("causal", "causal"), "G2", True),
    "G_prev": (("previous", "causal"), "G2", True),
    "M2_prev": (("previous", "uniform"), "M2", False),
    "M1": (("self", "causal"), "M1", False),
}


#: Spec fields that do not reach a clock's training.
NOT_TRAINED = {"chains", "sweep", "description", "calibration", "race", "decoder"}
CLOCK_EVALUATIONS = 48  # log-spaced evaluations of a clock run


@dataclass
class ClockGroup:
    """One clock's members (K, seed) at one setting; K None is infinity."""

    prefix: str
    clock: str  # a key of CLOCKS
    spec: IclMarkovSpec  # the setting; its training.layer1_attention_lr is the clock's r
    chains: list[int | None]
    seeds: list[int]
    checkpoints: list[int]
    eval_sequences: int
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = content_name(self.prefix, self.identity())

    @property
    def attention(self) -> tuple[str, ...]:
        return CLOCKS[self.clock][0]

    @property
    def members(self) -> list[tuple[int | None, int]]:
        return [(k, s) for s in self.seeds for k in self.chains]

    def identity(self) -> dict:
        return {"kind": "icl_markov", "code": TRAINING_VERSION, "clock": self.clock,
                "pool": POOL, **self.describe()}  # fmt: skip

    def describe(self) -> dict:
        spec = self.spec.model_dump(mode="json", exclude=NOT_TRAINED)
        return {"setting": spec, "clock": self.clock, "chains": self.chains,
                "seeds": self.seeds, "checkpoints": self.checkpoints,
                "eval_sequences": self.eval_sequences}  # fmt: skip

    def member_rows(self) -> list[dict]:
        return [{"label": f"{self.clock} K={k or 'inf'}, seed {s}", "chains": k, "seed": s}
                for k, s in self.members]  # fmt: skip


def plan_clocks(name: str, settings: list[IclMarkovSpec], seeds: list[int],
                checkpoints) -> list[ClockGroup]:  # fmt: skip
    """The clock groups the race needs for ``settings`` (the K sweep's, capped): per setting
    at the measured rate, G, G_prev, M2_prev and M1; per slowed rate, G at that rate."""
    groups: dict[str, ClockGroup] = {}
    for spec in settings:
        training = spec.training
        base = spec.model_copy(update={"training": training.model_copy(
            update={"layer1_attention_lr": 1.0})})  # fmt: skip
        steps = checkpoints(training.steps, CLOCK_EVALUATIONS)
        for clock, chains in (("G", [None]), ("G_prev", [None]),
                              ("M2_prev", spec.race.chains), ("M1", spec.race.chains)):  # fmt: skip
            group = ClockGroup(name, clock, base, sorted(chains, key=lambda k: k or 0), seeds,
                               steps, 128)  # fmt: skip
            groups.setdefault(group.name, group)
        if training.layer1_attention_lr != 1:
            group = ClockGroup(name, "G", spec, [None], seeds, steps, 128)
            groups.setdefault(group.name, group)
    return list(groups.values())


class ClockData:
    """Each member's chains, training batches and test set, with the plateau's and the
    mechanism's levels on it."""

    def __init__(self, group: ClockGroup, device: torch.device):
        self.group, self.mechanism = group, CLOCKS[group.clock][1]
        self.generator = torch.Generator().manual_seed(group.spec.seed + 1)
        members = [self._member(k, seed) for k, seed in group.members]
        P, weights, xs, truths, self.levels = zip(*members, strict=True)
        self.x = torch.stack(xs).to(device)  # [M, n, L]
        self.truth = torch.stack(truths).to(device)  # [M, n, L, C]
        widest = max(len(w) for w in weights)
        self.weights = torch.stack([F.pad(w.float(), (0, widest - len(w)))
                                    for w in weights]).to(device)  # fmt: skip
        self.offsets = torch.tensor(np.cumsum([0] + [len(p) for p in P[:-1]]), device=device)
        self.sampler = markov.ChainSampler(torch.cat(P), device)

    def _member(self, k: int | None, seed: int):
        """(training chains, their weights, test states, test truth, levels) of a member."""
        spec, n = self.group.spec, self.group.eval_sequences
        c, alpha = spec.states, spec.dirichlet_alpha
        if k is None:  # a pool of fresh chains to train on, other fresh chains to test on
            P = markov.sample_chains(POOL, c, alpha, seed + 3_000_017)
            weights = torch.full((POOL,), 1 / POOL, dtype=torch.float64)
            test, test_weights = markov.sample_chains(n, c, alpha, seed + 1_000_003), None
            chain = torch.arange(n)
        else:
            P = test = markov.sample_chains(k, c, alpha, seed)
            weights = test_weights = mixture_weights(k, k, spec.mixture, seed)
            chain = torch.multinomial(weights.float(), n, True, generator=self.generator)
        x = markov.ChainSampler(test).sample(chain, spec.context_len, self.generator)
        truth = test[chain[:, None], x].float()
        if test_weights is None:
            test_weights = torch.full((n,), 1 / n, dtype=torch.float64)
        refs = markov.references(x, test, test_weights, alpha)
        levels = {name: float(markov.kl(truth, refs[name])[:, :-1].mean())
                  for name in ("G1_bayes", self.mechanism)}  # fmt: skip
        return P, weights, x, truth, levels

    def batches(self, count: int, size: int, length: int, generator: torch.Generator):
        """``count`` steps' training sequences [count, members, size, length]."""
        members = len(self.weights)
        local = torch.multinomial(self.weights, count * size, True, generator=generator)
        chain = (local + self.offsets[:, None]).flatten()
        x = self.sampler.sample(chain, length, generator).view(members, count, size, length)
        return x.transpose(0, 1)

    @torch.no_grad()
    def evaluate(self, model, chunk: int = 64) -> list[dict[str, float]]:
        """Per member: KL(truth || model) on its test set, and the two levels."""
        model.eval()
        x = self.x[..., :-1]
        total = torch.zeros(x.shape[0], device=x.device)
        for i in range(0, x.shape[1], chunk):
            logp = torch.log_softmax(model(x[:, i : i + chunk]).float(), -1)
            truth = self.truth[:, i : i + chunk, :-1]
            total += (truth * ((truth + 1e-12).log() - logp)).sum(-1).sum((1, 2))
        model.train()
        kl = (total / (x.shape[1] * x.shape[2])).tolist()
        return [{"clock:kl": value, "level:plateau": levels["G1_bayes"],
                 "level:mechanism": levels[self.mechanism]}
                for value, levels in zip(kl, self.levels, strict=True)]  # fmt: skip


def clock_time(rows: dict[int, dict[str, float]]) -> float | None:
    """The step at which the KL crosses the halfway line, log-interpolated between the two
    evaluations around it; None when it never does, or when the mechanism's level is not
    :data:`MIN_DROP` below the plateau."""
    steps = sorted(rows)
    plateau, level = rows[steps[0]]["level:plateau"], rows[steps[0]]["level:mechanism"]
    if plateau - level < MIN_DROP * plateau:
        return None
    line = plateau - HALFWAY * (plateau - level)
    previous = None
    for step in steps:
        kl = rows[step]["clock:kl"]
        if kl <= line:
            if previous is None:
                return float(step)
            (s0, kl0) = previous
            share = (kl0 - line) / (kl0 - kl)
            return math.exp(math.log(s0) + share * (math.log(step) - math.log(s0)))
        previous = (step, kl)
    return None
