"""Training speed: tokens per second and model-FLOPs utilisation (MFU) against the device's
peak.

Model FLOPs are counted as nanoGPT counts them: 6 per parameter per token (forward and
backward) plus 12 * layers * T * E per token for attention's scores and mixing. The peak is
a documented figure (docs/validate.md): for a GPU, the vendor's dense bf16 tensor-core peak
(training runs under bf16 autocast); for a CPU, threads x clock x fp32 FLOPs per cycle of
one core's FMA units (32 with AVX2 and two FMA units, 64 with AVX-512, 8 without either;
32 for AVX-512 on an AMD core before Zen 5, which runs it on 256-bit units).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch

#: Dense bf16 peaks of common GPUs (FLOP/s, vendor datasheets; sparsity not counted).
GPU_PEAKS = {
    "H200": 989e12,
    "H100 SXM": 989e12,
    "H100 NVL": 835e12,
    "H100 PCIe": 756e12,
    "H100": 989e12,
    "A100": 312e12,
    "L40S": 362e12,
    "L4": 121e12,
    "A10G": 70e12,
}
CPU_GHZ_DEFAULT = 2.0  # when /proc/cpuinfo gives no clock


@dataclass(frozen=True)
class Peak:
    """A device's peak FLOP/s and where the figure comes from."""

    flops: float | None
    source: str


def peak(device: torch.device) -> Peak:
    """The peak of ``device``: a GPU by name (None when not in GPU_PEAKS), a CPU from
    /proc/cpuinfo and the threads torch uses."""
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        for model, flops in GPU_PEAKS.items():
            if model in name:
                return Peak(flops, f"{name}: {model} dense bf16 {flops / 1e12:.0f} TFLOP/s")
        return Peak(None, f"{name}: no documented peak")
    threads = torch.get_num_threads()
    ghz, flags, core = _cpuinfo()
    per_cycle, why = _per_cycle(flags, core)
    flops = threads * ghz * 1e9 * per_cycle
    text = f"CPU: {threads} threads x {ghz:.2f} GHz x {per_cycle} fp32 FLOP/cycle{why}"
    return Peak(flops, text)


def _per_cycle(flags: set[str], core: tuple[str, int | None]) -> tuple[int, str]:
    """fp32 FLOPs per cycle of one core (two FMA units of the vector width), and a note where
    the flags alone mislead: an AMD core before Zen 5 (family 26) runs AVX-512 on 256-bit
    units, so 32 (a Zen 4 here: its one-thread float32 matmul reached 69 to 92 GFLOP/s, about
    the 83 that 32 a cycle gives at the 2.6 GHz cpuinfo reports; 64 halved every MFU)."""
    vendor, family = core
    if "avx512f" in flags:
        if vendor == "AuthenticAMD" and family is not None and family < 26:
            return 32, " (AVX-512 on 256-bit units: AMD before Zen 5)"
        return 64, ""
    return (32, "") if {"avx2", "fma"} <= flags else (8, "")


def _cpuinfo() -> tuple[float, set[str], tuple[str, int | None]]:
    """The first core's clock (GHz), flags, and vendor with CPU family."""
    ghz, flags, vendor, family = CPU_GHZ_DEFAULT, set(), "", None
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return ghz, flags, (vendor, family)
    for line in text.splitlines():
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "cpu MHz" and ghz == CPU_GHZ_DEFAULT:
            ghz = float(value) / 1000
        elif key == "flags" and not flags:
            flags = set(value.split())
        elif key == "vendor_id" and not vendor:
            vendor = value
        elif key == "cpu family" and family is None and value.isdigit():
            family = int(value)
    return ghz, flags, (vendor, family)


def flops_per_token(params: int, attention: int) -> float:
    """Training FLOPs per token: 6 per parameter plus 12 * ``attention`` (the sum over
    layers of T * E)."""
    return 6 * params + 12 * attention


class Meter:
    """Tokens and model FLOPs trained since it was made, against wall time."""

    def __init__(self, flops_per_token: float, device_peak: Peak) -> None:
        self.flops_per_token, self.peak = flops_per_token, device_peak
        self.tokens, self.started = 0, time.perf_counter()

    def add(self, tokens: int) -> None:
        self.tokens += tokens

    def rates(self) -> dict[str, float | str | None]:
        """tokens/s, model FLOP/s, MFU (None without a peak) and the peak's source."""
        seconds = max(time.perf_counter() - self.started, 1e-9)
        tokens = self.tokens / seconds
        flops = tokens * self.flops_per_token
        mfu = flops / self.peak.flops if self.peak.flops else None
        return {
            "tokens_per_second": tokens,
            "model_flops_per_second": flops,
            "mfu": mfu,
            "peak_flops": self.peak.flops,
            "peak_source": self.peak.source,
        }

    def text(self) -> str:
        """``12.3k tok/s, MFU 4.1%``, for a progress line: two or three significant digits
        (``850 tok/s, MFU 0.012%``; ``<0.01%`` below that), never a run of zeros."""
        rates = self.rates()
        percent = None if rates["mfu"] is None else 100 * rates["mfu"]
        mfu = "n/a" if percent is None else f"{percent:.2g}%" if percent >= 0.01 else "<0.01%"
        return f"{compact(rates['tokens_per_second'])} tok/s, MFU {mfu}"


def compact(value: float) -> str:
    """``850``, ``12.3k``, ``4.56M``: three significant digits and a suffix."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def meter(model: torch.nn.Module, seq_len: int, device: torch.device) -> Meter:
    """A meter for a stacked ensemble (``W_QKV`` of shape [layers, members, E, ...]): FLOPs
    per token of one member, counting every stacked (padded) weight the device computes."""
    layers, members, width = model.W_QKV.shape[:3]
    params = sum(p.numel() for p in model.parameters()) / members
    return Meter(flops_per_token(int(params), layers * seq_len * width), peak(device))
