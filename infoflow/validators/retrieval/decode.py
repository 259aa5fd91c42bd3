"""The decode step of a circuit: the MLPs that turn what a token gathered into a value.

A ``decode`` MLP turns a token's own x(s) (or the fixed position the readout fetched) and the
partner a head retrieved, z = (x(s), x(t)), into ``x(s)^T M x(t)`` (``bilinear``) or
``|x(s)|^2 +- 2 x(s).x(t)`` (``sqnorm_less_key``, a norm pair's squared norm less the key's
|x(t)|^2, which the head copies): a quadratic form, a sum of squares along the eigenvectors
of its symmetric matrix. The MLP is built, not trained:
each square is its piecewise-linear interpolant on evenly spaced knots, one ReLU a knot, with
a relative error of order (knot spacing)^2 everywhere in range. The range comes from exact
inputs (the true best partner, not the softmax's blend), widened by RANGE, because the maxima
the readout retrieves live in the tails: a least-squares fit on sampled inputs (the first
version) left the tails to extrapolation and stalled at NMSE 8e-4 whatever its width. A
``root`` MLP takes the square root of the squared norm the readout retrieved, piecewise
linear on knots spaced as squares (even in the root), up to RANGE^2 times the largest
sampled. The width is the construction's size: the sweep's error falls with it. Each fit's
error on exact inputs is measured and returned.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from infoflow.retrieval.circuit import LEFT_OUT, POSITIONS, SQNORM, Head, Mlp
from infoflow.validators.retrieval.circuit_to_weights import TooNarrow, Weights
from infoflow.validators.retrieval.targets import sample_inputs

SAMPLES = 40_000  # tokens whose exact inputs set the range and measure the fit
RANGE = 1.5  # the knots reach this times the largest projection sampled
ROWS = 256  # inputs a fit's error is measured on at once (its hidden layer stays in cache)


def exact_inputs(weights: Weights, mlp: Mlp, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """[N, 2d] inputs (x(s), x(t*(s))) and [N] targets, the MLP's function of them, with
    t*(s) the exact best partner (every t, s itself included unless the head leaves it out,
    as the head sees them), or the ``mlp.rank``-th best for a partner peel's last round."""
    d = weights.d
    x, scores, sign = _retrieval(weights, mlp, generator)
    best = (sign * scores).argsort(-1, descending=True)[..., mlp.rank - 1]  # [b, s]
    partner = torch.gather(x, 1, best[..., None].expand(-1, -1, d))
    values = torch.gather(scores, 2, best[..., None])[..., 0]
    if mlp.function == "sqnorm_less_key":
        values = values - (partner**2).sum(-1)
    kept = values.isfinite().reshape(-1)  # a token a window leaves without a partner: none
    return torch.cat([x, partner], -1).reshape(-1, 2 * d)[kept], values.reshape(-1)[kept]


