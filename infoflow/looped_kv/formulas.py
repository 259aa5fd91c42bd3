"""The ``looped_kv`` formulas (theory note ``looped_kv.md``), written once and read two ways.

Each formula is a Python function of a namespace ``s`` of the paper's symbols: ``bytes`` per
cache element, ``n_kv`` KV heads, ``d_head``, ``P``/``R``/``C`` prelude, core and coda
layers, ``T`` loops, ``r_k``/``r_v`` latent ranks, ``N`` tokens per sequence (and the sizes
of experts, latent attention and windows). Called with :class:`Numbers` (the spec's values,
exact ints and Fractions) it gives the value, by plain arithmetic; called with
:func:`symbols` (sympy symbols) it gives the expression a person reads. The value and the
formula are the same code, so they cannot drift apart, and a table of numbers never imports
sympy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from types import SimpleNamespace
from typing import Any

from infoflow.looped_kv.spec import LoopedModel

#: A formula: the symbols' namespace -> a number (Numbers) or an expression (symbols()).
Form = Callable[[Any], Any]

#: The integer symbols, by name (sympy prints them so), and the two real ones.
INTEGERS = (
    "bytes n_kv d_head P R C T r_k r_v N h V f n_q experts shared top_k f_e L_moe "
    "c_kv q_rank d_rope d_nope d_v W L_w n_pos L_mtp L_ssm d_in d_state d_conv r_dt f_s "
    "N_res b_res block b_state b_ssm"
)
REALS = "budget step"


class Numbers(SimpleNamespace):
    """The symbols' values for one spec, with the operations formulas use, on exact numbers."""

    floor = staticmethod(math.floor)
    min = staticmethod(min)

    @staticmethod
    def cancel(value: Any) -> Any:
        return value

    @staticmethod
    def piecewise(condition: bool, then: Callable[[], Any], otherwise: Callable[[], Any]) -> Any:
        return then() if condition else otherwise()


@lru_cache(maxsize=1)
def symbols() -> SimpleNamespace:
    """The symbols as sympy symbols, with sympy's floor, Min, cancel and Piecewise."""
    import sympy

    names = INTEGERS.split() + REALS.split()
    made = [
        *sympy.symbols(INTEGERS, positive=True, integer=True),
        *sympy.symbols(REALS, positive=True),
    ]
    return SimpleNamespace(
        **dict(zip(names, made, strict=True)),
        floor=sympy.floor,
        min=sympy.Min,
        cancel=sympy.cancel,
        piecewise=lambda c, then, otherwise: sympy.Piecewise((then(), c), (otherwise(), True)),
    )


def kv_per_layer(s) -> Any:
    """K and V of one token in one layer."""
    return 2 * s.bytes * s.n_kv * s.d_head


def full_per_token(s) -> Any:
    """Full cache per token: every loop keeps its own K/V (paper)."""
    return kv_per_layer(s) * (s.P + s.T * s.R + s.C)


def looped_full(s) -> Any:
    return kv_per_layer(s) * s.T * s.R


def unlooped(s) -> Any:
    return kv_per_layer(s) * (s.P + s.C)


def looped_compressed(s, variant: str) -> Any:
    """The looped part of the cache per token, by codec variant (paper)."""
    if variant == "none":
        return looped_full(s)
    if variant == "per_head":
        return s.bytes * s.R * s.n_kv * (s.r_k + s.r_v)
    if variant == "2d":
        return s.bytes * s.R * (s.r_k + s.r_v)
    if variant == "head_axis":
        return s.bytes * s.T * s.R * (s.r_k + s.r_v)
    return kv_per_layer(s) * s.R  # final_loop


def compressed_per_token(s, variant: str) -> Any:
    """Cache bytes per token with the codec: compressed looped part plus full prelude/coda."""
    return looped_compressed(s, variant) + unlooped(s)


def compression_ratio(s, variant: str) -> Any:
    """rho of the looped part, derived by dividing the two byte counts."""
    return s.cancel(looped_full(s) / looped_compressed(s, variant))


def whole_cache_ratio(s, variant: str) -> Any:
    return s.cancel(full_per_token(s) / compressed_per_token(s, variant))


