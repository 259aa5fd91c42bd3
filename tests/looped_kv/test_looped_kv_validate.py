"""The looped_kv validator: the per-loop cache layout, folds, the codec, the latent store's
bytes against the calculator, claims that can be refuted, and `validate` end to end."""

from __future__ import annotations

import collections
import json
import math
import re
import sqlite3

import pytest

torch = pytest.importorskip("torch")

from conftest import LOOPED_KV, SMALLER_LOOPED, run_cli  # noqa: E402

import infoflow  # noqa: E402
from infoflow.validators.ensemble import Checkpoint  # noqa: E402
from infoflow.validators.looped_kv import codec as kv_codec  # noqa: E402
from infoflow.validators.looped_kv.claims import claims  # noqa: E402
from infoflow.validators.looped_kv.experiment import corpus  # noqa: E402
from infoflow.validators.looped_kv.measure import RHOS, _store_bytes  # noqa: E402
from infoflow.validators.looped_kv.model import (  # noqa: E402
    ExactAttention,
    LoopedConfig,
    LoopedDecoder,
    train_looped,
)
from infoflow.validators.store import Recorder  # noqa: E402

TINY = LOOPED_KV / "tiny-looped.json"


@pytest.fixture(scope="module")
def teacher():
    torch.manual_seed(0)
    model = LoopedDecoder(LoopedConfig()).eval()
    x = torch.randint(0, 16, (3, 12))
    record = ExactAttention(record=True)
    with torch.no_grad():
        logits = model(x, record)
    return model, x, logits, *kv_codec.core_kv(record, model.config)


@pytest.mark.parametrize("seed", range(6))
def test_the_kl_of_a_cache_rounded_to_float16_is_never_negative(seed) -> None:
    """The plain cache's floor read -6.8e-10 nats in a report (a fresh-user audit,
    2026-12-07): float32's log_softmax rounding; a KL is computed in float64, each position
    at least 0."""
    from infoflow.validators.looped_kv.measure import Scorer

    torch.manual_seed(seed)
    model = LoopedDecoder(LoopedConfig()).eval()
    with torch.no_grad():
        score = Scorer(model, torch.randint(0, 16, (3, 12)))
        rounded = score(score.k.half().float(), score.v.half().float())
        exact = score(score.k, score.v)
    assert 0 < rounded["kl"] < 1e-6 and 0 <= exact["kl"] < 1e-12


def test_every_loop_has_its_own_cache_slot(teacher) -> None:
    model, _, _, k, v = teacher
    c = model.config
    assert k.shape == (c.core, c.loops, 3, c.heads, 12, c.head_dim) == v.shape
    assert len(c.slots()) == c.prelude + c.loops * c.core + c.coda
    assert not torch.allclose(k[0, 0], k[0, 1])  # the same weights, other inputs per loop


@pytest.mark.parametrize("how", kv_codec.FOLDS)
def test_fold_and_unfold_are_inverse(teacher, how) -> None:
    k = teacher[3]
    assert torch.equal(kv_codec.unfold(kv_codec.fold(k, how), how, k.shape), k)


def test_full_rank_reconstructs_and_the_error_falls_with_rank(teacher) -> None:
    k = teacher[3]
    c = teacher[0].config
    full = kv_codec.SVDCodec.fit(k, "loop", c.loops * c.head_dim)
    assert (full.reconstruct(k) - k).abs().max() < 1e-5 * k.abs().max()
    errors = [
        float(((kv_codec.SVDCodec.fit(k, "loop", r).reconstruct(k) - k) ** 2).sum())
        for r in (4, 8, 16, 32)
    ]
    assert errors == sorted(errors, reverse=True)


def test_mixed_attention_with_the_live_cache_is_exact(teacher) -> None:
    model, x, logits, k, v = teacher
    with torch.no_grad():
        assert torch.allclose(model(x, kv_codec.Reconstructed(k, v)), logits, atol=1e-5)


@pytest.mark.parametrize("how", ["loop", "loop_head"])
def test_full_rank_latent_store_decodes_like_the_teacher(teacher, how) -> None:
    model, x, logits, k, v = teacher
    c = model.config
    rank = c.loops * c.head_dim * (c.heads if how == "loop_head" else 1)
    codecs = (kv_codec.SVDCodec.fit(k, how, rank), kv_codec.SVDCodec.fit(v, how, rank))
    store = kv_codec.LatentStore(model, 3, 12, codecs)
    assert torch.allclose(kv_codec.decode(model, x, store), logits, atol=1e-4)


def test_store_bytes_equal_the_calculator_exactly(teacher) -> None:
    """The tiny spec's model: the latent store keeps bytes * R * n_kv * (r_k + r_v) per
    token for the core block (per head), bytes * R * (r_k + r_v) (2D), plus the full
    prelude and coda, as `infoflow predict` says."""
    spec = infoflow.load_spec(TINY)
    model, x, _, k, v = teacher
    rows = _store_bytes(spec, model, k, v, x)
    assert [r["variant"] for r in rows] == ["none", "per_head", "2d"]
    assert all(r["measured_bytes"] == r["predicted_bytes"] for r in rows)
    none, per_head, two_d = (r["measured_bytes"] / r["tokens"] for r in rows)
    assert none == 2 * 2 * 4 * 16 * (1 + 4 * 2 + 1)  # bf16, K and V, 4 heads x 16, 10 slots
    assert per_head == 2 * 2 * 4 * 32 + 2 * 2 * 4 * 16 * 2  # (12 + 20) per head, + prelude, coda
    assert two_d == 2 * 2 * 128 + 2 * 2 * 4 * 16 * 2  # (48 + 80) per layer


