"""``looped_kv`` spec -> predictions: cache bytes, compression ratios, weights, capacity.

Values are exact integer and rational arithmetic on the formulas of :mod:`formulas`; each
prediction's sympy expression is built from the same formula only when asked for, and its
printed text comes from :mod:`expressions`.
"""

from __future__ import annotations

from fractions import Fraction

from infoflow.core.results import Prediction, Result
from infoflow.looped_kv import formulas as F
from infoflow.looped_kv.expressions import Expression
from infoflow.looped_kv.spec import DEVICES, DTYPE_BYTES, QUANTIZED, LoopedKVSpec

PAPER = "O'Neill & Reid 2026 (Looped Latent Attention)"
GIB = 2**30

#: What each codec variant keeps of the looped part, in words.
VARIANTS = {
    "none": "no codec: every loop's K/V are kept",
    "per_head": "LLA: one (r_k, r_v) latent per token, core layer and KV head",
    "2d": "LLA-2D: one (r_k, r_v) latent per token and core layer for all KV heads and loops",
    "head_axis": "MLA-style: one (r_k, r_v) latent per token, core layer and loop for all KV heads",
    "final_loop": "final-loop reuse: only the last loop's K/V are kept",
}


def predict_looped_kv(spec: LoopedKVSpec, source: str | None = None) -> Result:
    """Every ``looped_kv`` prediction for ``spec``."""
    model, codec, serving = spec.model, spec.codec, spec.serving
    values = F.model_values(model, spec.cache_element_bytes)
    values.N = serving.sequence_tokens
    if codec.r_k is not None and codec.r_v is not None:
        values.r_k, values.r_v = codec.r_k, codec.r_v
    variant = codec.variant
    kept = VARIANTS[codec.variant]
    full, compressed, full_sequence, compressed_sequence = _cache_forms(spec)
    tokens = f"one sequence of N = {serving.sequence_tokens:,} tokens (context + generated)"

    formulas = {  # name: (formula, unit, provenance, note); all exact
        "kv_bytes_per_token": (full, "B/token", *_cache_source(spec)),
        "kv_bytes_per_token_compressed": (
            compressed,
            "B/token",
            *_compressed_source(spec, kept),
        ),
        "compression_ratio": (
            lambda s: F.compression_ratio(s, variant),
            "x",
            "derived" if codec.variant == "head_axis" else "paper:summary",
            f"{PAPER}: rho of the looped part, full bytes over compressed bytes ({kept}).",
        ),
        "whole_cache_ratio": (
            lambda s: F.whole_cache_ratio(s, variant),
            "x",
            "derived",
            "The whole cache, prelude and coda included: full bytes over compressed bytes.",
        ),
        "kv_cache_bytes": (full_sequence, "B", "derived", f"Full cache of {tokens}."),
        "kv_cache_bytes_compressed": (
            compressed_sequence,
            "B",
            "derived",
            f"Compressed cache of {tokens}.",
        ),
        **_weights(spec),
    }
    out = {
        name: Prediction(_number(form(values)), unit, "exact", provenance, note, Expression(form))
        for name, (form, unit, provenance, note) in formulas.items()
    }
    forms = (full, compressed), (full_sequence, compressed_sequence)
    out.update(_capacity(spec, out, values, forms))
    return Result(kind=spec.kind, spec=spec, predictions=out, source=source)


