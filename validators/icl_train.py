"""Train a K sweep of next-state predictors as one ensemble and record, at log-spaced
checkpoints, each member's KL to the truth and to the four reference predictors.

A group is every member (K, seed) of one setting: the same C, context, model and budget.
Member (K, s) trains on the first K chains of seed s's pool (so the chain sets are nested
in K) with mixture weights that are Dirichlet(1) for every K (normalised i.i.d. Exp(1)
draws) or uniform. Test sets: ID, fresh sequences of the member's own chains; OOD, one
freshly drawn chain per sequence. Every checkpoint writes the metrics to the database and
the training state atomically; a killed run resumes from the last one with the same data
stream.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from infoflow.validators import markov
from infoflow.validators.gpt import StackedGPT
from infoflow.validators.store import Store
from infoflow.validators.train import ensemble_step, load_checkpoint, save_checkpoint
from torch import Tensor

from infoflow.icl_markov.spec import IclMarkovSpec

#: What each member is compared with: the generating chain, then the references.
TARGETS = ("truth", *markov.REFERENCES)
SPLITS = ("id", "ood")


@dataclass
class IclGroup:
    """Members (K, seed) of one setting, trained together."""

    name: str
    spec: IclMarkovSpec  # the setting; its ``chains`` is ignored
    chains: list[int]
    seeds: list[int]
    checkpoints: list[int]  # steps at which to evaluate and save
    eval_sequences: int

    @property
    def members(self) -> list[tuple[int, int]]:
        return [(k, s) for s in self.seeds for k in self.chains]

    def describe(self) -> dict:
        spec = self.spec.model_dump(mode="json", exclude={"chains", "sweep", "description"})
        return {"setting": spec, "chains": self.chains, "seeds": self.seeds,
                "checkpoints": self.checkpoints, "eval_sequences": self.eval_sequences}  # fmt: skip

    def member_rows(self) -> list[dict]:
        return [{"label": f"K={k}, seed {s}", "chains": k, "seed": s} for k, s in self.members]


def log_spaced(steps: int, count: int, first: int = 10) -> list[int]:
    """About ``count`` distinct steps from ``first`` to ``steps``, evenly spaced in log."""
    grid = np.geomspace(min(first, steps), steps, count)
    return sorted({round(float(v)) for v in grid})


class MemberData:
    """The chains, mixture weights and test sets of every member, on ``device``."""

    def __init__(self, group: IclGroup, device: torch.device):
        spec = group.spec
        c, alpha, length = spec.states, spec.dirichlet_alpha, spec.context_len
        n = group.eval_sequences
        P, weights = [], []
        for k, seed in group.members:
            pool = markov.sample_chains(max(group.chains), c, alpha, seed)
            P.append(pool[:k])
            weights.append(_mixture(k, max(group.chains), spec.mixture, seed))
        self.P, self.weights = P, weights
        self.offsets = torch.tensor(np.cumsum([0] + [len(p) for p in P[:-1]]), device=device)
        padded = torch.zeros(len(P), max(group.chains))
        for i, w in enumerate(weights):
            padded[i, : len(w)] = w.float()
        self.padded = padded.to(device)
        self.sampler = markov.ChainSampler(torch.cat(P), device)

        cpu = torch.Generator().manual_seed(spec.seed + 1)
        ood_chains = markov.sample_chains(n, c, alpha, seed=spec.seed + 1_000_003)
        ood_x = markov.ChainSampler(ood_chains).sample(torch.arange(n), length, cpu)
        ood_truth = ood_chains[torch.arange(n)[:, None], ood_x]
        self.x = {"id": [], "ood": []}
        refs: dict[str, list[Tensor]] = {"id": [], "ood": []}
        for P_k, w in zip(P, weights, strict=True):
            chain = torch.multinomial(w.float(), n, replacement=True, generator=cpu)
            x = markov.ChainSampler(P_k).sample(chain, length, cpu)
            for split, xs, truth in (("id", x, P_k[chain[:, None], x]), ("ood", ood_x, ood_truth)):
                found = markov.references(xs, P_k, w, alpha)
                refs[split].append(torch.stack([truth.float(), *found.values()]))
                self.x[split].append(xs)
        # states [M, n, L]; targets (truth, then the references) [M, targets, n, L, C]
        self.x = {split: torch.stack(xs).to(device) for split, xs in self.x.items()}
        self.refs = {split: torch.stack(r).to(device) for split, r in refs.items()}

    def batches(self, count: int, size: int, length: int, generator: torch.Generator) -> Tensor:
        """``count`` steps' training sequences [count, members, size, length], fresh from each
        member's chains."""
        local = torch.multinomial(self.padded, count * size, replacement=True, generator=generator)
        chain = (local + self.offsets[:, None]).flatten()
        x = self.sampler.sample(chain, length, generator).view(len(self.P), count, size, length)
        return x.transpose(0, 1)

    def levels(self) -> dict[str, list[dict[str, float]]]:
        """KL(truth || reference) per member and split: where each reference sits."""
        out = {}
        for split, refs in self.refs.items():
            truth = refs[:, :1]
            kl = markov.kl(truth, refs[:, 1:]).mean((-1, -2))  # [M, refs]
            out[split] = [dict(zip(markov.REFERENCES, row.tolist(), strict=True)) for row in kl]
        return out