def test_distillation_moves_the_codec_not_the_teacher(teacher) -> None:
    model, x, _, k, v = teacher
    before = [p.clone() for p in model.parameters()]
    codecs = (kv_codec.SVDCodec.fit(k, "loop", 6), kv_codec.SVDCodec.fit(v, "loop", 10))
    learned = kv_codec.distill(model, codecs, x, steps=5)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    assert not torch.equal(learned[0].W_down, codecs[0].basis)


def test_the_refinement_weighs_each_term_against_its_start(teacher, monkeypatch) -> None:
    """docs/results/2026-12-08-looped-kv-refinement-preregistered.md: "relative" divides each
    term by its value at the SVD start (there the loss is 1 + match whatever the scales, and
    halving the KL takes off a half), "raw" adds them as they are; the two move the codec
    apart; an unknown weighting is refused."""
    kl, error = torch.tensor(7e-6), torch.tensor(3.4e-3)
    start = (kl, error)
    assert float(kv_codec.refinement_loss(kl, error, start, 1.0, "relative")) == 2.0
    halved = kv_codec.refinement_loss(kl / 2, error, start, 1.0, "relative")
    assert float(halved) == pytest.approx(1.5)
    raw = kv_codec.refinement_loss(kl, error, start, 1.0, "raw")
    assert float(raw) == pytest.approx(7e-6 + 3.4e-3)
    model, x, _, k, v = teacher
    codecs = (kv_codec.SVDCodec.fit(k, "loop", 6), kv_codec.SVDCodec.fit(v, "loop", 10))
    seen = []  # each step's (kl, error, start)
    loss = kv_codec.refinement_loss

    def recorded(kl, error, start, match, weighting):
        seen.append((kl.item(), error.item(), tuple(t.item() for t in start)))
        return loss(kl, error, start, match, weighting)

    monkeypatch.setattr(kv_codec, "refinement_loss", recorded)
    kv_codec.distill(model, codecs, x, steps=3)
    assert len(seen) == 3 and {s[2] for s in seen} == {seen[0][:2]}  # the first step's terms
    assert seen[1][0] < seen[0][0]  # and the KL falls from there
    monkeypatch.undo()
    both = [
        kv_codec.distill(model, codecs, x, steps=5, weighting=w)[0].W_down
        for w in ("relative", "raw")
    ]
    assert (both[0] - both[1]).abs().max() > 1e-4
    with pytest.raises(ValueError, match="weighting"):
        kv_codec.distill(model, codecs, x, steps=1, weighting="even")


@pytest.mark.slow
def test_a_killed_training_resumes_to_the_same_weights_and_records(tmp_path) -> None:
    """The weights, and what a Ray worker recorded before it died (a snapshot, the mean
    losses): the retry restores them from the checkpoint (they were lost, 2026-12-07)."""
    config = LoopedConfig(d_model=16, heads=2, mlp_width=32)
    draw = corpus(config.vocab, seed=0)

    def train(data, name: str, recorder: Recorder):
        return train_looped(
            *(config, data, 30, 4, 9, Checkpoint(tmp_path / f"{name}.pt")),
            every=10,
            snapshots=(5, 25),
            on_snapshot=lambda step, _: recorder.record_metrics("g", step, [{"m": 1.0}]),
            on_loss=lambda step, loss: recorder.record_metrics("g", step, [{"train:loss": loss}]),
            store=recorder,
        )

    first = Recorder()
    whole = train(draw, "whole", first)
    steps = [args[1] for _, args in first.rows]
    assert steps == [5, 10, 20, 25, 30]
    calls = 0

    def dies_after_15(batch, length, generator):
        nonlocal calls
        calls += 1
        if calls > 15:
            raise KeyboardInterrupt
        return draw(batch, length, generator)

    with pytest.raises(KeyboardInterrupt):
        train(dies_after_15, "killed", Recorder())
    retried = Recorder()  # a new worker's
    resumed = train(draw, "killed", retried)
    for a, b in zip(whole.parameters(), resumed.parameters(), strict=True):
        assert torch.equal(a, b)
    assert retried.rows == first.rows


