"""A small looped (weight-tied) decoder whose K/V cache is laid out as the big models lay it
out, trained on a language-like corpus generated in code.

Layout: ``prelude`` layers run once, a core block of ``R`` layers runs ``T`` times with the
same weights, ``coda`` layers run once; every run of a layer is an attention *slot* with its
own K/V (the per-loop cache of Ouro and Huginn): ("prelude", i), ("core", t, r), ("coda", i).
Pre-norm blocks (RMSNorm, attention with RoPE, GELU MLP), untied embeddings.

Attention goes through a *cache* object, so the same forward serves the teacher (exact
causal attention), capture of every slot's K/V and attention output, and evaluation with
reconstructed K/V (:mod:`~infoflow.validators.looped_kv.codec`). :func:`train_looped`
trains one on any device, resumably; :func:`load_looped` reads a finished one back.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from infoflow.validators.ensemble import Checkpoint
from infoflow.validators.throughput import Meter, flops_per_token, peak

Slot = tuple  # ("prelude", i) | ("core", t, r) | ("coda", i)


@dataclass(frozen=True)
class LoopedConfig:
    vocab: int = 16
    d_model: int = 64
    heads: int = 4
    prelude: int = 1
    core: int = 2  # R
    loops: int = 4  # T
    coda: int = 1
    mlp_width: int = 256
    max_len: int = 128
    kv_heads: int | None = None  # grouped-query attention when fewer than heads
    style: str = "gelu"  # "gelu": the blocks above; "ouro": Ouro's (see OuroBlock)
    rope_theta: float = 10000.0
    rope_scale: float = 1.0  # linear RoPE scaling: positions divided by this factor
    norm_eps: float = 1e-6
    head_size: int | None = None  # default d_model / heads

    @property
    def head_dim(self) -> int:
        return self.head_size or self.d_model // self.heads

    @property
    def kv(self) -> int:
        """KV heads: the heads the cache holds."""
        return self.kv_heads or self.heads

    def slots(self) -> list[Slot]:
        """Every attention slot in the order the forward runs them."""
        return (
            [("prelude", i) for i in range(self.prelude)]
            + [("core", t, r) for t in range(self.loops) for r in range(self.core)]
            + [("coda", i) for i in range(self.coda)]
        )


def expand_kv(x: Tensor, heads: int) -> Tensor:
    """K or V [B, n_kv, L, d] repeated to the query heads (grouped-query attention)."""
    return x if x.shape[1] == heads else x.repeat_interleave(heads // x.shape[1], dim=1)


class ExactAttention:
    """The teacher: causal attention over the slot's own K/V; optionally records them."""

    def __init__(self, record: bool = False):
        self.record = record
        self.kv: dict[Slot, tuple[Tensor, Tensor]] = {}
        self.outputs: dict[Slot, Tensor] = {}

    def attend(self, slot: Slot, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        heads = q.shape[1]  # q: [B, H, n, d_head]; k, v: [B, n_kv, L, d_head]
        out = F.scaled_dot_product_attention(
            q, expand_kv(k, heads), expand_kv(v, heads), is_causal=True
        )
        if self.record:
            self.kv[slot], self.outputs[slot] = (k, v), out
        return out


class Block(nn.Module):
    def __init__(self, config: LoopedConfig):
        super().__init__()
        d = config.d_model
        self.heads = config.heads
        self.norm1, self.norm2 = nn.RMSNorm(d), nn.RMSNorm(d)
        self.W_QKV = nn.Linear(d, 3 * d, bias=False)
        self.W_O = nn.Linear(d, d, bias=False)
        self.mlp = nn.Sequential(
            nn.Linear(d, config.mlp_width), nn.GELU(), nn.Linear(config.mlp_width, d)
        )

    def forward(self, h: Tensor, slot: Slot, cache, rope: tuple[Tensor, Tensor]) -> Tensor:
        b, n, d = h.shape  # batch, tokens, d_model
        q, k, v = self.W_QKV(self.norm1(h)).split(d, dim=-1)  # each [b, n, d]
        # [b, H, n, d_head]
        q, k, v = (x.view(b, n, self.heads, -1).transpose(1, 2) for x in (q, k, v))
        q, k = _rotate(q, *rope), _rotate(k, *rope)
        out = cache.attend(slot, q, k, v).transpose(1, 2).reshape(b, n, d)  # [b, n, d]
        h = h + self.W_O(out)
        return h + self.mlp(self.norm2(h))  # [b, n, d]


class OuroBlock(nn.Module):
    """Ouro's layer (modeling_ouro.py): sandwich RMSNorms around attention and around the
    SwiGLU MLP, separate q/k/v/o projections without bias, grouped-query attention and
    rotate-half RoPE."""

    def __init__(self, config: LoopedConfig):
        super().__init__()
        d, hd, eps = config.d_model, config.head_dim, config.norm_eps
        self.heads, self.kv_heads = config.heads, config.kv
        self.input_layernorm, self.input_layernorm_2 = nn.RMSNorm(d, eps), nn.RMSNorm(d, eps)
        self.post_attention_layernorm = nn.RMSNorm(d, eps)
        self.post_attention_layernorm_2 = nn.RMSNorm(d, eps)
        self.q_proj = nn.Linear(d, config.heads * hd, bias=False)
        self.k_proj = nn.Linear(d, config.kv * hd, bias=False)
        self.v_proj = nn.Linear(d, config.kv * hd, bias=False)
        self.o_proj = nn.Linear(config.heads * hd, d, bias=False)
        self.gate_proj = nn.Linear(d, config.mlp_width, bias=False)
        self.up_proj = nn.Linear(d, config.mlp_width, bias=False)
        self.down_proj = nn.Linear(config.mlp_width, d, bias=False)

    def forward(self, h: Tensor, slot: Slot, cache, rope: tuple[Tensor, Tensor]) -> Tensor:
        b, n, _ = h.shape  # batch, tokens, d_model
        z = self.input_layernorm(h)
        q = self.q_proj(z).view(b, n, self.heads, -1).transpose(1, 2)  # [b, H, n, d_head]
        k = self.k_proj(z).view(b, n, self.kv_heads, -1).transpose(1, 2)  # [b, n_kv, n, d_head]
        v = self.v_proj(z).view(b, n, self.kv_heads, -1).transpose(1, 2)  # [b, n_kv, n, d_head]
        q, k = _rotate_half(q, *rope), _rotate_half(k, *rope)
        out = cache.attend(slot, q, k, v).transpose(1, 2).reshape(b, n, -1)  # [b, n, H d_head]
        h = h + self.input_layernorm_2(self.o_proj(out))  # [b, n, d]
        z = self.post_attention_layernorm(h)
        z = self.down_proj(F.silu(self.gate_proj(z)) * self.up_proj(z))  # [b, n, d]
        return h + self.post_attention_layernorm_2(z)


class LoopedDecoder(nn.Module):
    def __init__(self, config: LoopedConfig):
        super().__init__()
        self.config = config
        block = OuroBlock if config.style == "ouro" else Block
        self.embed = nn.Embedding(config.vocab, config.d_model)
        self.prelude = nn.ModuleList(block(config) for _ in range(config.prelude))
        self.core = nn.ModuleList(block(config) for _ in range(config.core))
        self.coda = nn.ModuleList(block(config) for _ in range(config.coda))
        self.norm = nn.RMSNorm(config.d_model, config.norm_eps)
        self.unembed = nn.Linear(config.d_model, config.vocab, bias=False)

    def forward(self, x: Tensor, cache=None, offset: int = 0) -> Tensor:
        """Logits [B, n, vocab] for tokens x [B, n] at positions offset.. offset + n - 1.
        Ouro applies the final norm after every loop; the other style once, at the end."""
        cache = cache or ExactAttention()
        c = self.config
        ouro = c.style == "ouro"
        rope = (_rope_half if ouro else _rope)(
            c.head_dim, offset, x.shape[1], x.device, c.rope_theta, c.rope_scale
        )
        h = self.embed(x)  # [B, n, d_model]
        for i, block in enumerate(self.prelude):
            h = block(h, ("prelude", i), cache, rope)
        for t in range(c.loops):
            for r, block in enumerate(self.core):
                h = block(h, ("core", t, r), cache, rope)
            if ouro:
                h = self.norm(h)
        for i, block in enumerate(self.coda):
            h = block(h, ("coda", i), cache, rope)
        return self.unembed(h if ouro and not c.coda else self.norm(h))  # [B, n, vocab]


def _rope(dim: int, offset: int, n: int, device, theta: float, scale: float = 1.0):
    """cos and sin of the RoPE angles at positions offset.. offset + n - 1 (divided by
    ``scale``: linear scaling)."""
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, device=device).float() / dim))
    positions = torch.arange(offset, offset + n, device=device).float() / scale
    angles = positions[:, None] * inv[None]
    return angles.cos(), angles.sin()


