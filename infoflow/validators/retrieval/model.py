"""Many small pre-LN transformers with a readout token, trained at once.

Weights are stacked on a leading member axis ``m`` (and a layer axis ``l``): ``W_QKV`` has
shape [l, m, E, 3 * H * w]. Members of one ensemble share the sequence length; they differ
in seed, embedding width E, heads per layer, layer count and positional encoding. The
stack is as wide as its widest member (E channels, H head slots of width w); each member
uses the first E_m channels, the first h slots of a layer with n = E_m / h of their w
dimensions, and its own layers. Everything else is masked, on the weights (not the larger
activations): a masked channel, head or layer adds nothing, so a member computes what a
transformer of its own size would. Attention runs
through ``scaled_dot_product_attention`` with members folded into the batch. Only the
readout token's final state is read: the last layer computes its query, attention output
and MLP alone (keys and values of every token).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

LN_EPS = 1e-5  # LayerNorm's epsilon


@dataclass(frozen=True)
class Member:
    """One model: heads per layer (its layer count is their number), width E, PE, seed, and
    the hidden width of its MLPs (None: 4 E)."""

    heads: tuple[int, ...]
    positional_encoding: bool
    seed: int
    embed_dim: int = 32
    mlp_width: int | None = None

    @property
    def layers(self) -> int:
        return len(self.heads)

    @property
    def hidden(self) -> int:
        """The MLPs' hidden width."""
        return self.mlp_width or 4 * self.embed_dim

    def decoder_parameters(self) -> int:
        """The parameters of its MLPs: the part of the model whose size the cost law says
        must grow as eps^-alpha (the attention layout is fixed by the architecture)."""
        return self.layers * (2 * self.embed_dim * self.hidden + self.hidden + self.embed_dim)

    def parameters(self, seq_len: int, input_dim: int, output_dim: int) -> int:
        """All its parameters: embeddings, attention, layer norms, MLPs and the output."""
        e = self.embed_dim
        attention = sum(4 * e * (e // h) * h for h in self.heads)
        norms = (2 * self.layers + 1) * 2 * e
        embed = input_dim * e + e + e + (seq_len + 1) * e * self.positional_encoding
        return embed + attention + norms + self.decoder_parameters() + e * output_dim + output_dim

    def head_width(self, layer: int) -> int:
        """n = E / h for the layer (rounded down)."""
        return self.embed_dim // self.heads[layer]


def stack_size(members: list[Member]) -> tuple[int, int, int, int]:
    """The stack's layers, width E, head slots and slot width: the largest of any member."""
    layers = max(member.layers for member in members)
    embed_dim = max(member.embed_dim for member in members)
    heads = max(max(member.heads) for member in members)
    width = max(m.head_width(layer) for m in members for layer in range(m.layers))
    return layers, embed_dim, heads, width


#: The axis the members lie on, for each parameter of the stack (the layer axis comes first
#: in the per-layer ones).
MEMBER_AXIS = {"ln1": 1, "W_QKV": 1, "W_O": 1, "ln2": 1, "W_1": 1, "b_1": 1, "W_2": 1, "b_2": 1}


def parameter_shapes(
    members: list[Member], seq_len: int, input_dim: int, output_dim: int
) -> dict[str, tuple[int, ...]]:
    """Every parameter of the stack by name, with its shape (layer norms: gain and bias)."""
    m, (L, e, h, w) = len(members), stack_size(members)
    f = max(member.hidden for member in members)
    return {
        "W_in": (m, input_dim, e),
        "b_in": (m, e),
        "readout": (m, e),
        "W_pos": (m, seq_len + 1, e),
        "ln1": (L, m, 2, e),
        "W_QKV": (L, m, e, 3 * h * w),
        "W_O": (L, m, h * w, e),
        "ln2": (L, m, 2, e),
        "W_1": (L, m, e, f),
        "b_1": (L, m, f),
        "W_2": (L, m, f, e),
        "b_2": (L, m, e),
        "ln_f": (m, 2, e),
        "W_out": (m, e, output_dim),
        "b_out": (m, output_dim),
    }


class EnsembleTransformer(nn.Module):
    """``members`` pre-LN transformers on sequences of ``seq_len`` tokens of width
    ``input_dim``, each read out at an extra trainable token."""

    def __init__(self, members: list[Member], seq_len: int, input_dim: int, output_dim: int):
        super().__init__()
        self.members = members
        m = len(members)
        L, e, h, w = stack_size(members)
        self.layers, self.embed_dim, self.heads, self.head_width = L, e, h, w
        f = max(member.hidden for member in members)
        for name, shape in parameter_shapes(members, seq_len, input_dim, output_dim).items():
            init = torch.ones if name.startswith("ln") else torch.empty
            setattr(self, name, nn.Parameter(init(shape)))

        channels, hidden = torch.zeros(m, e), torch.zeros(m, f)
        head_dims, layer_mask = torch.zeros(L, m, h, w), torch.zeros(L, m)
        q_scale = torch.ones(L, m)
        for i, member in enumerate(members):
            channels[i, : member.embed_dim] = 1
            hidden[i, : member.hidden] = 1
            for layer, count in enumerate(member.heads):
                n = member.head_width(layer)
                head_dims[layer, i, :count, :n] = 1
                layer_mask[layer, i] = 1
                q_scale[layer, i] = math.sqrt(w / n)  # SDPA scales by 1/sqrt(w); we want n
        self.register_buffer("channels", channels)
        self.register_buffer("hidden", hidden)
        self.register_buffer("head_dims", head_dims)
        self.register_buffer("layer_mask", layer_mask)
        self.register_buffer("q_scale", q_scale)
        pe = torch.tensor([float(member.positional_encoding) for member in members])
        self.register_buffer("pe_mask", pe)
        self._init_weights()

    def _init_weights(self) -> None:
        """Each member drawn from its own seed in its own shapes (N(0, 0.02), the output
        projections scaled by 1/sqrt(2 L)), the rest of the stack zero: a member starts the
        same whatever it is stacked with."""
        h, w, e = self.heads, self.head_width, self.embed_dim
        with torch.no_grad():
            for param in self.parameters():
                param.zero_()
            for norm in (self.ln1, self.ln2, self.ln_f):
                norm[..., 0, :] = 1
            for i, member in enumerate(self.members):
                g = torch.Generator().manual_seed(member.seed)
                em, fm = member.embed_dim, member.hidden
                out_std = 0.02 / math.sqrt(2 * member.layers)

                def draw(*shape: int, std: float = 0.02, g=g) -> Tensor:
                    return torch.randn(shape, generator=g) * std

                self.W_in[i, :, :em] = draw(self.W_in.shape[1], em)
                self.readout[i, :em] = draw(em)
                self.W_pos[i, :, :em] = draw(self.W_pos.shape[1], em)
                self.W_out[i, :em] = draw(em, self.W_out.shape[-1])
                for layer, heads in enumerate(member.heads):
                    n = member.head_width(layer)
                    self.W_QKV[layer, i].view(e, 3, h, w)[:em, :, :heads, :n] = draw(
                        em, 3, heads, n
                    )
                    self.W_O[layer, i].view(h, w, e)[:heads, :n, :em] = draw(
                        heads, n, em, std=out_std
                    )
                    self.W_1[layer, i, :em, :fm] = draw(em, fm)
                    self.W_2[layer, i, :fm, :em] = draw(fm, em, std=out_std)

    def member_axes(self) -> list[tuple[nn.Parameter, int]]:
        """Every parameter with the axis its members lie on (for
        :class:`~infoflow.validators.ensemble.MemberAdamW`)."""
        return [(param, MEMBER_AXIS.get(name, 0)) for name, param in self.named_parameters()]

    def forward(self, x: Tensor, return_attention: bool = False):
        """x: [batch, T, input_dim] (shared by every member) -> [members, batch, output_dim].

        With ``return_attention``, also the first layer's attention of the readout token:
        [members, batch, heads, T + 1] (computed explicitly, for analysis).

        The masks act on the weights, not on the activations (weights are hundreds of times
        smaller): every weight and bias that writes into the residual stream is masked to the
        member's channels (and its layers), so the stream stays zero on the others, and the
        LayerNorms, whose gain and bias are masked too, keep it so."""
        m, b = len(self.members), x.shape[0]
        channels = self.channels  # [m, e]
        c = channels[:, None]  # [m, 1, e]
        h = torch.einsum("btd,mde->mbte", x, self.W_in * c) + (self.b_in * channels)[:, None, None]
        readout = (self.readout * channels)[:, None, None].expand(m, b, 1, -1)  # [m, b, 1, e]
        h = torch.cat([h, readout], dim=2)  # [m, b, t + 1, e]
        h = h + (self.pe_mask[:, None, None] * self.W_pos * c)[:, None]
        attention, units = None, self.hidden  # [m, f]: each member's MLP units
        for layer in range(self.layers):
            own = self.layer_mask[layer][:, None] * channels  # [m, e]: what the layer may write
            writes = own[:, None]  # [m, 1, e]
            last = layer == self.layers - 1  # only the readout's state is read after it
            a, probs = self._attention(
                self._norm(h, self.ln1[layer]), layer, writes, return_attention, last
            )
            attention = probs if attention is None else attention
            h = (h[:, :, -1:] if last else h) + a  # [m, b, s, e], s = t + 1 (1 in the last)
            z = self._norm(h, self.ln2[layer])
            z = torch.einsum("mbse,mef->mbsf", z, self.W_1[layer] * units[:, None])
            z = F.relu(z + (self.b_1[layer] * units)[:, None, None])  # [m, b, s, f]
            z = torch.einsum("mbsf,mfe->mbse", z, self.W_2[layer] * writes)
            h = h + z + (self.b_2[layer] * own)[:, None, None]  # [m, b, s, e]
        out = self._norm(h, self.ln_f)[:, :, 0]  # the readout: [m, b, e]
        y = torch.einsum("mbe,meo->mbo", out, self.W_out) + self.b_out[:, None]  # [m, b, o]
        return (y, attention) if return_attention else y

    def _attention(
        self, z: Tensor, layer: int, writes: Tensor, want_probs: bool, readout_only: bool
    ):
        """The layer's attention on z ([m, b, s, e]), written through ``writes``: each member's
        heads read and write only their own dimensions (v is zero on the others, and so is
        what attention returns there). ``readout_only``: the readout token's query alone
        ([m, b, 1, e] out), all that the last layer needs; the readout is the last token
        (:meth:`forward` appends it)."""
        m, b, s, _ = z.shape
        h, w = self.heads, self.head_width
        dims = self.head_dims[layer].reshape(m, 1, h * w)
        scaled = dims * self.q_scale[layer][:, None, None]
        qkv = torch.einsum(
            "mbse,mef->mbsf", z, self.W_QKV[layer] * torch.cat([scaled, dims, dims], -1)
        )
        q, k, v = (part.reshape(m * b, s, h, w).transpose(1, 2) for part in qkv.split(h * w, -1))
        if readout_only:
            q = q[:, :, -1:]
        queries = q.shape[2]  # q: [m b, h, queries, w]; k, v: [m b, h, s, w]
        probs = None
        if want_probs:
            weights = (q @ k.transpose(-1, -2) / math.sqrt(w)).softmax(-1)
            out = weights @ v
            probs = weights.reshape(m, b, h, queries, s)[:, :, :, -1]  # readout's: [m, b, h, s]
        else:
            out = F.scaled_dot_product_attention(q, k, v)
        out = out.transpose(1, 2).reshape(m, b, queries, h * w)
        mixed = torch.einsum("mbsf,mfe->mbse", out, self.W_O[layer] * writes)
        return mixed, probs  # [m, b, s, e]

    def _norm(self, x: Tensor, gain_bias: Tensor) -> Tensor:
        """LayerNorm over each member's own channels, with its gain and bias ([m, 2, e]);
        x is [m, b, s, e], zero on the other channels, and so is what it returns."""
        c = self.channels[:, None, None]
        count = c.sum(-1, keepdim=True)
        mean = x.sum(-1, keepdim=True) / count
        centred = (x - mean) * c
        variance = (centred**2).sum(-1, keepdim=True) / count
        masked = gain_bias * self.channels[:, None]
        gain, bias = masked[:, None, None, 0], masked[:, None, None, 1]
        return centred * torch.rsqrt(variance + LN_EPS) * gain + bias
