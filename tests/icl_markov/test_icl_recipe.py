"""The training recipe's options (Park et al.'s: the gradient clipped to norm 0.01, no warmup,
every parameter decayed): each member of a stack trained as one model of its own would be,
and the runs of the default recipe keep their identities."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from conftest import ROOT, SPECS, refused  # noqa: E402

import infoflow  # noqa: E402
from infoflow.validators.icl_markov.model import StackedGPT  # noqa: E402
from infoflow.validators.icl_markov.training import _optimiser, trained_setting  # noqa: E402
from infoflow.validators.run import Options, plan  # noqa: E402

SMOKE = SPECS / "icl_markov" / "smoke-c3.json"
PARK = SPECS / "icl_markov" / "park2025.json"


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
    # the name the group had before the recipe options (2b3541f); a TRAINING_VERSION bump
    # changes it on purpose, and then this line with it
    assert name([]) == "smoke-c3-b3b8e594194a"


def test_training_clips_every_step_with_the_spec_bound(tmp_path, monkeypatch) -> None:
    """The loop hands the spec's bound to the model before each optimiser step (the method's
    arithmetic is tested above); without grad_clip it never clips."""
    from typer.testing import CliRunner

    from infoflow.cli import app

    calls = []
    clip = StackedGPT.clip_gradients
    monkeypatch.setattr(
        StackedGPT, "clip_gradients", lambda self, bound: calls.append(bound) or clip(self, bound)
    )
    spec = {
        "kind": "icl_markov",
        "states": 3,
        "chains": 4,
        "context_len": 16,
        "model": {"layers": 2, "d_model": 16, "heads": 2, "mlp_width": 32},
        "training": {"steps": 6, "batch_size": 8, "lr": 0.003, "grad_clip": 0.5},
    }
    (tmp_path / "tiny.json").write_text(json.dumps(spec))
    for bound, expected in ((0.5, [0.5] * 6), (None, [])):
        calls.clear()
        args = ["validate", str(tmp_path / "tiny.json"), "--quiet", "--no-plots", "--seeds", "1"]
        args += [
            "--set",
            f"training.grad_clip={json.dumps(bound)}",
            "--out",
            str(tmp_path / str(bound)),
        ]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        assert calls == expected


def test_calibrate_keeps_the_recipe_and_the_names_of_sets_before_it(tmp_path) -> None:
    """A report's settings leave a recipe at its defaults out (as the identity does): read
    so, the shipped clock set keeps its name; a report of Park et al.'s recipe gives a set
    of its own, with that recipe (a review found both written as the default recipe, under
    one name)."""
    from infoflow.icl_markov.fit_clocks import clock_sets

    file = ROOT / "docs" / "results" / "2026-11-30-icl-race-c3-short-cpu" / "report.json"
    report = json.loads(file.read_text())
    [shipped] = clock_sets(file, report)
    assert shipped.name == "race-c3-short-clocks-f71d825c@2026-11-30"  # as calibration.json
    assert shipped.settings["grad_clip"] is None and shipped.settings["decay"] == "matrices"
    park = {"decay": "all", "warmup_fraction": 0, "grad_clip": 0.01}
    for spec in report["specs"]:
        for entry in spec.get("clocks", []):
            entry["setting"]["training"].update(park)
    [recipe] = clock_sets(file, report)
    assert recipe.name != shipped.name and {k: recipe.settings[k] for k in park} == park


def test_a_published_anchor_without_its_recipe_matches_no_spec(tmp_path) -> None:
    """A calibration file written before the recipe settings holds Park et al.'s figure
    without their recipe: read as the default recipe it gave the figure's boundary to a
    default-recipe spec (a review); now it is unrecorded. Recipe values are checked."""
    old = json.loads((ROOT / "infoflow" / "icl_markov" / "calibration.json").read_text())
    for name in ("decay", "warmup_fraction", "grad_clip"):
        del old["anchors"][0]["settings"][name]
    (tmp_path / "old.json").write_text(json.dumps(old))
    for recipe in ([], ["training.decay=matrices", "training.warmup_fraction=0.02"]):
        overrides = ["sweep=null", f"calibration={tmp_path / 'old.json'}", *recipe]
        boundary = infoflow.predict(infoflow.load_spec(PARK, overrides))["final_boundary"]
        assert boundary.value is None and "vs unrecorded" in boundary.note
    for key, value in (("decay", "bogus"), ("warmup_fraction", True), ("grad_clip", "0.01")):
        bad = json.loads(json.dumps(old))
        bad["anchors"][1]["settings"][key] = value  # a boolean raised IndexError (a review)
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        line = refused("predict", str(PARK), "--set", f"calibration={tmp_path}/bad.json")
        assert f"settings.{key}:" in line


def test_the_report_names_the_recipe_a_group_trained_with() -> None:
    """report.md said "warmup then a constant rate" of every group (a review)."""
    from infoflow.validators.icl_markov.ksweep.report import _rate

    assert _rate({}) == ", warmup 2% of the steps"  # the defaults, left out of the setting
    park = {"decay": "all", "warmup_fraction": 0, "grad_clip": 0.01}
    assert _rate(park) == ", every parameter decayed, no warmup, the gradient clipped to norm 0.01"
    assert _rate({"warmup_fraction": 0.004}) == ", warmup 0.4% of the steps"  # not "0%"
