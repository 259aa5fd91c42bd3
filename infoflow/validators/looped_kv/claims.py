"""A looped model's measurements (:mod:`~infoflow.validators.looped_kv.measure`) -> claims:

- the latent store's measured bytes equal the calculator's ``kv_bytes_per_token_compressed``
  times the tokens stored, exactly; full rank reconstructs the cache exactly;
- the loop axis is the most compressible: at every rho of the grid, folding the loop axis
  into the vector captures more energy than folding the head or the layer axis;
- error falls as rank rises (LLA per head and 2D);
- at matched bytes LLA beats final-loop reuse (at rho = T) and head-axis compression;
- distillation with the teacher frozen lowers LLA's KL.
"""

from __future__ import annotations

import itertools

from infoflow.validators.claims import Claim
from infoflow.validators.looped_kv.measure import RHOS


def claims(measured: dict) -> list[Claim]:
    out = [_store_bytes(store) for store in measured["stores"]]
    error = measured["full_rank_relative_error"]
    out.append(
        Claim.judged(
            "full_rank_exact",
            "full rank reconstructs the cache exactly",
            0.0,
            error,
            "max |error| / max |x| <= 1e-5",
            error <= 1e-5,
        )
    )
    out += [_loop_axis(name, measured["spectra"][name], measured["dims"]) for name in ("K", "V")]
    methods = measured["methods"]
    out += [_error_falls(name, methods[name]) for name in ("lla", "lla_2d")]
    out.append(_beats_final_loop(methods, f"{float(measured['config']['loops']):.3g}"))
    if methods.get("lla_distilled"):
        out.append(_distillation_helps(methods, measured["teacher_frozen"]))
    out.append(_beats_head_axis(methods))
    return out


def _store_bytes(store: dict) -> Claim:
    return Claim.judged(
        f"store_bytes:{store['variant']}",
        f"the {store['variant']} store holds the calculator's bytes",
        store["predicted_bytes"],
        store["measured_bytes"],
        "exactly equal",
        store["measured_bytes"] == store["predicted_bytes"],
    )


def _loop_axis(name: str, spectra: dict, dims: dict) -> Claim:
    wins = {}
    for rho in RHOS:
        wins[f"{rho:.3g}"] = {
            how: spectra[how][min(max(1, round(dim / rho)), len(spectra[how])) - 1]
            for how, dim in dims.items()
        }
    loses = [rho for rho, e in wins.items() if e["loop"] < max(e["head"], e["layer"])]
    return Claim.judged(
        f"loop_axis:{name}",
        f"{name}: the loop axis is the most compressible at matched bytes",
        "loop",
        wins,
        "more energy captured at every rho than the head and layer folds",
        not loses,
        f"not at rho = {', '.join(loses)}" if loses else "",
    )


def _error_falls(name: str, rows: dict) -> Claim:
    ordered = sorted(rows.items(), key=lambda item: float(item[0]))
    errors = [row["attention_error"] for _, row in ordered]
    falls = all(a <= b for a, b in itertools.pairwise(errors))
    return Claim.judged(
        f"error_falls:{name}",
        f"{name}: error falls as rank rises",
        "monotone",
        errors,
        "attention-output error non-decreasing in rho",
        falls,
    )


def _beats_final_loop(methods: dict, T: str) -> Claim:
    lla, final = methods["lla"][T], methods["final_loop"][T]
    better = lla["kl"] < final["kl"] and lla["attention_error"] < final["attention_error"]
    return Claim.judged(
        "beats_final_loop",
        f"LLA beats final-loop reuse at rho = {T}",
        "LLA better",
        {"lla": lla, "final_loop": final},
        "lower KL and attention error",
        better,
    )


def _distillation_helps(methods: dict, teacher_frozen: bool) -> Claim:
    gains = {
        rho: (methods["lla"][rho]["kl"], methods["lla_distilled"][rho]["kl"])
        for rho in methods["lla_distilled"]
    }
    worse = [rho for rho, (svd, tuned) in gains.items() if tuned > svd]
    reason = f"not at rho = {', '.join(worse)}" if worse else ""
    if not teacher_frozen:
        reason = "the teacher's weights changed"
    return Claim.judged(
        "distillation_helps",
        "distillation (teacher frozen) lowers LLA's KL",
        "lower",
        gains,
        "distilled KL <= SVD KL at every rho; the teacher's weights unchanged",
        not reason,
        reason,
    )


def _beats_head_axis(methods: dict) -> Claim:
    head = {
        rho: (methods["lla"][rho]["kl"], methods["head_axis"][rho]["kl"]) for rho in methods["lla"]
    }
    losses = [rho for rho, (a, b) in head.items() if a >= b]
    return Claim.judged(
        "beats_head_axis",
        "LLA beats head-axis compression at matched bytes",
        "LLA better",
        head,
        "lower next-token KL at every rho",
        not losses,
        f"not at rho = {', '.join(losses)}" if losses else "",
    )
