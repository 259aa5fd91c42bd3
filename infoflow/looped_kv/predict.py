"""``looped_kv`` spec -> predictions: cache bytes, compression ratios, weights, capacity."""

from __future__ import annotations

import sympy

from infoflow.looped_kv import formulas as F
from infoflow.looped_kv.spec import DTYPE_BYTES, LoopedKVSpec
from infoflow.results import Prediction, Result

PAPER = "O'Neill & Reid 2026 (Looped Latent Attention)"
GIB = 2**30

#: What each codec variant keeps of the looped part, in words.
VARIANTS = {
    "none": "no codec: every loop's K/V are kept",
    "per_head": "LLA: one (r_k, r_v) latent per token, core layer and KV head",
    "2d": "LLA-2D: one (r_k, r_v) latent per token and core layer for all KV heads",
    "final_loop": "final-loop reuse: only the last loop's K/V are kept",
}


def predict_looped_kv(spec: LoopedKVSpec, source: str | None = None) -> Result:
    """Every ``looped_kv`` prediction for ``spec``."""
    model, codec, serving = spec.model, spec.codec, spec.serving
    values = F.model_values(model, DTYPE_BYTES[serving.cache_dtype or model.dtype])
    values[F.N] = serving.sequence_tokens
    if codec.r_k is not None and codec.r_v is not None:
        values[F.r_k], values[F.r_v] = codec.r_k, codec.r_v
    kept = VARIANTS[codec.variant]
    weight_bytes = DTYPE_BYTES[model.dtype]
    full, compressed = F.FULL_PER_TOKEN, F.compressed_per_token(codec.variant)
    params, codec_params = F.model_parameters(model), F.codec_parameters(codec.variant)
    tokens = f"one sequence of N = {serving.sequence_tokens:,} tokens (context + generated)"

    formulas = {  # name: (expression, unit, provenance, note); all exact
        "kv_bytes_per_token": (
            full, "B/token", "paper:summary",
            f"{PAPER}: every loop keeps its own K/V, 2*bytes*n_kv*d_head*(P + T*R + C).",
        ),
        "kv_bytes_per_token_compressed": (
            compressed, "B/token", "paper:summary",
            f"{PAPER}: {kept}; prelude and coda stay full.",
        ),
        "compression_ratio": (
            F.compression_ratio(codec.variant), "x", "paper:summary",
            f"{PAPER}: rho of the looped part, full bytes over compressed bytes ({kept}).",
        ),
        "whole_cache_ratio": (
            F.whole_cache_ratio(codec.variant), "x", "derived",
            "The whole cache, prelude and coda included: full bytes over compressed bytes.",
        ),
        "kv_cache_bytes": (F.N * full, "B", "derived", f"Full cache of {tokens}."),
        "kv_cache_bytes_compressed": (
            F.N * compressed, "B", "derived", f"Compressed cache of {tokens}.",
        ),
        "model_parameters": (
            params, "params", "derived",
            "Counted from the architecture: embeddings, attention, MLP, norms, head, loop "
            "adapter and exit gate where present; weight tying saves weights, not cache.",
        ),
        "weight_bytes": (params * weight_bytes, "B", "derived", f"Parameters in {model.dtype}."),
        "codec_parameters": (
            codec_params, "params", "derived",
            f"The codec as {PAPER} defines it: per K or V, W_down and the T maps W_up,t "
            "(2*D*r) plus the mean mu (D), D = T*d_head per core layer and KV head "
            "(per_head) or T*d_head*n_kv per core layer (2d); none for the other variants.",
        ),
        "codec_weight_bytes": (
            codec_params * weight_bytes, "B", "derived", f"Codec parameters in {model.dtype}.",
        ),
    }  # fmt: skip
    out = {
        name: Prediction(_number(expr.subs(values)), unit, "exact", provenance, note, expr)
        for name, (expr, unit, provenance, note) in formulas.items()
    }
    out.update(_capacity(spec, out, values))
    return Result(kind=spec.kind, spec=spec, predictions=out, source=source)


def _capacity(
    spec: LoopedKVSpec, out: dict[str, Prediction], values: dict[sympy.Symbol, int]
) -> dict[str, Prediction]:
    """Cache budgets, maximal batch and maximal context, when the spec gives a budget."""
    serving = spec.serving
    if serving.memory_budget_gib is not None:
        budget_full = budget_compressed = _exact(serving.memory_budget_gib) * GIB
        where = "the spec's memory_budget_gib, all of it for the cache"
    elif serving.device_memory_gib is not None:
        usable = _exact(serving.device_memory_gib) * _exact(serving.usable_fraction) * GIB
        budget_full = usable - out["weight_bytes"].value - _exact(serving.overhead_gib) * GIB
        budget_compressed = budget_full - out["codec_weight_bytes"].value
        where = "device memory * usable_fraction - weights - overhead (- codec weights)"
    else:
        return {}
    stepped = serving.batch_step is not None
    rounding = f", rounded down to a multiple of {serving.batch_step}" if stepped else ""
    at = {**values, F.step: serving.batch_step or 1}
    result = {}
    for suffix, budget, per_token in (
        ("", budget_full, F.FULL_PER_TOKEN),
        ("_compressed", budget_compressed, F.compressed_per_token(spec.codec.variant)),
    ):
        budget_bytes = max(0, int(sympy.floor(budget)))
        at[F.budget] = budget_bytes
        batch, context = F.max_batch(per_token, stepped), sympy.floor(F.budget / per_token)
        result[f"cache_budget_bytes{suffix}"] = Prediction(
            budget_bytes, "B", "exact", "derived", f"Memory for the cache: {where}."
        )
        result[f"max_batch{suffix}"] = Prediction(
            int(batch.subs(at)), "sequences", "upper", "paper:summary",
            f"{PAPER}: floor(budget / (N * cache bytes per token)){rounding}; an upper bound "
            "(paging, fragmentation and activations take their share).",
            batch,
        )  # fmt: skip
        result[f"max_context_tokens{suffix}"] = Prediction(
            int(context.subs(at)), "tokens", "upper", "derived",
            "The longest single sequence whose cache fits in the budget.",
            context,
        )  # fmt: skip
    return result


def _exact(number: float) -> sympy.Rational:
    """A spec's decimal number as an exact rational (0.9 -> 9/10), so floors are exact."""
    return sympy.Rational(str(number))


def _number(value: sympy.Expr) -> int | float:
    return int(value) if value.is_Integer else float(value)