def codec_parameters(s, variant: str) -> Any:
    """Codec weights: per K (rank r_k) and V (rank r_v), W_down and W_up, 2*D*r together,
    plus the calibration mean mu (D), with D = T*d_head (per_head, one codec per core layer
    and KV head), T*d_head*n_kv (2d, one codec per core layer) or n_kv*d_head (head_axis, one
    codec per core layer and loop, as the validator fits it: a reconstruction)."""
    if variant == "per_head":
        dim, codecs = s.T * s.d_head, s.R * s.n_kv
    elif variant == "2d":
        dim, codecs = s.T * s.d_head * s.n_kv, s.R
    elif variant == "head_axis":
        dim, codecs = s.n_kv * s.d_head, s.R * s.T
    else:
        return 0
    return codecs * (2 * dim * (s.r_k + s.r_v) + 2 * dim)


def model_parameters(s, model: LoopedModel) -> Any:
    """Exact parameter count of the architecture, in h, V, f, n_q, n_kv, d_head, P, R, C (and
    the symbols of experts and latent attention where the model has them).

    Structural choices (MLP type, biases, norms, tying, adapter, exit gate) are read from the
    model and enter as numbers; the dimensions stay symbols.
    """
    attention, mlp, moe, norm = _layer_parts(s, model)
    embeddings = s.V * s.h * (1 if model.tie_embeddings else 2)
    if model.positions:
        embeddings += s.n_pos * s.h
    if model.head_bias:
        embeddings += s.V
    if model.mamba:
        layers = (s.R - s.L_ssm) * attention + s.L_ssm * _mamba(s, model)
        layers += s.R * model.norms_per_layer * norm
        if model.experts:
            layers += (s.R - s.L_moe) * mlp + s.L_moe * moe
        else:
            layers += s.R * mlp
    elif model.experts:
        layers = (
            s.R * (attention + model.norms_per_layer * norm) + (s.R - s.L_moe) * mlp + s.L_moe * moe
        )
    else:
        layers = (s.P + s.R + s.C) * (attention + mlp + model.norms_per_layer * norm)
    total = layers + embeddings + norm  # + the final norm
    if model.loop_adapter:
        total += 2 * s.h * s.h
    if model.exit_gate:
        total += s.h + 1
    return total


def _layer_parts(s, model: LoopedModel) -> tuple[Any, Any, Any, Any]:
    """A layer's attention, dense MLP, MoE block (None without experts) and one norm."""
    attention = _latent_attention(s, model) if model.latent_attention else _attention(s, model)
    if model.attention_sinks:
        attention += s.n_q  # one learned sink logit per query head
    if model.qk_norm == "head":
        attention += 2 * s.d_head
    elif model.qk_norm == "full":
        attention += (s.n_q + s.n_kv) * s.d_head
    gated = model.mlp == "swiglu"
    mlp = (3 if gated else 2) * s.h * s.f
    if model.mlp_bias:
        mlp += (2 if gated else 1) * s.f + s.h
    norm = 2 * s.h if model.norm == "layernorm" else s.h
    return attention, mlp, _moe(s, model) if model.experts else None, norm


def _moe(s, model: LoopedModel) -> Any:
    """An MoE block: the routed and shared experts (SwiGLU), the router and its bias, the
    shared expert's gate, the experts' biases."""
    e = model.experts
    if e.shared_width:  # a shared expert of its own width (Qwen2-MoE)
        moe = s.experts * 3 * s.h * s.f_e + 3 * s.h * s.f_s + s.experts * s.h
        if e.shared_gate:
            moe += s.h
    else:
        experts = (s.experts + s.shared) * 3 * s.h * s.f_e + s.experts * s.h
        moe = experts + (s.experts if e.router_bias else 0)
    if e.bias:
        moe += s.experts * (2 * s.f_e + s.h)
    return moe


