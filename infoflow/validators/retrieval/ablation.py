"""A compiled witness without one layer, and a short training run from a construction: the
empirical proxy for what a deficient architecture can reach (:mod:`.witness`). A witness
without one head is built from its circuit instead (``circuit.without_head``)."""

from __future__ import annotations

import math
from dataclasses import replace

import torch

from infoflow.retrieval.spec import RetrievalSpec
from infoflow.validators.retrieval.model import EnsembleTransformer
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs

PER_LAYER = ("ln1", "W_QKV", "W_O", "ln2", "W_1", "b_1", "W_2", "b_2")
EVALUATIONS = 10  # held-out evaluations over a run
HELD_OUT = 1024
CHUNK = 256  # held-out sequences per forward pass


def without_layer(model: EnsembleTransformer, layer: int) -> EnsembleTransformer:
    """A copy of one-member ``model`` without ``layer`` (1-based): the other layers' weights
    as they were, the residual stream passing the removed one by."""
    (member,) = model.members
    heads = member.heads[: layer - 1] + member.heads[layer:]
    smaller = replace(member, heads=heads)
    seq_len = model.W_pos.shape[1] - 1
    out = EnsembleTransformer([smaller], seq_len, model.W_in.shape[1], model.W_out.shape[-1])
    out = out.to(model.W_in.dtype)
    old, new = dict(model.named_parameters()), dict(out.named_parameters())
    kept = [i for i in range(member.layers) if i != layer - 1]
    with torch.no_grad():
        for name, param in new.items():  # nothing of the fresh model's random draw is kept
            if name not in PER_LAYER:
                param.copy_(old[name])
                continue
            param.zero_()
            for target, source in enumerate(kept):
                if name in ("W_QKV", "W_O"):
                    _copy_heads(model, out, name, source, target)
                else:
                    param[target] = old[name][source]
    return out


def _copy_heads(model, out, name: str, source: int, target: int) -> None:
    """Layer ``source``'s heads of ``model`` into layer ``target`` of ``out`` (the stacks'
    head slots may differ in width: each head keeps its own dimensions)."""
    e, count = model.embed_dim, model.members[0].heads[source]
    n = model.members[0].head_width(source)
    if name == "W_QKV":
        old = model.W_QKV[source, 0].view(e, 3, model.heads, model.head_width)
        new = out.W_QKV[target, 0].view(e, 3, out.heads, out.head_width)
        new[:, :, :count, :n] = old[:, :, :count, :n]
    else:
        old = model.W_O[source, 0].view(model.heads, model.head_width, e)
        new = out.W_O[target, 0].view(out.heads, out.head_width, e)
        new[:count, :n] = old[:count, :n]


def fine_tune(
    model: EnsembleTransformer, spec: RetrievalSpec, tune, device: torch.device, seed: int = 0
) -> tuple[float, float]:
    """Train the one-member ``model`` on fresh batches (AdamW, MSE on the raw target), its
    output bias first moved by the mean residual (a removed part's mean, the best constant in
    its place); (its held-out NMSE then, the best held-out NMSE over the run)."""
    model = model.to(device)
    target = TargetFunction(spec, seed=seed, dtype=model.W_in.dtype, device=device)
    seq_len = spec.seq_len or 16
    generator = torch.Generator(device=device).manual_seed(seed + 1)
    x_eval = sample_inputs(spec, HELD_OUT, seq_len, generator).to(model.W_in.dtype)
    y_eval = target(x_eval).reshape(HELD_OUT, -1)

    def predict() -> torch.Tensor:
        with torch.no_grad():
            chunks = range(0, HELD_OUT, CHUNK)
            return torch.cat([model(x_eval[i : i + CHUNK])[0] for i in chunks])

    def held_out() -> float:
        return float(((predict() - y_eval) ** 2).mean() / y_eval.var(0).mean())

    with torch.no_grad():  # what a removed part wrote is replaced by its mean
        model.b_out[0] += (y_eval - predict()).mean(0)
    before = best = held_out()
    optimizer = torch.optim.AdamW(model.parameters(), lr=tune.lr, weight_decay=0.0)
    every = max(1, tune.steps // EVALUATIONS)
    for step in range(1, tune.steps + 1):
        x = sample_inputs(spec, tune.batch, seq_len, generator).to(model.W_in.dtype)
        y = target(x).reshape(tune.batch, -1)
        loss = ((model(x)[0] - y) ** 2).mean() / y_eval.var(0).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % every == 0 or step == tune.steps:
            value = held_out()
            best = value if math.isfinite(value) and value < best else best
    return before, best
