"""``looped_kv`` spec -> predictions: cache bytes, compression ratios, weights, capacity."""

from __future__ import annotations

import sympy

from infoflow.looped_kv import formulas as F
from infoflow.looped_kv.spec import DTYPE_BYTES, LoopedKVSpec
from infoflow.results import Prediction, Result

PAPER = "O'Neill & Reid 2026 (Looped Latent Attention)"
GIB = 2**30


def predict_looped_kv(spec: LoopedKVSpec, source: str | None = None) -> Result:
    """Every ``looped_kv`` prediction for ``spec``."""
    model, codec, serving = spec.model, spec.codec, spec.serving
    values = F.model_values(model, DTYPE_BYTES[serving.cache_dtype or model.dtype])
    values[F.N] = serving.sequence_tokens
    if codec.r_k is not None and codec.r_v is not None:
        values[F.r_k], values[F.r_v] = codec.r_k, codec.r_v
    variant = codec.variant
    weight_dtype_bytes = DTYPE_BYTES[model.dtype]

    def formula(expr: sympy.Expr, unit: str, bound: str, provenance: str, note: str):
        return Prediction(_number(expr.subs(values)), unit, bound, provenance, note, expr)

    full, compressed = F.FULL_PER_TOKEN, F.compressed_per_token(variant)
    params_expr, codec_expr = F.model_parameters(model), F.codec_parameters(variant)
    out = {
        "kv_bytes_per_token": formula(
            full,
            "B/token",
            "exact",
            "paper:summary",
            f"{PAPER}: every loop keeps its own K/V, 2*bytes*n_kv*d_head*(P + T*R + C).",
        ),
        "kv_bytes_per_token_compressed": formula(
            compressed,
            "B/token",
            "exact",
            "paper:summary",
            f"{PAPER}: the {variant} codec on the looped part; prelude and coda stay full.",
        ),
        "compression_ratio": formula(
            F.compression_ratio(variant),
            "x",
            "exact",
            "paper:summary",
            f"{PAPER}: rho of the looped part, full bytes over {variant} bytes.",
        ),
        "whole_cache_ratio": formula(
            F.whole_cache_ratio(variant),
            "x",
            "exact",
            "derived",
            "Whole cache, prelude and coda included: full bytes over compressed bytes.",
        ),
        "kv_cache_bytes": formula(
            F.N * full,
            "B",
            "exact",
            "derived",
            f"One sequence of N = {serving.sequence_tokens} tokens (context + generated).",
        ),
        "kv_cache_bytes_compressed": formula(
            F.N * compressed,
            "B",
            "exact",
            "derived",
            f"One sequence of N = {serving.sequence_tokens} tokens with the {variant} codec.",
        ),
        "model_parameters": formula(
            params_expr,
            "params",
            "exact",
            "derived",
            "Counted from the architecture: embeddings, attention, MLP, norms, head "
            "(and loop adapter, exit gate); weight tying shares parameters, not cache.",
        ),
        "weight_bytes": formula(
            params_expr * weight_dtype_bytes,
            "B",
            "exact",
            "derived",
            f"Parameters in {model.dtype}.",
        ),
        "codec_parameters": formula(
            codec_expr,
            "params",
            "exact",
            "derived",
            f"The codec as {PAPER} defines it: W_down and the T maps W_up,t (2*T*d_head*r per "
            "K or V, per core layer and KV head; 2d folds in the heads) plus the mean mu_t.",
        ),
        "codec_weight_bytes": formula(
            codec_expr * weight_dtype_bytes,
            "B",
            "exact",
            "derived",
            f"Codec parameters in {model.dtype}.",
        ),
    }
    out.update(_capacity(spec, out, full, compressed, values))
    return Result(kind=spec.kind, spec=spec, predictions=out, source=source)


def _capacity(
    spec: LoopedKVSpec,
    out: dict[str, Prediction],
    full: sympy.Expr,
    compressed: sympy.Expr,
    values: dict[sympy.Symbol, int],
) -> dict[str, Prediction]:
    """Cache budgets and maximal batch, when the spec gives a memory budget."""
    serving = spec.serving
    if serving.memory_budget_gib is not None:
        budget_full = budget_compressed = _exact(serving.memory_budget_gib) * GIB
        where = "the spec's memory_budget_gib, all for the cache"
    elif serving.device_memory_gib is not None:
        usable = _exact(serving.device_memory_gib) * _exact(serving.usable_fraction) * GIB
        budget_full = usable - out["weight_bytes"].value - _exact(serving.overhead_gib) * GIB
        budget_compressed = budget_full - out["codec_weight_bytes"].value
        where = "device memory * usable_fraction - weights - overhead (- codec weights)"
    else:
        return {}
    stepped = serving.batch_step is not None
    step_note = f", rounded down to a multiple of {serving.batch_step}" if stepped else ""
    at = {**values, F.step: serving.batch_step or 1}
    result = {}
    for suffix, budget, per_token in (
        ("", budget_full, full),
        ("_compressed", budget_compressed, compressed),
    ):
        budget_bytes = max(0, int(sympy.floor(budget)))
        result[f"cache_budget_bytes{suffix}"] = Prediction(
            budget_bytes, "B", "exact", "derived", f"Memory for the cache: {where}."
        )
        expr = F.max_batch(per_token, stepped)
        batch = int(expr.subs({**at, F.budget: budget_bytes}))
        result[f"max_batch{suffix}"] = Prediction(
            batch,
            "sequences",
            "upper",
            "paper:summary",
            f"{PAPER}: floor(budget / (N * cache bytes per token)){step_note}; an upper bound "
            "(paging, fragmentation and activations take their share).",
            expr,
        )
    return result


def _exact(number: float) -> sympy.Rational:
    """A spec's decimal number as an exact rational (0.9 -> 9/10), so floors are exact."""
    return sympy.Rational(str(number))


def _number(value: sympy.Expr) -> int | float:
    if value.is_Integer:
        return int(value)
    return float(value)
