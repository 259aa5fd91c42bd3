"""Park et al.'s conventions as options, against direct computations: the KL direction, the
stationary weighting of scored positions, U(0, 1) mixture weights; the defaults keep the
metrics they had; options that change the models or the metrics change the group's name."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import infoflow  # noqa: E402
from infoflow.validators.chains import sample_chains, stationary  # noqa: E402
from infoflow.validators.icl_markov import references  # noqa: E402
from infoflow.validators.icl_markov.ksweep.data import IclGroup, MemberData  # noqa: E402
from infoflow.validators.icl_markov.ksweep.train import position_kl  # noqa: E402
from infoflow.validators.icl_markov.training import build_model  # noqa: E402

TINY = {
    "kind": "icl_markov",
    "states": 3,
    "chains": 1,
    "context_len": 9,
    "model": {"layers": 2, "d_model": 16, "heads": 2, "mlp_width": 32},
    "training": {"steps": 10, "batch_size": 4, "lr": 0.003},
}


def _data(**changes) -> tuple[IclGroup, MemberData]:
    spec = infoflow.load_spec({**TINY, **changes})
    group = IclGroup("g", spec, [2, 5], [0, 1], [], eval_sequences=6)
    return group, MemberData(group, torch.device("cpu"))


def _kl(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """KL(p || q) over the last axis, written out."""
    return (p * ((p + 1e-12).log() - (q + 1e-12).log())).sum(-1)


def test_the_kl_direction_swaps_target_and_model() -> None:
    _, default = _data()
    _, park = _data(options={"kl_direction": "model_reference"})
    generator = torch.Generator().manual_seed(0)
    target = torch.softmax(torch.randn(4, 5, 3, generator=generator, dtype=torch.float64), -1)
    log_model = torch.log_softmax(
        torch.randn(4, 5, 3, generator=generator, dtype=torch.float64), -1
    )
    found = default.divergence(target, log_model)
    assert torch.allclose(found, _kl(target, log_model.exp()), atol=1e-9)
    swapped = park.divergence(target, log_model)
    assert torch.allclose(swapped, _kl(log_model.exp(), target), atol=1e-9)
    assert not torch.allclose(found, swapped)


def test_levels_and_separations_score_references_as_the_model_is_scored() -> None:
    """levels: the reference as the model, the truth as the target; separations ``p>q``: p as
    the target, q as the model; every position but the last, ID and OOD averaged."""
    for direction in ("reference_model", "model_reference"):
        _, data = _data(options={"kl_direction": direction})
        refs = {s: r[:, :, :, :-1].double() for s, r in data.refs.items()}
        ordered = (lambda t, m: (t, m)) if direction == "reference_model" else (lambda t, m: (m, t))
        g2 = 1 + references.REFERENCES.index("G2")
        m2 = 1 + references.REFERENCES.index("M2")
        levels = data.levels()
        for split in ("id", "ood"):
            direct = _kl(*ordered(refs[split][:, 0], refs[split][:, g2])).mean((-1, -2))
            assert [row["G2"] for row in levels[split]] == pytest.approx(direct.tolist(), rel=1e-5)
        both = sum(_kl(*ordered(r[:, g2], r[:, m2])).mean((-1, -2)) for r in refs.values()) / 2
        found = [row["G2>M2"] for row in data.separations()]
        assert found == pytest.approx(both.tolist(), rel=1e-5)


def test_stationary_weights_are_the_chains_stationary_probability_of_the_state() -> None:
    """OOD sequence n comes from fresh chain n; an ID sequence from one of the member's own
    chains: its weights are that chain's pi(x_t), scaled to a mean of 1 over the scored
    positions."""
    group, data = _data(options={"positions": "stationary"})
    _, uniform = _data()
    assert all(torch.equal(w, torch.ones_like(w)) for w in uniform.scored.values())
    fresh = stationary(sample_chains(6, 3, 1.0, seed=1_000_003))
    for member in range(len(group.members)):
        own = stationary(data.P[member])
        for split, candidates in (("ood", None), ("id", own)):
            x = data.x[split][member][:, :-1]
            for n in range(x.shape[0]):
                pis = fresh[n : n + 1] if candidates is None else candidates
                options = [pi[x[n]] / pi[x[n]].mean() for pi in pis]
                found = data.scored[split][member, n].double()
                assert any(torch.allclose(found, o, atol=1e-5) for o in options)
    g1 = 1 + references.REFERENCES.index("G1")  # the weighted level: a weighted mean of the KL
    refs = data.refs["id"][:, :, :, :-1].double()
    direct = (data.scored["id"].double() * _kl(refs[:, 0], refs[:, g1])).mean((-1, -2))
    assert [row["G1"] for row in data.levels()["id"]] == pytest.approx(direct.tolist(), rel=1e-5)


def test_park_mixture_weights_are_normalised_uniform_draws() -> None:
    group, data = _data(mixture="park")
    _, default = _data()
    for (k, seed), weights, exp in zip(group.members, data.weights, default.weights, strict=True):
        draws = np.random.default_rng(seed + 7).uniform(size=max(group.chains))[:k]
        assert weights.tolist() == pytest.approx((draws / draws.sum()).tolist())
        exponential = np.random.default_rng(seed + 7).exponential(size=max(group.chains))[:k]
        assert exp.tolist() == pytest.approx((exponential / exponential.sum()).tolist())


def test_the_default_metrics_are_the_plain_kl_of_the_truth_and_references() -> None:
    """Defaults unchanged: KL(target || model) at every position but the last, unweighted."""
    group, data = _data()
    model = build_model(group, torch.device("cpu"))
    found = position_kl(model, data)
    with torch.no_grad():
        logp = torch.log_softmax(model(data.x["ood"][..., :-1]), -1)[:, None]
    target = data.refs["ood"][..., :-1, :]
    direct = (target * ((target + 1e-12).log() - logp)).sum(-1).mean(2)
    assert torch.allclose(found["ood"], direct, atol=1e-6)


def test_options_that_change_models_or_metrics_change_the_group_name() -> None:
    base, _ = _data()
    names = {base.name}
    for changes in (
        {"mixture": "park"},
        {"options": {"kl_direction": "model_reference"}},
        {"options": {"positions": "stationary"}},
    ):
        spec = infoflow.load_spec({**TINY, **changes})
        names.add(IclGroup("g", spec, [2, 5], [0, 1], [], eval_sequences=6).name)
    assert len(names) == 4
    assert base.identity()["setting"]["options"]["kl_direction"] == "reference_model"
