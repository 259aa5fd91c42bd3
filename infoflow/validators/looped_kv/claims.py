"""The measurements of a looped model's seeds (:mod:`~infoflow.validators.looped_kv.measure`,
one per seed of the spec's width, the main model first; one for a loaded checkpoint) ->
claims:

- the latent store's measured bytes equal the calculator's ``kv_bytes_per_token_compressed``
  times the tokens stored, exactly, for every seed; full rank reconstructs every seed's cache
  exactly;
- LLA-2D's median error over seeds falls as rank rises (LLA per head's, and the loop axis's
  structure, are judged over seeds and widths: :mod:`~infoflow.validators.looped_kv.structure`);
- at matched bytes LLA beats final-loop reuse (at rho = T), head-axis compression and
  uniform quantization of the cache (the paper's ranking; quantization where its bits exist,
  one claim per rho, LLA being the refined codec where the measurement refined one);
- distillation with the teacher frozen lowers LLA's KL, one claim per rho.

A comparison is judged per seed at every rho it reads: confirmed when every seed shows the
predicted order at every rho, refuted when at some rho every seed shows the other, else
inconclusive; a value that is not finite (a diverged KL or error) makes it inconclusive
(docs/results/2026-12-05-seeds-and-widths-preregistered.md; the two per rho since
docs/results/2026-12-08-looped-kv-refinement-preregistered.md).
"""

from __future__ import annotations

import itertools
import statistics

from infoflow.validators.claims import Claim, finite_number

#: A refutation of the measurement itself (distillation moved a teacher): one seed shows it.
TEACHER_CHANGED = "a teacher's weights changed"


def claims(measurements: list[dict], models: str = "") -> list[Claim]:
    """Every claim about the models of ``measurements``; ``models`` says what they are in
    the statements ("3 seeds", "1 loaded model"; by default their count)."""
    models = models or f"{len(measurements)} model{'s' * (len(measurements) > 1)}"
    first = measurements[0]
    out = [
        _store_bytes(store, [m["stores"][i] for m in measurements])
        for i, store in enumerate(first["stores"])
    ]
    errors = [m["full_rank_relative_error"] for m in measurements]
    finite = all(finite_number(e) for e in errors)
    out.append(
        _verdict(
            "full_rank_exact",
            "full rank reconstructs the cache exactly",
            0.0,
            max(errors) if finite else errors,
            "max |error| / max |x| <= 1e-5, for every seed",
            errors,
            finite and max(errors) <= 1e-5,
        )
    )
    methods = [m["methods"] for m in measurements]
    out.append(_error_falls("lla_2d", methods))
    out.append(_beats_final_loop(methods, f"{float(first['config']['loops']):.3g}", models))
    frozen = all(m["teacher_frozen"] for m in measurements)
    if first["methods"].get("lla_distilled"):
        out.extend(_distillation_helps(methods, frozen, models))
    out.append(_beats_head_axis(methods, models))
    out.extend(_beats_quantize(methods, frozen, models))
    return out


def over_seeds(values: list[float | None]) -> dict:
    """The median and range of ``values`` over seeds, ``seeds`` counting the finite ones
    and ``missing`` (when any) the others."""
    found = [v for v in values if finite_number(v)]
    out = {
        "median": statistics.median(found) if found else None,
        "low": min(found, default=None),
        "high": max(found, default=None),
        "seeds": len(found),
    }
    missing = len(values) - len(found)
    return {**out, "missing": missing} if missing else out


def over_seeds_table(methods: list[dict]) -> dict:
    """Every method's KL and attention error at every rho, median and range over the seeds'
    ``methods``: {method: {rho: {metric: interval}}}."""
    first = methods[0]
    return {
        name: {
            rho: {
                metric: over_seeds([_value(m, name, rho, metric) for m in methods])
                for metric in ("attention_error", "kl")
            }
            for rho in rows
        }
        for name, rows in first.items()
    }


def _store_bytes(store: dict, per_seed: list[dict]) -> Claim:
    measured = [s["measured_bytes"] for s in per_seed]
    return Claim.judged(
        f"store_bytes:{store['variant']}",
        f"the {store['variant']} store holds the calculator's bytes",
        store["predicted_bytes"],
        measured[0] if len(set(measured)) == 1 else measured,
        "exactly equal, for every seed",
        all(m == store["predicted_bytes"] for m in measured),
    )


def _verdict(ident, statement, predicted, measured, tolerance, values, holds, why="") -> Claim:
    """Judged on ``values``, or inconclusive when one of them is not finite (or missing: a
    stored NaN reads back as None)."""
    if not all(finite_number(v) for v in values):
        reason = "a value it compares is not finite (a diverged KL or error)"
        return Claim.undecided(ident, statement, predicted, measured, tolerance, reason)
    return Claim.judged(ident, statement, predicted, measured, tolerance, holds, why)


def _value(methods: dict, name: str, rho: str, metric: str = "kl") -> float | None:
    """A seed's ``metric`` of method ``name`` at ``rho``; None where it has none (missing
    counts as not finite)."""
    return methods.get(name, {}).get(rho, {}).get(metric)


