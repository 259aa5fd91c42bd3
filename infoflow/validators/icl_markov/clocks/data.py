"""The clock runs' data: each mechanism's formation time is measured in isolation, on a model
where only that mechanism can form (theory note ``icl_markov.md``, "Corrections and the
mechanistic predictor"). One group per clock and setting, its members the K values and seeds:

- ``G``: the full model at K = infinity (a fresh chain per sequence): tau_G;
- ``G_prev``: layer-1 attention hard-wired to the previous token (the paper's minimal model),
  K = infinity: tau_G|prev;
- ``M2_prev``: the same with layer-2 attention uniform, so it can pool the context's bigrams
  but cannot match the current state (no G2), on K chains: tau_M2|prev(K);
- ``M1``: layer-1 attention sees only the current token (no previous-token head, so neither
  G2 nor M2), on K chains: tau_M1(K);
- ``G@r``: the full model at K = infinity with layer 1's attention at r times the learning
  rate, for every r the spec's sweep asks for.

Each member's test sets carry the levels the clock is read against
(:mod:`~infoflow.validators.icl_markov.clocks.measure`): the unigram plateau (the Bayes
unigram G1_bayes) and the mechanism's exact Bayes level (G2, M2 or M1), on fresh chains for G
and on the member's own chains for M1 and M2. K = infinity is a pool of :data:`POOL` fresh
chains drawn uniformly, far more than the sequences a small model could memorise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from infoflow.icl_markov.spec import IclMarkovSpec
from infoflow.validators.chains import ChainSampler, sample_chains
from infoflow.validators.icl_markov import references
from infoflow.validators.icl_markov.clocks.measure import Projected
from infoflow.validators.icl_markov.criterion import (
    KINDS,
    PROJECTION_SEQUENCES,
    project,
    projected,
    separability,
    stacked,
)
from infoflow.validators.icl_markov.model import PREVIOUS_SEQUENCES, previous_token_attention
from infoflow.validators.icl_markov.training import (
    TRAINING_VERSION,
    Mixtures,
    mixture_weights,
    trained_setting,
)
from infoflow.validators.protocol import Group

POOL = 65_536  # fresh chains standing in for K = infinity
#: clock -> (layer attention patterns, the mechanism's reference)
CLOCKS = {
    "G": (("causal", "causal"), "G2"),
    "G_prev": (("previous", "causal"), "G2"),
    "M2_prev": (("previous", "uniform"), "M2"),
    "M1": (("self", "causal"), "M1"),
}
CLOCK_EVALUATIONS = 48  # log-spaced evaluations of a clock run


@dataclass
class ClockGroup(Group):
    """One clock's members (K, seed) at one setting; K None is infinity."""

    kind: ClassVar[str] = "icl_markov"
    code: ClassVar[int] = TRAINING_VERSION
    prefix: str
    clock: str  # a key of CLOCKS
    spec: IclMarkovSpec  # the setting; its training.layer1_attention_lr is the clock's r
    chains: list[int | None]
    seeds: list[int]
    checkpoints: list[int]
    eval_sequences: int

    @property
    def rule(self) -> Projected | None:
        """The spec's criterion for this clock: :class:`~.measure.Projected`, or None (the
        halfway criterion)."""
        options = self.spec.options
        if options.criterion == "gap":
            return None
        return Projected(KINDS[CLOCKS[self.clock][1]], options.criterion_tolerance)

    @property
    def attention(self) -> tuple[str, ...]:
        return CLOCKS[self.clock][0]

    @property
    def members(self) -> list[tuple[int | None, int]]:
        return [(k, s) for s in self.seeds for k in self.chains]

    def trained(self) -> dict:
        patterns, mechanism = CLOCKS[self.clock]
        found = {
            "clock": self.clock,
            "patterns": patterns,
            "mechanism": mechanism,
            "pool": POOL,
            "tests": ["own", "fresh"],
            **self.describe(),
        }
        if self.chains != [None]:  # since 2026-12-02: M1 and M2 recall the member's chains
            found["fresh_references"] = "member chains"
        return found

    def describe(self) -> dict:
        spec = trained_setting(self.spec)
        return {
            "setting": spec,
            "clock": self.clock,
            "chains": self.chains,
            "seeds": self.seeds,
            "checkpoints": self.checkpoints,
            "eval_sequences": self.eval_sequences,
        }

    def member_rows(self) -> list[dict]:
        return [
            {"label": f"{self.clock} K={k or 'inf'}, seed {s}", "chains": k, "seed": s}
            for k, s in self.members
        ]


