"""The ``looped_kv`` formulas as sympy expressions (theory note ``looped_kv.md``).

Every number the family predicts is one of these expressions evaluated at the spec's values,
so the formula a user reads and the value they get cannot drift apart. Symbols follow the
paper: ``bytes`` per cache element, ``n_kv`` KV heads, ``d_head``, ``P``/``R``/``C`` prelude,
core and coda layers, ``T`` loops, ``r_k``/``r_v`` latent ranks, ``N`` tokens per sequence.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import sympy

from infoflow.looped_kv.spec import LoopedModel

bytes_, n_kv, d_head, P, R, C, T, r_k, r_v, N = sympy.symbols(
    "bytes n_kv d_head P R C T r_k r_v N", positive=True, integer=True
)
h, V, f, n_q = sympy.symbols("h V f n_q", positive=True, integer=True)
budget, step = sympy.symbols("budget step", positive=True)
# Plain decoders only (T = 1, no prelude or coda): experts, latent attention, windows.
E_r, E_s, k_e, f_e, L_m = sympy.symbols("experts shared top_k f_e L_moe", positive=True,
                                        integer=True)  # fmt: skip
c_kv, q_r, d_rope, d_nope, d_v = sympy.symbols("c_kv q_rank d_rope d_nope d_v", positive=True,
                                               integer=True)  # fmt: skip
W, L_w = sympy.symbols("W L_w", positive=True, integer=True)

#: K and V of one token in one layer.
_KV_PER_LAYER = 2 * bytes_ * n_kv * d_head

#: Full cache per token: every loop keeps its own K/V (paper).
FULL_PER_TOKEN = _KV_PER_LAYER * (P + T * R + C)
_LOOPED_FULL = _KV_PER_LAYER * T * R
UNLOOPED = _KV_PER_LAYER * (P + C)

#: The looped part of the cache per token, by codec variant (paper); prelude and coda stay full.
LOOPED_COMPRESSED: dict[str, sympy.Expr] = {
    "none": _LOOPED_FULL,
    "per_head": bytes_ * R * n_kv * (r_k + r_v),
    "2d": bytes_ * R * (r_k + r_v),
    "head_axis": bytes_ * T * R * (r_k + r_v),
    "final_loop": _KV_PER_LAYER * R,
}


def compressed_per_token(variant: str) -> sympy.Expr:
    """Cache bytes per token with the codec: compressed looped part plus full prelude/coda."""
    return LOOPED_COMPRESSED[variant] + UNLOOPED


def compression_ratio(variant: str) -> sympy.Expr:
    """rho of the looped part, derived by dividing the two byte counts."""
    return sympy.cancel(_LOOPED_FULL / LOOPED_COMPRESSED[variant])


def whole_cache_ratio(variant: str) -> sympy.Expr:
    return sympy.cancel(FULL_PER_TOKEN / compressed_per_token(variant))


def codec_parameters(variant: str) -> sympy.Expr:
    """Codec weights: per K (rank r_k) and V (rank r_v), W_down and W_up, 2*D*r together,
    plus the calibration mean mu (D), with D = T*d_head (per_head, one codec per core layer
    and KV head), T*d_head*n_kv (2d, one codec per core layer) or n_kv*d_head (head_axis, one
    codec per core layer and loop, as the validator fits it: a reconstruction)."""
    if variant == "per_head":
        dim, codecs = T * d_head, R * n_kv
    elif variant == "2d":
        dim, codecs = T * d_head * n_kv, R
    elif variant == "head_axis":
        dim, codecs = n_kv * d_head, R * T
    else:
        return sympy.Integer(0)
    return codecs * (2 * dim * (r_k + r_v) + 2 * dim)


def model_parameters(model: LoopedModel) -> sympy.Expr:
    """Exact parameter count of the architecture, in h, V, f, n_q, n_kv, d_head, P, R, C (and
    the symbols of experts and latent attention where the model has them).

    Structural choices (MLP type, biases, norms, tying, adapter, exit gate) are read from the
    model and enter as numbers; the dimensions stay symbols.
    """
    attention = _latent_attention(model) if model.latent_attention else _attention(model)
    gated = model.mlp == "swiglu"
    mlp = (3 if gated else 2) * h * f
    if model.mlp_bias:
        mlp += (2 if gated else 1) * f + h
    norm = h if model.norm == "rmsnorm" else 2 * h
    embeddings = V * h * (1 if model.tie_embeddings else 2)
    if model.experts:
        moe = (E_r + E_s) * 3 * h * f_e + E_r * h + (E_r if model.experts.router_bias else 0)
        layers = R * (attention + model.norms_per_layer * norm) + (R - L_m) * mlp + L_m * moe
    else:
        layers = (P + R + C) * (attention + mlp + model.norms_per_layer * norm)
    total = layers + embeddings + norm  # + the final norm
    if model.loop_adapter:
        total += 2 * h * h
    if model.exit_gate:
        total += h + 1
    return total


def active_parameters(model: LoopedModel) -> sympy.Expr:
    """Parameters one token uses: all but the routed experts it is not sent to."""
    return model_parameters(model) - L_m * (E_r - k_e) * 3 * h * f_e


def _attention(model: LoopedModel) -> sympy.Expr:
    q_dim, kv_dim = n_q * d_head, n_kv * d_head
    attention = 2 * h * q_dim + 2 * h * kv_dim  # W_Q, W_O and W_K, W_V
    return (
        attention
        + {
            "none": 0,
            "qk": q_dim + kv_dim,
            "qkv": q_dim + 2 * kv_dim,
            "qkvo": q_dim + 2 * kv_dim + h,
        }[model.attention_bias]
    )


def _latent_attention(model: LoopedModel) -> sympy.Expr:
    """DeepSeek's attention: the query (low-rank with a norm, or full), the joint K/V latent
    with the RoPE key and its norm, the up-projection to per-head keys and values, W_O."""
    head_qk = d_nope + d_rope
    query = q_r * (h + 1 + n_q * head_qk) if model.latent_attention.q_rank else h * n_q * head_qk
    latent = h * (c_kv + d_rope) + c_kv + c_kv * n_q * (d_nope + d_v)
    return query + latent + n_q * d_v * h


def cache_per_token(model: LoopedModel) -> sympy.Expr:
    """Cache bytes one token adds (to every layer, windowed ones included while it is in the
    window): the per-loop K/V of the paper, or the latent and the RoPE key of latent
    attention."""
    if model.latent_attention:
        return bytes_ * R * (c_kv + d_rope)
    return FULL_PER_TOKEN


def cache_per_sequence(model: LoopedModel) -> sympy.Expr:
    """Cache bytes of one sequence of N tokens: a windowed layer keeps min(N, W) of them."""
    if not model.sliding_window:
        return N * cache_per_token(model)
    per_layer = cache_per_token(model) / R
    return per_layer * ((R - L_w) * N + L_w * sympy.Min(N, W))


def max_context(model: LoopedModel, per_token: sympy.Expr) -> sympy.Expr:
    """The longest sequence whose cache fits in ``budget`` bytes (for windows: full layers
    grow with N, windowed ones up to W)."""
    if not model.sliding_window:
        return sympy.floor(budget / per_token)
    per_layer = per_token / R
    grows, capped = per_layer * (R - L_w), per_layer * L_w
    return sympy.Piecewise((sympy.floor(budget / (grows + capped)), budget <= (grows + capped) * W),
                           (sympy.floor((budget - capped * W) / grows), True))  # fmt: skip


def max_batch(per_sequence: sympy.Expr, stepped: bool) -> sympy.Expr:
    """Sequences whose caches (``per_sequence`` bytes each) fit in ``budget`` bytes, rounded
    down to a multiple of ``step`` when the spec gives one."""
    if stepped:
        return step * sympy.floor(budget / (per_sequence * step))
    return sympy.floor(budget / per_sequence)


def model_values(model: LoopedModel, cache_bytes: int | Fraction) -> dict[sympy.Symbol, Any]:
    """The symbols' values for one model."""
    values: dict[sympy.Symbol, Any] = {
        bytes_: sympy.Rational(cache_bytes),
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
    if model.experts:
        e = model.experts
        values.update({E_r: e.routed, E_s: e.shared, k_e: e.per_token,
                       f_e: e.width or model.intermediate_size,
                       L_m: e.moe_layers(model.layers)})  # fmt: skip
    if model.latent_attention:
        a = model.latent_attention
        values.update({c_kv: a.kv_rank, q_r: a.q_rank or 0, d_rope: a.rope_dim,
                       d_nope: a.nope_dim, d_v: a.v_dim})  # fmt: skip
    if model.sliding_window:
        values[W] = model.sliding_window
        values[L_w] = sum(model.window_layers) if model.window_layers else model.layers
    return values
