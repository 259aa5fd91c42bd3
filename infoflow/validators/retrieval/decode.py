"""The decode step of a circuit: the MLP that turns what a token gathered into a value.

A ``decode`` MLP turns a token's own x(s) and the partner a head retrieved, z = (x(s), x(t)),
into ``x(s)^T M x(t)``: a quadratic form, a sum of squares along the eigenvectors of its
symmetric matrix. The MLP is built, not trained: each square is its piecewise-linear
interpolant on evenly spaced knots, one ReLU a knot, with a relative error of order
(knot spacing)^2 everywhere in range. The range comes from exact inputs (the true best partner,
not the softmax's blend), widened by RANGE, because the maxima the readout retrieves live in
the tails: a least-squares fit on sampled inputs (the first version) left the tails to
extrapolation and stalled at NMSE 8e-4 whatever its width. The width is the construction's
size: the sweep's error falls with it. The fit's error on exact inputs is measured and
returned.
"""

from __future__ import annotations

import torch
from torch import Tensor

from infoflow.retrieval.circuit import TOKENS, Mlp
from infoflow.validators.retrieval.circuit_to_weights import Weights
from infoflow.validators.retrieval.targets import sample_inputs

SAMPLES = 40_000  # tokens whose exact inputs set the range and measure the fit
RANGE = 1.5  # the knots reach this times the largest projection sampled


def exact_inputs(weights: Weights, mlp: Mlp, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """[N, 2d] inputs (x(s), x(t*(s))) and [N] targets x(s)^T M x(t*(s)), with t*(s) the
    exact best partner (every t, s itself included, as the head sees them)."""
    spec, d, t = weights.spec, weights.d, weights.seq_len
    batch = max(1, SAMPLES // t)
    x = sample_inputs(spec, batch, t, generator).to(weights.dtype)  # [b, t, d]
    matrix = weights.matrix(mlp.matrix, d, d)
    scores = torch.einsum("bsi,ij,btj->bst", x, matrix, x)
    sign = _sign_of(weights, mlp)
    best = (sign * scores).argmax(-1)  # [b, s]
    partner = torch.gather(x, 1, best[..., None].expand(-1, -1, d))
    values = torch.gather(scores, 2, best[..., None])[..., 0]
    return torch.cat([x, partner], -1).reshape(-1, 2 * d), values.reshape(-1)


def _sign_of(weights: Weights, mlp: Mlp) -> int:
    """The sign of the retrieval whose partner this MLP decodes (the head writing it)."""
    partner = mlp.inputs[1]
    for head in weights.circuit.heads:
        if any(copy.dest == partner for copy in head.values):
            return head.score[0].sign
    raise ValueError(f"no head writes {partner}")


def build_decoders(weights: Weights, seed: int = 0) -> dict[str, float]:
    """Write every decode MLP of the circuit into the model, sharing each layer's free hidden
    units equally; each one's NMSE on exact inputs (the range's samples), by output channel."""
    generator = torch.Generator().manual_seed(seed)
    model, out = weights.model, {}
    for layer in sorted({m.layer for m in weights.circuit.mlps if m.kind == "decode"}):
        decoders = weights.circuit.decoders(layer)
        share = weights.left(layer) // len(decoders)
        if share < 1:
            raise ValueError(f"layer {layer}'s MLP has no unit left for its decoders")
        for mlp in decoders:
            z, y = exact_inputs(weights, mlp, generator)
            matrix = weights.matrix(mlp.matrix, weights.d, weights.d)
            directions, knots, w, bias = _interpolant(z, matrix, share)
            units = weights.units(layer, share)
            reads = torch.cat([weights.read(TOKENS), weights.read(mlp.inputs[1])], dim=1)
            with torch.no_grad():
                model.W_1[layer - 1, 0, :, units] = reads @ directions
                model.b_1[layer - 1, 0, units] = knots
                channel = weights.circuit.offset(mlp.output)
                model.W_2[layer - 1, 0, units, channel] = w
                model.b_2[layer - 1, 0, channel] += bias
            written = torch.relu(z @ directions + knots) @ w + bias
            out[mlp.output] = float(((written - y) ** 2).mean() / y.var())
    return out


def _interpolant(z: Tensor, matrix: Tensor, width: int) -> tuple[Tensor, Tensor, Tensor, float]:
    """x(s)^T M x(t) = z^T Q z = sum_k lambda_k (v_k . z)^2 over the eigenvectors of the
    symmetric Q; each square, piecewise linear on ``width / k`` evenly spaced knots over
    [-R, R] (R = RANGE times the largest projection of ``z``), is a sum of ReLUs. Returns
    (directions [2d, width], knot offsets [width], output weights [width], bias)."""
    d = matrix.shape[0]
    form = torch.zeros(2 * d, 2 * d, dtype=z.dtype)
    form[:d, d:], form[d:, :d] = matrix / 2, matrix.T / 2
    values, vectors = torch.linalg.eigh(form)
    kept = values.abs() > 1e-9 * values.abs().max()
    values, vectors = values[kept], vectors[:, kept]
    per = width // len(values)
    if per < 2:
        raise ValueError(f"a decoder of width {width} cannot cover {len(values)} directions")
    reach = RANGE * (z @ vectors).abs().amax(0)  # [k]
    steps = torch.linspace(-1, 1, per + 1, dtype=z.dtype)[:-1]
    knots = reach[:, None] * steps  # [k, per]: k_0 .. k_{per - 1}, spacing h
    h = 2 * reach / per
    slopes = torch.cat([2 * knots[:, :1] + h[:, None], 2 * h[:, None].expand(-1, per - 1)], 1)
    weights = (values[:, None] * slopes).reshape(-1)
    bias = float((values * knots[:, 0] ** 2).sum())
    directions = vectors.repeat_interleave(per, dim=1)
    pad = width - directions.shape[1]  # units left over carry nothing
    directions = torch.cat([directions, torch.zeros(2 * d, pad, dtype=z.dtype)], dim=1)
    offsets = torch.cat([-knots.reshape(-1), torch.zeros(pad, dtype=z.dtype)])
    weights = torch.cat([weights, torch.zeros(pad, dtype=z.dtype)])
    return directions, offsets, weights, bias
