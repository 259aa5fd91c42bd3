"""The ``looped_kv`` formulas as sympy expressions (theory note ``looped_kv.md``).

Every number the family predicts is one of these expressions evaluated at the spec's values,
so the formula a user reads and the value they get cannot drift apart. Symbols follow the
paper: ``bytes`` per cache element, ``n_kv`` KV heads, ``d_head``, ``P``/``R``/``C`` prelude,
core and coda layers, ``T`` loops, ``r_k``/``r_v`` latent ranks, ``N`` tokens per sequence.
"""

from __future__ import annotations

import sympy

from infoflow.looped_kv.spec import LoopedModel

bytes_, n_kv, d_head, P, R, C, T, r_k, r_v, N = sympy.symbols(
    "bytes n_kv d_head P R C T r_k r_v N", positive=True, integer=True
)
h, V, f, n_q = sympy.symbols("h V f n_q", positive=True, integer=True)
budget, step = sympy.symbols("budget step", positive=True)

#: K and V of one token in one layer.
_KV_PER_LAYER = 2 * bytes_ * n_kv * d_head

#: Full cache per token: every loop keeps its own K/V (paper).
FULL_PER_TOKEN = _KV_PER_LAYER * (P + T * R + C)
_LOOPED_FULL = _KV_PER_LAYER * T * R
_UNLOOPED = _KV_PER_LAYER * (P + C)

#: The looped part of the cache per token, by codec variant (paper); prelude and coda stay full.
LOOPED_COMPRESSED: dict[str, sympy.Expr] = {
    "none": _LOOPED_FULL,
    "per_head": bytes_ * R * n_kv * (r_k + r_v),
    "2d": bytes_ * R * (r_k + r_v),
    "final_loop": _KV_PER_LAYER * R,
}


def compressed_per_token(variant: str) -> sympy.Expr:
    """Cache bytes per token with the codec: compressed looped part plus full prelude/coda."""
    return LOOPED_COMPRESSED[variant] + _UNLOOPED


def compression_ratio(variant: str) -> sympy.Expr:
    """rho of the looped part, derived by dividing the two byte counts."""
    return sympy.cancel(_LOOPED_FULL / LOOPED_COMPRESSED[variant])


def whole_cache_ratio(variant: str) -> sympy.Expr:
    return sympy.cancel(FULL_PER_TOKEN / compressed_per_token(variant))


def codec_parameters(variant: str) -> sympy.Expr:
    """Codec weights: per K (rank r_k) and V (rank r_v), W_down and the T maps W_up,t,
    2*D*r together, plus the calibration mean mu (D), with D = T*d_head (per_head, one codec
    per core layer and KV head) or T*d_head*n_kv (2d, one codec per core layer)."""
    if variant == "per_head":
        dim, codecs = T * d_head, R * n_kv
    elif variant == "2d":
        dim, codecs = T * d_head * n_kv, R
    else:
        return sympy.Integer(0)
    return codecs * (2 * dim * (r_k + r_v) + 2 * dim)


def model_parameters(model: LoopedModel) -> sympy.Expr:
    """Exact parameter count of the architecture, in h, V, f, n_q, n_kv, d_head, P, R, C.

    Structural choices (MLP type, biases, norms, tying, adapter, exit gate) are read from the
    model and enter as numbers; the dimensions stay symbols.
    """
    q_dim, kv_dim = n_q * d_head, n_kv * d_head
    attention = 2 * h * q_dim + 2 * h * kv_dim  # W_Q, W_O and W_K, W_V
    attention += {
        "none": 0,
        "qk": q_dim + kv_dim,
        "qkv": q_dim + 2 * kv_dim,
        "qkvo": q_dim + 2 * kv_dim + h,
    }[model.attention_bias]
    gated = model.mlp == "swiglu"
    mlp = (3 if gated else 2) * h * f
    if model.mlp_bias:
        mlp += (2 if gated else 1) * f + h
    norm = h if model.norm == "rmsnorm" else 2 * h
    layer = attention + mlp + model.norms_per_layer * norm
    embeddings = V * h * (1 if model.tie_embeddings else 2)
    total = (P + R + C) * layer + embeddings + norm  # + the final norm
    if model.loop_adapter:
        total += 2 * h * h
    if model.exit_gate:
        total += h + 1
    return total


def max_batch(per_token: sympy.Expr, stepped: bool) -> sympy.Expr:
    """Sequences whose caches fit in ``budget`` bytes, rounded down to a multiple of
    ``step`` when the spec gives one."""
    if stepped:
        return step * sympy.floor(budget / (N * per_token * step))
    return sympy.floor(budget / (N * per_token))


def model_values(model: LoopedModel, cache_bytes: int) -> dict[sympy.Symbol, int]:
    """The symbols' values for one model."""
    return {
        bytes_: cache_bytes,
        n_kv: model.kv_heads,
        d_head: model.head_dim,
        P: model.prelude_layers,
        R: model.layers,
        C: model.coda_layers,
        T: model.loops,
        h: model.hidden_size,
        V: model.vocab_size,
        f: model.intermediate_size,
        n_q: model.heads,
    }
