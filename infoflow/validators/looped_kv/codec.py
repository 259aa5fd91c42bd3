"""Cross-loop K/V compression of a looped model: axis spectra, the LLA codec (per head and
2D), the controls at matched bytes, and a latent-store decode path.

Core-slot K (or V) of a batch are one tensor [R, T, B, H, L, d] (layer, loop, batch, head,
position, head dim). A *fold* says which axes become the vector a codec compresses:

- ``loop`` (LLA per head): one vector of T*d per (token, layer, head);
- ``loop_head`` (LLA-2D): one vector of T*H*d per (token, layer);
- ``head`` (MLA-style, a control): one vector of H*d per (token, layer, loop);
- ``layer`` (spectrum only): one vector of R*d per (token, loop, head).

A codec keeps c = (x - mu) W per vector (W: the top right singular vectors of the centred
calibration vectors) and rebuilds x_hat = c W^T + mu on read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from infoflow.validators.looped_kv.model import (
    ExactAttention,
    LoopedConfig,
    LoopedDecoder,
    Slot,
    expand_kv,
)

FOLDS = ("loop", "loop_head", "head", "layer")


def core_kv(record: ExactAttention, config: LoopedConfig) -> tuple[Tensor, Tensor]:
    """K and V of every core slot a recording forward saw: two [R, T, B, H, L, d] tensors."""
    ks, vs = [], []
    for r in range(config.core):
        ks.append(torch.stack([record.kv[("core", t, r)][0] for t in range(config.loops)]))
        vs.append(torch.stack([record.kv[("core", t, r)][1] for t in range(config.loops)]))
    return torch.stack(ks), torch.stack(vs)


def fold(x: Tensor, how: str) -> Tensor:
    """[R, T, B, H, L, d] -> [groups, samples, dim] for the fold ``how``."""
    R, T, B, H, L, d = x.shape
    if how == "loop":  # groups (R, H), samples (B, L), dim (T, d)
        return x.permute(0, 3, 2, 4, 1, 5).reshape(R * H, B * L, T * d)
    if how == "loop_head":  # groups R, dim (T, H, d)
        return x.permute(0, 2, 4, 1, 3, 5).reshape(R, B * L, T * H * d)
    if how == "head":  # groups (R, T), dim (H, d)
        return x.permute(0, 1, 2, 4, 3, 5).reshape(R * T, B * L, H * d)
    if how == "layer":  # groups (T, H), dim (R, d)
        return x.permute(1, 3, 2, 4, 0, 5).reshape(T * H, B * L, R * d)
    raise ValueError(f"fold {how!r}: not one of {FOLDS}")


def unfold(x: Tensor, how: str, shape: torch.Size) -> Tensor:
    """The inverse of :func:`fold`."""
    R, T, B, H, L, d = shape
    if how == "loop":
        return x.reshape(R, H, B, L, T, d).permute(0, 4, 2, 1, 3, 5)
    if how == "loop_head":
        return x.reshape(R, B, L, T, H, d).permute(0, 3, 1, 4, 2, 5)
    if how == "head":
        return x.reshape(R, T, B, L, H, d).permute(0, 1, 2, 4, 3, 5)
    if how == "layer":
        return x.reshape(T, H, B, L, R, d).permute(4, 0, 2, 1, 3, 5)
    raise ValueError(how)


@dataclass
class SVDCodec:
    """Per group: the mean mu [G, dim] and the basis W [G, dim, rank] (centred SVD)."""

    how: str
    mu: Tensor
    basis: Tensor

    @classmethod
    def fit(cls, x: Tensor, how: str, rank: int) -> SVDCodec:
        return cls.full(x, how).truncated(rank)

    @classmethod
    def full(cls, x: Tensor, how: str) -> SVDCodec:
        """Every direction of the centred SVD, in order of energy: one decomposition that
        :meth:`truncated` cuts to each rank of a grid."""
        folded = fold(x, how).double()
        mu = folded.mean(1)
        _, _, vh = torch.linalg.svd(folded - mu[:, None], full_matrices=False)
        return cls(how, mu.float(), vh.transpose(1, 2).float())

    def truncated(self, rank: int) -> SVDCodec:
        """The top ``rank`` directions (padded with zero directions when there were fewer
        samples than the rank)."""
        basis = self.basis[..., :rank]
        if basis.shape[-1] < rank:
            basis = torch.cat(
                [basis, basis.new_zeros(*basis.shape[:2], rank - basis.shape[-1])], -1
            )
        return SVDCodec(self.how, self.mu, basis)

    @property
    def rank(self) -> int:
        return self.basis.shape[-1]

    def encode(self, folded: Tensor) -> Tensor:
        return (folded - self.mu[:, None]) @ self.basis

    def decode(self, latent: Tensor) -> Tensor:
        return latent @ self.basis.transpose(1, 2) + self.mu[:, None]

    def reconstruct(self, x: Tensor, stored: torch.dtype | None = None) -> Tensor:
        """x through the codec, its latent kept in the cache's dtype ``stored`` (None: as
        computed)."""
        latent = self.encode(fold(x, self.how))
        if stored is not None:
            latent = as_stored(latent, stored)
        return unfold(self.decode(latent), self.how, x.shape)


def as_stored(x: Tensor, dtype: torch.dtype) -> Tensor:
    """``x`` rounded to the cache's dtype and read back (the identity for its own dtype)."""
    return x.to(dtype).to(x.dtype)


