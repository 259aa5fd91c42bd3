"""Weights and cache forms -> what fits: the cache budget, the largest batch and context, and
the memory a given batch takes.

A budget given directly is all the cache's. A device's budget is its memory (times the
tensor-parallel devices) times the usable fraction, less the weights and the overhead; when
the weights do not fit, the result says so (weights X > memory Y) and has no capacity rows.
With tensor parallelism the weights are counted once, split over the devices: what every
device repeats (norms; K/V projections when there are more devices than KV heads) is not
counted, so the budget is an upper bound; the cache's copies are counted
(:func:`stored`).
"""

from __future__ import annotations

from fractions import Fraction

from infoflow.core.results import Prediction
from infoflow.looped_kv import formulas as F
from infoflow.looped_kv.expressions import Expression
from infoflow.looped_kv.spec import DEVICES, LoopedKVSpec

PAPER = "O'Neill & Reid 2026 (Looped Latent Attention)"
GIB = 2**30


def plain(spec: LoopedKVSpec) -> bool:
    """A decoder that does not loop and has no codec: no codec rows apply to it."""
    model = spec.model
    looped = model.loops > 1 or model.prelude_layers or model.coda_layers
    return not looped and spec.codec.variant == "none"


def capacity(spec: LoopedKVSpec, out: dict[str, Prediction], values, forms) -> dict:
    """Cache budgets, maximal batch and maximal context, when the spec gives a budget (the
    compressed ones too when a codec applies); a model that does not fit gets ``fits_device``
    false and no capacity rows."""
    budgets = _budgets(spec, out)
    if budgets is None:
        return {}
    where, budget_full, budget_compressed, fits = budgets
    if fits is not None and not fits.value:
        return {"fits_device": fits}
    result = {"fits_device": fits} if fits is not None else {}
    suffixes = ("",) if plain(spec) else ("", "_compressed")
    for suffix, budget, per_token, per_sequence in zip(
        suffixes, (budget_full, budget_compressed), *forms, strict=False
    ):
        if suffix and fits is not None and budget <= 0:  # the codec's weights fill the rest
            result["fits_device_compressed"] = _codec_does_not_fit(out, budget_full, fits.bound)
            break
        at = F.Numbers(**vars(values), step=spec.serving.batch_step or 1)
        at.budget = max(0, F.Numbers.floor(budget))
        result.update(_budget_row(spec, suffix, at.budget, where))
        result.update(_capacity_rows(spec, suffix, at, (per_token, per_sequence)))
    return result


def _codec_does_not_fit(out: dict[str, Prediction], left: Fraction, bound: str) -> Prediction:
    """No room for the compressed cache: as certain as the weights' fit (``bound``)."""
    codec = out["codec_weight_bytes"].value
    note = (
        f"the codec's weights {_bytes(codec)} > the memory the model's weights leave "
        f"{_bytes(int(left))}: the compressed cache has no room, so no compressed capacity is "
        "given"
    )
    return Prediction(False, "", bound, "derived", note)


def _budget_row(spec: LoopedKVSpec, suffix: str, budget: int, where: str) -> dict:
    """The cache budget row: exact, or an upper bound under tensor parallelism."""
    tp = spec.serving.tensor_parallel
    bound, note = "exact", f"Memory for the cache: {where}."
    if tp > 1 and spec.serving.memory_budget_gib is None:
        bound = "upper"
        note += (
            f" An upper bound: the weights are counted once, split over {tp} devices; what each "
            "device repeats (norms, and the K/V projections when tensor_parallel exceeds the "
            f"{spec.model.kv_heads} KV heads) is not subtracted."
        )
    return {f"cache_budget_bytes{suffix}": Prediction(budget, "B", bound, "derived", note)}


def _capacity_rows(spec: LoopedKVSpec, suffix: str, at, forms) -> dict:
    """The largest batch and context in ``at.budget``, the cache as the devices hold it."""
    per_token, per_sequence, copied = stored(spec, bool(suffix), *forms)
    serving, model = spec.serving, spec.model
    stepped = serving.batch_step is not None
    rounding = f", rounded down to a multiple of {serving.batch_step}" if stepped else ""
    divisor = (
        "cache bytes of one sequence, windows capped"
        if model.sliding_window
        else "(N * cache bytes per token)"
    )
    source = "paper:summary" if model.loops > 1 else "derived"  # the paper's rule is for loops
    if suffix and spec.codec.variant == "head_axis":  # the control's bytes are derived (a review)
        source = "derived"
    placed = ", reconstruction:cache_placement" if latent_copied(spec, bool(suffix)) else ""
    source += placed
    rule = f"{PAPER}: " if model.loops > 1 else ""

    def batch(s):
        return F.max_batch(s, per_sequence(s), stepped)

    def context(s):
        if serving.cache_residual_tokens:
            return F.max_context_with_residual(s, per_token(s))
        if serving.engine == "vllm":
            return F.max_context_paged(s, per_token(s))
        return F.max_context(s, model, per_token(s))

    note = (
        f"{rule}floor(budget / {divisor}){rounding}{copied}; an upper bound (paging, "
        "fragmentation and activations take their share)."
    )
    largest, unrounded = int(batch(at)), int(F.max_batch(at, per_sequence(at), False))
    if unrounded != largest:
        note += f" Before the rounding, {unrounded:,} sequences fit."
    return {
        f"max_batch{suffix}": Prediction(
            largest,
            "sequences" + (f" (steps of {serving.batch_step})" if stepped else ""),
            "upper",
            source,
            note,
            Expression(batch),
        ),
        f"max_context_tokens{suffix}": _max_context(spec, context, at, per_token, placed),
    }