def _measured(**changes) -> dict:
    """Measurements shaped as `run` returns them, where every claim holds."""
    methods = {
        name: {f"{r:.3g}": {"attention_error": e * r, "kl": e * r / 10} for r in RHOS}
        for name, e in (("lla", 0.01), ("lla_2d", 0.005), ("head_axis", 0.05))
    }
    methods["quantize"] = {
        f"{r:.3g}": {"attention_error": 0.1 * r, "kl": 0.01 * r, "bits": 6} for r in RHOS[:3]
    }
    methods["final_loop"] = {"4": {"attention_error": 0.5, "kl": 0.1}}
    spectra = {w: {"loop": [1.0] * 64, "head": [0.5] * 64, "layer": [0.4] * 32} for w in "KV"}
    stores = [{"variant": "per_head", "measured_bytes": 100, "predicted_bytes": 100}]
    config = {"loops": 4}
    dims = {"loop": 64, "head": 64, "layer": 32}
    return {
        "methods": methods,
        "spectra": spectra,
        "stores": stores,
        "config": config,
        "dims": dims,
        "full_rank_relative_error": 1e-7,
        "teacher_frozen": True,
        **changes,
    }


def _verdicts(*measured: dict) -> dict[str, str]:
    """Each claim's verdict by its statement, the models' count left out."""
    return {
        re.sub(r" \(\d+ models?\)$", "", c.statement): c.verdict for c in claims(list(measured))
    }


def test_claims_hold_on_agreeing_measurements() -> None:
    assert set(_verdicts(_measured()).values()) == {"confirmed"}


def test_claims_are_refuted_by_contradicting_measurements() -> None:
    m = _measured()
    m["stores"][0]["measured_bytes"] = 101
    m["full_rank_relative_error"] = 0.01
    m["methods"]["lla_2d"]["8"]["attention_error"] = 10.0  # error falls again at rho 8 -> 10.7
    m["methods"]["quantize"]["2"]["kl"] = 0.0
    m["methods"]["final_loop"]["4"] = {"attention_error": 0.0, "kl": 0.0}
    m["methods"]["head_axis"]["2"]["kl"] = 0.0
    m["methods"]["lla_distilled"] = {  # better than SVD: the moved teacher is what refutes
        rho: {"attention_error": 0.0, "kl": row["kl"] / 2}
        for rho, row in m["methods"]["lla"].items()
    }
    m["teacher_frozen"] = False
    verdicts = _verdicts(m)
    for claim in (
        "the per_head store holds the calculator's bytes",
        "full rank reconstructs the cache exactly",
        "lla_2d: error falls as rank rises",
        "LLA beats final-loop reuse at rho = 4",
        "LLA beats head-axis compression at matched bytes",
        "distillation (teacher frozen) lowers LLA's KL at rho = 4",
    ):
        assert verdicts[claim] == "refuted", claim
    # quantization faces the refined codec, whose numbers a moved teacher voids
    quantized = "LLA (refined) beats uniform quantization of the cache at matched bytes at rho = 2"
    assert verdicts[quantized] == "inconclusive"
    m["teacher_frozen"] = True
    assert _verdicts(m)[quantized] == "refuted"


def test_a_value_that_is_not_finite_decides_nothing() -> None:
    """docs/results/2026-12-05-icl-looped-verdicts-preregistered.md: a NaN KL confirmed three
    comparisons and refuted one; a distillation that changes nothing confirmed "lowers"."""
    m = _measured()
    for rho in m["methods"]["lla"]:
        m["methods"]["lla"][rho]["kl"] = float("nan")
    m["methods"]["lla_2d"]["8"]["attention_error"] = float("nan")
    m["methods"]["lla_distilled"] = {
        rho: {"attention_error": 0.0, "kl": 0.0} for rho in m["methods"]["lla"]
    }
    m["methods"]["lla_distilled"]["2"]["kl"] = float("nan")  # the refined codec's, at rho 2
    verdicts = _verdicts(m)
    for claim in (
        "lla_2d: error falls as rank rises",
        "LLA beats final-loop reuse at rho = 4",
        "LLA beats head-axis compression at matched bytes",
        "LLA (refined) beats uniform quantization of the cache at matched bytes at rho = 2",
        "distillation (teacher frozen) lowers LLA's KL at rho = 4",
    ):
        assert verdicts[claim] == "inconclusive", claim
    quantized = "LLA (refined) beats uniform quantization of the cache at matched bytes at rho = 4"
    assert verdicts[quantized] == "confirmed"  # the SVD codec's NaN is not what it reads
    same = _measured()
    same["methods"]["lla_distilled"] = {"4": dict(same["methods"]["lla"]["4"])}
    assert _verdicts(same)["distillation (teacher frozen) lowers LLA's KL at rho = 4"] == "refuted"
    m["teacher_frozen"] = False  # a moved teacher refutes, whatever the KLs
    m["methods"]["lla_distilled"] = {"4": {"attention_error": 0.0, "kl": float("nan")}}
    assert _verdicts(m)["distillation (teacher frozen) lowers LLA's KL at rho = 4"] == "refuted"