class Prefetched:
    """Training batches drawn ``count`` steps at a time: the sampler loops over positions, so
    one draw for many steps saves launches on a GPU. ``state(step)`` is the generator state
    from which the batch of ``step`` is drawn again, so a resumed run sees the same data."""

    def __init__(self, data: MemberData, size: int, length: int, generator, count: int = 16):
        self.data, self.size, self.length, self.count = data, size, length, count
        self.generator = generator
        self.buffer, self.index, self.start = None, -1, None

    def at(self, step: int) -> Tensor:
        if step // self.count != self.index:  # buffers are drawn in order, from the state
            self.start = self.generator.get_state()
            self.buffer = self.data.batches(self.count, self.size, self.length, self.generator)
            self.index = step // self.count
        return self.buffer[step % self.count]

    def state(self, step: int) -> Tensor:
        """The generator state to save when ``step`` is the next step to train."""
        return self.start if step % self.count else self.generator.get_state()


def _mixture(k: int, pool: int, mixture: str, seed: int) -> Tensor:
    if mixture == "uniform":
        return torch.full((k,), 1 / k, dtype=torch.float64)
    draws = np.random.default_rng(seed + 7).exponential(size=pool)[:k]
    return torch.tensor(draws / draws.sum())


Progress = Callable[[str, int, int, float], None]


def train_icl_group(
    group: IclGroup,
    device: torch.device,
    store: Store,
    checkpoints: Path,
    progress: Progress | None = None,
) -> tuple[MemberData, StackedGPT]:
    """Train ``group`` to the end (resuming from its checkpoint; a finished group only loads
    its final weights) and return its data and the trained model; the metrics per
    checkpoint are in the database."""
    started = time.perf_counter()
    spec, training = group.spec, group.spec.training
    torch.manual_seed(spec.seed)
    data = MemberData(group, device)
    model_spec = spec.model
    model = StackedGPT([seed * 1000 + k for k, seed in group.members], spec.states,
                       spec.context_len, model_spec.layers, model_spec.d_model, model_spec.heads,
                       model_spec.mlp_width).to(device)  # fmt: skip
    path = checkpoints / f"{group.name}.pt"
    if store.group_done(group.name):
        state = torch.load(path, map_location=device, weights_only=True)
        model.load_state_dict(state["model"])
        return data, model
    optimizer = torch.optim.AdamW(model.parameter_groups(training.weight_decay), lr=training.lr,
                                  betas=(0.9, 0.95), fused=device.type == "cuda")  # fmt: skip
    warmup = max(1, training.steps // 50)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))
    generator = torch.Generator(device=device).manual_seed(spec.seed + 2)
    start, records = load_checkpoint(path, model, optimizer, schedule, generator, device)
    store.restore(records)

    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda")
    losses, window = torch.zeros(len(group.members), device=device), 0
    stream = Prefetched(data, training.batch_size, spec.context_len, generator)
    for step in range(start, training.steps):
        x = stream.at(step)
        with autocast:
            logits = model(x[:, :, :-1])
        per_member = F.cross_entropy(
            logits.float().flatten(1, 2).transpose(1, 2), x[:, :, 1:].flatten(1), reduction="none"
        ).mean(-1)
        losses += ensemble_step(optimizer, schedule, per_member)
        window += 1
        done = step + 1
        if done in group.checkpoints or done == training.steps:
            metrics = evaluate(model, data)
            mean_losses = (losses / window).tolist()
            for i, loss in enumerate(mean_losses):
                metrics[i]["train:loss"] = loss
            losses.zero_()
            window = 0
            store.record_metrics(group.name, done, metrics)
            save_checkpoint(path, model, optimizer, schedule, stream.state(done), done, store.rows)
            if progress:
                progress(group.name, done, training.steps, sum(mean_losses) / len(mean_losses))
    store.finish_group(group.name, [], time.perf_counter() - started)
    return data, model


@torch.no_grad()
def position_kl(model: StackedGPT, data: MemberData, chunk: int = 64) -> dict[str, Tensor]:
    """KL(target || model) per member, target (truth, then the references) and position,
    averaged over the test sequences: {split: [members, targets, positions]}."""
    model.eval()
    out = {}
    for split in SPLITS:
        x, refs = data.x[split][..., :-1], data.refs[split][..., :-1, :]  # as in training
        total = torch.zeros(refs.shape[:2] + refs.shape[-2:-1], device=x.device)
        for i in range(0, x.shape[1], chunk):
            logp = F.log_softmax(model(x[:, i : i + chunk]).float(), -1)[:, None]
            target = refs[:, :, i : i + chunk]
            total += (target * ((target + 1e-12).log() - logp)).sum(-1).sum(2)
        out[split] = total / x.shape[1]
    model.train()
    return out


def evaluate(model: StackedGPT, data: MemberData) -> list[dict[str, float]]:
    """Mean KL(target || model) over sequences and positions, per member, for every target
    on both splits: ``{"id:truth": ..., "ood:G2": ...}``."""
    out: list[dict[str, float]] = [{} for _ in range(data.x["id"].shape[0])]
    for split, kl in position_kl(model, data).items():
        for member, row in enumerate(kl.mean(-1).tolist()):
            out[member].update({f"{split}:{t}": v for t, v in zip(TARGETS, row, strict=True)})
    return out
