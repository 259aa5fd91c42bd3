"""``looped_kv`` specs small enough to train -> a trained looped model -> axis spectra, the
codec against its controls at matched bytes, the latent store's bytes -> claims.

The model is the spec's own architecture (the bundled ``tiny-looped.json``), trained on
sequences of a mixture of Markov chains over its vocabulary, or an Ouro-style checkpoint
the spec names in ``model.checkpoint`` (then nothing is trained, and the same corpus is the
calibration and evaluation data). Claims:

- the latent store's measured bytes equal the calculator's ``kv_bytes_per_token_compressed``
  times the tokens stored, exactly; full rank reconstructs the cache exactly;
- the loop axis is the most compressible: at every rho of the grid, folding the loop axis
  into the vector captures more energy than folding the head or the layer axis;
- error falls as rank rises (LLA per head and 2D);
- at matched bytes LLA beats final-loop reuse (at rho = T) and head-axis compression.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from infoflow.validators import kv_codec, markov
from infoflow.validators.looped import ExactAttention, LoopedConfig, LoopedDecoder, train_looped
from infoflow.validators.ouro import load_ouro

import infoflow
from infoflow.looped_kv.spec import LoopedKVSpec

RHOS = (4 / 3, 2.0, 4.0, 8.0, 16.0)
MAX_PARAMETERS = 5_000_000
TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class LoopedScale:
    name: str
    steps: int
    batch: int
    length: int
    calibration: int  # sequences
    evaluation: int
    distill_steps: int  # refinement of the LLA codec, teacher frozen


SCALES = {
    "smoke": LoopedScale("smoke", 600, 32, 64, 64, 32, distill_steps=60),
    "paper": LoopedScale("paper", 4000, 64, 128, 256, 128, distill_steps=500),
}


def cannot_train(spec: LoopedKVSpec) -> str | None:
    """Why this spec's model is neither loaded nor trained here (None when it is)."""
    model = spec.model
    if (spec.serving.cache_dtype or model.dtype) not in TORCH_DTYPES:
        return "float8 caches are not simulated"
    if model.checkpoint:
        return None
    params = infoflow.predict(spec)["model_parameters"].value
    if params > MAX_PARAMETERS:
        return (f"{model.name} has {params:,} parameters: the looped_kv validator trains models "
                f"up to {MAX_PARAMETERS:,} (specs/looped_kv/tiny-looped.json); loading a "
                "pretrained checkpoint is not built yet")  # fmt: skip
    if model.kv_heads != model.heads or model.hidden_size != model.heads * model.head_dim:
        return "the validator's model has as many KV heads as heads, of width hidden / heads"
    return None


def config_of(spec: LoopedKVSpec, length: int) -> LoopedConfig:
    m = spec.model
    return LoopedConfig(vocab=m.vocab_size, d_model=m.hidden_size, heads=m.heads,
                        prelude=m.prelude_layers, core=m.layers, loops=m.loops,
                        coda=m.coda_layers, mlp_width=m.intermediate_size,
                        max_len=length)  # fmt: skip


def corpus(vocab: int, seed: int):
    """Sequences of a mixture of 8 Markov chains over the vocabulary (Dirichlet(0.3) rows,
    so each chain is fairly predictable): language-like, and cheap to generate."""
    chains = markov.sample_chains(8, vocab, 0.3, seed)
    sampler = markov.ChainSampler(chains)

    def draw(batch: int, length: int, generator: torch.Generator) -> torch.Tensor:
        chain = torch.randint(0, len(chains), (batch,), generator=generator)
        return sampler.sample(chain, length, generator)

    return draw


def ranks(total: int) -> tuple[int, int]:
    """(r_k, r_v) with r_k + r_v = total, split 3:5 (values get more: they settle more
    slowly across loops; the reconstruction of the ratio-grid specs)."""
    r_k = round(total * 3 / 8)
    return r_k, total - r_k