def plan_clocks(
    name: str, settings: list[IclMarkovSpec], seeds: list[int], checkpoints, per_k: bool = True
) -> list[ClockGroup]:
    """The clock groups the race needs for ``settings`` (the K sweep's, capped): per setting
    at the measured rate, G, G_prev, and M2_prev and M1 at the K of ``race.chains``; per
    slowed rate, G at that rate. ``per_k``: a group per clock and K (each stops as soon as
    its own seeds' clocks are final), else a group per clock."""
    groups: dict[str, ClockGroup] = {}
    for spec in settings:
        training = spec.training
        base = spec.model_copy(
            update={"training": training.model_copy(update={"layer1_attention_lr": 1.0})}
        )
        steps = checkpoints(training.steps, CLOCK_EVALUATIONS)
        chains = sorted(spec.race.chains)
        runs = [("G", [None]), ("G_prev", [None])]
        runs += [
            (clock, ks)
            for clock in ("M2_prev", "M1")
            for ks in ([[k] for k in chains] if per_k else [chains])
        ]
        for clock, ks in runs:
            group = ClockGroup(name, clock, base, ks, seeds, steps, 128)
            groups.setdefault(group.name, group)
        if training.layer1_attention_lr != 1:
            group = ClockGroup(name, "G", spec, [None], seeds, steps, 128)
            groups.setdefault(group.name, group)
    return list(groups.values())


@dataclass
class TestSet:
    """Test sequences of every member [M, n, L], their true next-state rows [M, n, L, C],
    per member the reference levels on them (KL(truth || reference), scored positions), and
    the projection's references at the scored positions of the first sequences
    [M, R, n', L - 1, C]."""

    x: torch.Tensor
    truth: torch.Tensor
    levels: list[dict[str, float]]
    refs: torch.Tensor