def _weights(spec: LoopedKVSpec) -> dict[str, tuple]:
    """The formulas of the model's and the codec's parameters and bytes."""
    model, variant = spec.model, spec.codec.variant
    weight_bytes = DTYPE_BYTES[model.dtype]

    def params(s):
        return F.model_parameters(s, model)

    def codec_params(s):
        return F.codec_parameters(s, variant)

    head_axis = " head_axis: D = n_kv*d_head per core layer and loop (reconstruction)."
    out = {
        "model_parameters": (
            params,
            "params",
            "derived",
            "Counted from the architecture: embeddings, attention, MLP, norms, head, loop "
            "adapter and exit gate where present; weight tying saves weights, not cache.",
        ),
        "weight_bytes": (
            lambda s: params(s) * weight_bytes,
            "B",
            "derived",
            f"Parameters in {model.dtype}.",
        ),
        "codec_parameters": (
            codec_params,
            "params",
            "derived",
            f"The codec as {PAPER} defines it: per K or V, W_down and the T maps W_up,t "
            "(2*D*r) plus the mean mu (D), D = T*d_head per core layer and KV head "
            "(per_head) or T*d_head*n_kv per core layer (2d); none for the other variants."
            + (head_axis if variant == "head_axis" else ""),
        ),
        "codec_weight_bytes": (
            lambda s: codec_params(s) * weight_bytes,
            "B",
            "derived",
            f"Codec parameters in {model.dtype}.",
        ),
    }
    if model.experts:
        out["active_parameters"] = (
            lambda s: F.active_parameters(s, model),
            "params",
            "derived",
            "Parameters one token uses: every parameter but the routed experts it is not sent "
            f"to ({model.experts.per_token} of {model.experts.routed} in each MoE layer).",
        )
    return out


def _cache_forms(spec: LoopedKVSpec) -> tuple[F.Form, ...]:
    """Cache bytes per token and per sequence, full and compressed. Latent attention and
    windowed layers take no codec (the spec checks), so theirs are the full forms."""
    model, variant = spec.model, spec.codec.variant
    if model.latent_attention or model.sliding_window:

        def per_token(s):
            return F.cache_per_token(s, model)

        def per_sequence(s):
            return F.cache_per_sequence(s, model)

        return per_token, per_token, per_sequence, per_sequence

    def compressed(s):
        return F.compressed_per_token(s, variant)

    return (
        F.full_per_token,
        compressed,
        lambda s: s.N * F.full_per_token(s),
        lambda s: s.N * compressed(s),
    )


def _cache_source(spec: LoopedKVSpec) -> tuple[str, str]:
    """Provenance and note of the cache bytes per token."""
    model, dtype = spec.model, spec.serving.cache_dtype or spec.model.dtype
    scales = ""
    if dtype in QUANTIZED:
        group = spec.serving.cache_group_size
        scales = (
            f"; {dtype} with an fp16 scale and zero point per group of {group} numbers: "
            f"bytes = {spec.cache_element_bytes}"
        )
    if model.latent_attention:
        return "standard:deepseek-v2", (
            "Multi-head latent attention: per layer the compressed latent (c_kv numbers) and "
            "the decoupled RoPE key (d_rope), shared by all heads, as a serving engine that "
            f"caches the latent keeps them{scales}."
        )
    if model.sliding_window:
        return "standard:sliding-window", (
            f"A token cached by every layer: 2*bytes*n_kv*d_head*R; the L_w windowed layers "
            f"keep only the last W = {model.sliding_window:,} tokens{scales}."
        )
    return "paper:summary", (
        f"{PAPER}: every loop keeps its own K/V, 2*bytes*n_kv*d_head*(P + T*R + C){scales}."
    )


def _compressed_source(spec: LoopedKVSpec, kept: str) -> tuple[str, str]:
    """Provenance and note of the compressed cache bytes per token."""
    if spec.model.latent_attention or spec.model.sliding_window:
        provenance, note = _cache_source(spec)
        return provenance, f"No codec: the same as kv_bytes_per_token. {note}"
    if spec.codec.variant == "head_axis":
        return "derived", (
            f"{kept} (the control {PAPER} compares with; its bytes follow from "
            "the layout); prelude and coda stay full."
        )
    return "paper:summary", f"{PAPER}: {kept}; prelude and coda stay full."