@torch.no_grad()
def run(spec: LoopedKVSpec, scale: LoopedScale, checkpoint: Path, progress=None) -> dict:
    """Load the spec's checkpoint, or train its model (resuming from ``checkpoint``; a
    finished training only loads); measure; return the measurements."""
    started = time.perf_counter()
    if spec.model.checkpoint:
        model = load_ouro(spec.model.checkpoint)
        config = model.config
        draw = corpus(config.vocab, seed=0)
    else:
        config = config_of(spec, scale.length)
        draw = corpus(config.vocab, seed=0)
        with torch.enable_grad():
            model = train_looped(config, draw, scale.steps, scale.batch, scale.length + 1,
                                 checkpoint, progress=progress)  # fmt: skip
    calibration = draw(scale.calibration, scale.length, torch.Generator().manual_seed(10))
    evaluation = draw(scale.evaluation, scale.length, torch.Generator().manual_seed(11))
    k_cal, v_cal = _capture(model, calibration)
    teacher = ExactAttention(record=True)
    teacher_logits = model(evaluation, teacher)
    k_eval, v_eval = kv_codec.core_kv(teacher, config)
    T, d, H = config.loops, config.head_dim, config.kv

    spectra = {name: {how: kv_codec.energy_captured(x, how).tolist()
                      for how in ("loop", "head", "layer")}
               for name, x in (("K", k_cal), ("V", v_cal))}  # fmt: skip

    def judge(k_hat, v_hat) -> dict:
        student = kv_codec.Reconstructed(k_hat, v_hat)
        logits = model(evaluation, student)
        errors = [
            ((student.outputs[s] - teacher.outputs[s]) ** 2).sum() / (teacher.outputs[s] ** 2).sum()
            for s in teacher.outputs
            if s[0] == "core"
        ]
        kl = F.kl_div(logits.log_softmax(-1), teacher_logits.log_softmax(-1), log_target=True,
                      reduction="none").sum(-1).mean()  # fmt: skip
        return {"attention_error": float(torch.stack(errors).mean()), "kl": float(kl)}

    methods: dict[str, dict[str, dict]] = {"lla": {}, "lla_distilled": {}, "lla_2d": {},
                                            "head_axis": {}, "quantize": {},
                                            "final_loop": {}}  # fmt: skip
    weights = [p.detach().clone() for p in model.parameters()]
    for rho in sorted({*RHOS, float(T)}):  # final-loop reuse exists at rho = T only
        key = f"{rho:.3g}"
        for name, how, dim in (("lla", "loop", T * d), ("lla_2d", "loop_head", T * H * d),
                               ("head_axis", "head", H * d)):  # fmt: skip
            r_k, r_v = ranks(round(2 * dim / rho))
            codecs = (
                kv_codec.SVDCodec.fit(k_cal, how, r_k),
                kv_codec.SVDCodec.fit(v_cal, how, r_v),
            )
            result = judge(codecs[0].reconstruct(k_eval), codecs[1].reconstruct(v_eval))
            methods[name][key] = {"r_k": r_k, "r_v": r_v, **result}
            if name == "lla" and scale.distill_steps:
                with torch.enable_grad():
                    learned = kv_codec.distill(model, codecs, calibration, scale.distill_steps)
                refined = judge(learned[0].reconstruct(k_eval), learned[1].reconstruct(v_eval))
                methods["lla_distilled"][key] = {"r_k": r_k, "r_v": r_v, **refined}
        bits = round(32 / rho)
        quantized = judge(kv_codec.quantize(k_eval, bits), kv_codec.quantize(v_eval, bits))
        methods["quantize"][key] = {"bits": bits, **quantized}
    last = lambda x: x[:, -1:].expand_as(x)  # noqa: E731
    methods["final_loop"][f"{float(T):.3g}"] = judge(last(k_eval), last(v_eval))

    full = {"loop": T * d, "loop_head": T * H * d}
    full_rank = [kv_codec.SVDCodec.fit(x, how, full[how])
                 for x in (k_cal, v_cal) for how in ("loop", "loop_head")]  # fmt: skip
    exact = max(
        float((codec.reconstruct(x) - x).abs().max() / x.abs().max())
        for codec, x in zip(full_rank, (k_eval, k_eval, v_eval, v_eval), strict=True)
    )
    stores = _store_bytes(spec, model, k_cal, v_cal, evaluation[:2])
    frozen = all(torch.equal(a, b) for a, b in zip(weights, model.parameters(), strict=True))
    dims = {"loop": T * d, "head": H * d, "layer": config.core * d}  # the folds' vector sizes
    return {"config": config.__dict__, "dims": dims, "spectra": spectra, "methods": methods,
            "teacher_frozen": frozen,
            "full_rank_relative_error": exact, "stores": stores,
            "teacher_loss": float(F.cross_entropy(teacher_logits[:, :-1].flatten(0, 1),
                                                  evaluation[:, 1:].flatten())),
            "seconds": time.perf_counter() - started}  # fmt: skip


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
        cases.append((variant, (kv_codec.SVDCodec.fit(k_cal, how, r_k),
                                kv_codec.SVDCodec.fit(v_cal, how, r_v))))  # fmt: skip
    for variant, codecs in cases:
        store = kv_codec.LatentStore(model, tokens.shape[0], tokens.shape[1], codecs,
                                     TORCH_DTYPES[dtype_name])  # fmt: skip
        kv_codec.decode(model, tokens, store)
        codec = {"variant": variant}
        if codecs:
            codec.update(r_k=codecs[0].rank, r_v=codecs[1].rank)
        point = spec.model_copy(update={"codec": spec.codec.model_validate(codec)})
        per_token = infoflow.predict(point)["kv_bytes_per_token_compressed"].value
        out.append({"variant": variant, **{k: v for k, v in codec.items() if k != "variant"},
                    "tokens": tokens.numel(), "measured_bytes": store.nbytes(),
                    "predicted_bytes": per_token * tokens.numel()})  # fmt: skip
    return out