def energy_captured(x: Tensor, how: str) -> Tensor:
    """Fraction of the centred energy the top-r directions capture, r = 1..dim (mean over
    groups): the axis spectrum of the fold ``how``."""
    folded = fold(x, how).double()
    s = torch.linalg.svdvals(folded - folded.mean(1, keepdim=True))
    energy = (s**2).cumsum(-1) / (s**2).sum(-1, keepdim=True)
    return energy.mean(0).float()


#: Bits of the per-vector scale and offset of a quantized cache (two fp16 numbers).
SCALE_BITS = 32


def matched_bits(cache_bits: int, rho: float, dim: int) -> int:
    """Bits per number of a cache quantized to 1/rho of ``cache_bits`` per number, the
    per-vector scale and offset (SCALE_BITS per ``dim`` numbers) counted: 0 when nothing is
    left for the numbers."""
    return max(0, math.floor(cache_bits / rho - SCALE_BITS / dim))


def quantize(x: Tensor, bits: int) -> Tensor:
    """Uniform quantization of each d-vector to 2^bits levels between its min and max, the
    scale and offset kept per vector (they are counted by :func:`matched_bits`)."""
    low, high = x.amin(-1, keepdim=True), x.amax(-1, keepdim=True)
    scale = (high - low).clamp_min(1e-12) / (2**bits - 1)
    return torch.round((x - low) / scale) * scale + low


