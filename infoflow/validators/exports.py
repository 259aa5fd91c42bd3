"""A finished run's measurements for other tools: ``metrics.csv`` beside report.json (every
member's every metric, long form), a learning-curves figure per group
(``curves-<group>.png``: loss and NMSE against the step, with the thresholds the claims
use), and TensorBoard logs (``tensorboard/<group>``) when tensorboard is installed."""

from __future__ import annotations

import csv
import importlib.util
import io
import sys
from pathlib import Path
from typing import Any

from infoflow.core.files import write_text
from infoflow.validators.plots import Curves, Floors, learning_curves, save
from infoflow.validators.store import Store

#: The columns of metrics.csv.
COLUMNS = ("group", "member", "seed", "step", "metric", "value")
#: The metrics a learning curve plots, where a group records them at two steps or more.
CURVE_METRICS = ("train:loss", "eval:nmse")
TENSORBOARD_MISSING = "not written: tensorboard is not installed (pip install tensorboard)"


def metrics_csv(rows: list[tuple]) -> str:
    """``rows`` (:meth:`Store.metric_rows`) as CSV text with a header; values at full
    precision, a missing one (a NaN) empty."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(rows)  # None as an empty field
    return text.getvalue()


def group_curves(rows: list[tuple]) -> dict[str, Curves]:
    """Each group's curves of :data:`CURVE_METRICS` from ``rows``: metric -> member ->
    [(step, value)], the metrics a group has at fewer than two steps left out."""
    out: dict[str, Curves] = {}
    for group, member, _, step, metric, value in rows:
        if metric in CURVE_METRICS and value is not None:
            out.setdefault(group, {}).setdefault(metric, {}).setdefault(member, []).append(
                (step, value)
            )
    for curves in out.values():
        for metric in [m for m, members in curves.items() if max(map(len, members.values())) < 2]:
            del curves[metric]
    return {group: curves for group, curves in out.items() if curves}


def write_exports(
    out: Path, store: Store, judged: list[tuple[Any, dict]], figures: bool = True
) -> dict[str, Any]:
    """metrics.csv, the curves (unless ``figures`` is False; with the thresholds the
    validators of ``judged``, each with its section's JSON, say their claims use) and the
    TensorBoard logs into ``out``; what report.json's ``exports`` says was written. An export
    that fails is named in a warning and in the report, never the end of a finished run."""
    try:
        rows = store.metric_rows()
        write_text(out / "metrics.csv", metrics_csv(rows))
        floors = thresholds(judged)
        written = []
        for group, curves in group_curves(rows).items() if figures else ():
            figure = learning_curves(group, curves, floors.get(group))
            written.append(save(figure, out / f"curves-{group}.png").name)
        return {"metrics": "metrics.csv", "curves": written, "tensorboard": tensorboard(out, rows)}
    except Exception as error:  # any plotting or writing error: the report stands
        print(f"warning: the exports were not all written ({error})", file=sys.stderr)
        return {"error": str(error)}


def thresholds(judged: list[tuple[Any, dict]]) -> dict[str, Floors]:
    """Each group's thresholds its claims use (metric -> [(value, what)]), from the
    validators that say (``floors``)."""
    found: dict[str, Floors] = {}
    for validator, section in judged:
        if hasattr(validator, "floors"):
            found.update(validator.floors(section))
    return found


def tensorboard(out: Path, rows: list[tuple]) -> str:
    """Every metric as a TensorBoard scalar (``metric/member``) under ``out/tensorboard``,
    one run per group; where they are, or why they were not written."""
    if importlib.util.find_spec("tensorboard") is None:
        return TENSORBOARD_MISSING
    from torch.utils.tensorboard import SummaryWriter

    writers: dict[str, SummaryWriter] = {}
    for group, member, _, step, metric, value in rows:
        if value is None:
            continue
        if group not in writers:
            writers[group] = SummaryWriter(log_dir=str(out / "tensorboard" / group))
        writers[group].add_scalar(f"{metric}/{member}", value, step)
    for writer in writers.values():
        writer.close()
    return "tensorboard/"