def _budgets(spec: LoopedKVSpec, out: dict[str, Prediction]):
    """(where the budget comes from, full budget, compressed budget, whether the weights fit
    the device: a prediction, or None for a budget given directly), or None."""
    serving = spec.serving
    if serving.memory_budget_gib is not None:
        budget = exact(serving.memory_budget_gib) * GIB
        return "the spec's memory_budget_gib, all of it for the cache", budget, budget, None
    device = serving.device_bytes
    if device is None:
        return None
    tp = serving.tensor_parallel
    usable = Fraction(device) * tp * exact(serving.usable_fraction)
    usable -= tp * exact(serving.overhead_gib) * GIB
    weights = out["weight_bytes"].value
    budget_full = usable - weights
    budget_compressed = budget_full - out.get("codec_weight_bytes", _ZERO).value
    memory = f"{serving.device} ({DEVICES[serving.device]} GB)" if serving.device else "device"
    devices = f"{tp} x " if tp > 1 else ""
    where = f"{devices}{memory} memory * usable_fraction - weights - {devices}overhead" + (
        "" if plain(spec) else " (- codec weights)"
    )
    fits = budget_full > 0
    said = "<=" if fits else ">"
    note = (
        f"weights {_bytes(weights)} {said} memory {_bytes(int(usable))} "
        f"({devices}{memory} * usable_fraction {serving.usable_fraction}"
        f"{' - overhead' if serving.overhead_gib else ''})"
    )
    if usable <= 0:
        overhead = tp * exact(serving.overhead_gib) * GIB
        note = (
            f"the overhead {_bytes(overhead)} takes all of {devices}{memory} * usable_fraction "
            f"{serving.usable_fraction} ({_bytes(int(usable + overhead))}): nothing is left for "
            "the weights"
        )
    if not fits:
        note += ": the model does not fit, so no capacity is given"
    # across devices, weights each device repeats are not counted: a fit is then not certain
    bound = "estimate" if fits and tp > 1 else "exact"
    return where, budget_full, budget_compressed, Prediction(fits, "", bound, "derived", note)


_ZERO = Prediction(0, "B", "exact", "derived")


def _batch_fits(spec: LoopedKVSpec, batch: str, memory: int, cache: int, bound: str):
    """(name, prediction) of whether the batch fits: its cache in a budget given directly, or
    weights, overhead and cache in the devices' usable memory; a certain no when it does not
    and the cache is exact (what is left out only adds), an estimate otherwise (``bound``: the
    cache's; an upper bound may overstate it). ``batch`` names the batch. None without a
    budget."""
    serving = spec.serving
    if serving.memory_budget_gib is not None:
        name, taken, usable = "batch_fits_budget", cache, exact(serving.memory_budget_gib) * GIB
        where = "the budget (memory_budget_gib, all of it the cache's)"
        what = f"the cache of {batch}"
    elif serving.device_bytes is not None:
        name, taken = "batch_fits_device", memory
        usable = serving.device_bytes * serving.tensor_parallel * exact(serving.usable_fraction)
        where, what = "memory", batch
    else:
        return None
    fits = taken <= usable
    note = f"{what} takes {_bytes(taken)} {'<=' if fits else '>'} {where} {_bytes(int(usable))}"
    if fits:
        left_out = " (activations not counted)" if name == "batch_fits_device" else ""
        return name, Prediction(True, "", "estimate", "derived", note + left_out)
    certain = "exact" if bound == "exact" else "estimate"
    return name, Prediction(False, "", certain, "derived", note + ": it does not fit")


def batch_memory(spec: LoopedKVSpec, out: dict[str, Prediction], values, per_sequence) -> dict:
    """The cache and the memory of ``serving.batch`` sequences, when the spec gives a batch:
    stored in full, and compressed when a codec applies (its weights counted)."""
    if spec.serving.batch is None:
        return {}
    suffixes = ("",) if plain(spec) else ("", "_compressed")
    rows: dict[str, Prediction] = {}
    for suffix, form in zip(suffixes, per_sequence, strict=False):
        rows.update(_batch_rows(spec, out, values, suffix, form))
    return rows