def _mamba(s, model: LoopedModel) -> Any:
    """A Mamba mixer: in_proj (h -> 2 d_in), the depthwise convolution, x_proj (d_in -> r_dt
    + 2 d_state), dt_proj (r_dt -> d_in, with bias), A_log, D, out_proj (d_in -> h), and
    Jamba's norms of the step, B and C."""
    m = model.mamba
    mixer = 2 * s.h * s.d_in + s.d_in * s.d_conv + s.d_in * (s.r_dt + 2 * s.d_state)
    mixer += s.r_dt * s.d_in + s.d_in + s.d_in * s.d_state + s.d_in + s.d_in * s.h
    if m.conv_bias:
        mixer += s.d_in
    if m.proj_bias:
        mixer += 2 * s.d_in + s.h
    if m.inner_norms:
        mixer += s.r_dt + 2 * s.d_state
    return mixer


def mamba_state(s) -> Any:
    """Bytes of the constant state one sequence keeps in the Mamba layers: the convolution's
    inputs, ``b_state`` bytes a number (the model's compute dtype: a quantised or fp8 cache
    holds K and V), and the SSM state, ``b_ssm`` bytes a number (float32 in transformers),
    d_in channels each."""
    return s.L_ssm * s.d_in * (s.b_state * s.d_conv + s.b_ssm * s.d_state)


def mtp_parameters(s, model: LoopedModel) -> Any:
    """DeepSeek-V3's multi-token-prediction modules, as the checkpoint stores them and vLLM
    loads them for speculative decoding: per module, a decoder layer (MoE after the dense
    first layers), the norms of the hidden state and the embedding (enorm, hnorm), their
    projection eh_proj (2h -> h), and its own embedding, head norm and head."""
    attention, mlp, moe, norm = _layer_parts(s, model)
    layer = attention + 2 * norm + (moe if moe is not None else mlp)
    return s.L_mtp * (layer + 3 * norm + 2 * s.h * s.h + 2 * s.V * s.h)


def active_parameters(s, model: LoopedModel) -> Any:
    """Parameters one token uses: all but the routed experts it is not sent to."""
    unused = s.L_moe * (s.experts - s.top_k) * 3 * s.h * s.f_e
    if model.experts.bias:
        unused += s.L_moe * (s.experts - s.top_k) * (2 * s.f_e + s.h)
    return model_parameters(s, model) - unused


def _attention(s, model: LoopedModel) -> Any:
    q_dim, kv_dim = s.n_q * s.d_head, s.n_kv * s.d_head
    attention = 2 * s.h * q_dim + 2 * s.h * kv_dim  # W_Q, W_O and W_K, W_V
    bias = model.attention_bias
    if bias == "none":
        return attention + 0
    if bias == "qk":
        return attention + (q_dim + kv_dim)
    if bias == "qkv":
        return attention + (q_dim + 2 * kv_dim)
    return attention + (q_dim + 2 * kv_dim + s.h)  # qkvo


def _latent_attention(s, model: LoopedModel) -> Any:
    """DeepSeek's attention: the query (low-rank with a norm, or full), the joint K/V latent
    with the RoPE key and its norm, the up-projection to per-head keys and values, W_O."""
    head_qk = s.d_nope + s.d_rope
    if model.latent_attention.q_rank:
        query = s.q_rank * (s.h + 1 + s.n_q * head_qk)
    else:
        query = s.h * s.n_q * head_qk
    latent = s.h * (s.c_kv + s.d_rope) + s.c_kv + s.c_kv * s.n_q * (s.d_nope + s.d_v)
    return query + latent + s.n_q * s.d_v * s.h


def cache_per_token(s, model: LoopedModel) -> Any:
    """Cache bytes one token adds (to every layer, windowed ones included while it is in the
    window): the per-loop K/V of the paper, or the latent and the RoPE key of latent
    attention."""
    if model.latent_attention:
        return s.bytes * s.R * (s.c_kv + s.d_rope)
    if model.mamba:
        return kv_per_layer(s) * (s.R - s.L_ssm)
    return full_per_token(s)


def cache_per_sequence(s, model: LoopedModel) -> Any:
    """Cache bytes of one sequence of N tokens: a windowed layer keeps min(N, W) of them; a
    Mamba layer its constant state."""
    if model.mamba:
        return s.N * cache_per_token(s, model) + mamba_state(s)
    if not model.sliding_window:
        return s.N * cache_per_token(s, model)
    per_layer = cache_per_token(s, model) / s.R
    return per_layer * ((s.R - s.L_w) * s.N + s.L_w * s.min(s.N, s.W))


