"""The loop-axis structure over seeds, widths and training lengths.

Every looped model the experiment trains (``scale.seeds`` seeds x ``scale.widths`` widths)
records, at each snapshot step, two things per rho of the grid on a fixed calibration and
evaluation batch: the *loop margin* of K and of V (the energy the loop fold's top dim/rho
directions capture, minus the better of the head and layer folds at their own dim/rho: the
loop axis is the most compressible at matched bytes when it is positive) and LLA's
attention-output error (per-head codec, SVD, no refinement). The claims read the last
snapshot over every seed and width, with the range over seeds as the interval (a seed
without the last snapshot, or with a value that is not finite, makes the claim
inconclusive: docs/results/2026-12-05-icl-looped-verdicts-preregistered.md); the earlier
snapshots are reported (does the structure sharpen as training goes on?) and judged by no
claim: the paper says nothing of when the structure forms.
"""

from __future__ import annotations

import itertools

import torch

from infoflow.validators.claims import Claim
from infoflow.validators.looped_kv import codec as kv_codec
from infoflow.validators.looped_kv.claims import over_seeds
from infoflow.validators.looped_kv.experiment import corpus
from infoflow.validators.looped_kv.measure import RHOS, Scorer, ranks
from infoflow.validators.looped_kv.model import ExactAttention, LoopedDecoder

CALIBRATION, EVALUATION = 64, 16  # sequences


@torch.no_grad()
def snapshot(model: LoopedDecoder, length: int) -> dict[str, float]:
    """The loop margins of K and V and LLA's attention error, at every rho."""
    config, device = model.config, next(model.parameters()).device
    draw = corpus(config.vocab, seed=0)
    calibration = draw(CALIBRATION, length, torch.Generator().manual_seed(10)).to(device)
    evaluation = draw(EVALUATION, length, torch.Generator().manual_seed(11)).to(device)
    record = ExactAttention(record=True)
    model(calibration, record)
    k, v = kv_codec.core_kv(record, config)
    T, d, H, R = config.loops, config.head_dim, config.kv, config.core
    dims = {"loop": T * d, "head": H * d, "layer": R * d}
    out = {}
    for name, x in (("K", k), ("V", v)):
        spectra = {how: kv_codec.energy_captured(x, how) for how in dims}
        for rho in RHOS:
            at = {how: float(spectra[how][_rank(dim, rho) - 1]) for how, dim in dims.items()}
            out[f"margin:{name}:{rho:.3g}"] = at["loop"] - max(at["head"], at["layer"])
    score = Scorer(model, evaluation)
    full_k, full_v = kv_codec.SVDCodec.full(k, "loop"), kv_codec.SVDCodec.full(v, "loop")
    for rho in RHOS:
        r_k, r_v = ranks(round(2 * T * d / rho))
        codecs = full_k.truncated(r_k), full_v.truncated(r_v)
        result = score(codecs[0].reconstruct(score.k), codecs[1].reconstruct(score.v))
        out[f"lla_error:{rho:.3g}"] = result["attention_error"]
    return out


def _rank(dim: int, rho: float) -> int:
    return min(max(1, round(dim / rho)), dim)


#: What :func:`snapshot` records, by name.
METRICS = (
    *(f"margin:{name}:{rho:.3g}" for name in "KV" for rho in RHOS),
    *(f"lla_error:{rho:.3g}" for rho in RHOS),
)


def table(runs: list[dict]) -> dict:
    """``runs``: one per model, {"seed", "width", "snapshots": {step: metrics}, "steps":
    the snapshot steps it was scheduled to record} -> for each width and step,
    each metric's median and range over seeds. The steps are the scheduled ones and those
    recorded; a seed without a step, or with a value that is not finite, is counted
    ``missing``, so a snapshot with nothing recorded is there, every seed missing
    (docs/results/2026-12-05-seeds-and-widths-preregistered.md)."""
    out: dict = {}
    for width in sorted({r["width"] for r in runs}):
        mine = [r for r in runs if r["width"] == width]
        scheduled = set().union(*(r["steps"] for r in mine))
        for step in sorted(scheduled.union(*(r["snapshots"] for r in mine))):
            rows = [r["snapshots"].get(step) or {} for r in mine]
            keys = dict.fromkeys(key for row in rows for key in row) or METRICS
            out.setdefault(str(width), {})[str(step)] = {
                key: over_seeds([row.get(key) for row in rows]) for key in keys
            }
    return out