def _ordered(claim: tuple, pairs: list[dict[str, list[tuple[float, float]]]]) -> Claim:
    """``claim`` (id, statement, predicted, measured, tolerance) judged on ``pairs``: per
    seed, {rho: [(ours, theirs), ...]}, the predicted order being ours below theirs in every
    pair. Confirmed when it holds for every seed at every rho; refuted when at some rho it
    fails for every seed; inconclusive when the seeds disagree or a value is not finite."""
    values = [v for seed in pairs for rows in seed.values() for pair in rows for v in pair]
    if not all(finite_number(v) for v in values):
        return _verdict(*claim, values, False)
    holds = {rho: [all(a < b for a, b in seed[rho]) for seed in pairs] for rho in pairs[0]}
    losing = [rho for rho, seeds in holds.items() if not any(seeds)]
    mixed = [rho for rho, seeds in holds.items() if any(seeds) and not all(seeds)]
    if losing:
        why = f"the predicted order fails for every model at rho = {', '.join(losing)}"
        return Claim.judged(*claim, False, why)
    if mixed:
        return Claim.undecided(*claim, f"the seeds disagree at rho = {', '.join(mixed)}")
    return Claim.judged(*claim, True)


def _shown(methods: list[dict], names: tuple[str, ...], rhos, metric: str = "kl") -> dict:
    """Each method's ``metric`` at each rho: median and range over seeds."""
    return {
        rho: {name: over_seeds([_value(m, name, rho, metric) for m in methods]) for name in names}
        for rho in rhos
    }


def _error_falls(name: str, methods: list[dict]) -> Claim:
    rhos = sorted(methods[0][name], key=float)
    values = [_value(m, name, rho, "attention_error") for m in methods for rho in rhos]
    medians = [
        over_seeds([_value(m, name, rho, "attention_error") for m in methods]) for rho in rhos
    ]
    medians = [None if cell.get("missing") else cell["median"] for cell in medians]
    falls = None not in medians and all(a <= b for a, b in itertools.pairwise(medians))
    return _verdict(
        f"error_falls:{name}",
        f"{name}: error falls as rank rises",
        "monotone",
        medians,
        "median attention-output error over seeds non-decreasing in rho",
        values,
        falls,
    )


def _beats_final_loop(methods: list[dict], T: str, models: str) -> Claim:
    metrics = ("kl", "attention_error")
    claim = (
        "beats_final_loop",
        f"LLA beats final-loop reuse at rho = {T} ({models})",
        "LLA better",
        {metric: _shown(methods, ("lla", "final_loop"), [T], metric)[T] for metric in metrics},
        "lower KL and attention error, for every seed",
    )
    pairs = [
        {
            T: [
                (_value(m, "lla", T, metric), _value(m, "final_loop", T, metric))
                for metric in metrics
            ]
        }
        for m in methods
    ]
    return _ordered(claim, pairs)


def _distillation_helps(methods: list[dict], teacher_frozen: bool, models: str) -> list[Claim]:
    """One claim per rho: the refined codec's KL below the SVD codec's for every seed."""
    out = []
    for rho in methods[0]["lla_distilled"]:
        claim = (
            f"distillation_helps:rho={rho}",
            f"distillation (teacher frozen) lowers LLA's KL at rho = {rho} ({models})",
            "lower",
            _shown(methods, ("lla", "lla_distilled"), [rho])[rho],
            "distilled KL < SVD KL, for every seed; every teacher's weights unchanged",
        )
        if not teacher_frozen:  # whatever the KLs
            out.append(Claim.judged(*claim, False, TEACHER_CHANGED))
            continue
        pairs = [{rho: [(_value(m, "lla_distilled", rho), _value(m, "lla", rho))]} for m in methods]
        out.append(_ordered(claim, pairs))
    return out


def _beats_head_axis(methods: list[dict], models: str) -> Claim:
    rhos = list(methods[0]["lla"])
    claim = (
        "beats_head_axis",
        f"LLA beats head-axis compression at matched bytes ({models})",
        "LLA better",
        _shown(methods, ("lla", "head_axis"), rhos),
        "lower next-token KL at every rho, for every seed",
    )
    pairs = [
        {rho: [(_value(m, "lla", rho), _value(m, "head_axis", rho))] for rho in rhos}
        for m in methods
    ]
    return _ordered(claim, pairs)


def _beats_quantize(methods: list[dict], teacher_frozen: bool, models: str) -> list[Claim]:
    """The paper ranks LLA above KV quantization at matched bytes: one claim per rho where
    quantization has bits left once its scales are paid for (the same for every seed: the
    bits follow from the cache's dtype and the head width). LLA is the paper's codec, the SVD
    start refined, where the measurement refined one (inconclusive if a teacher moved: its
    numbers are of another model); the SVD codec is shown beside it."""
    first = methods[0]
    rhos = [rho for rho in first["quantize"] if rho in first["lla"]]
    lla = "lla_distilled" if first.get("lla_distilled") else "lla"
    which = "LLA (refined)" if lla == "lla_distilled" else "LLA"
    shown = (lla, "lla", "quantize") if lla == "lla_distilled" else ("lla", "quantize")
    statement = f"{which} beats uniform quantization of the cache at matched bytes"
    tolerance = "lower next-token KL, for every seed"
    if not rhos:
        why = "quantization has no bits left at any rho of the grid"
        claim = ("beats_quantize", f"{statement} ({models})", "LLA better", {}, tolerance)
        return [Claim.undecided(*claim, why)]
    out = []
    for rho in rhos:
        measured = _shown(methods, shown, [rho])[rho]
        measured["bits"] = first["quantize"][rho]["bits"]
        claim = (
            f"beats_quantize:rho={rho}",
            f"{statement} at rho = {rho} ({models})",
            "LLA better",
            measured,
            tolerance,
        )
        if lla == "lla_distilled" and not teacher_frozen:
            why = f"{TEACHER_CHANGED} in the refinement: its numbers are of another model"
            out.append(Claim.undecided(*claim, why))
            continue
        pairs = [{rho: [(_value(m, lla, rho), _value(m, "quantize", rho))]} for m in methods]
        out.append(_ordered(claim, pairs))
    return out