def test_quantization_and_distillation_are_judged_rho_by_rho() -> None:
    """docs/results/2026-12-08-looped-kv-refinement-preregistered.md: one claim per rho; the
    quantization control faces the refined codec where there is one (the SVD codec shown
    beside it), so a refined codec that wins at rho 4 confirms there while quantization's win
    at 1.33 refutes that rho alone; distillation that loses at 1.33 refutes that rho alone."""
    import copy

    m = _measured()
    m["methods"]["lla_distilled"] = {
        rho: {"attention_error": 0.0, "kl": row["kl"] / 2}
        for rho, row in m["methods"]["lla"].items()
    }
    m["methods"]["quantize"]["4"]["kl"] = m["methods"]["lla"]["4"]["kl"] * 0.9  # SVD loses
    m["methods"]["quantize"]["1.33"]["kl"] = 0.0  # both lose
    m["methods"]["lla_distilled"]["2"]["kl"] = m["methods"]["lla"]["2"]["kl"] * 1.1
    seeds = [copy.deepcopy(m) for _ in range(3)]
    found = {c.id: c for c in claims(seeds, "3 seeds")}
    verdicts = {i: c.verdict for i, c in found.items() if i.startswith(("beats_q", "distil"))}
    assert verdicts == {
        "beats_quantize:rho=1.33": "refuted",
        "beats_quantize:rho=2": "confirmed",
        "beats_quantize:rho=4": "confirmed",
        **{f"distillation_helps:rho={r:.3g}": "confirmed" for r in RHOS if f"{r:.3g}" != "2"},
        "distillation_helps:rho=2": "refuted",
    }
    shown = found["beats_quantize:rho=4"].measured
    assert set(shown) == {"lla_distilled", "lla", "quantize", "bits"}
    assert found["beats_quantize:rho=4"].statement.startswith("LLA (refined) beats")
    one = copy.deepcopy(seeds)  # one seed's refined codec loses at rho 4: the seeds disagree
    one[1]["methods"]["lla_distilled"]["4"]["kl"] = 1.0
    assert {c.id: c.verdict for c in claims(one)}["beats_quantize:rho=4"] == "inconclusive"


def test_the_comparisons_are_judged_over_every_seeds_model() -> None:
    """docs/results/2026-12-05-seeds-and-widths-preregistered.md, rule 1: three seeds that
    agree confirm; one seed whose head-axis control wins at rho 2 makes the ranking
    inconclusive, naming the rho; every seed losing there refutes it; a seed whose teacher
    moved refutes distillation; a NaN in one seed decides nothing; the engineering checks
    hold for every seed or are refuted."""
    import copy

    good = _measured()
    good["methods"]["lla_distilled"] = {
        rho: {"attention_error": 0.0, "kl": row["kl"] / 2}
        for rho, row in good["methods"]["lla"].items()
    }
    seeds = [copy.deepcopy(good) for _ in range(3)]
    assert set(_verdicts(*seeds).values()) == {"confirmed"}
    found = {c.id: c for c in claims(seeds, "3 seeds")}
    assert found["beats_head_axis"].statement.endswith("(3 seeds)")
    assert found["beats_head_axis"].measured["2"]["lla"]["seeds"] == 3
    one_loses = copy.deepcopy(seeds)
    one_loses[1]["methods"]["head_axis"]["2"]["kl"] = 0.0
    assert (
        _verdicts(*one_loses)["LLA beats head-axis compression at matched bytes"] == "inconclusive"
    )
    reason = {c.id: c.reason for c in claims(one_loses)}["beats_head_axis"]
    assert "the seeds disagree at rho = 2" in reason
    for seed in one_loses:
        seed["methods"]["head_axis"]["2"]["kl"] = 0.0
    assert _verdicts(*one_loses)["LLA beats head-axis compression at matched bytes"] == "refuted"
    moved = copy.deepcopy(seeds)
    moved[2]["teacher_frozen"] = False
    moved_verdicts = _verdicts(*moved)
    assert moved_verdicts["distillation (teacher frozen) lowers LLA's KL at rho = 2"] == "refuted"
    diverged = copy.deepcopy(seeds)
    diverged[1]["methods"]["final_loop"]["4"]["kl"] = math.nan
    assert _verdicts(*diverged)["LLA beats final-loop reuse at rho = 4"] == "inconclusive"
    gap = copy.deepcopy(seeds)  # a seed without a rho the others have: missing, not finite
    del gap[1]["methods"]["lla"]["2"]
    verdicts = _verdicts(*gap)
    assert verdicts["LLA beats head-axis compression at matched bytes"] == "inconclusive"
    assert verdicts["lla_2d: error falls as rank rises"] == "confirmed"
    unread = copy.deepcopy(seeds)
    unread[0]["full_rank_relative_error"] = None  # a NaN kept as null
    assert _verdicts(*unread)["full rank reconstructs the cache exactly"] == "inconclusive"
    odd = copy.deepcopy(seeds)
    odd[2]["stores"][0]["measured_bytes"] = 101
    odd[1]["full_rank_relative_error"] = 0.01
    verdicts = _verdicts(*odd)
    assert verdicts["the per_head store holds the calculator's bytes"] == "refuted"
    assert verdicts["full rank reconstructs the cache exactly"] == "refuted"


