"""Many small pre-LN transformers with a readout token, trained at once.

Weights are stacked on a leading member axis ``m`` (and a layer axis ``l``), so one forward
pass runs every member: ``W_Q`` etc. have shape [l, m, E, E]. Members of one ensemble share
the embedding width E, the sequence length and the largest layer and head counts; a member
with fewer heads or layers has the rest masked (a masked head adds nothing, a masked layer
leaves the residual stream untouched), and learned positional encoding is switched per
member. Attention runs through ``scaled_dot_product_attention`` with members folded into
the batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclass(frozen=True)
class Member:
    """One model of an ensemble: heads per layer (its layer count is their number), PE, seed."""

    heads: tuple[int, ...]
    positional_encoding: bool
    seed: int

    @property
    def layers(self) -> int:
        return len(self.heads)


class EnsembleTransformer(nn.Module):
    """``members`` pre-LN transformers of width ``embed_dim`` on sequences of ``seq_len``
    tokens of width ``input_dim``, each read out at an extra trainable token."""

    def __init__(
        self,
        members: list[Member],
        embed_dim: int,
        seq_len: int,
        input_dim: int,
        output_dim: int,
        mlp_ratio: int = 4,
    ):
        super().__init__()
        self.members = members
        m, e = len(members), embed_dim
        self.layers = max(member.layers for member in members)
        self.heads = max(max(member.heads) for member in members)
        if e % self.heads:
            raise ValueError(f"embed_dim {e} is not a multiple of {self.heads} heads")
        self.head_dim = e // self.heads
        L, h, f = self.layers, self.heads, mlp_ratio * e
        self.W_in = nn.Parameter(torch.empty(m, input_dim, e))
        self.b_in = nn.Parameter(torch.zeros(m, e))
        self.readout = nn.Parameter(torch.empty(m, e))
        self.W_pos = nn.Parameter(torch.empty(m, seq_len + 1, e))
        self.ln1 = nn.Parameter(torch.ones(L, m, 2, e))  # gain, bias
        self.W_QKV = nn.Parameter(torch.empty(L, m, e, 3 * e))
        self.W_O = nn.Parameter(torch.empty(L, m, e, e))
        self.ln2 = nn.Parameter(torch.ones(L, m, 2, e))
        self.W_1 = nn.Parameter(torch.empty(L, m, e, f))
        self.b_1 = nn.Parameter(torch.zeros(L, m, f))
        self.W_2 = nn.Parameter(torch.empty(L, m, f, e))
        self.b_2 = nn.Parameter(torch.zeros(L, m, e))
        self.ln_f = nn.Parameter(torch.ones(m, 2, e))
        self.W_out = nn.Parameter(torch.empty(m, e, output_dim))
        self.b_out = nn.Parameter(torch.zeros(m, output_dim))
        head_mask = torch.zeros(L, m, h)
        layer_mask = torch.zeros(L, m)
        for i, member in enumerate(members):
            for layer, count in enumerate(member.heads):
                head_mask[layer, i, :count] = 1
                layer_mask[layer, i] = 1
        self.register_buffer("head_mask", head_mask)
        self.register_buffer("layer_mask", layer_mask)
        pe = torch.tensor([float(member.positional_encoding) for member in members])
        self.register_buffer("pe_mask", pe)
        self._init_weights()

    def _init_weights(self) -> None:
        """Each member from its own seed, so a member's start does not depend on the others."""
        with torch.no_grad():
            for norm in (self.ln1, self.ln2):
                norm[..., 1, :] = 0
            self.ln_f[..., 1, :] = 0
            for i, member in enumerate(self.members):
                g = torch.Generator().manual_seed(member.seed)

                def normal(param: Tensor, std: float, index, g=g) -> None:
                    target = param[index]
                    target.copy_(torch.randn(target.shape, generator=g) * std)

                for param in (self.W_in, self.readout, self.W_pos, self.W_out):
                    normal(param, 0.02, i)
                for param in (self.W_QKV, self.W_1):
                    normal(param, 0.02, (slice(None), i))
                for param in (self.W_O, self.W_2):
                    normal(param, 0.02 / math.sqrt(2 * self.layers), (slice(None), i))

    def forward(self, x: Tensor, return_attention: bool = False):
        """x: [batch, T, input_dim] (shared by every member) -> [members, batch, output_dim].

        With ``return_attention``, also the first layer's attention of the readout token:
        [members, batch, heads, T + 1] (computed explicitly, for analysis)."""
        m, b = len(self.members), x.shape[0]
        h = torch.einsum("btd,mde->mbte", x, self.W_in) + self.b_in[:, None, None]
        readout = self.readout[:, None, None].expand(m, b, 1, -1)
        h = torch.cat([h, readout], dim=2)  # [m, b, t + 1, e]
        h = h + self.pe_mask[:, None, None, None] * self.W_pos[:, None]
        attention = None
        for layer in range(self.layers):
            keep = self.layer_mask[layer][:, None, None, None]
            a, probs = self._attention(_norm(h, self.ln1[layer]), layer, return_attention)
            if attention is None and probs is not None:
                attention = probs
            h = h + keep * a
            z = _norm(h, self.ln2[layer])
            z = torch.einsum("mbse,mef->mbsf", z, self.W_1[layer]) + self.b_1[layer][:, None, None]
            z = torch.einsum("mbsf,mfe->mbse", F.relu(z), self.W_2[layer])
            h = h + keep * (z + self.b_2[layer][:, None, None])
        out = _norm(h[:, :, -1], self.ln_f)
        y = torch.einsum("mbe,meo->mbo", out, self.W_out) + self.b_out[:, None]
        return (y, attention) if return_attention else y

    def _attention(self, z: Tensor, layer: int, want_probs: bool):
        m, b, s, e = z.shape
        h, dh = self.heads, self.head_dim
        qkv = torch.einsum("mbse,mef->mbsf", z, self.W_QKV[layer])
        q, k, v = (part.reshape(m * b, s, h, dh).transpose(1, 2) for part in qkv.split(e, dim=-1))
        probs = None
        if want_probs:
            scores = q @ k.transpose(-1, -2) / math.sqrt(dh)
            weights = scores.softmax(-1)
            out = weights @ v
            probs = weights.reshape(m, b, h, s, s)[:, :, :, -1]
        else:
            out = F.scaled_dot_product_attention(q, k, v)
        out = out.reshape(m, b, h, s, dh) * self.head_mask[layer][:, None, :, None, None]
        out = out.transpose(2, 3).reshape(m, b, s, e)
        return torch.einsum("mbse,mef->mbsf", out, self.W_O[layer]), probs


def _norm(x: Tensor, gain_bias: Tensor) -> Tensor:
    """LayerNorm with per-member gain and bias ([m, 2, e]) on x of shape [m, ..., e]."""
    shape = (gain_bias.shape[0],) + (1,) * (x.dim() - 2) + (x.shape[-1],)
    gain, bias = gain_bias[:, 0].reshape(shape), gain_bias[:, 1].reshape(shape)
    return F.layer_norm(x, x.shape[-1:]) * gain + bias
