"""A model's linear layers -> the bytes of weights stored quantised.

MXFP4 (GPT-OSS's released weights): the routed experts' weights in 4 bits a number, with a
one-byte (E8M0) scale per 32 numbers along the input; everything else in the model's dtype.

fp8 with block scales (DeepSeek-V3's released weights, transformers' fine-grained fp8): every
linear weight of the decoder layers is stored in one byte a number, plus one float32 scale
per block of ``block`` rows and columns (``weight_scale_inv``, ceil(out / rows) *
ceil(in / columns) of them); the embeddings, the LM head, norms, biases and routers stay in
the model's dtype. :func:`linear_shapes` lists the linear weights (how many, rows, columns)
as the checkpoint stores them: DeepSeek's shared experts are one MLP of n_shared times the
expert width.
"""

from __future__ import annotations

from math import ceil

from infoflow.looped_kv.spec import DTYPE_BYTES, LoopedModel

#: Bytes of one block scale (float32).
SCALE_BYTES = 4


def linear_shapes(model: LoopedModel) -> list[tuple[int, int, int]]:
    """(count, rows, columns) of every linear weight in the decoder layers."""
    h = model.hidden_size
    layers = model.prelude_layers + model.layers + model.coda_layers
    shapes = [(layers * count, rows, cols) for count, rows, cols in _attention(model)]
    moe = model.experts.moe_layers(model.layers) if model.experts else 0
    dense_mlp = _mlp(model.mlp, h, model.intermediate_size)
    shapes += [(count * (layers - moe), rows, cols) for count, rows, cols in dense_mlp]
    shapes += routed_expert_shapes(model)
    if model.experts and (model.experts.shared or model.experts.shared_width):
        e = model.experts
        shared = _mlp(
            "swiglu", h, e.shared_width or e.shared * (e.width or model.intermediate_size)
        )
        shapes += [(count * moe, rows, cols) for count, rows, cols in shared]
    return [shape for shape in shapes if shape[0]]


def routed_expert_shapes(model: LoopedModel) -> list[tuple[int, int, int]]:
    """(count, rows, columns) of the routed experts' weights, in every MoE layer."""
    if not model.experts:
        return []
    e = model.experts
    moe, width = e.moe_layers(model.layers), e.width or model.intermediate_size
    return [(c * e.routed * moe, r, k) for c, r, k in _mlp("swiglu", model.hidden_size, width)]


def _attention(model: LoopedModel) -> list[tuple[int, int, int]]:
    h, n_q, d, n_kv = model.hidden_size, model.heads, model.head_dim, model.kv_heads
    a = model.latent_attention
    if a is None:
        return [(1, n_q * d, h), (2, n_kv * d, h), (1, h, n_q * d)]
    head_qk = a.nope_dim + a.rope_dim
    query = (
        [(1, a.q_rank, h), (1, n_q * head_qk, a.q_rank)] if a.q_rank else [(1, n_q * head_qk, h)]
    )
    latent = [(1, a.kv_rank + a.rope_dim, h), (1, n_q * (a.nope_dim + a.v_dim), a.kv_rank)]
    return [*query, *latent, (1, h, n_q * a.v_dim)]


def _mlp(kind: str, h: int, width: int) -> list[tuple[int, int, int]]:
    if kind == "swiglu":
        return [(2, width, h), (1, h, width)]
    return [(1, width, h), (1, h, width)]


def quantized_weight_bytes(model: LoopedModel, parameters: int) -> tuple[int, int, int]:
    """(bytes of all weights, numbers stored quantised, block scales) for a model of
    ``parameters`` parameters stored as its weight_quantization says."""
    quantization = model.weight_quantization
    assert quantization is not None
    if quantization.method in ("gptq", "awq"):
        return _integer_bytes(model, parameters)
    rows, cols = quantization.block
    mxfp4 = quantization.method == "mxfp4"
    shapes = routed_expert_shapes(model) if mxfp4 else linear_shapes(model)
    numbers = sum(count * r * c for count, r, c in shapes)
    scales = sum(count * ceil(r / rows) * ceil(c / cols) for count, r, c in shapes)
    rest = (parameters - numbers) * DTYPE_BYTES[model.dtype]
    if mxfp4:  # two numbers a byte, whole blocks of 32; one byte a scale
        return scales * (cols // 2 + 1) + rest, numbers, scales
    return numbers + scales * SCALE_BYTES + rest, numbers, scales


def _integer_bytes(model: LoopedModel, parameters: int) -> tuple[int, int, int]:
    """GPTQ or AWQ: per linear weight of ``out`` rows and ``inp`` columns, the numbers packed
    in int32 (GPTQ along the input, AWQ along the output), per group of group_size inputs an
    fp16 scale per output and packed zero points, and GPTQ's int32 g_idx per input."""
    q = model.weight_quantization
    total = numbers = groups_all = 0
    for count, out, inp in linear_shapes(model):
        groups = ceil(inp / (q.group_size or inp))
        packed_out = ceil(out * q.bits / 32)
        if q.method == "gptq":
            stored = ceil(inp * q.bits / 32) * out + groups * packed_out + inp  # int32 each
        else:
            stored = inp * packed_out + (groups * packed_out if q.zero_point else 0)
        total += count * (4 * stored + 2 * groups * out)  # + the fp16 scales
        numbers += count * out * inp
        groups_all += count * groups * out
    rest = (parameters - numbers) * DTYPE_BYTES[model.dtype]
    return total + rest, numbers, groups_all