def pooled_inputs(weights: Weights, mlp: Mlp, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """[N, width] inputs and [N] targets of a ``product``: what each pooling head writes into
    the readout (its copy's ``scale * M x`` averaged over the positions by their weights, the
    weights e^logit, exactly 0 where a position is left out), and their bilinear form."""
    circuit, t = weights.circuit, weights.seq_len
    x = sample_inputs(weights.spec, SAMPLES, t, generator).to(weights.dtype)
    pooled = []
    for group in mlp.inputs:
        head, copy = next((h, c) for h in circuit.heads for c in h.values if c.dest == group)
        share = torch.ones(t, dtype=weights.dtype)
        if head.score:  # a logit channel: log w(p)
            held = torch.tensor(circuit.logits[head.score[0].key], dtype=weights.dtype)
            share = torch.where(held == LEFT_OUT, 0.0, held.exp())
        if copy.source == SQNORM:  # c |x|^2
            read = (x**2).sum(-1, keepdim=True)
        else:
            read = x @ weights.matrix(copy.matrix, circuit.width_of(group), weights.d).T
        pooled.append(copy.scale * torch.einsum("p,bpk->bk", share / share.sum(), read))
    z = torch.cat(pooled, -1)
    return z, ((z @ _form(weights, mlp)) * z).sum(-1)


def _retrieval(weights: Weights, mlp: Mlp, generator: torch.Generator):
    """Sampled tokens [b, t, d], the score of every pair (s, t) [b, t, t] by which the head
    retrieves the partner ``mlp`` decodes (each pair the head leaves out, by the positional
    self-penalty or a window's mask, at the worst score), and that head's sign."""
    spec, d, t = weights.spec, weights.d, weights.seq_len
    x = sample_inputs(spec, max(1, SAMPLES // t), t, generator).to(weights.dtype)
    if mlp.function == "bilinear":
        scores = torch.einsum("bsi,ij,btj->bst", x, weights.matrix(mlp.matrix, d, d), x)
    else:  # |x(s) + sign x(t)|^2
        scores = ((x[:, :, None] + mlp.sign * x[:, None]) ** 2).sum(-1)
    head = _head_of(weights, mlp)
    sign = next((f for f in head.score if f.key == SQNORM), head.score[0]).sign
    for form in head.score:
        if form.query == form.key == POSITIONS:  # the self-penalty, or a window's mask
            left_out = weights.matrix(form.matrix, t, t).bool()
            scores = scores.masked_fill(left_out, -sign * math.inf)
    return x, scores, sign


def _head_of(weights: Weights, mlp: Mlp) -> Head:
    """The head that retrieves the partner this MLP decodes (the one writing it); its sign is
    its score's, or for a norm pair its |x(t)|^2 term's (the cross term's also carries +-)."""
    partner = mlp.inputs[1]
    for head in weights.circuit.heads:
        if any(copy.dest == partner for copy in head.values):
            return head
    raise ValueError(f"no head writes {partner}")


def build_decoders(weights: Weights, seed: int = 0) -> dict[str, float]:
    """Write every decode and root MLP of the circuit into the model, sharing each layer's
    free hidden units equally; each one's NMSE on exact inputs, by output channel."""
    generator = torch.Generator().manual_seed(seed)
    model, out = weights.model, {}
    for layer in sorted({m.layer for m in weights.circuit.mlps if m.kind in ("decode", "root")}):
        decoders = weights.circuit.decoders(layer)
        share = weights.left(layer) // len(decoders)
        if share < 1:
            raise TooNarrow(f"layer {layer}'s MLP has no unit left for its decoders")
        for mlp in decoders:
            if mlp.kind == "root":
                y = _best_squares(weights, mlp, generator)
                directions, knots, w, bias = _root(y, share)
                z, y = y[:, None], y.sqrt()
                reads = weights.read(mlp.inputs[0])
            else:
                found = pooled_inputs if mlp.function == "product" else exact_inputs
                z, y = found(weights, mlp, generator)
                directions, knots, w, bias = _interpolant(z, _form(weights, mlp), share)
                reads = torch.cat([weights.read(group) for group in mlp.inputs], dim=1)
            units = weights.units(layer, share)
            with torch.no_grad():
                model.W_1[layer - 1, 0, :, units] = reads @ directions
                model.b_1[layer - 1, 0, units] = knots
                channel = weights.circuit.offset(mlp.output)
                model.W_2[layer - 1, 0, units, channel] = w
                model.b_2[layer - 1, 0, channel] += bias
            out[mlp.output] = _fit_error(z, y, (directions, knots, w, bias))
    return out


def _fit_error(z: Tensor, y: Tensor, fitted: tuple[Tensor, Tensor, Tensor, float]) -> float:
    """The NMSE of the ReLU sum ``fitted`` (directions, knots, output weights, bias) on inputs
    ``z`` against ``y``, a chunk of rows at a time (the whole [N, width] hidden layer was
    most of a witness's build time: its memory traffic and page faults)."""
    directions, knots, w, bias = fitted
    squares = 0.0
    for at in range(0, z.shape[0], ROWS):
        hidden = torch.addmm(knots, z[at : at + ROWS], directions).relu_()
        squares += float(((hidden @ w + bias - y[at : at + ROWS]) ** 2).sum())
    # a constant target (a term 0 on every draw, beside others): its size, else 1 (a review)
    spread = float(y.var()) or float((y**2).mean()) or 1.0
    return squares / z.shape[0] / spread


def _best_squares(weights: Weights, root: Mlp, generator: torch.Generator) -> Tensor:
    """[b] the squared norm the readout retrieves into ``root``'s input, per sampled
    sequence: the best pair's, by the sign of the decode of the same part, or the best
    token's own."""
    tag = root.inputs[0].rsplit(".", 1)[0]
    decode = next((m for m in weights.circuit.mlps if m.output == f"{tag}.value"), None)
    if decode is None:  # one token's own norm: the head copies c |x(t)|^2 (SQNORM)
        # a head shared by terms that attend alike copies each term's value (not only the
        # first's: a fuzz's traceback, max sqnorm + max norm on [1])
        head, copy = next(
            (h, v) for h in weights.circuit.heads for v in h.values if v.dest == root.inputs[0]
        )
        x = sample_inputs(
            weights.spec, max(1, SAMPLES // weights.seq_len), weights.seq_len, generator
        )
        squares = copy.scale * (x.to(weights.dtype) ** 2).sum(-1)
        return head.score[0].sign * (head.score[0].sign * squares).amax(dim=1)
    _, scores, sign = _retrieval(weights, decode, generator)
    return sign * (sign * scores).amax(dim=(1, 2))


def _form(weights: Weights, mlp: Mlp) -> Tensor:
    """The symmetric Q of the MLP's quadratic function z^T Q z of its inputs z: x(s)^T M x(t),
    |x(s)|^2 + 2 sign x(s).x(t), or a ``product``'s a^T M b (a^T M a of one input)."""
    d = weights.d
    if mlp.function == "product":  # times its scale, unless the output applies it
        sizes = [weights.circuit.width_of(group) for group in mlp.inputs]
        scale = 1.0 if mlp.output in weights.deferred else mlp.scale
        matrix = scale * weights.matrix(mlp.matrix, sizes[0], sizes[-1])
        if len(sizes) == 1:
            return (matrix + matrix.T) / 2
        form = torch.zeros(sum(sizes), sum(sizes), dtype=weights.dtype)
        form[: sizes[0], sizes[0] :], form[sizes[0] :, : sizes[0]] = matrix / 2, matrix.T / 2
        return form
    form = torch.zeros(2 * d, 2 * d, dtype=weights.dtype)
    if mlp.function == "bilinear":
        matrix = weights.matrix(mlp.matrix, d, d)
        form[:d, d:], form[d:, :d] = matrix / 2, matrix.T / 2
        return form
    eye = torch.eye(d, dtype=weights.dtype)
    form[:d, :d] = eye
    form[:d, d:], form[d:, :d] = mlp.sign * eye, mlp.sign * eye
    return form


def _root(squares: Tensor, width: int) -> tuple[Tensor, Tensor, Tensor, float]:
    """sqrt(u) on [0, M], M = RANGE^2 times the largest of ``squares``: piecewise linear on
    the ``width`` knots M (i / width)^2, one ReLU each. Returns what :func:`_interpolant`
    does, for a one-channel input."""
    top = RANGE**2 * float(squares.max())
    if not top:  # a term 0 on every draw (the nearest pair at an offset, beside others)
        zeros = torch.zeros(width, dtype=squares.dtype)
        return torch.ones(1, width, dtype=squares.dtype), zeros, zeros, 0.0
    ends = top * (torch.arange(width + 1, dtype=squares.dtype) / width) ** 2
    slopes = 1 / (ends[1:].sqrt() + ends[:-1].sqrt())  # the chord of each interval
    weights = torch.cat([slopes[:1], slopes[1:] - slopes[:-1]])
    return torch.ones(1, width, dtype=squares.dtype), -ends[:-1], weights, 0.0


def _interpolant(z: Tensor, form: Tensor, width: int) -> tuple[Tensor, Tensor, Tensor, float]:
    """z^T Q z = sum_k lambda_k (v_k . z)^2 over the eigenvectors of the symmetric Q; each
    square, piecewise linear on ``width / k`` evenly spaced knots over [-R, R] (R = RANGE
    times the largest projection of ``z``), is a sum of ReLUs. Returns (directions
    [n, width] for n inputs, knot offsets [width], output weights [width], bias)."""
    values, vectors = torch.linalg.eigh(form)
    kept = values.abs() > 1e-9 * values.abs().max()
    values, vectors = values[kept], vectors[:, kept]
    per = width // len(values)
    if per < 2:
        raise TooNarrow(f"a decoder of width {width} cannot cover {len(values)} directions")
    reach = RANGE * (z @ vectors).abs().amax(0)  # [k]
    steps = torch.linspace(-1, 1, per + 1, dtype=z.dtype)[:-1]
    knots = reach[:, None] * steps  # [k, per]: k_0 .. k_{per - 1}, spacing h
    h = 2 * reach / per
    slopes = torch.cat([2 * knots[:, :1] + h[:, None], 2 * h[:, None].expand(-1, per - 1)], 1)
    weights = (values[:, None] * slopes).reshape(-1)
    bias = float((values * knots[:, 0] ** 2).sum())
    directions = vectors.repeat_interleave(per, dim=1)
    pad = width - directions.shape[1]  # units left over carry nothing
    directions = torch.cat([directions, torch.zeros(len(form), pad, dtype=z.dtype)], dim=1)
    offsets = torch.cat([-knots.reshape(-1), torch.zeros(pad, dtype=z.dtype)])
    weights = torch.cat([weights, torch.zeros(pad, dtype=z.dtype)])
    return directions, offsets, weights, bias
