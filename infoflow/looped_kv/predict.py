"""``looped_kv`` spec -> predictions: cache bytes, compression ratios, weights, capacity.

Values are exact integer and rational arithmetic on the formulas of :mod:`formulas`; each
prediction's sympy expression is built from the same formula only when asked for, and its
printed text comes from :mod:`expressions`.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from infoflow.core.results import Prediction, Result
from infoflow.looped_kv import formulas as F
from infoflow.looped_kv.budget import PAPER, batch_memory, capacity, plain
from infoflow.looped_kv.expressions import Expression
from infoflow.looped_kv.spec import DTYPE_BYTES, QUANTIZED, LoopedKVSpec
from infoflow.looped_kv.weights import quantized_weight_bytes

#: The rows of a codec: a plain decoder without one (T = 1, no codec) has none of them.
CODEC_ROWS = (
    "kv_bytes_per_token_compressed",
    "compression_ratio",
    "whole_cache_ratio",
    "kv_cache_bytes_compressed",
    "codec_parameters",
    "codec_weight_bytes",
)

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
    codec, serving = spec.codec, spec.serving
    values = _values(spec)
    variant = codec.variant
    kept = VARIANTS[codec.variant]
    full, compressed, full_sequence, compressed_sequence = _cache_forms(spec)
    tokens = f"one sequence of N = {serving.sequence_tokens:,} tokens (context + generated)"
    tokens += _engine_note(spec)

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
    if plain(spec):
        formulas = {k: v for k, v in formulas.items() if k not in CODEC_ROWS}
    out = {
        name: Prediction(_number(form(values)), unit, "exact", provenance, note, Expression(form))
        for name, (form, unit, provenance, note) in formulas.items()
    }
    _as_stored(spec, out)
    forms = (full, compressed), (full_sequence, compressed_sequence)
    out.update(capacity(spec, out, values, forms))
    out.update(batch_memory(spec, out, values, (full_sequence, compressed_sequence)))
    failed = [p for name, p in out.items() if name.startswith(("fits_device", "batch_fits"))]
    messages = tuple(p.note for p in failed if p.value is False) + _served_dtype(spec)
    return Result(kind=spec.kind, spec=spec, predictions=out, source=source, messages=messages)


def _served_dtype(spec: LoopedKVSpec) -> tuple[str, ...]:
    """Under the vllm engine, a float32 model: vLLM serves it in 16 bits by default (a review
    found the count silently twice what vLLM's default allocates)."""
    if spec.serving.engine != "vllm" or spec.model.dtype != "float32":
        return ()
    return (
        "vLLM serves a float32 checkpoint in 16 bits unless started with --dtype float32 (its "
        "default, auto, takes float16 or bfloat16): counted here in float32, as model.dtype "
        "says; --set model.dtype=bfloat16 counts what vLLM's default holds (half the weights "
        "and the cache).",
    )


def _values(spec: LoopedKVSpec) -> F.Numbers:
    """The symbols' values: the model's, the tokens a sequence holds (whole pages for vllm),
    the window as the engine keeps it, a quantised cache's residual, the codec's ranks."""
    model, codec, serving = spec.model, spec.codec, spec.serving
    values = F.model_values(model, spec.cache_element_bytes)
    values.N = serving.cached_tokens
    if serving.engine == "vllm":
        values.block = serving.block_size
    if model.mamba:  # the state is kept in the dtype the model computes in
        values.b_state = values.b_ssm = DTYPE_BYTES[spec.compute_dtype]
        if serving.engine == "transformers":  # its scan keeps the SSM state in float32
            values.b_ssm = 4
    if serving.engine == "transformers" and model.sliding_window:
        values.W = model.sliding_window - 1  # what its cache keeps between steps
    if serving.cache_residual_tokens:
        values.N_res = serving.cache_residual_tokens
        values.b_res = DTYPE_BYTES[spec.compute_dtype]
    if codec.r_k is not None and codec.r_v is not None:
        values.r_k, values.r_v = codec.r_k, codec.r_v
    return values


def _as_stored(spec: LoopedKVSpec, out: dict[str, Prediction]) -> None:
    """Quantised weights as the checkpoint stores them; the cache of chunked layers and of a
    quantised cache's residual as the upper bounds they are."""
    if spec.model.weight_quantization:
        out["weight_bytes"] = _quantized_weights(spec, out["model_parameters"].value)
    if spec.model.sliding_window and spec.model.window_kind == "chunked":
        out["kv_cache_bytes"] = _chunked(out["kv_cache_bytes"])
    if spec.serving.cache_residual_tokens:
        out["kv_cache_bytes"] = _residual(spec, out["kv_cache_bytes"])


def _residual(spec: LoopedKVSpec, prediction: Prediction) -> Prediction:
    """A quantised cache's full-precision residual, counted full: an upper bound."""
    note = (
        f"{prediction.note} The latest min(N, {spec.serving.cache_residual_tokens}) tokens are "
        f"kept in {spec.compute_dtype} before they are quantised; the residual holds up to "
        "that many (transformers quantises it whenever it fills): an upper bound."
    )
    return replace(prediction, bound="upper", note=note)


def _engine_note(spec: LoopedKVSpec) -> str:
    """How the engine's allocation changes what one sequence holds."""
    serving = spec.serving
    if serving.engine == "vllm":
        return (
            f", held in vLLM's pages of {serving.block_size} tokens: "
            f"N = {serving.cached_tokens:,} token slots"
        )
    if serving.engine == "transformers" and spec.model.sliding_window:
        return (
            f", as transformers keeps it between steps: W - 1 = {spec.model.sliding_window - 1:,}"
        )
    return ""


def _chunked(prediction: Prediction) -> Prediction:
    """A chunked layer counted as keeping a whole chunk: an upper bound."""
    note = (
        f"{prediction.note} A chunked-attention layer is counted as keeping up to a whole "
        "chunk (as transformers keeps it, as a window); an engine that drops finished chunks "
        "keeps only the current one's tokens: an upper bound."
    )
    return replace(prediction, bound="upper", note=note)


def _quantized_weights(spec: LoopedKVSpec, parameters: int) -> Prediction:
    """The bytes of weights stored in fp8 with block scales (:mod:`weights`)."""
    model = spec.model
    total, numbers, scales = quantized_weight_bytes(model, parameters)
    rows, cols = model.weight_quantization.block
    rest = f"the other {parameters - numbers:,} parameters"
    q = model.weight_quantization
    if q.method in ("gptq", "awq"):
        g_idx = ", and an int32 g_idx per input" if q.method == "gptq" else ""
        note = (
            f"{numbers:,} linear weights of the decoder layers in {q.bits}-bit {q.method} "
            f"packed in int32, with {scales:,} fp16 scales and packed zero points (groups of "
            f"{q.group_size or 'all'} inputs){g_idx}, {rest} (embeddings, LM head, norms, "
            f"biases) in {model.dtype}, as the checkpoint stores them."
        )
    elif model.weight_quantization.method == "mxfp4":
        note = (
            f"{numbers:,} routed-expert weights in MXFP4 (4 bits, whole blocks of 32 numbers) "
            f"with {scales:,} one-byte scales, {rest} (attention, routers, embeddings, LM "
            f"head, norms, biases) in {model.dtype}, as the checkpoint stores them."
        )
    else:
        note = (
            f"{numbers:,} linear weights of the decoder layers in fp8 (1 B) with {scales:,} "
            f"float32 scales (one per {rows}x{cols} block), {rest} (embeddings, LM head, "
            f"norms, biases, routers) in {model.dtype}, as the checkpoint stores them."
        )
    return Prediction(total, "B", "exact", "derived", note)


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
    return {**out, **_expert_rows(spec)}


def _expert_rows(spec: LoopedKVSpec) -> dict[str, tuple]:
    """The parameters one token uses (experts), and the MTP modules reported apart."""
    model, out = spec.model, {}
    if model.experts:
        out["active_parameters"] = (
            lambda s: F.active_parameters(s, model),
            "params",
            "derived",
            "Parameters one token uses: every parameter but the routed experts it is not sent "
            f"to ({model.experts.per_token} of {model.experts.routed} in each MoE layer).",
        )
    if model.mamba:
        out["ssm_state_bytes"] = (
            F.mamba_state,
            "B",
            "standard:mamba",
            "The constant state one sequence keeps in the Mamba layers (the convolution's last "
            "d_conv inputs and the SSM state, d_in channels each), whatever its length; part "
            "of kv_cache_bytes.",
        )
    if model.mtp_layers:
        out["mtp_parameters"] = (
            lambda s: F.mtp_parameters(s, model),
            "params",
            "derived",
            f"The {model.mtp_layers} multi-token-prediction module(s) of the checkpoint, not in "
            "model_parameters or weight_bytes: transformers does not build them and vLLM "
            "loads them only for MTP speculative decoding (then with their own embedding and "
            "head, and one more layer of cache).",
        )
    return out


def _cache_forms(spec: LoopedKVSpec) -> tuple[F.Form, ...]:
    """Cache bytes per token and per sequence, full and compressed. Latent attention and
    windowed layers take no codec (the spec checks), so theirs are the full forms."""
    model, variant = spec.model, spec.codec.variant
    if model.latent_attention or model.sliding_window or model.mamba:

        def per_token(s):
            return F.cache_per_token(s, model)

        def per_sequence(s):
            return F.cache_per_sequence(s, model)

        return per_token, per_token, per_sequence, per_sequence

    def compressed(s):
        return F.compressed_per_token(s, variant)

    if spec.serving.cache_residual_tokens:  # no codec then (the spec checks)

        def per_sequence(s):
            return F.with_residual(s, F.full_per_token(s))

        return F.full_per_token, F.full_per_token, per_sequence, per_sequence
    return (
        F.full_per_token,
        compressed,
        lambda s: s.N * F.full_per_token(s),
        lambda s: s.N * compressed(s),
    )


def _cache_source(spec: LoopedKVSpec) -> tuple[str, str]:
    """Provenance and note of the cache bytes per token."""
    model, dtype = spec.model, spec.cache_dtype
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
    if model.mamba:
        return "standard:mamba", (
            "K and V of the attention layers only, 2*bytes*n_kv*d_head*(R - L_ssm); each of the "
            f"L_ssm Mamba layers keeps a constant state per sequence instead (d_in*(d_conv + "
            f"d_state) numbers, in {spec.compute_dtype}, the dtype it computes in, whatever "
            f"the cache's{_ssm_float32(spec)}: ssm_state_bytes){scales}."
        )
    if model.sliding_window:
        kept = "the current chunk of" if model.window_kind == "chunked" else "only the last"
        return "standard:sliding-window", (
            f"A token cached by every layer: 2*bytes*n_kv*d_head*R; the L_w windowed layers "
            f"keep {kept} W = {model.sliding_window:,} tokens{scales}."
        )
    if plain(spec):
        return "standard:kv-cache", (
            f"K and V of every layer: 2*bytes*n_kv*d_head*R, in {dtype}{scales}."
        )
    return "paper:summary", (
        f"{PAPER}: every loop keeps its own K/V, 2*bytes*n_kv*d_head*(P + T*R + C){scales}."
    )


def _compressed_source(spec: LoopedKVSpec, kept: str) -> tuple[str, str]:
    """Provenance and note of the compressed cache bytes per token."""
    if spec.model.latent_attention or spec.model.sliding_window or spec.model.mamba:
        provenance, note = _cache_source(spec)
        return provenance, f"No codec: the same as kv_bytes_per_token. {note}"
    if spec.codec.variant == "head_axis":
        return "derived", (
            f"{kept} (the control {PAPER} compares with; its bytes follow from "
            "the layout); prelude and coda stay full."
        )
    return "paper:summary", f"{PAPER}: {kept}; prelude and coda stay full."


def _number(value: int | Fraction) -> int | float:
    return int(value) if value.denominator == 1 else float(value)


def _ssm_float32(spec: LoopedKVSpec) -> str:
    """Where the SSM state is kept in float32 (the transformers engine), that clause."""
    if spec.serving.engine != "transformers":
        return ""
    return "; the d_in*d_state of the SSM state in float32, as transformers' scan keeps it"