def _batch_rows(spec: LoopedKVSpec, out, values, suffix: str, per_sequence: F.Form) -> dict:
    batch, tp = spec.serving.batch, spec.serving.tensor_parallel
    per_sequence = stored(spec, bool(suffix), per_sequence, per_sequence)[1]
    cache = int(batch * per_sequence(values))
    overhead = int(tp * exact(spec.serving.overhead_gib) * GIB)
    weights = out["weight_bytes"].value
    codec = ""
    if suffix:
        weights += out["codec_weight_bytes"].value
        codec = " + the codec's weights"
    memory = weights + cache + overhead
    bound = out[f"kv_cache_bytes{suffix}"].bound  # upper for chunked layers, residual windows
    named = f"a batch of {batch}" + (", compressed," if suffix else "")
    fits = _batch_fits(spec, named, memory, cache, bound)
    stored_as = "compressed, " if suffix else ""
    return {
        **({f"{fits[0]}{suffix}": fits[1]} if fits is not None else {}),
        f"kv_cache_bytes_batch{suffix}": Prediction(
            cache,
            "B",
            bound,
            "derived",
            f"The cache of {batch} sequences of N tokens, {stored_as}as all devices hold it.",
        ),
        f"serving_memory_bytes{suffix}": Prediction(
            memory,
            "B",
            "lower" if bound == "exact" else "estimate",
            "derived",
            f"Weights{codec} + the cache of {batch} sequences + overhead: a lower bound "
            "(activations, the engine's own buffers and fragmentation come on top)"
            + ("." if bound == "exact" else ", less certain where the cache is an upper bound."),
        ),
    }


def latent_copied(spec: LoopedKVSpec, compressed: bool) -> bool:
    """Whether devices keep a latent shared by all heads, each its own copy: the
    reconstruction of :func:`stored` a capacity's provenance names
    (``reconstruction:cache_placement``)."""
    shared = spec.model.latent_attention or (
        compressed and spec.codec.variant in ("2d", "head_axis")
    )
    return spec.serving.tensor_parallel > 1 and bool(shared)


def stored(spec: LoopedKVSpec, compressed: bool, per_token: F.Form, per_sequence: F.Form):
    """The bytes all ``tensor_parallel`` devices hold together for one token and for one
    sequence, and a note (a reconstruction of how serving engines place a cache): K/V heads
    are split over the devices, each copied when there are more devices than heads; a latent
    shared by all heads (latent attention, LLA-2D, the head-axis latent) is kept on every
    device, while the prelude and coda K/V beside it split like heads."""
    tp, model, variant = spec.serving.tensor_parallel, spec.model, spec.codec.variant
    head_copies = max(1, tp // model.kv_heads)
    heads = f"; each KV head kept {head_copies} times" if head_copies > 1 else ""
    if model.latent_attention:
        note = f"; the latent kept on each of the {tp} devices" if tp > 1 else ""
        return lambda s: tp * per_token(s), lambda s: tp * per_sequence(s), note
    if latent_copied(spec, compressed):

        def token(s):
            return tp * F.looped_compressed(s, variant) + head_copies * F.unlooped(s)

        note = f"; the shared latents kept on each of the {tp} devices{heads}"
        return token, lambda s: s.N * token(s), note
    return (lambda s: head_copies * per_token(s), lambda s: head_copies * per_sequence(s), heads)


def _max_context(
    spec, context: F.Form, at: F.Numbers, per_token: F.Form, placed: str
) -> Prediction:
    """The longest sequence; unbounded when every layer is windowed and a full window of
    ``per_token`` bytes (as the devices hold it) fits. ``placed``: the provenance's tag of a
    latent copied onto every device, or ""."""
    model, serving = spec.model, spec.serving
    note = "The longest single sequence whose cache fits in the budget."
    if serving.engine == "vllm":
        pages = f"{serving.block_size} tokens: block * floor(budget / page bytes)"
        note += f" In whole vLLM pages of {pages}."
    if model.sliding_window and at.L_w == at.R:
        windowed = at.W * per_token(at)
        if windowed <= at.budget:
            return Prediction(
                None,
                "tokens",
                "upper",
                "derived" + placed,
                f"Unbounded: every layer is windowed, and a full window "
                f"({int(windowed):,} B) fits in the budget.",
                Expression(context),
            )
    source = "derived" + placed
    return Prediction(int(context(at)), "tokens", "upper", source, note, Expression(context))


def _bytes(number: int | Fraction) -> str:
    """Bytes as a person reads them: 150,000,000,000 B (139.7 GiB)."""
    return f"{int(number):,} B ({float(number / GIB):.1f} GiB)"


def exact(number: float) -> Fraction:
    """A spec's decimal number as an exact rational (0.9 -> 9/10), so floors are exact."""
    return Fraction(str(number))
