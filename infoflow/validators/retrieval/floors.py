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
- The held shortcut of a deficient architecture (one that resolves some parts of the target
  and falls back to global aggregation for the others, as intrinsic dimension's (1, 2) does):
  least squares on the pooled moments and on the values of the parts its schedule resolves
  at the floor's cost (max-position retrievals, no single-head k-th step). A part's values
  are its additive term's, matched to the engine's part by structure (which indices each
  score couples, what is nested in what: never by names or order); among parts of one
  structure (the copies of a sum over a range index, or a max and a min of projections)
  the engine's choice is arbitrary, so the best choice is taken. Its readout holds those
  parts' positions, so it can decode their values cheaply; the rest it holds only as
  pooling does. Like the pooling shortcut it is a proxy, not a bound: trained (1, 2) and
  (2, 1) models reached NMSE 0.064-0.092 at T = 16 where it is 0.105 (a real head's decoder
  of the unresolved part does better than least squares on moments). A model predicted
  better than it must beat this, not just pooling. Not computed (the pooling shortcut
  stands, and the floors say why) where the target's additive terms are not one part each:
  a product of reductions, sums the engine pools into one part, fixed positions.

A model "learns" the target when its NMSE is at least :data:`LEARNS_FACTOR` times below the
shortcut: it computes something pooling cannot.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, field, replace

import torch

from infoflow.retrieval.derive import derive
from infoflow.retrieval.expression import TargetError
from infoflow.retrieval.expression_to_canonical import canonical, structure_key
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.retrieval.types import Comparison, Placement, Schedule
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs

#: A model learns the target when its NMSE is this many times below the pooling shortcut.
LEARNS_FACTOR = 4.0
#: Samples the shortcut is fitted on and measured on.
FIT_SAMPLES, TEST_SAMPLES = 8192, 4096
#: Why an architecture has no held shortcut of its own when it resolves no part or every part.
ALL_OR_NONE = "resolves no part or every part: the pooling shortcut stands"
#: The most choices of resolved parts the held shortcut tries (a least-squares fit each).
MAX_FITS = 256


@dataclass(frozen=True)
class Floors:
    """The floors of one target at one sequence length; ``held`` maps an architecture that
    resolves only some of the target's parts (``heads [1, 2]``) to its held shortcut."""

    seq_len: int
    trivial: float
    shortcut: float
    learns_below: float  # shortcut / LEARNS_FACTOR
    held: dict[str, dict] = field(default_factory=dict)

    def describe(self) -> dict:
        return asdict(self)

    def held_below(self, architecture: str) -> float | None:
        """What a model must be below to beat ``architecture``'s held shortcut (None: that
        architecture resolves no part, or every part, or its shortcut is not computed)."""
        return (self.held.get(architecture) or {}).get("learns_below")


def pooled_features(x: torch.Tensor) -> torch.Tensor:
    """[batch, T, d] -> [batch, features]: 1, the mean token, the mean outer product and the
    mean's outer product (upper triangles)."""
    mean = x.mean(1)  # [b, d]
    d = x.shape[-1]
    rows, cols = torch.triu_indices(d, d)
    second = torch.einsum("btd,bte->bde", x, x)[:, rows, cols] / x.shape[1]
    products = (mean[:, :, None] * mean[:, None, :])[:, rows, cols]
    return torch.cat([torch.ones_like(mean[:, :1]), mean, second, products], dim=1)


def fitted_nmse(features: torch.Tensor, y: torch.Tensor) -> float:
    """Ordinary least squares fitted on the first FIT_SAMPLES rows, its NMSE on the rest."""
    y = y[:, None] if y.dim() == 1 else y
    fit, test = slice(0, FIT_SAMPLES), slice(FIT_SAMPLES, None)
    weights = torch.linalg.lstsq(features[fit], y[fit]).solution
    error = ((features[test] @ weights - y[test]) ** 2).sum()
    variance = ((y[test] - y[fit].mean(0)) ** 2).sum()
    return float(error / variance)


def _samples(spec: RetrievalSpec, seq_len: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The floors' samples x and the target on them in float64 (kept for the last target
    only: its pooling and held shortcuts share one evaluation)."""
    key = (_target_key(spec), seq_len, seed)
    if key not in _SAMPLES:
        _SAMPLES.clear()
        generator = torch.Generator().manual_seed(seed + 7)
        x = sample_inputs(spec, FIT_SAMPLES + TEST_SAMPLES, seq_len, generator)
        _SAMPLES[key] = x, TargetFunction(spec, seed=seed)(x).double()
    return _SAMPLES[key]


def shortcut_nmse(spec: RetrievalSpec, seq_len: int, seed: int = 0) -> float:
    """The pooling shortcut's held-out NMSE (ordinary least squares in float64)."""
    x, y = _samples(spec, seq_len, seed)
    return fitted_nmse(pooled_features(x.double()), y)


def held_nmse(spec: RetrievalSpec, seq_len: int, parts: dict, seed: int = 0):
    """(NMSE, ""): the best held-out NMSE of least squares on the pooled moments and the
    values of the resolved parts (``parts``: each part's structure -> (copies resolved,
    copies)), the best choice among the copies of one structure; (None, why not) when the
    target's additive terms do not map one to one onto the engine's parts."""
    x, y = _samples(spec, seq_len, seed)
    columns, why_not = part_columns(spec, x, seed)
    widths = {key: values.shape[1] for key, values in columns.items()}
    if why_not or widths != {key: copies for key, (_, copies) in parts.items()}:
        return None, why_not or "the target's terms do not map one to one onto the engine's parts"
    choices = [
        [(key, list(chosen)) for chosen in itertools.combinations(range(copies), count)]
        for key, (count, copies) in sorted(parts.items())
    ]
    if math.prod(map(len, choices)) > MAX_FITS:
        return None, f"more than {MAX_FITS} ways to choose the resolved parts"
    pooled = pooled_features(x.double())
    best = min(
        fitted_nmse(torch.cat([pooled, *(columns[key][:, c] for key, c in pick)], 1), y)
        for pick in itertools.product(*choices)
    )
    return best, ""


def part_columns(spec: RetrievalSpec, x: torch.Tensor, seed: int = 0) -> tuple[dict, str]:
    """({structure of a part: its values on x, [batch, copies]}, ""), or ({}, why not): each
    additive term of the target must be one reduction (or its copies over a range index)."""
    terms = TargetFunction(spec, seed=seed).term_values(x)
    if terms is None:
        return {}, "the target is a vector"
    columns: dict[tuple, list[torch.Tensor]] = {}
    for term, values in terms:
        try:
            parts = canonical(term).parts
        except TargetError:  # a term that reads no token: a constant, held by any readout
            continue
        if len(parts) != 1:
            return {}, "a term of the target holds several reductions"
        if parts[0].copies != values.shape[1]:
            return {}, "a term's copies cannot be evaluated one by one"
        columns.setdefault(part_structure(parts[0]), []).append(values.double())
    return {key: torch.cat(values, 1) for key, values in columns.items()}, ""


def part_structure(comparison: Comparison) -> tuple:
    """What identifies a part among the target's, whatever its names and copies."""
    return structure_key(replace(comparison, copies=1))


def resolved(schedule: Schedule) -> dict[tuple, tuple[int, int]]:
    """Each part's structure -> (copies resolved at the floor's cost, copies)."""
    out: dict[tuple, tuple[int, int]] = {}
    for p in schedule.placements:  # a placement may hold several copies, side by side
        count, copies = out.get(part_structure(p.comparison), (0, 0))
        out[part_structure(p.comparison)] = (count + cheap(p) * p.copies, copies + p.copies)
    return out


def cheap(placement: Placement) -> bool:
    """Whether a part is resolved at the floor's cost: scheduled with no single-head k-th
    step (whose cost grows with T, as global aggregation's does)."""
    fragment = placement.fragment
    return placement.mode == "scheduled" and not (fragment and fragment.theorem2)


def held_shortcut(spec: RetrievalSpec, seq_len: int, heads, pe: bool, seed: int = 0) -> dict:
    """The held shortcut of the architecture (``heads``, ``pe``) at ``seq_len``: how many
    parts it resolves and, when some but not all, the best NMSE of least squares on the
    pooled moments and the values of those parts (or why it is not computed)."""
    arch = spec.architecture.model_copy(
        update={"layers": len(heads), "heads": list(heads), "positional_encoding": pe}
    )
    point = spec.model_copy(update={"seq_len": seq_len, "architecture": arch})
    schedule = derive(point).schedule
    placements = schedule.placements
    count, parts = sum(p.copies for p in placements if cheap(p)), sum(p.copies for p in placements)
    out = {"resolved": f"{count} of {parts}", "shortcut": None, "learns_below": None}
    if count in (0, parts):
        return {**out, "why": ALL_OR_NONE}
    if any(p.comparison is None for p in placements):
        return {**out, "why": "the target reads fixed positions: the pooling shortcut stands"}
    by_structure = resolved(schedule)
    key = (_target_key(spec), seq_len, seed, tuple(sorted(by_structure.items())))
    if key not in _HELD:
        _HELD[key] = held_nmse(spec, seq_len, by_structure, seed)
    best, why_not = _HELD[key]
    if best is None:
        return {**out, "why": f"{why_not}: the pooling shortcut stands"}
    why = f"least squares on the pooled moments and the best {count} of {parts} parts"
    return {**out, "shortcut": best, "learns_below": best / LEARNS_FACTOR, "why": why}


def floors(spec: RetrievalSpec, seq_len: int, architectures: tuple = (), seed: int = 0) -> Floors:
    """The floors of ``spec``'s target at ``seq_len``, with the held shortcut of each
    (heads, positional encoding) in ``architectures`` (computed once per process)."""
    key = (_target_key(spec), seq_len, seed)
    if key not in _SHORTCUTS:
        _SHORTCUTS[key] = shortcut_nmse(spec, seq_len, seed)
    held = {
        architecture_label(heads, pe): held_shortcut(spec, seq_len, heads, pe, seed)
        for heads, pe in architectures
    }
    shortcut = _SHORTCUTS[key]
    return Floors(seq_len, 1.0, shortcut, shortcut / LEARNS_FACTOR, held)


def architecture_label(heads, pe: bool) -> str:
    """``heads [1, 2]``, with ``, PE`` when the architecture has positional encoding."""
    return f"heads {list(heads)}" + (", PE" if pe else "")


def _target_key(spec: RetrievalSpec) -> str:
    """What the floors depend on: the spec without its architecture, sweep and prose."""
    return spec.model_dump_json(exclude={"architecture", "sweep", "description"})


_SHORTCUTS: dict[tuple, float] = {}
_HELD: dict[tuple, tuple[float | None, str]] = {}
_SAMPLES: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}
