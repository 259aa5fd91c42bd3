"""A retrieval target -> the NMSE floors its claims are judged against, computed before any
training.

- The trivial floor: predicting the mean, NMSE 1 (the targets are standardised).
- The pooling shortcut: the best NMSE a read-out reaches from what one uniform average of
  the sequence holds, fitted by least squares on the pooled moments of the tokens (their
  mean, the mean of their outer products, and the products of the mean's coordinates) and
  measured on held-out samples. This is what an architecture that falls back to global
  aggregation holds before its decoder grows (a reconstruction, and a proxy rather than a
  bound: a wide enough decoder of a real softmax head does better, which is the exponent
  the ladders measure). For a target that reads fixed positions it is also the best any
  model without positional encoding can do: the exact floor for x[1] + x[2] + x[3] is
  1 - 3/T, whatever the token distribution.

A model "learns" the target when its NMSE is at least :data:`LEARNS_FACTOR` times below the
shortcut: it computes something pooling cannot.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from infoflow.retrieval.spec import RetrievalSpec
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs

#: A model learns the target when its NMSE is this many times below the pooling shortcut.
LEARNS_FACTOR = 4.0
#: Samples the shortcut is fitted on and measured on.
FIT_SAMPLES, TEST_SAMPLES = 8192, 4096


@dataclass(frozen=True)
class Floors:
    """The floors of one target at one sequence length."""

    seq_len: int
    trivial: float
    shortcut: float
    learns_below: float  # shortcut / LEARNS_FACTOR

    def describe(self) -> dict:
        return asdict(self)


def pooled_features(x: torch.Tensor) -> torch.Tensor:
    """[batch, T, d] -> [batch, features]: 1, the mean token, the mean outer product and the
    mean's outer product (upper triangles)."""
    mean = x.mean(1)  # [b, d]
    d = x.shape[-1]
    rows, cols = torch.triu_indices(d, d)
    second = torch.einsum("btd,bte->bde", x, x)[:, rows, cols] / x.shape[1]
    products = (mean[:, :, None] * mean[:, None, :])[:, rows, cols]
    return torch.cat([torch.ones_like(mean[:, :1]), mean, second, products], dim=1)


def shortcut_nmse(spec: RetrievalSpec, seq_len: int, seed: int = 0) -> float:
    """The pooling shortcut's held-out NMSE (ordinary least squares in float64)."""
    generator = torch.Generator().manual_seed(seed + 7)
    target = TargetFunction(spec, seed=seed)
    x = sample_inputs(spec, FIT_SAMPLES + TEST_SAMPLES, seq_len, generator)
    y = target(x).double()
    y = y[:, None] if y.dim() == 1 else y
    features = pooled_features(x.double())
    fit, test = slice(0, FIT_SAMPLES), slice(FIT_SAMPLES, None)
    weights = torch.linalg.lstsq(features[fit], y[fit]).solution
    error = ((features[test] @ weights - y[test]) ** 2).sum()
    variance = ((y[test] - y[fit].mean(0)) ** 2).sum()
    return float(error / variance)


def floors(spec: RetrievalSpec, seq_len: int, seed: int = 0) -> Floors:
    """The floors of ``spec``'s target at ``seq_len`` (computed once per process)."""
    key = (spec.model_dump_json(exclude={"architecture", "sweep", "description"}), seq_len, seed)
    if key not in _SHORTCUTS:
        _SHORTCUTS[key] = shortcut_nmse(spec, seq_len, seed)
    shortcut = _SHORTCUTS[key]
    return Floors(seq_len, 1.0, shortcut, shortcut / LEARNS_FACTOR)


_SHORTCUTS: dict[tuple, float] = {}