class ClockData:
    """Each member's chains and training batches, and its test sets: ``own`` (fresh chains
    for a G clock, the member's chains for M1 and M2) and, for a memorising clock, ``fresh``
    too, to see whether the model generalised instead of memorising."""

    def __init__(self, group: ClockGroup, device: torch.device):
        self.group, self.mechanism = group, CLOCKS[group.clock][1]
        spec, n = group.spec, group.eval_sequences
        # the projection's references: no training chain exists to recall at K = infinity
        self.phases = projected(spec.options.criterion, memorised=group.chains != [None])
        generator = torch.Generator().manual_seed(spec.seed + 1)
        P, weights, own, fresh = [], [], [], []
        for k, seed in group.members:
            fresh_chains = sample_chains(n, spec.states, spec.dirichlet_alpha, seed + 1_000_003)
            uniform = torch.full((n,), 1 / n, dtype=torch.float64)
            if k is None:  # a pool of fresh chains to train on
                P.append(sample_chains(POOL, spec.states, spec.dirichlet_alpha, seed + 3_000_017))
                weights.append(torch.full((POOL,), 1 / POOL, dtype=torch.float64))
                own.append(self._test(fresh_chains, uniform, "G2", generator, distinct=True))
                continue
            P.append(sample_chains(k, spec.states, spec.dirichlet_alpha, seed))
            weights.append(mixture_weights(k, k, spec.mixture, seed))
            own.append(self._test(P[-1], weights[-1], self.mechanism, generator))
            known = (P[-1], weights[-1])
            fresh.append(
                self._test(fresh_chains, uniform, "G2", generator, distinct=True, known=known)
            )
        self.tests = {"own": _stack(own, device)}
        if fresh:
            self.tests["fresh"] = _stack(fresh, device)
        self.training = Mixtures(P, weights, device)
        # every test set together: the references [M, R, N, C] and the ceiling per member
        self.projected = torch.cat([t.refs.flatten(2, 3) for t in self.tests.values()], 2)
        uniform = torch.ones(self.projected.shape[-2])
        self.separable = [separability(r.cpu(), uniform, self.phases) for r in self.projected]

    def _test(self, chains, weights, mechanism: str, generator, distinct: bool = False, known=None):
        """(states [n, L], truth [n, L, C], levels, the projection's references) of n
        sequences from ``chains``: one chain each when ``distinct``, else drawn by
        ``weights``. ``known``: the member's own (chains, weights), which M1 and M2 recall on
        fresh chains (default: ``chains`` and ``weights``)."""
        n, spec = self.group.eval_sequences, self.group.spec
        chain = (
            torch.arange(n)
            if distinct
            else torch.multinomial(weights.float(), n, True, generator=generator)
        )
        x = ChainSampler(chains).sample(chain, spec.context_len, generator)
        truth = chains[chain[:, None], x].float()
        refs = references.predictions(x, *(known or (chains, weights)), spec.dirichlet_alpha)
        levels = {
            name: float(references.kl(truth, refs[name])[:, :-1].mean())
            for name in ("G1_bayes", mechanism)
        }
        first = PROJECTION_SEQUENCES
        projected = stacked({n: r[:first, :-1] for n, r in refs.items()}, self.phases)
        levels = {"plateau": levels["G1_bayes"], "mechanism": levels[mechanism]}
        return x, truth, levels, projected

    def batches(self, count: int, size: int, length: int, generator: torch.Generator):
        """``count`` steps' training sequences [count, members, size, length]."""
        return self.training.batches(count, size, length, generator)

    @torch.no_grad()
    def evaluate(self, model, chunk: int = 64) -> list[dict[str, float]]:
        """Per member and test set: KL(truth || model) and the two levels, as
        ``{"own:kl", "own:plateau", "own:mechanism", "fresh:kl", ...}``; on every test set
        together, the projection's weights (``"w:G2"``), its misfit and each reference's
        separability (``"sep:M1"``: :mod:`..criterion`); layer 1's attention to the previous
        token (``"prev:attention"``)."""
        model.eval()
        out: list[dict[str, float]] = [{} for _ in self.group.members]
        probabilities = []
        for split, test in self.tests.items():
            x = test.x[..., :-1]
            logp = torch.cat(
                [
                    torch.log_softmax(model(x[:, i : i + chunk]).float(), -1)
                    for i in range(0, x.shape[1], chunk)
                ],
                1,
            )
            truth = test.truth[..., :-1, :]
            kl = (truth * ((truth + 1e-12).log() - logp)).sum(-1).mean((1, 2)).tolist()
            for row, value, levels in zip(out, kl, test.levels, strict=True):
                row.update({f"{split}:kl": value, **{f"{split}:{k}": v for k, v in levels.items()}})
            probabilities.append(logp[:, :PROJECTION_SEQUENCES].exp().flatten(1, 2))
        previous = previous_token_attention(
            model, self.tests["own"].x[:, :PREVIOUS_SEQUENCES]
        ).tolist()
        model.train()
        model_p = torch.cat(probabilities, 1)
        positions = torch.ones(model_p.shape[:2], device=model_p.device)
        weights, misfit = project(model_p, self.projected, positions)
        found = zip(out, weights.tolist(), misfit.tolist(), self.separable, strict=True)
        for row, w, miss, sep in found:
            row.update({f"w:{p}": v for p, v in zip(self.phases, w, strict=True)})
            row.update({f"sep:{p}": v for p, v in sep.items()})
            row["fit:misfit"] = miss
        for row, value in zip(out, previous, strict=True):
            row["prev:attention"] = value
        return out


def _stack(tests: list[tuple], device: torch.device) -> TestSet:
    xs, truths, levels, refs = zip(*tests, strict=True)
    return TestSet(
        torch.stack(xs).to(device),
        torch.stack(truths).to(device),
        list(levels),
        torch.stack(refs).to(device),
    )
