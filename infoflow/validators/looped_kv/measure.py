"""A looped model -> what the looped_kv claims need: the axis spectra of its core K/V, every
codec and control against rho (attention-output error and next-token KL to the exact model),
the full-rank check, and the bytes the latent store holds beside the calculator's.

Methods at matched bytes: LLA per head (the loop axis folded in, SVD), LLA distilled with
the teacher frozen (the SVD start refined: :func:`~infoflow.validators.looped_kv.codec.
distill`), LLA-2D (loop and head axes), head-axis compression (MLA-style, a control),
uniform quantization, and final-loop reuse (at rho = T only). Everything is stored in the
cache's dtype (``serving.cache_dtype``, else the model's): the plain cache rounded to it is
the method ``cache`` (rho 1, the floor under every codec), a codec's latents are rounded to
it, and quantization starts from the cache's values and its bits.
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F

import infoflow
from infoflow.looped_kv.spec import LoopedKVSpec
from infoflow.validators.looped_kv import codec as kv_codec
from infoflow.validators.looped_kv.experiment import TORCH_DTYPES, LoopedScale, corpus
from infoflow.validators.looped_kv.model import ExactAttention, LoopedDecoder

#: The codec grid: the paper's ratios (r_k + r_v = 768, 512, 256, 96, 48 and 32 on Ouro:
#: 1.33x to 32x, 21.3x its headline) and 8x and 16x between them.
RHOS = (4 / 3, 2.0, 4.0, 8.0, 32 / 3, 16.0, 64 / 3, 32.0)
METHODS = ("cache", "lla", "lla_distilled", "lla_2d", "head_axis", "quantize", "final_loop")


def ranks(total: int) -> tuple[int, int]:
    """(r_k, r_v) with r_k + r_v = total, split 3:5 (values get more: they settle more
    slowly across loops; the reconstruction of the ratio-grid specs)."""
    r_k = round(total * 3 / 8)
    return r_k, total - r_k


class Scorer:
    """Scores reconstructed core K/V on the evaluation tokens against the exact model."""

    def __init__(self, model: LoopedDecoder, tokens: torch.Tensor):
        self.model, self.tokens = model, tokens
        self.teacher = ExactAttention(record=True)
        self.logits = model(tokens, self.teacher)
        self.k, self.v = kv_codec.core_kv(self.teacher, model.config)

    def __call__(self, k_hat: torch.Tensor, v_hat: torch.Tensor) -> dict[str, float]:
        student = kv_codec.Reconstructed(k_hat, v_hat)
        logits = self.model(self.tokens, student)
        outputs = self.teacher.outputs
        errors = [
            ((student.outputs[s] - outputs[s]) ** 2).sum() / (outputs[s] ** 2).sum()
            for s in outputs
            if s[0] == "core"
        ]
        kl = (  # in float64, each position at least 0: float32's rounding made it -6.8e-10
            F.kl_div(
                logits.double().log_softmax(-1),
                self.logits.double().log_softmax(-1),
                log_target=True,
                reduction="none",
            )
            .sum(-1)
            .clamp_min(0)
            .mean()
        )
        return {"attention_error": float(torch.stack(errors).mean()), "kl": float(kl)}


@torch.no_grad()
def measure(spec: LoopedKVSpec, model: LoopedDecoder, scale: LoopedScale, device="cpu") -> dict:
    """Every measurement of ``model`` at ``scale`` on ``device`` (calibration and evaluation
    sequences from the corpus, seeds 10 and 11, drawn on the CPU: the same on any device)."""
    started = time.perf_counter()
    model = model.to(device)
    config = model.config
    draw = corpus(config.vocab, seed=0)
    calibration = draw(scale.calibration, scale.length, torch.Generator().manual_seed(10))
    evaluation = draw(scale.evaluation, scale.length, torch.Generator().manual_seed(11))
    calibration, evaluation = calibration.to(device), evaluation.to(device)
    k_cal, v_cal = _capture(model, calibration)
    score = Scorer(model, evaluation)
    spectra = {
        name: {how: kv_codec.energy_captured(x, how).tolist() for how in ("loop", "head", "layer")}
        for name, x in (("K", k_cal), ("V", v_cal))
    }
    weights = [p.detach().clone() for p in model.parameters()]
    dtype = TORCH_DTYPES[spec.serving.cache_dtype or spec.model.dtype]
    methods = _methods(model, (k_cal, v_cal), calibration, score, scale, dtype)
    T, d, H = config.loops, config.head_dim, config.kv
    full = {"loop": T * d, "loop_head": T * H * d}
    full_rank = [
        kv_codec.SVDCodec.fit(x, how, full[how])
        for x in (k_cal, v_cal)
        for how in ("loop", "loop_head")
    ]
    exact = max(
        float((codec.reconstruct(x) - x).abs().max() / x.abs().max())
        for codec, x in zip(full_rank, (score.k, score.k, score.v, score.v), strict=True)
    )
    frozen = all(torch.equal(a, b) for a, b in zip(weights, model.parameters(), strict=True))
    loss = F.cross_entropy(score.logits[:, :-1].flatten(0, 1), evaluation[:, 1:].flatten())
    stores = _store_bytes(spec, model, k_cal, v_cal, evaluation[:2])
    dims = {"loop": T * d, "head": H * d, "layer": config.core * d}  # the folds' vector sizes
    return {
        "config": config.__dict__,
        "cache_dtype": str(dtype).removeprefix("torch."),
        "dims": dims,
        "spectra": spectra,
        "methods": methods,
        "distill_weighting": kv_codec.DISTILL_WEIGHTING if scale.distill_steps else None,
        "teacher_frozen": frozen,
        "full_rank_relative_error": exact,
        "stores": stores,
        "teacher_loss": float(loss),
        "seconds": time.perf_counter() - started,
    }


def _methods(model, calibrated, tokens, score: Scorer, scale: LoopedScale, dtype) -> dict:
    """Every method's scores at every rho of the grid (and rho = T for final-loop reuse), all
    stored in ``dtype``; quantization at the bits the dtype leaves at that rho, scales
    counted."""
    k_cal, v_cal = calibrated
    config = model.config
    T, d, H = config.loops, config.head_dim, config.kv
    cache_bits = 8 * dtype.itemsize
    k_stored, v_stored = kv_codec.as_stored(score.k, dtype), kv_codec.as_stored(score.v, dtype)
    methods: dict[str, dict[str, dict]] = {name: {} for name in METHODS}
    methods["cache"]["1"] = score(k_stored, v_stored)
    axes = (
        ("lla", "loop", T * d),
        ("lla_2d", "loop_head", T * H * d),
        ("head_axis", "head", H * d),
    )
    full = {
        how: (kv_codec.SVDCodec.full(k_cal, how), kv_codec.SVDCodec.full(v_cal, how))
        for _, how, _ in axes
    }
    for rho in sorted({*RHOS, float(T)}):  # final-loop reuse exists at rho = T only
        key = f"{rho:.3g}"
        for name, how, dim in axes:
            r_k, r_v = ranks(round(2 * dim / rho))
            codecs = full[how][0].truncated(r_k), full[how][1].truncated(r_v)
            result = score(
                codecs[0].reconstruct(score.k, dtype), codecs[1].reconstruct(score.v, dtype)
            )
            methods[name][key] = {"r_k": r_k, "r_v": r_v, **result}
            if name == "lla" and scale.distill_steps:
                with torch.enable_grad():
                    learned = kv_codec.distill(model, codecs, tokens, scale.distill_steps)
                refined = score(
                    learned[0].reconstruct(score.k, dtype), learned[1].reconstruct(score.v, dtype)
                )
                methods["lla_distilled"][key] = {"r_k": r_k, "r_v": r_v, **refined}
        bits = kv_codec.matched_bits(cache_bits, rho, d)
        if bits:  # at matched bytes, the scales included
            quantized = score(kv_codec.quantize(k_stored, bits), kv_codec.quantize(v_stored, bits))
            methods["quantize"][key] = {"bits": bits, **quantized}
    last = lambda x: x[:, -1:].expand_as(x)  # noqa: E731
    methods["final_loop"][f"{float(T):.3g}"] = score(last(k_stored), last(v_stored))
    return methods


def _capture(model: LoopedDecoder, x: torch.Tensor):
    record = ExactAttention(record=True)
    model(x, record)
    return kv_codec.core_kv(record, model.config)


def _store_bytes(spec: LoopedKVSpec, model, k_cal, v_cal, tokens) -> list[dict]:
    """Decode ``tokens`` through latent stores (none, per head and 2D at rho = 4) and compare
    the bytes they hold with the calculator's."""
    config, out = model.config, []
    dtype_name = spec.serving.cache_dtype or spec.model.dtype
    T, d, H = config.loops, config.head_dim, config.kv
    cases = [("none", None)]
    for variant, how, dim in (("per_head", "loop", T * d), ("2d", "loop_head", T * H * d)):
        r_k, r_v = ranks(round(2 * dim / 4))
        cases.append(
            (
                variant,
                (kv_codec.SVDCodec.fit(k_cal, how, r_k), kv_codec.SVDCodec.fit(v_cal, how, r_v)),
            )
        )
    for variant, codecs in cases:
        store = kv_codec.LatentStore(
            model, tokens.shape[0], tokens.shape[1], codecs, TORCH_DTYPES[dtype_name]
        )
        kv_codec.decode(model, tokens, store)
        codec = {"variant": variant}
        if codecs:
            codec.update(r_k=codecs[0].rank, r_v=codecs[1].rank)
        point = spec.model_copy(update={"codec": spec.codec.model_validate(codec)})
        per_token = infoflow.predict(point)["kv_bytes_per_token_compressed"].value
        out.append(
            {
                "variant": variant,
                **{k: v for k, v in codec.items() if k != "variant"},
                "tokens": tokens.numel(),
                "measured_bytes": store.nbytes(),
                "predicted_bytes": per_token * tokens.numel(),
            }
        )
    return out