def claims(summary: dict) -> list[Claim]:
    """The loop axis wins (K, V) and LLA's error falls with rank, at the last snapshot, over
    every seed and width."""
    last = {width: steps[max(steps, key=int)] if steps else {} for width, steps in summary.items()}
    out = [_loop_axis(name, last) for name in ("K", "V")]
    out.append(_error_falls(last))
    return out


def _at(row: dict, key: str) -> dict:
    """The interval of ``key`` in a table row; a width with no snapshot has none: missing."""
    return row.get(key) or over_seeds([None])


def _missing(rows: dict) -> str:
    """Why intervals with a seed missing or not finite decide nothing ("" when none is)."""
    gaps = [name for name, row in rows.items() if row.get("missing") or not row["seeds"]]
    if not gaps:
        return ""
    return f"a seed has no finite value at the last snapshot at {', '.join(gaps)}"


def _loop_axis(name: str, last: dict) -> Claim:
    margins = {
        f"width x{w}, rho {rho:.3g}": _at(row, f"margin:{name}:{rho:.3g}")
        for w, row in last.items()
        for rho in RHOS
    }
    seeds = min(m["seeds"] for m in margins.values())
    statement = (
        f"{name}: the loop axis is the most compressible at matched bytes (every seed, "
        f"width and rho of the grid, {seeds} seeds)"
    )
    tolerance = (
        "confirmed when every seed's loop margin is > 0 at every width and rho; refuted when "
        "every seed's is < 0 at some width and rho; a seed missing at the last snapshot, or "
        "not finite, decides nothing"
    )
    ident = f"loop_axis:{name}"
    if _missing(margins):
        return Claim.undecided(ident, statement, "> 0", margins, tolerance, _missing(margins))
    losing = [k for k, m in margins.items() if m["high"] < 0]
    mixed = [k for k, m in margins.items() if m["low"] <= 0 <= m["high"]]
    if losing:
        why = f"every seed loses at {', '.join(losing)}"
        return Claim.judged(ident, statement, "> 0", margins, tolerance, False, why)
    if mixed:
        why = f"the seeds disagree at {', '.join(mixed)}"
        return Claim.undecided(ident, statement, "> 0", margins, tolerance, why)
    return Claim.judged(ident, statement, "> 0", margins, tolerance, True)


def _error_falls(last: dict) -> Claim:
    rows = {
        f"width x{w}, rho {rho:.3g}": _at(row, f"lla_error:{rho:.3g}")
        for w, row in last.items()
        for rho in RHOS
    }
    errors = {
        f"width x{w}": [_at(row, f"lla_error:{rho:.3g}")["median"] for rho in RHOS]
        for w, row in last.items()
    }
    claim = (
        "error_falls:lla",
        "LLA's error falls as its rank rises (median over seeds, every width)",
        "monotone",
        errors,
        "the median attention-output error is non-decreasing in rho at every width; a seed "
        "missing at the last snapshot, or not finite, decides nothing",
    )
    if _missing(rows):
        return Claim.undecided(*claim, _missing(rows))
    rises = [
        f"{w}: rho {a:.3g} -> {b:.3g}"
        for w, values in errors.items()
        for (a, b), (x, y) in zip(itertools.pairwise(RHOS), itertools.pairwise(values), strict=True)
        if y < x
    ]
    why = f"the error falls with less rank at {'; '.join(rises)}" if rises else ""
    return Claim.judged(*claim, not rises, why)
