"""Hypothesis properties of the looped_kv calculator over random architectures and codecs."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

import infoflow
from infoflow.looped_kv.spec import DTYPE_BYTES


@st.composite
def looped_specs(draw):
    """A valid looped_kv spec with a rank codec."""
    kv_heads = draw(st.integers(1, 8))
    heads = kv_heads * draw(st.integers(1, 4))
    head_dim = draw(st.sampled_from([16, 32, 64, 128]))
    loops = draw(st.integers(2, 8))  # a codec on a model that does not loop is refused
    codec_variant = draw(st.sampled_from(["per_head", "2d"]))
    limit = loops * head_dim * (kv_heads if codec_variant == "2d" else 1)
    return {
        "kind": "looped_kv",
        "model": {
            "name": "random",
            "hidden_size": heads * head_dim,
            "layers": draw(st.integers(1, 12)),
            "prelude_layers": draw(st.integers(0, 3)),
            "coda_layers": draw(st.integers(0, 3)),
            "loops": loops,
            "heads": heads,
            "kv_heads": kv_heads,
            "intermediate_size": draw(st.integers(1, 4096)),
            "vocab_size": draw(st.integers(1, 50000)),
            "dtype": draw(st.sampled_from(sorted(DTYPE_BYTES))),
        },
        "codec": {
            "variant": codec_variant,
            "r_k": draw(st.integers(1, limit)),
            "r_v": draw(st.integers(1, limit)),
        },
        "serving": {"context_tokens": draw(st.integers(1, 1 << 20))},
    }


def _looped_bytes(result: infoflow.Result) -> tuple[int, int]:
    """(full, compressed) bytes per token of the looped part alone."""
    m = result.spec.model
    per_number = result.spec.cache_element_bytes  # bf16 for weights stored in fp8
    unlooped = 2 * per_number * m.kv_heads * m.head_dim * (m.prelude_layers + m.coda_layers)
    return (
        result["kv_bytes_per_token"].value - unlooped,
        result["kv_bytes_per_token_compressed"].value - unlooped,
    )


@settings(max_examples=60, deadline=None)
@given(looped_specs())
def test_compressed_bytes_times_rho_equal_full_bytes(spec) -> None:
    result = infoflow.predict(spec)
    full, compressed = _looped_bytes(result)
    rho = result["compression_ratio"].expression.subs(_symbol_values(result))
    assert Fraction(str(rho)) * compressed == full


@settings(max_examples=60, deadline=None)
@given(looped_specs(), st.sampled_from(["r_k", "r_v"]), st.integers(1, 64))
def test_rho_falls_as_a_rank_rises(spec, rank, extra) -> None:
    result = infoflow.predict(spec)
    m = result.spec.model
    limit = m.loops * m.head_dim * (m.kv_heads if spec["codec"]["variant"] == "2d" else 1)
    bigger = {**spec, "codec": {**spec["codec"], rank: min(limit, spec["codec"][rank] + extra)}}
    rho = result["compression_ratio"].value
    rho_bigger = infoflow.predict(bigger)["compression_ratio"].value
    if bigger["codec"][rank] > spec["codec"][rank]:
        assert rho_bigger < rho
    else:
        assert rho_bigger == rho


@settings(max_examples=60, deadline=None)
@given(looped_specs())
def test_whole_cache_ratio_lies_between_one_and_rho(spec) -> None:
    result = infoflow.predict(spec)
    rho, whole = result["compression_ratio"].value, result["whole_cache_ratio"].value
    assert min(1, rho) - 1e-12 <= whole <= max(1, rho) + 1e-12
    m = result.spec.model
    if m.prelude_layers + m.coda_layers == 0:
        assert whole == rho


@settings(max_examples=60, deadline=None)
@given(
    looped_specs(),
    st.floats(0.001, 4096, allow_nan=False),
    st.floats(0.001, 4096, allow_nan=False),
    st.one_of(st.none(), st.sampled_from([1, 8, 32])),
)
def test_capacity_is_monotone_in_the_budget(spec, budget_a, budget_b, step) -> None:
    small, large = sorted([budget_a, budget_b])

    def batches(budget: float) -> tuple[int, int]:
        serving = {**spec["serving"], "memory_budget_gib": budget}
        if step:
            serving["batch_step"] = step
        result = infoflow.predict({**spec, "serving": serving})
        return result["max_batch"].value, result["max_batch_compressed"].value

    (full_small, comp_small), (full_large, comp_large) = batches(small), batches(large)
    assert full_small <= full_large and comp_small <= comp_large
    if step:
        assert full_large % step == 0 and comp_large % step == 0
    if infoflow.predict(spec)["whole_cache_ratio"].value >= 1:
        assert comp_small >= full_small  # a smaller cache per sequence never fits fewer


def _symbol_values(result: infoflow.Result) -> dict:
    from infoflow.looped_kv import formulas as F

    m, codec, S = result.spec.model, result.spec.codec, F.symbols()
    return {
        S.T: m.loops,
        S.d_head: m.head_dim,
        S.n_kv: m.kv_heads,
        S.r_k: codec.r_k,
        S.r_v: codec.r_v,
    }