# ---- claims ----------------------------------------------------------------------------


def _claim(claim, predicted, measured, tolerance, verdict, reason="") -> dict:
    return {"claim": claim, "predicted": predicted, "measured": measured,
            "tolerance": tolerance, "verdict": verdict, "reason": reason}  # fmt: skip


def claims(measured: dict) -> list[dict]:
    out = []
    for store in measured["stores"]:
        same = store["measured_bytes"] == store["predicted_bytes"]
        out.append(_claim(f"the {store['variant']} store holds the calculator's bytes",
                          store["predicted_bytes"], store["measured_bytes"], "exactly equal",
                          "confirmed" if same else "refuted"))  # fmt: skip
    error = measured["full_rank_relative_error"]
    out.append(
        _claim(
            "full rank reconstructs the cache exactly",
            0.0,
            error,
            "max |error| / max |x| <= 1e-5",
            "confirmed" if error <= 1e-5 else "refuted",
        )
    )
    for name in ("K", "V"):
        spectra, dims = measured["spectra"][name], measured["dims"]
        wins = {}
        for rho in RHOS:
            energy = {
                how: spectra[how][min(max(1, round(dim / rho)), len(spectra[how])) - 1]
                for how, dim in dims.items()
            }
            wins[f"{rho:.3g}"] = energy
        loses = [rho for rho, e in wins.items() if e["loop"] < max(e["head"], e["layer"])]
        out.append(_claim(f"{name}: the loop axis is the most compressible at matched bytes",
                          "loop", wins, "more energy captured at every rho than the head and "
                          "layer folds", "refuted" if loses else "confirmed",
                          f"not at rho = {', '.join(loses)}" if loses else ""))  # fmt: skip
    methods = measured["methods"]
    for name in ("lla", "lla_2d"):
        rows = sorted(methods[name].items(), key=lambda item: float(item[0]))
        errors = [row["attention_error"] for _, row in rows]
        falls = all(a <= b for a, b in itertools.pairwise(errors))
        out.append(_claim(f"{name}: error falls as rank rises", "monotone", errors,
                          "attention-output error non-decreasing in rho",
                          "confirmed" if falls else "refuted"))  # fmt: skip
    T = f"{float(measured['config']['loops']):.3g}"
    lla, final = methods["lla"][T], methods["final_loop"][T]
    better = lla["kl"] < final["kl"] and lla["attention_error"] < final["attention_error"]
    out.append(_claim(f"LLA beats final-loop reuse at rho = {T}", "LLA better",
                      {"lla": lla, "final_loop": final}, "lower KL and attention error",
                      "confirmed" if better else "refuted"))  # fmt: skip
    if methods.get("lla_distilled"):
        gains = {rho: (methods["lla"][rho]["kl"], methods["lla_distilled"][rho]["kl"])
                 for rho in methods["lla_distilled"]}  # fmt: skip
        worse = [rho for rho, (svd, tuned) in gains.items() if tuned > svd]
        reason = f"not at rho = {', '.join(worse)}" if worse else ""
        if not measured["teacher_frozen"]:
            reason = "the teacher's weights changed"
        out.append(_claim("distillation (teacher frozen) lowers LLA's KL", "lower", gains,
                          "distilled KL <= SVD KL at every rho; the teacher's weights unchanged",
                          "refuted" if reason else "confirmed", reason))  # fmt: skip
    head = {rho: (methods["lla"][rho]["kl"], methods["head_axis"][rho]["kl"])
            for rho in methods["lla"]}  # fmt: skip
    losses = [rho for rho, (a, b) in head.items() if a >= b]
    out.append(_claim("LLA beats head-axis compression at matched bytes", "LLA better", head,
                      "lower next-token KL at every rho", "refuted" if losses else "confirmed",
                      f"not at rho = {', '.join(losses)}" if losses else ""))  # fmt: skip
    return out
