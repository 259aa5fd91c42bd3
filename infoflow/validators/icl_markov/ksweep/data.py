"""The K sweep's data: a group's members (K, seed), each member's chains, mixture weights
and ID / OOD test sets with every reference's predictions on them, and its training batches
(:class:`~infoflow.validators.icl_markov.training.Mixtures`).

Member (K, s) trains on the first K chains of seed s's pool (so the chain sets are nested
in K) with mixture weights that are Dirichlet(1) for every K (normalised i.i.d. Exp(1)
draws) or uniform. Test sets: ID, fresh sequences of the member's own chains; OOD, one
freshly drawn chain per sequence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor

from infoflow.icl_markov.spec import IclMarkovSpec
from infoflow.validators.chains import ChainSampler, sample_chains, stationary
from infoflow.validators.icl_markov import references
from infoflow.validators.icl_markov.criterion import (
    PROJECTION_SEQUENCES,
    projected,
    separability,
    stacked,
)
from infoflow.validators.icl_markov.training import (
    NOT_TRAINED,
    TRAINING_VERSION,
    Mixtures,
    mixture_weights,
    trained_setting,
)
from infoflow.validators.protocol import Group

#: What each member is compared with: the generating chain, then the references.
TARGETS = ("truth", *references.REFERENCES)
SPLITS = ("id", "ood")
#: Added to a probability before its logarithm in every KL the validator records.
EPS = 1e-12


@dataclass
class IclGroup(Group):
    """Members (K, seed) of one setting, trained together."""

    kind: ClassVar[str] = "icl_markov"
    code: ClassVar[int] = TRAINING_VERSION
    prefix: str
    spec: IclMarkovSpec  # the setting; its ``chains`` is ignored
    chains: list[int]
    seeds: list[int]
    checkpoints: list[int]  # steps at which to evaluate and save
    eval_sequences: int

    def trained(self) -> dict:
        """Everything that determines the trained members and the metrics they record (the
        calibration file changes predictions only)."""
        described = self.describe()
        described["setting"].pop("calibration", None)
        return described

    @property
    def members(self) -> list[tuple[int, int]]:
        return [(k, s) for s in self.seeds for k in self.chains]

    def describe(self) -> dict:
        spec = trained_setting(self.spec, NOT_TRAINED - {"calibration"})
        return {
            "setting": spec,
            "chains": self.chains,
            "seeds": self.seeds,
            "checkpoints": self.checkpoints,
            "eval_sequences": self.eval_sequences,
        }

    def member_rows(self) -> list[dict]:
        return [{"label": f"K={k}, seed {s}", "chains": k, "seed": s} for k, s in self.members]


class MemberData:
    """The chains, mixture weights and test sets of every member, on ``device``."""

    def __init__(self, group: IclGroup, device: torch.device):
        spec = group.spec
        c, alpha, length = spec.states, spec.dirichlet_alpha, spec.context_len
        n = group.eval_sequences
        self.direction = spec.options.kl_direction
        self.phases = projected(spec.options.criterion)
        P, weights = [], []
        for k, seed in group.members:
            pool = sample_chains(max(group.chains), c, alpha, seed)
            P.append(pool[:k])
            weights.append(mixture_weights(k, max(group.chains), spec.mixture, seed))
        self.P, self.weights = P, weights
        self.training = Mixtures(P, weights, device)

        cpu = torch.Generator().manual_seed(spec.seed + 1)
        ood_chains = sample_chains(n, c, alpha, seed=spec.seed + 1_000_003)
        ood_x = ChainSampler(ood_chains).sample(torch.arange(n), length, cpu)
        ood = (ood_x, ood_chains)
        ood_context = references.in_context(ood_x, c, alpha)  # the same for every member
        by_stationary = spec.options.positions == "stationary"
        self.x = {"id": [], "ood": []}
        refs: dict[str, list[Tensor]] = {"id": [], "ood": []}
        scored: dict[str, list[Tensor]] = {"id": [], "ood": []}
        for P_k, w in zip(P, weights, strict=True):
            chain = torch.multinomial(w.float(), n, replacement=True, generator=cpu)
            x = ChainSampler(P_k).sample(chain, length, cpu)
            for split, (xs, chains) in (("id", (x, P_k[chain])), ("ood", ood)):
                truth = chains[torch.arange(n)[:, None], xs]
                shared = ood_context if split == "ood" else None
                found = references.predictions(xs, P_k, w, alpha, context=shared)
                refs[split].append(torch.stack([truth.float(), *found.values()]))
                scored[split].append(position_weights(xs, chains, by_stationary))
                self.x[split].append(xs)
        # states [M, n, L]; targets (truth, then the references) [M, targets, n, L, C];
        # the weight of each scored position (all but the last) [M, n, L - 1]
        self.x = {split: torch.stack(xs).to(device) for split, xs in self.x.items()}
        self.refs = {split: torch.stack(r).to(device) for split, r in refs.items()}
        self.scored = {split: torch.stack(w).to(device) for split, w in scored.items()}
        # the projection's references and position weights on the first sequences of both
        # splits together: [M, references, 2 n' (L - 1), C] and [M, 2 n' (L - 1)]
        first = PROJECTION_SEQUENCES
        self.projected = torch.cat(
            [
                stacked(_named(self.refs[s][:, :, :first, :-1]), self.phases).flatten(2, 3)
                for s in SPLITS
            ],
            2,
        )
        self.projected_weights = torch.cat(
            [self.scored[s][:, :first].flatten(1) for s in SPLITS], 1
        )

    def separability(self) -> list[dict[str, float]]:
        """Per member, each phase reference's separability on its test data: the ceiling of
        the projection criterion (:func:`..criterion.separability`)."""
        return [
            separability(refs.cpu(), weights.cpu(), self.phases)
            for refs, weights in zip(self.projected, self.projected_weights, strict=True)
        ]

    def divergence(self, target: Tensor, log_model: Tensor) -> Tensor:
        """The KL of the spec's ``kl_direction`` per position, over the last axis, between
        ``target`` probabilities and a model's log-probabilities: KL(target || model) or
        KL(model || target)."""
        log_target = (target + EPS).log()
        if self.direction == "model_reference":
            return (log_model.exp() * (log_model - log_target)).sum(-1)
        return (target * (log_target - log_model)).sum(-1)

    def batches(self, count: int, size: int, length: int, generator: torch.Generator) -> Tensor:
        """``count`` steps' training sequences [count, members, size, length], fresh from each
        member's chains."""
        return self.training.batches(count, size, length, generator)

    def levels(self) -> dict[str, list[dict[str, float]]]:
        """Where each reference sits: scored as the model is (direction, positions), with the
        reference as the model and the truth as the target, per member and split."""
        out = {}
        for split, refs in self.refs.items():
            found = self._score(refs[:, :1, :, :-1], refs[:, 1:, :, :-1], split)  # [M, refs]
            out[split] = [
                dict(zip(references.REFERENCES, row.tolist(), strict=True)) for row in found
            ]
        return out

    def separations(self) -> list[dict[str, float]]:
        """How far apart the references are on the same data, per member: ``"p>q"`` -> the
        score a model exactly equal to q gets against reference p (KL(p || q) in the default
        direction), scored as the model is, the mean of the ID and OOD splits."""
        out: list[dict[str, float]] = [{} for _ in range(len(self.P))]
        names = references.REFERENCES
        for i, p in enumerate(names, start=1):
            for j, q in enumerate(names, start=1):
                if p == q:
                    continue
                both = sum(
                    self._score(refs[:, i, :, :-1], refs[:, j, :, :-1], split)
                    for split, refs in self.refs.items()
                ) / len(self.refs)
                for member, value in enumerate(both.tolist()):
                    out[member][f"{p}>{q}"] = value
        return out

    def _score(self, target: Tensor, model: Tensor, split: str) -> Tensor:
        """Mean over sequences and scored positions of the weighted divergence between
        ``target`` and ``model`` probabilities [M, ..., n, L - 1, C] -> [M, ...]."""
        weights = self.scored[split]
        weights = weights.view(weights.shape[0], *[1] * (target.dim() - 4), *weights.shape[1:])
        found = weights * self.divergence(target, (model + EPS).log())
        return found.mean((-1, -2))


def _named(refs: Tensor) -> dict[str, Tensor]:
    """The references of a [M, targets, ...] tensor by name (:data:`TARGETS`)."""
    return {name: refs[:, i] for i, name in enumerate(TARGETS)}


def position_weights(x: Tensor, chains: Tensor, by_stationary: bool) -> Tensor:
    """The weight of each scored position (all but the last) of sequences x [n, L] drawn from
    ``chains`` [n, C, C]: 1 (uniform), or the chain's stationary probability of the current
    state, scaled to a mean of 1 over each sequence's scored positions."""
    x = x[:, :-1]
    if not by_stationary:
        return torch.ones(x.shape)
    found = stationary(chains).gather(1, x)
    return (found / found.mean(1, keepdim=True)).float()