def test_the_structure_claims_need_every_seed_at_the_last_snapshot() -> None:
    from infoflow.validators.looped_kv.structure import claims as structure_claims
    from infoflow.validators.looped_kv.structure import table

    def snapshot(margin, error=0.1):
        out = {}
        for rho in RHOS:
            out[f"margin:K:{rho:.3g}"] = out[f"margin:V:{rho:.3g}"] = margin
            out[f"lla_error:{rho:.3g}"] = error * rho
        return out

    def verdicts(runs):
        return {c.id: c.verdict for c in structure_claims(table(runs))}

    good = [
        {"seed": s, "width": w, "snapshots": {150: snapshot(0.2), 600: snapshot(0.2)}, "steps": ()}
        for s in range(3)
        for w in (1, 2)
    ]
    assert set(verdicts(good).values()) == {"confirmed"}
    diverged = [dict(r) for r in good]
    diverged[1] = {**good[1], "snapshots": {150: snapshot(0.2), 600: snapshot(math.nan, math.nan)}}
    summary = table(diverged)
    assert summary["2"]["600"]["margin:K:4"]["missing"] == 1
    assert set(verdicts(diverged).values()) == {"inconclusive"}
    cut = [dict(r) for r in good]  # one seed stopped before the last snapshot, losing before
    cut[3] = {**good[3], "snapshots": {150: snapshot(-0.1)}}
    assert set(verdicts(cut).values()) == {"inconclusive"}
    # rule 2 of docs/results/2026-12-05-seeds-and-widths-preregistered.md: the scheduled
    # steps count, so a width that recorded nothing, or stopped early everywhere, is missing
    scheduled = [{**r, "steps": (150, 600)} for r in good]
    assert set(verdicts(scheduled).values()) == {"confirmed"}
    silent = [{**r, "snapshots": {}} if r["width"] == 2 else r for r in scheduled]
    assert table(silent)["2"]["600"]["margin:K:4"] == {
        "median": None,
        "low": None,
        "high": None,
        "seeds": 0,
        "missing": 3,
    }
    assert set(verdicts(silent).values()) == {"inconclusive"}
    early = [{**r, "snapshots": {150: snapshot(0.2)}} if r["width"] == 2 else r for r in scheduled]
    assert set(verdicts(early).values()) == {"inconclusive"}
    assert set(verdicts([r for r in good if r["width"] == 1]).values()) == {"confirmed"}


def _table(margin=0.1, low=0.05, high=0.2, error=0.01) -> dict:
    """A structure table (two widths, two snapshots) where every claim holds."""
    row = {}
    for rho in RHOS:
        for name in "KV":
            row[f"margin:{name}:{rho:.3g}"] = {
                "median": margin,
                "low": low,
                "high": high,
                "seeds": 3,
            }
        value = error * rho
        row[f"lla_error:{rho:.3g}"] = {"median": value, "low": value, "high": value, "seeds": 3}
    return {w: {"150": dict(row), "600": dict(row)} for w in ("1", "2")}


def test_the_loop_axis_claims_read_every_seed_and_width_at_the_last_snapshot() -> None:
    from infoflow.validators.looped_kv.structure import claims as structure_claims

    def verdicts(table):
        return {c.id: c.verdict for c in structure_claims(table)}

    assert set(verdicts(_table()).values()) == {"confirmed"}
    table = _table()
    table["2"]["600"]["margin:K:32"] = {"median": -0.1, "low": -0.2, "high": -0.05, "seeds": 3}
    table["1"]["600"]["margin:V:4"] = {"median": 0.1, "low": -0.01, "high": 0.2, "seeds": 3}
    table["1"]["150"]["margin:V:2"] = {"median": -1, "low": -1, "high": -1, "seeds": 3}  # early
    table["1"]["600"]["lla_error:8"] = {"median": 1.0, "low": 1.0, "high": 1.0, "seeds": 3}
    assert verdicts(table) == {
        "loop_axis:K": "refuted",
        "loop_axis:V": "inconclusive",
        "error_falls:lla": "refuted",
    }


def test_the_structure_table_takes_medians_and_ranges_over_seeds() -> None:
    from infoflow.validators.looped_kv.structure import table

    runs = [
        {
            "seed": s,
            "width": w,
            "snapshots": {150: {"m": s + w}, 600: {"m": 10 * s + w}},
            "steps": (),
        }
        for s in range(3)
        for w in (1, 2)
    ]
    summary = table(runs)
    assert summary["2"]["600"]["m"] == {"median": 12, "low": 2, "high": 22, "seeds": 3}
    assert summary["1"]["150"]["m"] == {"median": 2, "low": 1, "high": 3, "seeds": 3}