class Reconstructed:
    """Attention where every core slot reads the *other* positions' K/V from ``k_hat`` and
    ``v_hat`` ([R, T, B, H, L, d]) and its own position's live K/V, as a decoder whose
    cache holds the compressed past does; prelude and coda are exact. Records outputs."""

    def __init__(self, k_hat: Tensor, v_hat: Tensor):
        self.k_hat, self.v_hat = k_hat, v_hat
        self.outputs: dict[Slot, Tensor] = {}

    def attend(self, slot: Slot, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        if slot[0] != "core":
            heads = q.shape[1]  # grouped-query slots read their KV heads' K/V
            out = torch.nn.functional.scaled_dot_product_attention(
                q, expand_kv(k, heads), expand_kv(v, heads), is_causal=True
            )
        else:
            _, t, r = slot
            out = mixed_attention(q, k, v, self.k_hat[r, t], self.v_hat[r, t])
        self.outputs[slot] = out
        return out


def mixed_attention(q: Tensor, k: Tensor, v: Tensor, k_past: Tensor, v_past: Tensor) -> Tensor:
    """Causal attention with the diagonal (each position's own key and value) taken from
    the live k, v and every earlier position from k_past, v_past."""
    heads, n, d = q.shape[1], q.shape[-2], q.shape[-1]
    k, v, k_past, v_past = (expand_kv(x, heads) for x in (k, v, k_past, v_past))
    scores = q @ k_past.transpose(-1, -2) / d**0.5
    own = (q * k).sum(-1) / d**0.5
    scores = torch.diagonal_scatter(scores, own, dim1=-2, dim2=-1)
    causal = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
    p = scores.masked_fill(~causal, float("-inf")).softmax(-1)
    diagonal = torch.diagonal(p, dim1=-2, dim2=-1)[..., None]
    return p @ v_past + diagonal * (v - v_past)


# ---- the latent store: decode keeping only latents -------------------------------------


class LatentStore:
    """A decode-time cache that keeps prelude and coda K/V in full and, for the core block,
    only the latents of one codec for K and one for V (``None``: the full per-loop cache).
    K/V are rebuilt from the latents on every read. Buffers hold ``capacity`` tokens."""

    def __init__(
        self,
        model: LoopedDecoder,
        batch: int,
        capacity: int,
        codecs: tuple[SVDCodec, SVDCodec] | None,
        dtype=torch.float32,
    ):
        c = model.config
        self.config, self.codecs, self.length = c, codecs, 0
        device = next(model.parameters()).device  # the buffers live beside the model

        def full():
            return torch.zeros(batch, c.kv, capacity, c.head_dim, dtype=dtype, device=device)

        self.full = {
            slot: (full(), full()) for slot in c.slots() if slot[0] != "core" or codecs is None
        }
        self.latent = None
        if codecs is not None:
            groups = c.kv if codecs[0].how == "loop" else 1
            self.latent = [
                torch.zeros(c.core, batch, groups, capacity, codec.rank, dtype=dtype, device=device)
                for codec in codecs
            ]
        self.pending: dict[Slot, tuple[Tensor, Tensor]] = {}

    def nbytes(self) -> int:
        """Bytes of what is stored for the tokens so far (the filled part of the buffers)."""
        n = self.length
        total = sum(t[:, :, :n].nbytes for pair in self.full.values() for t in pair)
        if self.latent is not None:
            total += sum(t[:, :, :, :n].nbytes for t in self.latent)
        return total

    def _read(self, slot: Slot) -> tuple[Tensor, Tensor]:
        n = self.length
        if slot in self.full:
            k, v = self.full[slot]
            return k[:, :, :n], v[:, :, :n]
        _, t, r = slot
        return tuple(self._rebuild(i, t, r) for i in range(2))

    def _rebuild(self, which: int, t: int, r: int) -> Tensor:
        """K (which = 0) or V of core layer r at loop t for the stored tokens [B, H, n, d]."""
        c, codec = self.config, self.codecs[which]
        latent = self.latent[which][r, :, :, : self.length]  # [B, G, n, rank], stored dtype
        latent = latent.to(codec.basis.dtype)  # read back for the computation
        d, H = c.head_dim, c.kv
        if codec.how == "loop":
            basis = codec.basis.view(c.core, H, c.loops, d, -1)[r, :, t]  # [H, d, rank]
            mu = codec.mu.view(c.core, H, c.loops, d)[r, :, t]  # [H, d]
            return latent @ basis.transpose(1, 2) + mu[:, None]
        basis = codec.basis.view(c.core, c.loops, H * d, -1)[r, t]  # [H d, rank]
        mu = codec.mu.view(c.core, c.loops, H * d)[r, t]
        x = latent[:, 0] @ basis.T + mu  # [B, n, H d]
        return x.view(x.shape[0], -1, H, d).transpose(1, 2)

    def attend(self, slot: Slot, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        """One new token (q, k, v: [B, H, 1, d]) against the stored ones and itself."""
        k_past, v_past = self._read(slot)
        keys = expand_kv(torch.cat([k_past.to(k.dtype), k], 2), q.shape[1])
        values = expand_kv(torch.cat([v_past.to(v.dtype), v], 2), q.shape[1])
        out = torch.nn.functional.scaled_dot_product_attention(q, keys, values)
        self.pending[slot] = (k, v)
        return out

    def commit(self) -> None:
        """Store the token whose slots just ran: full K/V, or its encoded trajectories."""
        n = self.length
        for slot, (k, v) in self.pending.items():
            if slot in self.full:
                self.full[slot][0][:, :, n] = k[:, :, 0]
                self.full[slot][1][:, :, n] = v[:, :, 0]
        if self.latent is not None:
            c = self.config
            for which, codec in enumerate(self.codecs):
                x = torch.stack(
                    [
                        torch.stack([self.pending[("core", t, r)][which] for t in range(c.loops)])
                        for r in range(c.core)
                    ]
                )
                latent = codec.encode(fold(x, codec.how))  # [groups, B, rank]
                groups = c.kv if codec.how == "loop" else 1
                latent = latent.view(c.core, groups, x.shape[2], -1).transpose(1, 2)
                self.latent[which][:, :, :, n] = latent  # [R, B, groups, rank]
        self.pending.clear()
        self.length += 1


@torch.no_grad()
def decode(model: LoopedDecoder, tokens: Tensor, store: LatentStore) -> Tensor:
    """Run ``tokens`` [B, n] one at a time through ``store``; logits [B, n, vocab]."""
    logits = []
    for i in range(tokens.shape[1]):
        logits.append(model(tokens[:, i : i + 1], store, offset=i))
        store.commit()
    return torch.cat(logits, 1)


# ---- distillation ----------------------------------------------------------------------


class LearnedCodec(torch.nn.Module):
    """An SVD codec whose maps are trainable: W_down and W_up start as the SVD basis (then
    differ), mu as the calibration mean."""

    def __init__(self, codec: SVDCodec):
        super().__init__()
        self.how = codec.how
        self.mu = torch.nn.Parameter(codec.mu.clone())
        self.W_down = torch.nn.Parameter(codec.basis.clone())
        self.W_up = torch.nn.Parameter(codec.basis.clone())

    def reconstruct(self, x: Tensor, stored: torch.dtype | None = None) -> Tensor:
        """As :meth:`SVDCodec.reconstruct`, the latent kept in ``stored``."""
        folded = fold(x, self.how)
        latent = (folded - self.mu[:, None]) @ self.W_down
        if stored is not None:
            latent = as_stored(latent, stored)
        return unfold(latent @ self.W_up.transpose(1, 2) + self.mu[:, None], self.how, x.shape)


#: How the refinement weighs its two terms, a reconstruction (the paper names a forward KL to
#: the teacher and an attention-output matching term, not their weights): "relative" divides
#: each by its own value at the SVD start; "raw" adds them as they are, as before 2026-12-08,
#: when the matching term (summed over the core slots) was 36 to 500 times the KL
#: (docs/results/2026-12-08-looped-kv-refinement-preregistered.md).
DISTILL_WEIGHTING = "relative"
WEIGHTINGS = ("relative", "raw")
#: The least a term's start is taken to be: a codec that starts lossless (a KL of 0, or a
#: float32 rounding below it) must not scale its loss by 1e38.
START_FLOOR = 1e-12


def refinement_loss(
    kl: Tensor, error: Tensor, start: tuple[Tensor, Tensor], match: float, weighting: str
) -> Tensor:
    """The refinement's objective from its KL and attention-output error, ``start`` holding
    their values at the SVD start: each divided by its start ("relative"), or as they are."""
    if weighting == "relative":
        return kl / start[0] + match * error / start[1]
    return kl + match * error


def distill(
    model: LoopedDecoder,
    codecs: tuple[SVDCodec, SVDCodec],
    tokens: Tensor,
    steps: int,
    lr: float = 1e-3,
    match: float = 1.0,
    weighting: str = DISTILL_WEIGHTING,
) -> tuple[LearnedCodec, ...]:
    """Refine a K and a V codec on ``tokens`` with the model frozen: the forward KL from the
    teacher's next-token distribution plus ``match`` times the relative attention-output
    error summed over the core slots, each weighed as ``weighting`` says."""
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {WEIGHTINGS}, not {weighting!r}")
    model.requires_grad_(False)
    teacher = ExactAttention(record=True)
    with torch.no_grad():
        target = model(tokens, teacher).log_softmax(-1)
    k, v = core_kv(teacher, model.config)
    learned = tuple(LearnedCodec(codec) for codec in codecs)
    optimizer = torch.optim.Adam([p for c in learned for p in c.parameters()], lr=lr)
    start = None
    for _ in range(steps):
        student = Reconstructed(learned[0].reconstruct(k), learned[1].reconstruct(v))
        logits = model(tokens, student).log_softmax(-1)
        kl = torch.nn.functional.kl_div(logits, target, log_target=True, reduction="none")
        kl = kl.sum(-1).mean()
        error = sum(
            ((out - teacher.outputs[slot]) ** 2).sum() / (teacher.outputs[slot] ** 2).sum()
            for slot, out in student.outputs.items()
            if slot[0] == "core"
        )
        if start is None:  # the terms at the SVD start: what "relative" divides by
            start = (kl.detach().clamp_min(START_FLOOR), error.detach().clamp_min(START_FLOOR))
        loss = refinement_loss(kl, error, start, match, weighting)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return tuple(c.requires_grad_(False) for c in learned)
