"""A circuit (:mod:`infoflow.retrieval.circuit`) -> the weights of the validator's own model
(:class:`~.model.EnsembleTransformer`, one member), the second stage of ``infoflow compile``.

The model is pre-LN, so every read of the residual stream passes through a LayerNorm. Three
channels make that harmless: the anchor holds a large constant at every position, so the
norm's scale is nearly the same for every token (sigma0 = anchor sqrt(E - 1) / E); the
balance channel holds minus the sum of all the others, so the norm's mean is the anchor's
alone and its scale moves only by a relative |content|^2 / (2 sigma0^2 E); a channel that is
always zero is the reference every read is taken against. A read of channel c is then
``sigma0 (e_c - e_zero)``, exact up to that second-order error. LayerNorm's bias adds
1 / sqrt(E - 1) to every channel, taking the centring's -mu / sigma0 back out of each, so a
read's two terms are small (in a matrix product, their products with large weights rounded
to NMSE 2e-5 of a float32 sum); a copy only the output reads is written unscaled and the
output applies its scale (:func:`~infoflow.retrieval.circuit.deferred_scales`: a content of
hundreds moves LayerNorm's scale beside float32's anchor), and so is a product of sums.

A circuit that reads the tokens' squared norm (``SQNORM``, in layer 1) writes each token with
its mirror (-x), so the token's channels sum to zero and LayerNorm's variance is exactly
``S^2 + 2 |x|^2 / E`` (S^2 = sigma0^2 + LayerNorm's epsilon): the anchor's read,
``sigma0 / sqrt(S^2 + 2 |x|^2 / E)``, carries |x|^2 at first order. The first LayerNorm's bias
puts 1 more on the ``const`` channel than on the others, and the residual stream leaves it at
zero, so a read of it is exactly 1, and ``read(SQNORM) = E S^2 const - (E S^3 / sigma0)
anchor`` is ``|x|^2`` up to ``1.5 |x|^4 / (E S^2)``. That needs float64 and its own anchor
(:data:`NORM_ANCHOR`): the |x|^2 part is 1 / anchor^2 of the anchor's read, so float32's
rounding would swamp it.
Positional content adds to that variance too; where it differs between positions (flags,
logits, position numbers), the channel ``pad`` evens it (:meth:`Weights._even`), so S^2
holds one constant for every token.

Heads: the logit is ``beta * score / sqrt(n)`` in the model's convention, so the query carries
``beta sqrt(n)``; the readout is left out as a key by a large negative logit (:class:`Scales`).
MLPs: a ``decode`` or a ``root`` is built by :func:`~.decode.build_decoders`; a ``peel``, a
``threshold`` and a ``relu`` are written exactly.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import torch
from torch import Tensor

from infoflow.retrieval.circuit import (
    ANCHOR,
    BALANCE,
    CONST,
    LOGIT_UNIT,
    MASK,
    MIRROR,
    PAD,
    POSITION_NUMBER,
    POSITIONS,
    READOUT,
    SQNORM,
    TOKENS,
    ZERO,
    Circuit,
    Copy,
    Form,
    Head,
    Mlp,
    deferred_scales,
)
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.validators.retrieval.model import LN_EPS, EnsembleTransformer, Member
from infoflow.validators.retrieval.targets import TargetFunction


@dataclass(frozen=True)
class Scales:
    """The construction's large numbers, by dtype: the anchor's constant, the logit that
    leaves the readout out as a key, what a peeled token's key loses, and the peel's margin
    times beta. Rounding leaves about eps * mask in a logit and eps * anchor in a read (eps
    the dtype's), so float32 takes smaller ones and pays a larger LayerNorm error
    (|content|^2 / anchor^2) and a wider margin (a read's rounding, 6e-5, must stay below
    it)."""

    anchor: float
    mask: float
    penalty: float
    margin: float


SCALES = {
    torch.float64: Scales(1e6, 1e6, 1e3, 1e-3),
    torch.float32: Scales(1e3, 1e4, 30.0, 1.0),
}
#: The anchor of a circuit that reads |x|^2 from LayerNorm (float64 only). Its error,
#: 1.5 |x|^4 / (E S^2), is 4e-8 at |x| = 4, E = 24; the rounding of E S^2 times the anchor's
#: read, about 1e-6.
NORM_ANCHOR = 1e5
#: The slope of a threshold MLP: weight above 0.5005 reads 1, below 0.4995 reads 0.
THRESHOLD_SLOPE = 1000.0
_REFERENCE = re.compile(r"^([A-Za-z_]\w*)((?:\[\d+\])*)(\^T)?$")


class TooNarrow(ValueError):
    """The model's MLPs have fewer hidden units than the circuit's MLPs need."""


class Weights:
    """Writes ``circuit`` into a fresh one-member model: ``beta`` the softmax sharpness,
    ``width`` the MLPs' hidden width, in ``dtype``."""

    def __init__(
        self,
        circuit: Circuit,
        spec: RetrievalSpec,
        target: TargetFunction,
        *,
        beta: float,
        width: int,
        dtype: torch.dtype = torch.float64,
    ):
        self.circuit, self.spec, self.target, self.beta = circuit, spec, target, beta
        self.d, self.seq_len = spec.input_dim or 4, spec.seq_len or 16
        e = spec.architecture.embed_dim or _round_up(circuit.width, circuit.heads_per_layer)
        self.member = Member(
            tuple(circuit.heads_per_layer), circuit.positional_encoding, 0, e, mlp_width=width
        )
        out_dim = target.output_dim(self.seq_len)
        self.model = EnsembleTransformer([self.member], self.seq_len, self.d, out_dim).to(dtype)
        self.dtype, self.e = dtype, e
        self.scales = SCALES[dtype]
        self.anchor = self.scales.anchor
        if circuit.reads_norm:
            if dtype != torch.float64:
                raise ValueError(
                    "a circuit that reads |x|^2 from LayerNorm's scale is built in float64 "
                    f"only (asked for {dtype})"
                )
            self.anchor = NORM_ANCHOR
        self.sigma0 = self.anchor * math.sqrt(e - 1) / e
        self.spread = 0.0  # what positional content adds to E times LayerNorm's variance
        self.deferred = deferred_scales(circuit)  # scales the output applies (copies, products)
        self._used: dict[int, int] = {}  # hidden units handed out, per layer

    def build(self) -> EnsembleTransformer:
        """Every weight; the decode MLPs are left to :func:`build_decoders`."""
        m = self.model
        with torch.no_grad():
            for p in m.parameters():
                p.zero_()
            for norm in (m.ln1, m.ln2, m.ln_f):  # every read is a difference: the bias
                norm[..., 0, :] = 1  # takes the centring's -mu / sigma0 back out of each
                norm[..., 1, :] = 1 / math.sqrt(self.e - 1)  # channel, keeping them small
            self._embedding()
            for head in self.circuit.heads:
                self._head(head)
            for mlp in self.circuit.mlps:
                if mlp.kind == "peel":
                    self._peel(mlp)
                elif mlp.kind == "threshold":
                    self._threshold(mlp)
                elif mlp.kind == "relu":
                    self._relu(mlp)
            for group, coefficient in self.circuit.output:
                width = self.circuit.channels[group]
                scale = coefficient * self.deferred.get(group, 1.0)
                m.W_out[0, :, :width] += scale * self.read(group)
            m.b_out[0] += self.circuit.constant
        self.balance()
        return m

    def balance(self) -> None:
        """Make every write to the residual stream sum to zero over the channels other than
        the anchor, by writing minus its sum into the balance channel: LayerNorm's mean is
        then the anchor's alone, and its scale moves only to second order in the content.
        Run again after anything writes (the decoders)."""
        m, c = self.model, self.circuit
        keep = torch.ones(self.e, dtype=torch.bool)
        keep[[c.offset(ANCHOR), c.offset(BALANCE)]] = False
        with torch.no_grad():
            for write in (
                m.W_in[0],
                m.readout[0],
                m.W_pos[0],
                m.W_O[:, 0],
                m.W_2[:, 0],
                m.b_2[:, 0],
            ):
                write[..., c.offset(BALANCE)] = -write[..., keep].sum(-1)

    def read(self, group: str) -> Tensor:
        """[E, width]: the columns that read ``group`` from a normed residual stream (the
        anchor reads 1)."""
        c = self.circuit
        if group == SQNORM:  # E S^2 (exactly 1) - E S^3 / sigma0 (the anchor's read)
            # S^2 = sigma0^2 + LayerNorm's epsilon + what every token's positional content
            # adds (the same for each: :meth:`_even`)
            s = math.sqrt(self.sigma0**2 + LN_EPS + self.spread / self.e)
            one = torch.zeros(self.e, 1, dtype=self.dtype)
            one[c.offset(CONST)], one[c.offset(ZERO)] = 1, -1
            return self.e * s**2 * one - self.e * s**3 / self.sigma0 * self.read(ANCHOR)
        start, width = c.offset(group), c.channels[group]
        out = torch.zeros(self.e, width, dtype=self.dtype)
        out[start : start + width] = torch.eye(width, dtype=self.dtype) * self.sigma0
        out[c.offset(ZERO)] = -self.sigma0
        return out / (self.anchor if group == ANCHOR else 1.0)

    def matrix(self, name: str, rows: int, cols: int) -> Tensor:
        """The matrix a score or copy names, [rows, cols]: the identity, a coordinate, a
        positional mask (1 where a query position leaves a key position out), the target's
        parameter (a vector is one row), the outer product of two rows (``outer(a,b)``), or a
        weighted sum of these (``"c*M + c*M"``:
        :func:`~infoflow.retrieval.circuit_forms.combined`)."""
        if " + " in name or "*" in name:
            parts = [part.split("*", 1) for part in name.split(" + ")]
            return sum(float(c) * self.matrix(matrix, rows, cols) for c, matrix in parts)
        if name == "I":
            return torch.eye(rows, cols, dtype=self.dtype)
        if name.startswith(MASK):
            masked = self.circuit.masks[name.removeprefix(MASK)]
            out = torch.zeros(rows, cols, dtype=self.dtype)
            for row, left_out in zip(out, masked, strict=True):
                row[[q - 1 for q in left_out]] = 1
            return out
        if name.startswith("outer("):  # a^T b of two rows: x(s)^T a^T b x(t) = (a x(s)) (b x(t))
            left, right = name.removeprefix("outer(").removesuffix(")").split(",")
            return self.matrix(left, 1, rows).T @ self.matrix(right, 1, cols)
        if name.startswith("e:"):
            out = torch.zeros(1, cols, dtype=self.dtype)
            out[0, int(name[2:])] = 1
            return out
        found = _REFERENCE.match(name)
        if found is None:
            raise ValueError(f"not a matrix reference: {name}")
        index = tuple(int(i) for i in re.findall(r"\d+", found.group(2)))
        vdims = 1 if rows == 1 else 2
        value = self.target.parameter(found.group(1), index, vdims, self.seq_len)
        value = value.to(self.dtype).reshape(-1, cols) if vdims == 1 else value.to(self.dtype)
        return value.T if found.group(3) else value

    def _embedding(self) -> None:
        m, c = self.model, self.circuit
        x, one, flag = c.offset(TOKENS), c.offset(ANCHOR), c.offset(READOUT)
        m.W_in[0, :, x : x + self.d] = torch.eye(self.d, dtype=self.dtype)
        if c.reads_norm:  # layer 1 reads |x|^2 (SQNORM): the tokens' mirror, const's bias
            mirror = c.offset(MIRROR)
            m.W_in[0, :, mirror : mirror + self.d] = -torch.eye(self.d, dtype=self.dtype)
            m.ln1[0, 0, 1, c.offset(CONST)] += 1  # 1 more than the zero channel reads
        m.b_in[0, one] = self.anchor
        m.readout[0, one] = self.anchor
        m.readout[0, flag] = 1
        for group, positions in c.flags.items():
            for p in positions:
                m.W_pos[0, p - 1, c.offset(group)] = 1
        for group, logits in c.logits.items():  # the head scoring it adds log w(p)
            values = torch.tensor(logits, dtype=self.dtype) / LOGIT_UNIT
            m.W_pos[0, : len(logits), c.offset(group)] = values
        if POSITION_NUMBER in c.channels:  # p / T at position p (the readout's stays zero)
            numbers = torch.arange(1, self.seq_len + 1, dtype=self.dtype) / self.seq_len
            m.W_pos[0, : self.seq_len, c.offset(POSITION_NUMBER)] = numbers
        if POSITIONS in c.channels:  # one channel a position (the readout's stays zero)
            first = c.offset(POSITIONS)
            for p in range(c.channels[POSITIONS]):
                m.W_pos[0, p, first + p] = 1
        if c.reads_norm:
            self._even()

    def _even(self) -> None:
        """Make every token's positional content c_p add the same K to E times the first
        LayerNorm's variance, which carries |x|^2: with the balance (minus its sum) it adds
        |c_p|^2 + (sum c_p)^2, and :data:`PAD` takes the g that makes that K, the least
        every position reaches (``self.spread``). One-hot positions need none (K = 2)."""
        m, c = self.model, self.circuit
        keep = torch.ones(self.e, dtype=torch.bool)
        keep[[c.offset(ANCHOR), c.offset(BALANCE)]] = False
        content = m.W_pos[0, : self.seq_len][:, keep]
        total, square = content.sum(-1), (content**2).sum(-1)
        if PAD not in c.channels:
            spread = square + total**2
            if spread.max() - spread.min() > 1e-12:
                raise ValueError("positional content differs between positions, with no pad")
            self.spread = float(spread[0])
            return
        k = (square + total**2 / 2).max()
        room = (2 * k - 2 * square - total**2).clamp_min(0)
        m.W_pos[0, : self.seq_len, c.offset(PAD)] = (room.sqrt() - total) / 2
        self.spread = float(k)

    def _head(self, head: Head) -> None:
        m = self.model
        layer, h, w = head.layer - 1, self.model.heads, self.model.head_width
        n = self.member.head_width(layer)
        qkv = m.W_QKV[layer, 0].view(self.e, 3, h, w)
        q, k, v = (qkv[:, i, head.slot, :n] for i in range(3))
        a = 0
        for form in head.score:
            a += self._score(form, q, k, a, self.beta if head.sharp else 0.0)
        if head.mask_readout:
            q[:, a] = self.read(ANCHOR)[:, 0]
            k[:, a] = -self.scales.mask * self.read(READOUT)[:, 0]
        q *= math.sqrt(n)
        out = m.W_O[layer, 0].view(h, w, self.e)[head.slot, :n]
        b = 0
        for copy in head.values:
            b += self._copy(copy, v, out, b)

    def _score(self, form: Form, q: Tensor, k: Tensor, a: int, beta: float) -> int:
        """Write ``beta * sign * scale * query^T M key`` into dimensions a.. of a head; how
        many."""
        width = self.circuit.width_of
        rows, cols = width(form.query), width(form.key)
        beta = LOGIT_UNIT if form.key in self.circuit.logits else beta  # weights, not sharpness
        matrix = self.matrix(form.matrix, rows, cols) * (beta * form.sign * form.scale)
        if rows <= cols:
            q[:, a : a + rows] = self.read(form.query)
            k[:, a : a + rows] = self.read(form.key) @ matrix.T
            return rows
        q[:, a : a + cols] = self.read(form.query) @ matrix
        k[:, a : a + cols] = self.read(form.key)
        return cols

    def _copy(self, copy: Copy, v: Tensor, out: Tensor, b: int) -> int:
        """Write ``scale * M source -> dest`` into dimensions b.. of a head; how many."""
        width = self.circuit.width_of
        rows, cols = width(copy.dest), width(copy.source)
        scale = 1.0 if copy.dest in self.deferred else copy.scale
        matrix = self.matrix(copy.matrix, rows, cols) * scale
        dest = self.circuit.offset(copy.dest)
        if cols <= rows:
            v[:, b : b + cols] = self.read(copy.source)
            out[b : b + cols, dest : dest + rows] = matrix.T
            return cols
        v[:, b : b + rows] = self.read(copy.source) @ matrix.T
        out[b : b + rows, dest : dest + rows] = torch.eye(rows, dtype=self.dtype)
        return rows

    def units(self, layer: int, count: int) -> slice:
        """The next ``count`` hidden units of ``layer``'s MLP (peels first, then decoders)."""
        used = self._used.get(layer, 0)
        if used + count > self.member.hidden:
            raise TooNarrow(f"layer {layer}'s MLP needs more than its {self.member.hidden} units")
        self._used[layer] = used + count
        return slice(used, used + count)

    def left(self, layer: int) -> int:
        """Hidden units of ``layer``'s MLP not handed out yet."""
        return self.member.hidden - self._used.get(layer, 0)

    def _peel(self, mlp: Mlp) -> None:
        """key -= penalty * clip((s - m) / margin + 1, 0, 1), s = sign M x; round 1 adds s."""
        m, layer = self.model, mlp.layer - 1
        margin = self.scales.margin / self.beta
        score = self.read(TOKENS) @ self.matrix(mlp.matrix, 1, self.d).T * mlp.sign  # [E, 1]
        reached = (score - self.read(mlp.inputs[1])) / margin  # u - 1
        key = self.circuit.offset(mlp.output)
        units = self.units(mlp.layer, 4 if mlp.first else 2)
        columns = [reached, reached] + ([score, -score] if mlp.first else [])
        m.W_1[layer, 0, :, units] = torch.cat(columns, dim=1)
        m.b_1[layer, 0, units.start : units.start + 2] = torch.tensor([1.0, 0.0])
        penalty = self.scales.penalty
        out = [-penalty, penalty] + ([1.0, -1.0] if mlp.first else [])
        m.W_2[layer, 0, units, key] = torch.tensor(out, dtype=self.dtype)

    def _threshold(self, mlp: Mlp) -> None:
        """output += clip(K (m - 1/2) + 1/2, 0, 1), channel by channel (K = THRESHOLD_SLOPE)."""
        m, layer = self.model, mlp.layer - 1
        source, width = self.read(mlp.inputs[0]), self.circuit.channels[mlp.inputs[0]]
        first = self.circuit.offset(mlp.output)
        units = self.units(mlp.layer, 2 * width)
        ramp = torch.tensor([0.5, -0.5], dtype=self.dtype) - THRESHOLD_SLOPE / 2
        for i in range(width):
            pair = slice(units.start + 2 * i, units.start + 2 * i + 2)
            m.W_1[layer, 0, :, pair] = THRESHOLD_SLOPE * source[:, i : i + 1]
            m.b_1[layer, 0, pair] = ramp
            m.W_2[layer, 0, pair, first + i] = torch.tensor([1.0, -1.0], dtype=self.dtype)

    def _relu(self, mlp: Mlp) -> None:
        """output += relu(sum_i weights[i] inputs[i] + bias) / s: one unit (a product of means
        read at its scale), written at 1 / s of its value, s the largest weight or bias (at
        least 1), which the output applies as it reads it (relu is positively homogeneous):
        a join as large as a product of sums, written whole, moved the last LayerNorm's
        scale (a fuzz, 2026-12-07)."""
        m, layer = self.model, mlp.layer - 1
        unit = self.units(mlp.layer, 1)
        weights = [
            w * self.deferred.get(g, 1.0) for g, w in zip(mlp.inputs, mlp.weights, strict=True)
        ]
        scale = max(1.0, abs(mlp.bias), *map(abs, weights))
        self.deferred[mlp.output] = scale
        reads = [w * self.read(group) for group, w in zip(mlp.inputs, weights, strict=True)]
        m.W_1[layer, 0, :, unit] = sum(reads) / scale
        m.b_1[layer, 0, unit] = mlp.bias / scale
        m.W_2[layer, 0, unit, self.circuit.offset(mlp.output)] = 1.0


def _round_up(width: int, heads: tuple[int, ...]) -> int:
    """The smallest E >= width that every layer's head count divides."""
    step = math.lcm(*heads)
    return -(-width // step) * step