@pytest.mark.slow
def test_validate_trains_the_tiny_looped_model_and_skips_big_ones(tmp_path) -> None:
    out = tmp_path / "run"
    # 4 steps: the measurement distils each of the 8 codecs for min(60, steps) steps, twice
    args = ["--steps", "4", "--seeds", "1", "--quiet", "--device", "cpu", "--out", str(out)]
    args += SMALLER_LOOPED
    proc = run_cli("validate", str(TINY), str(LOOPED_KV / "ouro-1.4b.json"), *args)
    assert proc.returncode == 0, proc.stderr
    report = json.loads((out / "report.json").read_text())
    (section,) = report["specs"]
    heads = collections.Counter(c["id"].split(":")[0] for c in section["claims"])
    # one claim per rho since 2026-12-08: 8 distilled ratios, 2 with quantization bits (d = 8)
    assert section["kind"] == "looped_kv" and len(section["claims"]) == 20
    assert heads["distillation_helps"] == 8 and heads["beats_quantize"] == 2
    structure = section["structure"]  # 1 seed (--seeds) x 2 widths, snapshots at 1, 2, 4
    assert set(structure) == {"1", "2"} and set(structure["2"]) == {"1", "2", "4"}
    assert structure["1"]["4"]["margin:K:4"]["seeds"] == 1
    losses = [r for r in (out / "metrics.csv").read_text().splitlines() if ",train:loss," in r]
    assert len(losses) == 2 and all(",0,4,train:loss," in r for r in losses)  # a width each, seed 0
    stores = section["measured"]["stores"]
    assert all(s["measured_bytes"] == s["predicted_bytes"] for s in stores)
    # one seed: the exact checks are judged, every comparison is inconclusive (4 steps and one
    # seed confirmed paper claims: a review)
    for claim in section["claims"]:
        if claim["id"].startswith(("store_bytes:", "full_rank_exact")):
            assert claim["verdict"] == "confirmed", claim
        else:
            assert claim["verdict"] == "inconclusive", claim
    # shrunk too (--set applies to every spec), Ouro keeps a vocabulary too large to draw over
    assert "a vocabulary of 49,152" in report["skipped"][0]["reason"]
    speeds = report["throughput"]  # the main model's and the 2x width's
    assert len(speeds) == 2 and all(
        s["tokens_per_second"] > 0 < s["seconds"] for s in speeds.values()
    )
    assert all(s["estimated_seconds"] > 0 for s in speeds.values())  # plan's, since 2026-12-07
    assert (out / "tiny-looped-codec.png").stat().st_size > 1000
    assert (
        "Plots `tiny-looped-codec.png`, `tiny-looped-spectra.png`."
        in (out / "report.md").read_text()
    )
    assert (out / "tiny-looped-spectra.png").stat().st_size > 1000
    checkpoint = next((out / "checkpoints").glob("tiny-looped-looped-*.pt"))
    trained_at = checkpoint.stat().st_mtime_ns
    with sqlite3.connect(out / "results.sqlite") as db:  # a claim the rules no longer make
        (spec,) = db.execute("SELECT DISTINCT spec FROM claims").fetchone()
        db.execute(
            "INSERT INTO claims VALUES (?, 'beats_quantize', '', '', '', '', '', '')", (spec,)
        )
    again = run_cli("validate", str(TINY), *args, "--resume", "--no-plots")
    assert again.returncode == 0, again.stderr
    assert checkpoint.stat().st_mtime_ns == trained_at  # judged from the checkpoint, not retrained
    (resumed,) = json.loads((out / "report.json").read_text())["specs"]
    assert resumed == section  # the measurement kept too: its seconds are the first run's
    with sqlite3.connect(out / "results.sqlite") as db:  # the judged claims replace the old
        ids = {i for (i,) in db.execute("SELECT id FROM claims")}
    assert ids == {c["id"] for c in section["claims"]}
    # report.md named the plots --no-plots did not draw (an audit, 2026-12-07)
    assert "No plots (--no-plots)." in (out / "report.md").read_text()


def test_a_measurement_is_kept_and_reused_only_for_the_same_model_and_scale(
    tmp_path, monkeypatch
) -> None:
    from infoflow.validators.looped_kv import validator
    from infoflow.validators.looped_kv.experiment import plan
    from infoflow.validators.protocol import Context

    calls = []
    monkeypatch.setattr(validator, "load_looped", lambda *args: "model")
    monkeypatch.setattr(
        validator, "measure", lambda spec, model, scale, device: calls.append(scale) or {"n": 1}
    )
    spec = infoflow.load_spec(TINY)
    context = Context(torch.device("cpu"), None, tmp_path)
    experiment = plan("tiny", spec, validator.VALIDATOR.scale("smoke", 5, 1, "cpu"))
    main = experiment.group
    assert validator._measure_once(experiment, context, main) == {"n": 1}
    assert validator._measure_once(experiment, context, main) == {"n": 1} and len(calls) == 1
    longer = plan("tiny", spec, validator.VALIDATOR.scale("smoke", 6, 1, "cpu"))
    validator._measure_once(longer, context, longer.group)  # another model: measured again
    assert len(calls) == 2
    three = plan("tiny", spec, validator.VALIDATOR.scale("smoke", 5, 3, "cpu"))
    seeds = validator._seed_models(three)  # the spec's width, seeds 0-2, the main model first
    assert [g.seed for g in seeds] == [0, 1, 2] and seeds[0] is three.group
    assert {g.config.d_model for g in seeds} == {spec.model.hidden_size}
    validator._measure_once(three, context, seeds[0])  # the same model as `experiment`'s
    assert len(calls) == 2
    validator._measure_once(three, context, seeds[1])  # another seed: measured
    assert len(calls) == 3
    for kept in tmp_path.glob("measured-*.json"):  # named by content alone, not the group
        kept.write_text("{not json")  # damaged: measured again
    validator._measure_once(longer, context, longer.group)
    assert len(calls) == 4 and validator._measure_once(longer, context, longer.group) == {"n": 1}
    monkeypatch.setattr(  # a diverged value: kept as null, and read back rather than measured
        validator, "measure", lambda *args: calls.append(None) or {"kl": math.nan}
    )
    four = plan("tiny", spec, validator.VALIDATOR.scale("smoke", 7, 1, "cpu"))
    assert validator._measure_once(four, context, four.group) == {"kl": None}
    assert validator._measure_once(four, context, four.group) == {"kl": None}
    assert len(calls) == 5


