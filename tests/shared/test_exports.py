"""What a run writes besides its reports: metrics.csv, the learning curves with the claims'
thresholds, TensorBoard logs when tensorboard is installed; and how report.md rounds."""

from __future__ import annotations

import csv
import importlib.util
import io
import math

import pytest

pytest.importorskip("torch")
pytest.importorskip("matplotlib")

from matplotlib.figure import Figure

from infoflow.validators.exports import TENSORBOARD_MISSING, group_curves, write_exports
from infoflow.validators.plots import learning_curves
from infoflow.validators.report import interval, markdown, rounded
from infoflow.validators.retrieval.plots import floors
from infoflow.validators.store import Store

GROUP = "spec $\\frac{$-T8-0123456789ab"  # a name mathtext would fail on


class _Validator:
    def floors(self, section: dict) -> dict:
        return {GROUP: {"eval:nmse": [(section["threshold"], "learns below")]}}


def _store(tmp_path) -> Store:
    """A group of three members (two seeds of one and one of another), measured at three
    steps, with its throughput (not a member's metric) and a one-step metric."""
    store = Store(tmp_path / "results.sqlite")
    members = [{"label": "a, seed 0", "seed": 0}, {"label": "a, seed 1", "seed": 1}, {"label": "b"}]
    store.add_group(GROUP, "spec", {}, members, {"steps": 40})
    for step in (10, 20, 40):
        rows = [{"train:loss": 1 / (step * (i + 1)), "eval:nmse": 0.3 / step} for i in range(3)]
        store.record_metrics(GROUP, step, rows)
    store.record_metrics(GROUP, 40, [{"final:kl": math.pi}, {}, {}])
    store.record_throughput(GROUP, {"tokens_per_second": 1e4, "mfu": 0.01})
    return store


