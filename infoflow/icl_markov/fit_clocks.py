"""Validation results -> the race's clock sets, and the settings every calibration entry
records (for ``infoflow calibrate icl_markov``, :mod:`~infoflow.icl_markov.fit`)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from infoflow.icl_markov.calibration import RECIPE_DEFAULTS, Calibration, ClockRun, ClockSet
from infoflow.icl_markov.race import race


def report_settings(setting: dict) -> dict[str, Any]:
    """The calibration settings of a setting as report.json holds it (a recipe setting it
    leaves out, as a group's identity does at its default, is that default: a review)."""
    return {
        "states": setting["states"],
        "context_len": setting["context_len"],
        "dirichlet_alpha": setting["dirichlet_alpha"],
        "mixture": setting["mixture"],
        **setting["model"],
        "batch_size": setting["training"]["batch_size"],
        "lr": setting["training"]["lr"],
        "weight_decay": setting["training"]["weight_decay"],
        **{key: setting["training"].get(key, value) for key, value in RECIPE_DEFAULTS.items()},
    }


def clocks_from(reports: list[tuple[Path, dict]], base: Calibration, lines: list) -> list[ClockSet]:
    """``base``'s clock sets with every race in ``reports`` added (same names replaced)."""
    clocks = {c.name: c for c in base.clocks}
    for file, report in reports:
        for found in clock_sets(file, report):
            clocks[found.name] = found
            k1 = race(found.clocks())
            value = f"{k1.k1_star:.3g}" if k1.k1_star is not None else "-"
            lines.append((f"{found.name}: K*_1 from the race", value, k1.reason))
    return list(clocks.values())


def clock_sets(file: Path, report: dict) -> list[ClockSet]:
    """The clocks of every race in a report, one set per setting."""
    out = []
    for spec in report["specs"]:
        for entry in spec.get("clocks", []) if spec.get("kind") == "icl_markov" else []:
            settings = report_settings(entry["setting"])
            members = entry["members"]
            seeds = sorted({m["seed"] for m in members})
            out.append(
                ClockSet(
                    name=f"{spec['name']}-clocks-{_digest(settings)}@{report['started'][:10]}",
                    settings=settings,
                    provenance=f"validate:{report['scale']}",
                    source=f"infoflow validate clock runs, {len(members)} members, seeds {seeds}, "
                    f"{entry['steps']:,} steps ({file})",
                    device=report["device"],
                    date=report["started"],
                    steps=entry["steps"],
                    criterion=entry.get("criterion", "gap"),
                    members=[{f: m[f] for f in ClockRun.model_fields if f in m} for m in members],
                )
            )
    return out


def _digest(settings: dict) -> str:
    """8 hex digits of ``settings``, the recipe at its defaults left out (so the names of
    clock sets measured before the recipe settings existed stay as they were)."""
    earlier = {k for k, v in RECIPE_DEFAULTS.items() if settings.get(k) == v}
    kept = {k: v for k, v in settings.items() if k not in earlier}
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:8]