# ---- an Ouro-style checkpoint from a local folder -----------------------------------------


def _tiny_ouro(folder, seed: int = 1, core: int = 2, loops: int = 3, **more):
    """A tiny Ouro-style model (``more``: other config fields), saved to ``folder``."""
    from infoflow.validators.looped_kv.ouro import save_ouro

    torch.manual_seed(seed)
    config = LoopedConfig(
        vocab=32,
        d_model=32,
        heads=4,
        kv_heads=2,
        prelude=0,
        core=core,
        loops=loops,
        coda=0,
        mlp_width=48,
        style="ouro",
        **more,
    )
    model = LoopedDecoder(config).eval()
    save_ouro(model, folder)
    return model


def test_an_ouro_checkpoint_loads_to_the_same_model(tmp_path) -> None:
    pytest.importorskip("safetensors")
    from infoflow.validators.looped_kv.ouro import load_ouro

    model = _tiny_ouro(tmp_path / "ouro")
    loaded = load_ouro(tmp_path / "ouro")
    x = torch.randint(0, 32, (2, 10))
    with torch.no_grad():
        assert torch.equal(model(x), loaded(x))
    assert loaded.config.kv == 2 and loaded.config.loops == 3


def test_a_grouped_query_cache_decodes_and_holds_the_calculators_bytes(tmp_path) -> None:
    """GQA (4 query heads over 2 KV heads): the latent store keeps K/V of the KV heads only,
    and its bytes are still the calculator's for the config.json the spec reads."""
    pytest.importorskip("safetensors")
    model = _tiny_ouro(tmp_path / "ouro")
    spec = infoflow.load_spec(
        {
            "kind": "looped_kv",
            "model": {
                "hf_config": str(tmp_path / "ouro" / "config.json"),
                "checkpoint": str(tmp_path / "ouro"),
            },
            "serving": {"context_tokens": 10},
        }
    )
    assert spec.model.kv_heads == 2 and spec.model.loops == 3 and spec.model.dtype == "float32"
    x = torch.randint(0, 32, (2, 10))
    record = ExactAttention(record=True)
    with torch.no_grad():
        logits = model(x, record)
    k, v = kv_codec.core_kv(record, model.config)
    assert k.shape[3] == 2  # the cache holds the KV heads
    full = kv_codec.SVDCodec.fit(k, "loop", 3 * 8), kv_codec.SVDCodec.fit(v, "loop", 3 * 8)
    store = kv_codec.LatentStore(model, 2, 10, full)
    assert torch.allclose(kv_codec.decode(model, x, store), logits, atol=1e-4)
    rows = _store_bytes(spec, model, k, v, x)
    assert all(r["measured_bytes"] == r["predicted_bytes"] for r in rows)


@pytest.mark.slow
def test_validate_measures_a_local_checkpoint_without_training(tmp_path) -> None:
    pytest.importorskip("safetensors")
    _tiny_ouro(tmp_path / "ouro")
    spec = tmp_path / "ouro.json"
    spec.write_text(
        json.dumps(
            {
                "kind": "looped_kv",
                "serving": {"context_tokens": 64},
                "model": {"hf_config": "ouro/config.json", "checkpoint": "ouro"},
            }
        )
    )
    out = tmp_path / "run"
    proc = run_cli("validate", str(spec), "--steps", "5", "--quiet", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    (section,) = json.loads((out / "report.json").read_text())["specs"]
    assert section["measured"]["config"]["style"] == "ouro"
    assert not list((out / "checkpoints").glob("*.pt"))  # nothing was trained
    stores = section["measured"]["stores"]
    assert all(s["measured_bytes"] == s["predicted_bytes"] for s in stores)
    # a loaded model is one model, not a seed of a training: its claims are judged
    assert not any("seed(s)" in claim["reason"] for claim in section["claims"])
    missing = run_cli("predict", str(spec), "--set", "model.checkpoint=nowhere")
    assert missing.returncode == 2 and "model.checkpoint" in missing.stderr


def test_a_damaged_checkpoint_folder_is_refused_naming_it(tmp_path) -> None:
    pytest.importorskip("safetensors")
    from infoflow.core.errors import SpecError
    from infoflow.validators.looped_kv.ouro import load_ouro

    folder = tmp_path / "ouro"
    _tiny_ouro(folder)
    weights = folder / "model.safetensors"
    whole, config = weights.read_bytes(), json.loads((folder / "config.json").read_text())
    weights.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(SpecError, match="not a readable Ouro checkpoint"):
        load_ouro(folder)
    weights.write_bytes(whole)
    (folder / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 3}))
    with pytest.raises(SpecError, match=r"no 'model\.layers\.2\.self_attn\.q_proj\.weight'"):
        load_ouro(folder)
    (folder / "config.json").write_text(json.dumps({**config, "hidden_size": 48}))
    with pytest.raises(SpecError, match="not a readable Ouro checkpoint"):
        load_ouro(folder)
    (folder / "config.json").write_text("{")
    with pytest.raises(SpecError, match="invalid JSON"):
        load_ouro(folder)


