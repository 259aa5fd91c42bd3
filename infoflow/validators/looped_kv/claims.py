"""A looped model's measurements (:mod:`~infoflow.validators.looped_kv.measure`) -> claims:

- the latent store's measured bytes equal the calculator's ``kv_bytes_per_token_compressed``
  times the tokens stored, exactly; full rank reconstructs the cache exactly;
- LLA-2D's error falls as rank rises (LLA per head's, and the loop axis's structure, are
  judged over seeds and widths: :mod:`~infoflow.validators.looped_kv.structure`);
- at matched bytes LLA beats final-loop reuse (at rho = T), head-axis compression and
  uniform quantization of the cache (the paper's ranking; quantization where its bits exist);
- distillation with the teacher frozen lowers LLA's KL.

A comparison with a value that is not finite (a diverged KL or error) is inconclusive
(docs/results/2026-12-05-icl-looped-verdicts-preregistered.md).
"""

from __future__ import annotations

import itertools

from infoflow.validators.claims import Claim, finite_number


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
    methods = measured["methods"]
    out.append(_error_falls("lla_2d", methods["lla_2d"]))
    out.append(_beats_final_loop(methods, f"{float(measured['config']['loops']):.3g}"))
    if methods.get("lla_distilled"):
        out.append(_distillation_helps(methods, measured["teacher_frozen"]))
    out.append(_beats_head_axis(methods))
    out.append(_beats_quantize(methods))
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


def _verdict(ident, statement, predicted, measured, tolerance, values, holds, why="") -> Claim:
    """Judged on ``values``, or inconclusive when one of them is not finite (or missing: a
    stored NaN reads back as None)."""
    if not all(finite_number(v) for v in values):
        reason = "a value it compares is not finite (a diverged KL or error)"
        return Claim.undecided(ident, statement, predicted, measured, tolerance, reason)
    return Claim.judged(ident, statement, predicted, measured, tolerance, holds, why)


def _error_falls(name: str, rows: dict) -> Claim:
    ordered = sorted(rows.items(), key=lambda item: float(item[0]))
    errors = [row["attention_error"] for _, row in ordered]
    falls = all(a <= b for a, b in itertools.pairwise(errors))
    return _verdict(
        f"error_falls:{name}",
        f"{name}: error falls as rank rises",
        "monotone",
        errors,
        "attention-output error non-decreasing in rho",
        errors,
        falls,
    )


def _beats_final_loop(methods: dict, T: str) -> Claim:
    lla, final = methods["lla"][T], methods["final_loop"][T]
    better = lla["kl"] < final["kl"] and lla["attention_error"] < final["attention_error"]
    return _verdict(
        "beats_final_loop",
        f"LLA beats final-loop reuse at rho = {T}",
        "LLA better",
        {"lla": lla, "final_loop": final},
        "lower KL and attention error",
        [lla["kl"], final["kl"], lla["attention_error"], final["attention_error"]],
        better,
    )


def _distillation_helps(methods: dict, teacher_frozen: bool) -> Claim:
    gains = {
        rho: (methods["lla"][rho]["kl"], methods["lla_distilled"][rho]["kl"])
        for rho in methods["lla_distilled"]
    }
    worse = [rho for rho, (svd, tuned) in gains.items() if tuned >= svd]
    claim = (
        "distillation_helps",
        "distillation (teacher frozen) lowers LLA's KL",
        "lower",
        gains,
        "distilled KL < SVD KL at every rho; the teacher's weights unchanged",
    )
    if not teacher_frozen:  # whatever the KLs
        return Claim.judged(*claim, False, "the teacher's weights changed")
    reason = f"not at rho = {', '.join(worse)}" if worse else ""
    kls = [kl for pair in gains.values() for kl in pair]
    return _verdict(*claim, kls, not reason, reason)


def _beats_head_axis(methods: dict) -> Claim:
    head = {
        rho: (methods["lla"][rho]["kl"], methods["head_axis"][rho]["kl"]) for rho in methods["lla"]
    }
    losses = [rho for rho, (a, b) in head.items() if a >= b]
    return _verdict(
        "beats_head_axis",
        "LLA beats head-axis compression at matched bytes",
        "LLA better",
        head,
        "lower next-token KL at every rho",
        [kl for pair in head.values() for kl in pair],
        not losses,
        f"not at rho = {', '.join(losses)}" if losses else "",
    )


def _beats_quantize(methods: dict) -> Claim:
    """The paper ranks LLA above KV quantization at matched bytes: judged at every rho where
    quantization has bits left once its scales are paid for."""
    pairs = {
        rho: (methods["lla"][rho]["kl"], row["kl"], row["bits"])
        for rho, row in methods["quantize"].items()
        if rho in methods["lla"]
    }
    statement = "LLA beats uniform quantization of the cache at matched bytes"
    tolerance = "lower next-token KL at every rho where quantization has bits"
    if not pairs:
        why = "quantization has no bits left at any rho of the grid"
        return Claim.undecided("beats_quantize", statement, "LLA better", {}, tolerance, why)
    losses = [rho for rho, (lla, quantized, _) in pairs.items() if lla >= quantized]
    measured = {rho: {"lla": a, "quantize": b, "bits": bits} for rho, (a, b, bits) in pairs.items()}
    return _verdict(
        "beats_quantize",
        statement,
        "LLA better",
        measured,
        tolerance,
        [kl for lla, quantized, _ in pairs.values() for kl in (lla, quantized)],
        not losses,
        f"not at rho = {', '.join(losses)}" if losses else "",
    )