def _rope_half(dim: int, offset: int, n: int, device, theta: float, scale: float = 1.0):
    """Hugging Face's layout: the angles repeated over both halves of the head."""
    cos, sin = _rope(dim, offset, n, device, theta, scale)
    return torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)


def _rotate_half(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def _rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


def train_looped(
    config: LoopedConfig,
    corpus,
    steps: int,
    batch: int,
    length: int,
    checkpoint: Checkpoint,
    seed: int = 0,
    lr: float = 3e-3,
    progress=None,
    every: int = 100,
    device="cpu",
    snapshots: tuple[int, ...] = (),
    on_snapshot=None,
    on_loss=None,
    on_speed=None,
    store=None,
) -> LoopedDecoder:
    """Train on next-token prediction over ``corpus(batch, length, generator)`` sequences
    (drawn on the CPU, trained on ``device``), saving the training state to ``checkpoint``
    every ``every`` steps and resuming from it (a finished run only loads its weights).
    ``on_snapshot(step, model)`` runs at each of ``snapshots``, the model in eval mode, and
    ``on_loss(step, loss)`` at each checkpoint with the mean training loss since the last,
    both before that step's checkpoint (a run killed after it repeats them on resume).
    ``store`` (a :class:`~infoflow.validators.store.Store` or ``Recorder``) gets back what
    the checkpoint holds of what it recorded, and its rows travel in the checkpoints (a
    retried Ray worker lost its earlier snapshots). ``on_speed(rates)`` runs at the end with
    the throughput of the steps this call trained (``Meter.rates``)."""
    torch.manual_seed(seed)
    model = LoopedDecoder(config).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, lr, total_steps=steps)
    generator = torch.Generator().manual_seed(seed + 1)
    start, records = checkpoint.load(model, optimizer, schedule, generator, device)
    if store is not None:
        store.restore(records)
    speed = looped_meter(model, length - 1, torch.device(device))
    losses, window = torch.zeros((), device=device), 0
    for step in range(start, steps):
        losses += _train_step(model, optimizer, schedule, corpus(batch, length, generator))
        done, window = step + 1, window + 1
        speed.add(batch * (length - 1))
        if on_snapshot is not None and done in snapshots:
            model.eval()
            on_snapshot(done, model)
            model.train()
        if done % every == 0 or done == steps:
            mean, window = float(losses) / window, 0
            losses.zero_()
            if on_loss is not None:
                on_loss(done, mean)
            rows = () if store is None else store.rows
            checkpoint.save(model, optimizer, schedule, generator.get_state(), done, rows)
            if progress:
                progress(done, steps, mean, speed.text())
        elif progress:
            progress(done, steps, None, speed.text())
    if on_speed is not None:
        on_speed(speed.rates())
    return model.eval()


def _train_step(model: LoopedDecoder, optimizer, schedule, x: torch.Tensor) -> torch.Tensor:
    """One step of next-token prediction on the sequences ``x``; its loss, detached."""
    x = x.to(next(model.parameters()).device)
    logits = model(x[:, :-1])
    loss = F.cross_entropy(logits.flatten(0, 1), x[:, 1:].flatten())
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    schedule.step()
    return loss.detach()


def looped_meter(model: LoopedDecoder, length: int, device: torch.device) -> Meter:
    """A throughput meter for ``model`` on sequences of ``length`` tokens: its core's
    weights count once per loop, as they run."""
    c = model.config
    core = sum(p.numel() for p in model.core.parameters())
    params = sum(p.numel() for p in model.parameters()) + (c.loops - 1) * core
    layers = c.prelude + c.core * c.loops + c.coda
    return Meter(flops_per_token(params, layers * length * c.heads * c.head_dim), peak(device))


def load_looped(config: LoopedConfig, checkpoint: Checkpoint, device="cpu") -> LoopedDecoder:
    """The model :func:`train_looped` finished at ``checkpoint``, on ``device``."""
    model = LoopedDecoder(config).to(device)
    checkpoint.load_weights(model, device)
    return model.eval()
