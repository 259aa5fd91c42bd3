"""Training speed: FLOPs per token as nanoGPT counts them, a documented peak per device, and
the group's speed kept in the store apart from its members' metrics."""

from __future__ import annotations

import torch

from infoflow.validators import throughput
from infoflow.validators.retrieval.model import EnsembleTransformer, Member
from infoflow.validators.store import Store
from infoflow.validators.throughput import GPU_PEAKS, Meter, Peak, flops_per_token, meter, peak


def test_flops_per_token_is_six_per_parameter_plus_attention() -> None:
    assert flops_per_token(1000, 2 * 16 * 32) == 6 * 1000 + 12 * 2 * 16 * 32


def test_a_cpu_peak_is_threads_clock_and_fma_width(monkeypatch) -> None:
    """A Zen 4 (AMD family 25) has AVX-512 on 256-bit units: 32 a cycle, not 64 (the peak
    was twice what its one-thread matmul reaches, every MFU half: an audit, 2026-12-07)."""
    threads = torch.get_num_threads()
    avx512, intel, zen4 = {"avx512f", "avx2", "fma"}, ("GenuineIntel", 6), ("AuthenticAMD", 25)
    for flags, core, per_cycle, why in (
        (avx512, intel, 64, ""),
        (avx512, ("AuthenticAMD", 26), 64, ""),
        (avx512, zen4, 32, " (AVX-512 on 256-bit units: AMD before Zen 5)"),
        ({"avx2", "fma"}, zen4, 32, ""),
        (set(), ("", None), 8, ""),
    ):
        monkeypatch.setattr(throughput, "_cpuinfo", lambda f=flags, c=core: (2.5, f, c))
        cpu = peak(torch.device("cpu"))
        assert cpu.flops == threads * 2.5e9 * per_cycle
        text = f"CPU: {threads} threads x 2.50 GHz x {per_cycle} fp32 FLOP/cycle{why}"
        assert cpu.source == text

    assert GPU_PEAKS["H200"] == GPU_PEAKS["H100 SXM"] == 989e12 and GPU_PEAKS["A100"] == 312e12


def test_a_meter_reports_tokens_per_second_and_mfu(monkeypatch) -> None:
    """On a clock the test sets: 1,000 tokens in 2 s at 100 FLOPs a token."""
    now = [10.0]
    monkeypatch.setattr(throughput.time, "perf_counter", lambda: now[0])
    speed = Meter(100.0, Peak(1e9, "test"))
    speed.add(1000)
    now[0] = 12.0
    rates = speed.rates()
    assert rates["tokens_per_second"] == 500 and rates["model_flops_per_second"] == 50_000
    assert rates["mfu"] == 5e-5 and rates["peak_source"] == "test"
    assert "tok/s, MFU" in speed.text()
    assert Meter(1.0, Peak(None, "unknown GPU")).rates()["mfu"] is None


def test_an_ensemble_meter_counts_one_member_of_the_stack() -> None:
    members = [Member((2, 2), True, seed, 16) for seed in range(4)]
    model = EnsembleTransformer(members, 8, 4, 1)
    params = sum(p.numel() for p in model.parameters()) // 4
    assert meter(model, 8, torch.device("cpu")).flops_per_token == flops_per_token(
        params, 2 * 8 * 16
    )


def test_the_store_keeps_a_groups_speed_apart_from_member_metrics(tmp_path) -> None:
    store = Store(tmp_path / "results.sqlite")
    store.record_metrics("g", 10, [{"loss": 1.0}])
    store.record_throughput("g", {"tokens_per_second": 5.0, "mfu": 0.25, "peak_source": "x"})
    assert store.throughput("g") == {"tokens_per_second": 5.0, "mfu": 0.25, "peak_source": "x"}
    assert store.metrics("g") == {0: {10: {"loss": 1.0}}}
    assert store.throughput("other") == {}
