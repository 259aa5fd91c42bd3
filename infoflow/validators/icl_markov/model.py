"""Many small GPTs of one shape, trained at once on next-state prediction.

Axes: ``m`` members, ``b`` sequences of a batch, ``t`` positions (``s`` the positions
attended to), ``d`` d_model, ``f`` mlp_width, ``h`` heads, ``C`` states, ``l`` layers. Weights
are stacked on a leading member axis (and a layer axis): ``W_QKV`` has shape
[l, m, d, 3 d]. Unlike :mod:`~infoflow.validators.retrieval.model`, every member has the same
shape and reads its own batch (the members of a K sweep see different chains). Blocks are
pre-LN (attention, then a GELU MLP), positions are learned and absolute, attention is causal
through ``scaled_dot_product_attention`` with members folded into the batch.

A layer's attention can also be a fixed pattern with learned values and output (the clock
models of :mod:`~infoflow.validators.icl_markov.clocks.data`, after the paper's minimal model):
``previous`` attends to the previous position only (a hard-wired previous-token head, so the
layer outputs the current state together with the previous one), ``self`` to the current
position only (it cannot see the previous token), ``uniform`` to every earlier position
equally (it can pool the context but not match the current state).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

#: A layer's attention: learned (``causal``) or one of the fixed patterns.
ATTENTION = ("causal", "previous", "self", "uniform")

#: Parameters with a layer axis before the member axis.
_PER_LAYER = {"ln1", "W_QKV", "W_O", "ln2", "W_1", "b_1", "W_2", "b_2"}


def _member_axis(name: str) -> int:
    """The axis a parameter's members lie on: 1 for a per-layer one ([layers, members, ...]),
    else 0."""
    return 1 if name in _PER_LAYER else 0


class StackedGPT(nn.Module):
    """``members`` decoders over ``states`` tokens and sequences of up to ``context_len``;
    member i is initialised from ``seeds[i]``, whatever it is stacked with."""

    def __init__(
        self,
        seeds: list[int],
        states: int,
        context_len: int,
        layers: int,
        d_model: int,
        heads: int,
        mlp_width: int,
        attention: tuple[str, ...] | None = None,
    ):
        super().__init__()
        self.seeds, self.heads = list(seeds), heads
        self.attention = tuple(attention or ("causal",) * layers)
        if len(self.attention) != layers or set(self.attention) - set(ATTENTION):
            raise ValueError(f"attention needs one of {ATTENTION} per layer: {self.attention}")
        m, L, d, f = len(seeds), layers, d_model, mlp_width
        self.W_E = nn.Parameter(torch.empty(m, states, d))
        self.W_pos = nn.Parameter(torch.empty(m, context_len, d))
        self.ln1 = nn.Parameter(torch.empty(L, m, 2, d))  # gain, bias
        self.W_QKV = nn.Parameter(torch.empty(L, m, d, 3 * d))
        self.W_O = nn.Parameter(torch.empty(L, m, d, d))
        self.ln2 = nn.Parameter(torch.empty(L, m, 2, d))
        self.W_1 = nn.Parameter(torch.empty(L, m, d, f))
        self.b_1 = nn.Parameter(torch.empty(L, m, f))
        self.W_2 = nn.Parameter(torch.empty(L, m, f, d))
        self.b_2 = nn.Parameter(torch.empty(L, m, d))
        self.ln_f = nn.Parameter(torch.empty(m, 2, d))
        self.W_U = nn.Parameter(torch.empty(m, d, states))
        self.b_U = nn.Parameter(torch.empty(m, states))
        self._init_weights()

    def _init_weights(self) -> None:
        """N(0, 0.02) per member from its own seed, output projections scaled by
        1/sqrt(2 layers) (GPT-2); norms start at gain 1, bias 0; biases at 0."""
        layers = self.W_QKV.shape[0]
        with torch.no_grad():
            for i, seed in enumerate(self.seeds):
                g = torch.Generator().manual_seed(seed)
                for name, param in self.named_parameters():
                    member = param.select(_member_axis(name), i)
                    if name.startswith("W_"):
                        std = 0.02 / math.sqrt(2 * layers) if name in ("W_O", "W_2") else 0.02
                        member.copy_(torch.randn(member.shape, generator=g) * std)
                    elif name.startswith("ln"):
                        member[..., 0, :] = 1
                        member[..., 1, :] = 0
                    else:
                        member.zero_()

    def parameter_groups(self, weight_decay: float, decay: str = "matrices") -> list[dict]:
        """Weight decay on the matrices, none on norms and biases (nanoGPT's split), or on
        every parameter (``decay="all"``: Park et al.'s AdamW over model.parameters())."""
        prefix = "W_" if decay == "matrices" else ""
        decayed = [p for name, p in self.named_parameters() if name.startswith(prefix)]
        rest = [p for name, p in self.named_parameters() if not name.startswith(prefix)]
        groups = [
            {"params": decayed, "weight_decay": weight_decay},
            {"params": rest, "weight_decay": 0.0},
        ]
        return [group for group in groups if group["params"]]  # "all" leaves the second empty

    def clip_gradients(self, max_norm: float) -> Tensor:
        """Scale each member's gradient to global norm at most ``max_norm``, as
        ``torch.nn.utils.clip_grad_norm_`` does for one model (factor max_norm / (norm +
        1e-6), capped at 1); the members' norms [members] before clipping."""
        squares = [
            p.grad.float().square().sum([d for d in range(p.dim()) if d != _member_axis(name)])
            for name, p in self.named_parameters()
            if p.grad is not None
        ]
        norms = torch.stack(squares).sum(0).sqrt()
        factor = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        for name, p in self.named_parameters():
            if p.grad is not None:
                shape = [1] * p.dim()
                shape[_member_axis(name)] = -1
                p.grad.mul_(factor.view(shape).to(p.grad.dtype))
        return norms

    def forward(self, x: Tensor) -> Tensor:
        """x: states [members, batch, t] (t <= context_len) -> logits [members, batch, t, C]."""
        m, _, t = x.shape
        members = torch.arange(m, device=x.device)[:, None, None]  # [m, 1, 1]
        h = self.W_E[members, x] + self.W_pos[:, None, :t]  # [m, b, t, d]
        for layer in range(self.W_QKV.shape[0]):
            h = h + self._attention(_norm(h, self.ln1[layer]), layer)  # [m, b, t, d]
            z = _norm(h, self.ln2[layer])  # [m, b, t, d]
            z = torch.einsum("mbtd,mdf->mbtf", z, self.W_1[layer])  # [m, b, t, f]
            z = F.gelu(z + self.b_1[layer][:, None, None])  # [m, b, t, f]
            z = torch.einsum("mbtf,mfd->mbtd", z, self.W_2[layer])  # [m, b, t, d]
            h = h + z + self.b_2[layer][:, None, None]  # [m, b, t, d]
        h = _norm(h, self.ln_f)  # [m, b, t, d]
        logits = torch.einsum("mbtd,mdc->mbtc", h, self.W_U)  # [m, b, t, C]
        return logits + self.b_U[:, None, None]

    def _attention(self, z: Tensor, layer: int) -> Tensor:
        """Layer ``layer``'s attention on z [m, b, t, d] -> [m, b, t, d]: learned and causal
        (SDPA, members folded into the batch), or a fixed pattern with learned values."""
        m, b, t, d = z.shape
        if self.attention[layer] != "causal":
            v = torch.einsum("mbtd,mde->mbte", z, self.W_QKV[layer][..., 2 * d :])  # [m, b, t, d]
            pattern = fixed_pattern(self.attention[layer], t, z)  # [t, s]
            out = torch.einsum("ts,mbsd->mbtd", pattern, v)  # [m, b, t, d]
            return torch.einsum("mbtd,mde->mbte", out, self.W_O[layer])  # [m, b, t, d]
        qkv = torch.einsum("mbtd,mde->mbte", z, self.W_QKV[layer])  # [m, b, t, 3 d]
        q, k, v = (
            part.reshape(m * b, t, self.heads, d // self.heads).transpose(1, 2)  # [m b, h, t, d/h]
            for part in qkv.split(d, dim=-1)
        )
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # [m b, h, t, d/h]
        out = out.transpose(1, 2).reshape(m, b, t, d)  # [m, b, t, d]
        return torch.einsum("mbtd,mde->mbte", out, self.W_O[layer])  # [m, b, t, d]


#: Test sequences on which layer 1's attention to the previous token is measured.
PREVIOUS_SEQUENCES = 64


def previous_token_attention(model: StackedGPT, x: Tensor) -> Tensor:
    """How much layer 1 attends to the previous token: per member, the largest over its
    heads of the mean attention weight from position t to t - 1 (t >= 1) on states x
    [members, batch, t] -> [members]. A fixed pattern's is exact: 1 for ``previous``, 0 for
    ``self``, the mean of 1 / (t + 1) for ``uniform``."""
    m, _, t = x.shape
    if model.attention[0] != "causal":
        pattern = fixed_pattern(model.attention[0], t, model.W_E)
        return pattern.diagonal(-1).mean().expand(m)
    members = torch.arange(m, device=x.device)[:, None, None]
    h = model.W_E[members, x] + model.W_pos[:, None, :t]  # [m, b, t, d]
    z = _norm(h, model.ln1[0])
    d = z.shape[-1]
    q, k = (
        torch.einsum("mbtd,mde->mbte", z, w).unflatten(-1, (model.heads, -1)).transpose(2, 3)
        for w in (model.W_QKV[0][..., :d], model.W_QKV[0][..., d : 2 * d])
    )  # [m, b, h, t, d/h]
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])  # [m, b, h, t, s]
    causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
    weights = scores.masked_fill(~causal, float("-inf")).softmax(-1)
    previous = weights.diagonal(-1, dim1=-2, dim2=-1)  # [m, b, h, t - 1]
    return previous.mean((1, 3)).amax(-1)


def fixed_pattern(kind: str, t: int, like: Tensor) -> Tensor:
    """The [t, t] attention weights of a fixed pattern (rows: queries, causal)."""
    eye = torch.eye(t, dtype=like.dtype, device=like.device)
    if kind == "self":
        return eye
    if kind == "previous":
        pattern = torch.diag(torch.ones(t - 1, dtype=like.dtype, device=like.device), -1)
        pattern[0, 0] = 1  # the first position has no previous one: it reads itself
        return pattern
    causal = torch.ones(t, t, dtype=like.dtype, device=like.device).tril()
    return causal / causal.sum(-1, keepdim=True)


def _norm(x: Tensor, gain_bias: Tensor) -> Tensor:
    """LayerNorm with each member's gain and bias; ``gain_bias`` is [m, 2, d]."""
    gain, bias = gain_bias[:, None, None, 0], gain_bias[:, None, None, 1]  # [m, 1, 1, d]
    return F.layer_norm(x, x.shape[-1:]) * gain + bias
