"""Numbers from arithmetic, expressions for people: every looped_kv value is computed with exact
integers and fractions, and the sympy expression it carries, evaluated at the spec's values,
gives the same number."""

from __future__ import annotations

import pytest
from conftest import LOOPED_KV, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from test_looped_kv_properties import looped_specs

import infoflow
from infoflow.looped_kv import formulas as F

#: The capacity predictions and the budget each divides.
BUDGET_OF = {
    "max_batch": "cache_budget_bytes",
    "max_context_tokens": "cache_budget_bytes",
    "max_batch_compressed": "cache_budget_bytes_compressed",
    "max_context_tokens_compressed": "cache_budget_bytes_compressed",
}
BUNDLED = sorted(LOOPED_KV.glob("*.json"))
VARIANTS = [
    [],
    ["serving.tensor_parallel=2"],
    ["serving.memory_budget_gib=null", "serving.device=h100-sxm", "serving.overhead_gib=1.5"],
    [
        "serving.memory_budget_gib=37.3",
        "serving.batch_step=8",
        "serving.device=null",
        "serving.device_memory_gib=null",
    ],
]
CONFIGS = ["mistral-7b-v0.1", "deepseek-v2-lite", "mixtral-8x7b", "qwen2-7b"]


def symbol_values(result: infoflow.Result, name: str) -> dict:
    """The sympy symbols of ``name``'s expression, at the spec's values."""
    spec = result.spec
    values = F.model_values(spec.model, spec.cache_element_bytes)
    values.N = spec.serving.sequence_tokens
    if spec.codec.r_k is not None:
        values.r_k, values.r_v = spec.codec.r_k, spec.codec.r_v
    values.step = spec.serving.batch_step or 1
    if name in BUDGET_OF:
        values.budget = result[BUDGET_OF[name]].value
    s = F.symbols()  # the values keyed by the sympy symbols, for expression.subs
    return {getattr(s, k): v for k, v in vars(values).items() if hasattr(s, k)}


def assert_expressions_give_values(result: infoflow.Result) -> None:
    checked = 0
    for name, prediction in result.predictions.items():
        if prediction.formula is None or prediction.value is None:
            continue
        at = prediction.expression.subs(symbol_values(result, name))
        assert at.is_number, (name, at)
        value = prediction.value
        assert (at == value) if isinstance(value, int) else (float(at) == value), name
        checked += 1
    assert checked >= (10 if "compression_ratio" in result.predictions else 4)


@pytest.mark.parametrize("overrides", VARIANTS, ids=range(len(VARIANTS)))
@pytest.mark.parametrize("path", BUNDLED[::3], ids=lambda p: p.stem)
def test_bundled_expressions_give_the_values(path, overrides) -> None:
    try:
        spec = infoflow.load_spec(path, overrides)
    except infoflow.SpecError:
        pytest.skip("not a valid combination")
    assert_expressions_give_values(infoflow.predict(spec))


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("overrides", VARIANTS[:3], ids=range(3))
def test_windows_experts_and_latents_give_the_values(config, overrides) -> None:
    model = f'model={{"hf_config": "hf_configs/{config}.json"}}'
    plain = ["codec.variant=none", "codec.r_k=null", "codec.r_v=null"]
    spec = infoflow.load_spec(LOOPED_KV / "ouro-1.4b-h200.json", [model, *plain, *overrides])
    assert_expressions_give_values(infoflow.predict(spec))


@settings(max_examples=40, deadline=None)
@given(looped_specs(), st.floats(0.001, 4096, allow_nan=False), st.sampled_from([None, 8]))
def test_random_expressions_give_the_values(spec, budget, step) -> None:
    serving = {**spec["serving"], "memory_budget_gib": budget, "batch_step": step}
    assert_expressions_give_values(infoflow.predict({**spec, "serving": serving}))


def test_a_bundled_spec_imports_no_sympy_in_a_table_or_json() -> None:
    spec = str(LOOPED_KV / "ouro-1.4b-h200.json")
    for args in (["-f", "table"], ["-f", "json"], ["-f", "json", "--set", "model.mlp=gelu"]):
        proc = run_cli("predict", *args, spec, env={"PYTHONPROFILEIMPORTTIME": "1"})
        assert proc.returncode == 0 and "max_batch_compressed" in proc.stdout
        imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()}
        assert "infoflow.looped_kv.formulas" in imported  # the import log is really there
        assert "torch" not in imported
        assert ("sympy" in imported) == ("--set" in args)  # a formula the cache lacks


def test_a_batch_rounded_down_to_the_step_says_how_many_fit_before() -> None:
    """Ouro-1.4B at 4k in the paper's 108 GiB: 36 sequences of 3 GiB fit, 32 on the grid of
    32; 18 of 6 GiB fit in 108 GiB at 8k, none on the grid: the note says so."""
    spec = infoflow.load_spec(LOOPED_KV / "ouro-1.4b-h200.json")
    rows = infoflow.predict(spec)
    assert rows["max_batch"].value == 32 and "36 sequences fit" in rows["max_batch"].note
    assert rows["max_batch_compressed"].value == 768  # exactly on the grid: no such note
    assert "Before the rounding" not in rows["max_batch_compressed"].note
    longer = infoflow.load_spec(LOOPED_KV / "ouro-1.4b-h200.json", ["serving.context_tokens=8192"])
    batch = infoflow.predict(longer)["max_batch"]
    assert batch.value == 0 and "Before the rounding, 18 sequences fit." in batch.note
