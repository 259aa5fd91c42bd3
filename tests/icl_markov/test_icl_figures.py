"""The K sweep's and the race's pictures are Figures built from a report section (issue 30,
item 2): one builder per picture, ``figures`` naming them as ``plot`` writes them."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("torch")

from matplotlib.figure import Figure

from infoflow.validators.icl_markov.clocks import plots as clocks_plots
from infoflow.validators.icl_markov.ksweep import plots
from infoflow.validators.icl_markov.ksweep.phases import PHASES
from infoflow.validators.icl_markov.validator import VALIDATOR

STEPS = [10, 100, 1000]
KS = [2, 8]


def _member(chains: int, seed: int) -> dict:
    """A K sweep member as report.json holds it, its KL falling over three checkpoints."""
    curve = [0.3, 0.2, 0.1]
    return {
        "chains": chains,
        "seed": seed,
        "steps": STEPS,
        "phases": ["G1", "M1", "G2"],
        "kl": {name: curve for name in PHASES},
        "final": {"id:truth": 0.1, "ood:truth": 0.2},
        "levels": {"ood": {"G2": 0.05}},
        "positions": {name: [0.4, 0.3, 0.2, 0.1] for name in ("id:truth", "ood:truth", *PHASES)},
        "weights": {"memorizing": [0.1, 0.6, 0.2], "generalizing": [0.0, 0.2, 0.7]},
    }


def _group(race: bool) -> dict:
    race_part = {
        "k1_star": 4.0,
        "interval": [3.0, None],
        "tau_g": [500.0, 600.0, 700.0],
        "paths": {
            path: {str(k): [100.0 * k, 120.0 * k, 140.0 * k] for k in KS} for path in ["M1", "M2"]
        },
    }
    return {
        "name": "g-race" if race else "g",
        "seeds": [0, 1],
        "members": [_member(k, seed) for seed in (0, 1) for k in KS],
        "setting": {"training": {"layer1_attention_lr": 0.25}, "options": {}},
        "predictions": {"2": {"k1_star": {"value": 4.0}}},
        "measurement": {
            "race": race_part if race else None,
            "k1_fit": {"status": "open", "low": 3, "high": None},
        },
    }


SECTION = {"kind": "icl_markov", "name": "spec", "groups": [_group(True), _group(False)]}


def test_each_picture_of_a_group_is_a_figure_of_its_first_seed() -> None:
    group = SECTION["groups"][0]
    phases = plots.phases_figure("spec", group)
    assert isinstance(phases, Figure) and len(phases.axes) == 2
    shown = "seed 0 of 2 (the verdicts read every seed)"  # unsaid before (an audit, 12-07)
    assert phases.axes[0].get_title() == f"spec: phase (margin 0.33), {shown}"
    kl = plots.kl_figure(group)
    assert kl.get_suptitle() == f"g-race: {shown}"
    assert [ax.get_title() for ax in kl.axes] == [f"KL({name} || model)" for name in PHASES]
    assert [len(ax.get_lines()) for ax in kl.axes] == [len(KS)] * len(PHASES)  # one per K
    positions = plots.positions_figure(group)
    assert len(positions.axes) == 2 + len(PHASES)
    assert list(positions.axes[0].get_lines()[0].get_xdata()) == [1, 2, 3, 4]
    assert positions.get_suptitle() == f"g-race: {shown}"
    weights = plots.weights_figure("spec", group)
    assert [ax.get_title() for ax in weights.axes] == ["K = 2", "K = 8"]
    assert len(weights.axes[0].get_lines()) == 2 * 2 + 1  # 2 seeds x 2 kinds, and WEIGHT
    assert "layer 1 at 0.25 x the rate" in weights.get_suptitle()


def test_the_phase_plot_and_report_name_the_criterion_and_the_weights_plot() -> None:
    """A fresh-user audit (2026-12-07): a projection run's phase plot said "margin 0.33"
    (the gap rule's), its report listed no weights plot, and a one-sided logistic bracket
    read "K*_1 between 16 to open"."""
    from infoflow.validators.icl_markov.ksweep.report import _fitted, _setting

    projected = {**_group(False), "setting": {**_group(False)["setting"]}}
    projected["setting"]["options"] = {"criterion": "projection"}
    title = plots.phases_figure("spec", projected).axes[0].get_title()
    assert title.startswith("spec: phase (projection: a kind formed at weight >= 0.5), seed 0")
    setting = {
        "states": 3,
        "context_len": 64,
        "dirichlet_alpha": 1,
        "mixture": "random",
        "model": {"layers": 2, "d_model": 32, "heads": 2, "mlp_width": 64},
        "training": {"steps": 10, "batch_size": 4, "lr": 0.001, "weight_decay": 0.1},
    }
    assert _setting({**projected, "setting": setting}).endswith("`g-weights.png`.")
    fit = {"outcomes": 6, "left_out": [], "status": "open", "reason": "one side", "low": 16}
    assert "K*_1 above 16 (" in _fitted({**fit, "high": None})
    assert "K*_1 below 16 (" in _fitted({**fit, "low": None, "high": 16})
    assert "K*_1 between 8 and 16, no finite fit" in _fitted(
        {**fit, "status": "separable", "low": 8, "high": 16}
    )


def test_the_race_is_a_figure_and_a_group_without_one_has_none() -> None:
    race = clocks_plots.race_figure(SECTION["groups"][0])
    labels = [t.get_text() for t in race.axes[0].get_legend().get_texts()]
    assert labels[:2] == ["M1 path", "M2 path"] and "race K*_1" in labels
    assert clocks_plots.race_figure(SECTION["groups"][1]) is None
    without = {**SECTION["groups"][1], "members": [_member(2, 0) | {"weights": None}]}
    assert plots.weights_figure("spec", without) is None


def test_the_validators_figures_are_every_picture_by_file_name() -> None:
    figures = VALIDATOR.figures([SECTION])
    assert list(figures) == [
        *(f"{g}-{what}.png" for g in ("g-race", "g") for what in ("phases", "kl")),
        "g-race-positions.png",
        "g-positions.png",
        "g-race-weights.png",
        "g-weights.png",
        "g-race-race.png",
    ]
    assert all(isinstance(figure, Figure) for figure in figures.values())