def test_the_csv_holds_every_members_metrics_as_the_database_does(tmp_path) -> None:
    store = _store(tmp_path)
    exports = write_exports(tmp_path, store, [(_Validator(), {"threshold": 0.01})])
    with (tmp_path / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["group", "member", "seed", "step", "metric", "value"]
    assert len(rows) == 3 * 3 * 2 + 1  # no throughput rows
    database = [tuple("" if v is None else str(v) for v in row) for row in store.metric_rows()]
    assert [tuple(row.values()) for row in rows] == database
    assert {
        "group": GROUP,
        "member": "a, seed 1",
        "seed": "1",
        "step": "20",
        "metric": "train:loss",
        "value": repr(1 / 40),
    } in rows
    assert {r["seed"] for r in rows if r["member"] == "b"} == {""}
    assert [r["value"] for r in rows if r["metric"] == "final:kl"] == [repr(math.pi)]
    assert exports["metrics"] == "metrics.csv" and exports["curves"] == [f"curves-{GROUP}.png"]
    assert (tmp_path / f"curves-{GROUP}.png").read_bytes()[:4] == b"\x89PNG"
    if importlib.util.find_spec("tensorboard") is None:
        assert exports["tensorboard"] == TENSORBOARD_MISSING


def test_tensorboard_logs_every_group_when_installed(tmp_path) -> None:
    pytest.importorskip("tensorboard")
    exports = write_exports(tmp_path, _store(tmp_path), [])
    assert exports["tensorboard"] == "tensorboard/"
    assert list((tmp_path / "tensorboard" / GROUP).glob("events.out.tfevents.*"))


def test_the_curves_are_a_figure_with_a_line_per_member_and_the_threshold(tmp_path) -> None:
    curves = group_curves(_store(tmp_path).metric_rows())[GROUP]
    assert list(curves) == ["eval:nmse", "train:loss"]  # final:kl has one step: no curve
    figure = learning_curves(GROUP, curves, {"eval:nmse": [(0.01, "learns below")]})
    assert isinstance(figure, Figure)
    nmse, loss = figure.axes
    assert [line.get_label() for line in nmse.get_lines()] == [
        "a, seed 0",
        "a, seed 1",
        "b",
        "learns below",
    ]
    assert list(nmse.get_lines()[-1].get_ydata()) == [0.01, 0.01]
    assert len(loss.get_lines()) == 3 and nmse.get_xscale() == nmse.get_yscale() == "log"
    figure.canvas.draw()  # the name's $ is not mathtext


def test_a_long_legend_widens_the_figure_not_the_panels_narrower() -> None:
    """72 members (a paper-scale retrieval group) take three legend columns: the figure
    grows by them, so each panel keeps the width it has beside a short legend."""
    line, name = [(10, 1.0), (100, 0.5)], "heads [4, 4], T=64, E=60, MLP {}, seed 0"
    few = learning_curves("g", {"eval:nmse": {name.format(i): line for i in range(3)}})
    many = learning_curves("g", {"eval:nmse": {name.format(i): line for i in range(72)}})
    assert many.get_size_inches()[0] - few.get_size_inches()[0] == pytest.approx(4.4)
    for figure in (few, many):
        figure.savefig(io.BytesIO())  # lays the figure out
    (small,), (large,) = few.axes, many.axes
    assert large.get_position().width * many.get_size_inches()[0] == pytest.approx(
        small.get_position().width * few.get_size_inches()[0], rel=0.2
    )


def test_retrieval_curves_draw_the_floors_its_claims_use() -> None:
    section = {
        "design": {"groups": [{"name": "g8", "seq_len": 8}, {"name": "g16", "seq_len": 16}]},
        "floors": {"8": {"shortcut": 0.28, "learns_below": 0.07}},
    }
    assert floors(section) == {
        "g8": {"eval:nmse": [(0.28, "pooling shortcut"), (0.07, "learns below")]}
    }


def test_reports_round_to_the_precision_numbers_carry() -> None:
    assert rounded({"kl": 0.00020874015657075992, "n": 3}) == {"kl": 0.000209, "n": 3}
    slope = {"median": -9.89123e-05, "low": -0.0015523, "high": 0.018312, "seeds": 3}
    assert rounded(slope) == {"median": -0.0001, "low": -0.0016, "high": 0.0183, "seeds": 3}
    assert interval(slope) == "-0.0001 [-0.0016, 0.0183]"
    assert interval({"median": 20214.7, "low": 3790.12, "high": 20500.0}) == ("20200 [3800, 20500]")
    assert interval({"median": None}) == interval(None) == "-"


def test_the_training_time_table_gives_seconds_to_three_digits() -> None:
    """12.34 s against 8.83 estimated read "12 | 9 | 1.40" (an audit, 2026-12-07)."""
    from infoflow.validators.report import _speeds

    speeds = {
        "g": {"seconds": 12.34, "estimated_seconds": 8.83, "tokens_per_second": 1e3, "mfu": 0.1},
        "h": {"seconds": 1234.5, "estimated_seconds": None, "tokens_per_second": 5, "mfu": None},
    }
    rows = _speeds(speeds)[-2:]
    assert rows == ["| g | 12.3 | 8.83 | 1.40 | 1,000 | 10.00% |", "| h | 1,234 | - | - | 5 | - |"]


def test_report_md_lists_the_exports() -> None:
    report = {
        "scale": "smoke",
        "device": "cpu",
        "started": "a",
        "finished": "b",
        "settings": {},
        "by_kind": {},
        "specs": [],
        "skipped": [],
        "superseded": [],
        "non_finite": [],
        "exports": {
            "metrics": "metrics.csv",
            "curves": ["curves-g.png"],
            "tensorboard": TENSORBOARD_MISSING,
        },
    }
    text = markdown(report)
    assert "## Exports" in text and "`metrics.csv`" in text and "`curves-g.png`" in text
    assert "TensorBoard: not written: tensorboard is not installed" in text