def test_quantization_is_compared_at_truly_matched_bytes() -> None:
    """The bits a quantized cache keeps at 1/rho of the cache's bytes, its per-vector scale and
    offset (two fp16 numbers) counted."""
    assert kv_codec.matched_bits(32, 4, 16) == 6  # 8 bits a number, 2 of them for the scales
    assert kv_codec.matched_bits(16, 4, 128) == 3  # bf16 at 4x: 4 bits, a quarter to scales
    assert kv_codec.matched_bits(32, 16, 16) == 0  # nothing left: no point at this rho


def test_grouped_query_prelude_and_coda_read_their_kv_heads() -> None:
    """With GQA, the exact cache put back through every slot (prelude and coda included)
    gives the teacher's logits."""
    torch.manual_seed(3)
    model = LoopedDecoder(LoopedConfig(heads=4, kv_heads=2, prelude=1, coda=1)).eval()
    x = torch.randint(0, 16, (2, 9))
    record = ExactAttention(record=True)
    with torch.no_grad():
        logits = model(x, record)
        k, v = kv_codec.core_kv(record, model.config)
        assert torch.allclose(model(x, kv_codec.Reconstructed(k, v)), logits, atol=1e-5)


def test_linear_rope_scaling_is_read_and_others_refused(tmp_path) -> None:
    pytest.importorskip("safetensors")
    from infoflow.core.errors import SpecError
    from infoflow.validators.looped_kv.ouro import load_ouro

    model = _tiny_ouro(tmp_path / "scaled", seed=2, core=1, loops=2, rope_scale=4.0)
    loaded = load_ouro(tmp_path / "scaled")
    x = torch.randint(0, 32, (1, 12))
    with torch.no_grad():
        assert loaded.config.rope_scale == 4.0 and torch.equal(model(x), loaded(x))
    data = json.loads((tmp_path / "scaled" / "config.json").read_text())
    data["rope_scaling"] = {"rope_type": "yarn", "factor": 4.0}
    (tmp_path / "scaled" / "config.json").write_text(json.dumps(data))
    with pytest.raises(SpecError, match="rope_scaling of type 'yarn' is not modelled"):
        load_ouro(tmp_path / "scaled")


@pytest.mark.slow  # 21 CPU s on an H200 machine (CUDA's start-up), 2026-12-04
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_the_measurements_run_on_the_gpu(teacher) -> None:
    from infoflow.validators.looped_kv.experiment import SCALES
    from infoflow.validators.looped_kv.measure import measure

    spec = infoflow.load_spec(TINY)
    model = LoopedDecoder(LoopedConfig()).eval()
    measured = measure(spec, model, SCALES["smoke"], torch.device("cuda"))
    assert all(s["measured_bytes"] == s["predicted_bytes"] for s in measured["stores"])
    assert len(claims([measured])) == 9


def test_the_report_gives_the_kl_over_the_seeds_beside_the_seed_0_table() -> None:
    from infoflow.validators.looped_kv.claims import over_seeds_table
    from infoflow.validators.looped_kv.report import markdown

    seeds = [_measured() for _ in range(3)]
    for i, seed in enumerate(seeds):
        seed["methods"]["lla"]["4"]["kl"] = 0.001 * (i + 1)
    first = seeds[0]
    config = {"prelude": 1, "core": 2, "loops": 4, "coda": 1, "d_model": 64, "heads": 4}
    measured = {**first, "config": {**config, "vocab": 64}, "teacher_loss": 1.0, "seconds": 9.0}
    measured["stores"] = [{**store, "tokens": 100} for store in first["stores"]]
    section = {
        "name": "tiny",
        "measured": measured,
        "over_seeds": over_seeds_table([s["methods"] for s in seeds]),
        "claims": [],
    }
    text = "\n".join(markdown(section))
    assert "to the teacher of the seed-0 model, everything stored in" in text
    assert "Next-token KL over the 3 seeds" in text
    row = next(line for line in text.splitlines() if line.startswith("| lla |") and "[" in line)
    assert "0.002 [0.001, 0.003]" in row
    alone = "\n".join(markdown({k: v for k, v in section.items() if k != "over_seeds"}))
    assert "over the 3 seeds" not in alone and "to the teacher, everything stored" in alone


def test_one_seed_refutes_a_teacher_that_distillation_moved() -> None:
    """The integrity refutation is not a comparison over seeds: one seed shows it."""
    from infoflow.validators.claims import Claim
    from infoflow.validators.looped_kv.claims import TEACHER_CHANGED
    from infoflow.validators.looped_kv.validator import _exact

    moved = Claim.judged("distillation_helps", "s", "lower", {}, "t", False, TEACHER_CHANGED)
    assert _exact(moved) and not _exact(Claim.judged("beats_final_loop", "s", 1, 2, "t", True))
    assert _exact(Claim.judged("store_bytes:2d", "s", 1, 1, "t", True))
