"""The training recipe's options (Park et al.'s: the gradient clipped to norm 0.01, no warmup,
every parameter decayed): each member of a stack trained as one model of its own would be,
and the runs of the default recipe keep their identities."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from conftest import SPECS  # noqa: E402

import infoflow  # noqa: E402
from infoflow.validators.icl_markov.model import StackedGPT  # noqa: E402
from infoflow.validators.icl_markov.training import _optimiser, trained_setting  # noqa: E402
from infoflow.validators.run import Options, plan  # noqa: E402

SMOKE = SPECS / "icl_markov" / "smoke-c3.json"


def _gradients(scales: tuple[float, ...]) -> StackedGPT:
    """A stack of len(scales) members with the gradients of their losses times ``scales``."""
    model = StackedGPT(list(range(len(scales))), 3, 8, 2, 16, 2, 32)
    x = torch.randint(0, 3, (len(scales), 4, 8), generator=torch.Generator().manual_seed(0))
    logits = model(x[:, :, :-1])
    losses = torch.nn.functional.cross_entropy(
        logits.flatten(1, 2).transpose(1, 2), x[:, :, 1:].flatten(1), reduction="none"
    ).mean(-1)
    (losses * torch.tensor(scales)).sum().backward()
    return model


def _member(model: StackedGPT, i: int) -> list[torch.Tensor]:
    """Member i's gradients, one tensor a parameter."""
    per_layer = {"ln1", "W_QKV", "W_O", "ln2", "W_1", "b_1", "W_2", "b_2"}
    return [
        p.grad.select(1 if name in per_layer else 0, i).clone()
        for name, p in model.named_parameters()
    ]


def test_each_member_is_clipped_as_torch_clips_one_model() -> None:
    """Member 0's gradient is large and clipped, member 1's (its loss times 1e-4) under the
    bound and left alone: each exactly as clip_grad_norm_ treats one model's."""
    model = _gradients((1.0, 1e-4))
    before = [_member(model, i) for i in range(2)]
    norms = model.clip_gradients(0.01)
    for i in range(2):
        alone = [torch.nn.Parameter(torch.zeros_like(g)) for g in before[i]]
        for p, g in zip(alone, before[i], strict=True):
            p.grad = g.clone()
        norm = torch.nn.utils.clip_grad_norm_(alone, 0.01)
        assert norms[i].item() == pytest.approx(norm.item(), rel=1e-5)
        for p, g in zip(alone, _member(model, i), strict=True):
            torch.testing.assert_close(g, p.grad, rtol=1e-5, atol=1e-12)
    assert norms[0] > 0.01 > norms[1]  # one clipped, one not
    assert all(torch.equal(a, b) for a, b in zip(before[1], _member(model, 1), strict=True))


def test_parks_recipe_decays_every_parameter_and_starts_at_the_full_rate() -> None:
    spec = infoflow.load_spec(SMOKE, ["sweep=null"])
    model = StackedGPT([0], 3, 8, 2, 16, 2, 32)
    default, schedule = _optimiser(model, spec.training, torch.device("cpu"))
    decayed = {id(p) for g in default.param_groups if g["weight_decay"] > 0 for p in g["params"]}
    assert (
        id(model.W_QKV) in decayed and id(model.ln1) not in decayed and id(model.b_1) not in decayed
    )
    warmup = spec.training.steps // 50  # 2% of the steps, as every earlier run
    assert schedule.get_last_lr()[0] == pytest.approx(spec.training.lr / warmup)
    park = spec.training.model_copy(update={"decay": "all", "warmup_fraction": 0.0})
    optimizer, schedule = _optimiser(model, park, torch.device("cpu"))
    decayed = {id(p) for g in optimizer.param_groups if g["weight_decay"] > 0 for p in g["params"]}
    assert decayed == {id(p) for p in model.parameters()}
    assert schedule.get_last_lr()[0] == spec.training.lr


def test_the_default_recipe_keeps_the_identity_of_runs_before_it() -> None:
    """A spec that leaves the recipe at its defaults, or writes them out, is the group it was
    before the options existed (none of them in its identity); one that sets one is another."""
    spec = infoflow.load_spec(SMOKE, ["sweep=null"])
    assert not {"decay", "warmup_fraction", "grad_clip"} & set(trained_setting(spec)["training"])
    written = ["sweep=null", "training.decay=matrices", "training.warmup_fraction=0.02"]

    def name(overrides: list[str]) -> str:
        planned = plan([SMOKE], Options(overrides=tuple(overrides)))
        [(_, experiment)] = planned.experiments
        return experiment.groups[0].name

    assert name(written) == name(["sweep=null"]) != name(["sweep=null", "training.grad_clip=1"])