def _capacity(spec: LoopedKVSpec, out: dict[str, Prediction], values, forms) -> dict:
    """Cache budgets, maximal batch and maximal context, when the spec gives a budget."""
    budgets = _budgets(spec, out)
    if budgets is None:
        return {}
    where, budget_full, budget_compressed = budgets
    serving, model = spec.serving, spec.model
    stepped = serving.batch_step is not None
    rounding = f", rounded down to a multiple of {serving.batch_step}" if stepped else ""
    at = F.Numbers(**vars(values), step=serving.batch_step or 1)
    divisor = (
        "cache bytes of one sequence, windows capped"
        if model.sliding_window
        else "(N * cache bytes per token)"
    )
    source = "paper:summary" if model.loops > 1 else "derived"  # the paper's rule is for loops
    result = {}
    for suffix, budget, per_token, per_sequence in zip(
        ("", "_compressed"), (budget_full, budget_compressed), *forms, strict=True
    ):
        at.budget = max(0, F.Numbers.floor(budget))
        per_token, per_sequence, copied = _stored(spec, bool(suffix), per_token, per_sequence)

        def batch(s, per_sequence=per_sequence):
            return F.max_batch(s, per_sequence(s), stepped)

        def context(s, per_token=per_token):
            return F.max_context(s, model, per_token(s))

        result[f"cache_budget_bytes{suffix}"] = Prediction(
            at.budget, "B", "exact", "derived", f"Memory for the cache: {where}."
        )
        result[f"max_batch{suffix}"] = Prediction(
            int(batch(at)),
            "sequences",
            "upper",
            source,
            f"{PAPER}: floor(budget / {divisor}){rounding}{copied}; an upper bound (paging, "
            "fragmentation and activations take their share).",
            Expression(batch),
        )
        result[f"max_context_tokens{suffix}"] = _max_context(model, context, at, per_token)
    return result


def _budgets(spec: LoopedKVSpec, out: dict[str, Prediction]):
    """(where the budget comes from, full budget, compressed budget) in bytes, or None."""
    serving = spec.serving
    if serving.memory_budget_gib is not None:
        budget = _exact(serving.memory_budget_gib) * GIB
        return "the spec's memory_budget_gib, all of it for the cache", budget, budget
    device = serving.device_bytes
    if device is None:
        return None
    tp = serving.tensor_parallel
    usable = Fraction(device) * tp * _exact(serving.usable_fraction)
    budget_full = usable - out["weight_bytes"].value - tp * _exact(serving.overhead_gib) * GIB
    budget_compressed = budget_full - out["codec_weight_bytes"].value
    memory = f"{serving.device} ({DEVICES[serving.device]} GB)" if serving.device else "device"
    devices = f"{tp} x " if tp > 1 else ""
    where = (
        f"{devices}{memory} memory * usable_fraction - weights - {devices}overhead (- codec "
        "weights)"
    )
    return where, budget_full, budget_compressed


def _stored(spec: LoopedKVSpec, compressed: bool, per_token: F.Form, per_sequence: F.Form):
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
    if compressed and variant in ("2d", "head_axis") and tp > 1:

        def token(s):
            return tp * F.looped_compressed(s, variant) + head_copies * F.unlooped(s)

        note = f"; the shared latents kept on each of the {tp} devices{heads}"
        return token, lambda s: s.N * token(s), note
    return (lambda s: head_copies * per_token(s), lambda s: head_copies * per_sequence(s), heads)


def _max_context(model, context: F.Form, at: F.Numbers, per_token: F.Form) -> Prediction:
    """The longest sequence; unbounded when every layer is windowed and a full window of
    ``per_token`` bytes (as the devices hold it) fits."""
    note = "The longest single sequence whose cache fits in the budget."
    if model.sliding_window and at.L_w == at.R:
        windowed = at.W * per_token(at)
        if windowed <= at.budget:
            return Prediction(
                None,
                "tokens",
                "upper",
                "derived",
                f"Unbounded: every layer is windowed, and a full window "
                f"({int(windowed):,} B) fits in the budget.",
                Expression(context),
            )
    return Prediction(int(context(at)), "tokens", "upper", "derived", note, Expression(context))


def _exact(number: float) -> Fraction:
    """A spec's decimal number as an exact rational (0.9 -> 9/10), so floors are exact."""
    return Fraction(str(number))


def _number(value: int | Fraction) -> int | float:
    return int(value) if value.denominator == 1 else float(value)