def max_context(s, model: LoopedModel, per_token: Any) -> Any:
    """The longest sequence whose cache (``per_token`` bytes a token) fits in ``budget``
    bytes (for windows: full layers grow with N, windowed ones up to W; Mamba layers keep
    their state whatever N)."""
    if model.mamba:
        return s.floor((s.budget - mamba_state(s)) / per_token)
    if not model.sliding_window:
        return s.floor(s.budget / per_token)
    per_layer = per_token / s.R
    grows, capped = per_layer * (s.R - s.L_w), per_layer * s.L_w
    return s.piecewise(
        s.budget <= (grows + capped) * s.W,
        lambda: s.floor(s.budget / (grows + capped)),
        lambda: s.floor((s.budget - capped * s.W) / grows),
    )


def max_context_paged(s, per_token: Any) -> Any:
    """The longest sequence whose whole pages of ``block`` token slots (``per_token`` bytes
    each) fit in ``budget`` bytes: vLLM allocates a sequence page by page."""
    return s.block * s.floor(s.budget / (s.block * per_token))


def with_residual(s, per_token: Any) -> Any:
    """Bytes of one sequence in a quantised cache (``per_token`` bytes a token) that keeps up
    to N_res of its latest tokens in the model's dtype (b_res bytes a number)."""
    return per_token * (s.N + s.min(s.N, s.N_res) * (s.b_res / s.bytes - 1))


def max_context_with_residual(s, per_token: Any) -> Any:
    """The longest sequence that fits ``budget`` in a cache with a full-precision residual:
    the first N_res tokens cost the model's dtype, the rest the quantised one."""
    full = per_token * s.b_res / s.bytes
    return s.piecewise(
        s.budget <= full * s.N_res,
        lambda: s.floor(s.budget / full),
        lambda: s.floor((s.budget - (full - per_token) * s.N_res) / per_token),
    )


def max_batch(s, per_sequence: Any, stepped: bool) -> Any:
    """Sequences whose caches (``per_sequence`` bytes each) fit in ``budget`` bytes, rounded
    down to a multiple of ``step`` when the spec gives one."""
    if stepped:
        return s.step * s.floor(s.budget / (per_sequence * s.step))
    return s.floor(s.budget / per_sequence)


def model_values(model: LoopedModel, cache_bytes: int | Fraction) -> Numbers:
    """The symbols' values for one model (``bytes`` as a Fraction, so divisions are exact)."""
    values = Numbers(
        bytes=Fraction(cache_bytes),
        n_kv=model.kv_heads,
        d_head=model.head_dim,
        P=model.prelude_layers,
        R=model.layers,
        C=model.coda_layers,
        T=model.loops,
        h=model.hidden_size,
        V=model.vocab_size,
        f=model.intermediate_size,
        n_q=model.heads,
    )
    if model.experts:
        e = model.experts
        values.__dict__.update(
            experts=e.routed,
            shared=e.shared,
            top_k=e.per_token,
            f_e=e.width or model.intermediate_size,
            L_moe=e.moe_layers(model.layers),
            f_s=e.shared_width or 0,
        )
    if model.latent_attention:
        a = model.latent_attention
        values.__dict__.update(
            c_kv=a.kv_rank, q_rank=a.q_rank or 0, d_rope=a.rope_dim, d_nope=a.nope_dim, d_v=a.v_dim
        )
    if model.positions:
        values.n_pos = model.positions
    if model.mtp_layers:
        values.L_mtp = model.mtp_layers
    if model.mamba:
        m = model.mamba
        values.__dict__.update(
            L_ssm=sum(m.layers), d_in=m.d_inner, d_state=m.d_state, d_conv=m.d_conv, r_dt=m.dt_rank
        )
    if model.sliding_window:
        values.W = model.sliding_window
        values.L_w = sum(model.window_layers) if model.window_layers else model.layers
    return values
