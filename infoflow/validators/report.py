"""report.json's content -> ``report.json`` (for tools) and ``report.md`` (for people).

The header (scale, device, times, each family's settings in a sentence, the verdict counts)
and the "not validated" list are shared; every spec's part comes from its family's
validator (``markdown``), found in the registry, so report.md can be rebuilt from
report.json alone.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from infoflow.core.files import write_text
from infoflow.core.text import markdown_code, markdown_text
from infoflow.families import family


def write_reports(out: Path, report: dict) -> None:
    """Write ``report.json`` (strict JSON) and ``report.md`` into ``out``, each whole or not
    at all."""
    write_text(out / "report.json", json.dumps(report, indent=2, allow_nan=False) + "\n")
    write_text(out / "report.md", markdown(report))


def finite(data: Any, path: str = "") -> tuple[Any, list[str]]:
    """``data`` with every float that is not a finite number (a diverged loss, say) made
    None, and the dotted paths where that happened."""
    if isinstance(data, dict):
        pairs = [(key, finite(value, f"{path}.{key}")) for key, value in data.items()]
        return {k: v for k, (v, _) in pairs}, [p for _, (_, found) in pairs for p in found]
    if isinstance(data, list):
        pairs = [finite(value, f"{path}[{i}]") for i, value in enumerate(data)]
        return [v for v, _ in pairs], [p for _, found in pairs for p in found]
    if isinstance(data, float) and not math.isfinite(data):
        return None, [path]
    return data, []


def _environment(found: dict | None) -> str:
    """ " (torch 2.13.0+cpu on 2 threads, x86_64, AMD EPYC)" (nothing for a report before
    2026-12-05; no CPU model before the evening)."""
    if not found:
        return ""
    cpu = f", {found['cpu']}" if found.get("cpu") else ""
    return f" (torch {found['torch']} on {found['threads']} threads, {found['machine']}{cpu})"


def markdown(report: dict) -> str:
    """The whole of report.md."""
    families = " ".join(
        family(kind).load_validator().describe(settings)
        for kind, settings in report["settings"].items()
    )
    verdicts = "; ".join(
        f"{KIND_NAMES[kind]}: " + ", ".join(f"{n} {verdict}" for verdict, n in counts.items())
        for kind, counts in report["by_kind"].items()
    )
    lines = [
        "# infoflow validate",
        "",
        f"Scale `{report['scale']}` on `{report['device']}`"
        + (", the retrieval training step compiled" if report.get("compile") else "")
        + _environment(report.get("environment"))
        + f", {report['started']} to {report['finished']}."
        + _overrides(report.get("overrides"))
        + (f" {families}" if families else ""),
        "",
        f"Verdicts by kind of claim: {verdicts or 'no claims'}.",
    ]
    for spec in report["specs"]:
        drawn = {**spec, "plotted": report.get("plots", True)}  # not with --no-plots
        lines += family(spec["kind"]).load_validator().markdown(drawn)
    lines += _speeds(report.get("throughput") or {})
    lines += _exports(report.get("exports") or {})
    if report["skipped"]:
        lines += ["", "## Not validated", ""]
        lines += [
            f"- {markdown_text(s['spec'])}: {markdown_text(s['reason'])}" for s in report["skipped"]
        ]
    if report["superseded"]:
        lines += ["", "## Trained earlier for other settings (not used)", ""]
        lines += [
            f"- {markdown_text(s['group'])}"
            + (f", replaced by {markdown_text(s['replaced_by'])}" if s["replaced_by"] else "")
            + ": "
            + markdown_text("; ".join(s["differs"][:5]) or "its identity")
            for s in report["superseded"]
        ]
    if report["non_finite"]:
        where = ", ".join(report["non_finite"][:10])
        lines += ["", f"Not finite, so null in report.json: {markdown_text(where)}."]
    return "\n".join(lines) + "\n"


#: How report.md names each kind of claim (:data:`~infoflow.validators.claims.KINDS`).
KIND_NAMES = {
    "paper": "paper claims",
    "reproduction": "reproductions of published numbers",
    "reconstruction": "reconstructions",
    "construction": "constructions",
    "engineering": "engineering checks",
}


def _speeds(throughput: dict[str, dict]) -> list[str]:
    """Each trained group's measured time beside the design's estimate (at the cap: a group
    whose members stop at their plateau takes less), tokens per second and MFU (report.json's
    ``throughput``)."""
    if not throughput:
        return []
    lines = [
        "",
        "## Training time",
        "",
        "| group | seconds | estimated | measured / estimated | tokens/s | MFU |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for name, speed in throughput.items():
        mfu, seconds, estimate = (
            speed.get("mfu"),
            speed.get("seconds"),
            speed.get("estimated_seconds"),
        )
        ratio = seconds / estimate if seconds and estimate else None
        lines.append(
            f"| {markdown_text(name)} | {_seconds(seconds)} | {_seconds(estimate)} | "
            f"{number(ratio, '.2f')} | {number(speed.get('tokens_per_second'), ',.0f')} | "
            f"{'-' if mfu is None else f'{mfu:.2%}'} |"
        )
    return lines


def _exports(exports: dict[str, Any]) -> list[str]:
    """Where the run's measurements went besides this report (report.json's ``exports``)."""
    if not exports:
        return []
    if "error" in exports:
        return ["", f"Exports: not all written ({markdown_text(exports['error'])})."]
    curves = ", ".join(markdown_code(name) for name in exports["curves"]) or "none"
    return [
        "",
        "## Exports",
        "",
        f"- every metric of every member, long form: {markdown_code(exports['metrics'])}",
        f"- learning curves, one figure per group: {curves}",
        f"- TensorBoard: {markdown_text(exports['tensorboard'])}",
    ]


def _seconds(value: float | None) -> str:
    """Seconds to 3 significant digits, whole seconds from 100 on (12.34 and 8.83 showed as 12
    and 9 beside their ratio 1.40: an audit, 2026-12-07)."""
    return number(value, ",.0f" if value is not None and value >= 100 else ".3g")


def number(value: float | None, spec: str = ".3g") -> str:
    """A measured number for a table; ``-`` for a missing (or non-finite) one."""
    return "-" if value is None else format(value, spec)


def decimals(values: list[Any], digits: int = 3) -> int | None:
    """The decimal places that give the largest finite float of ``values`` ``digits``
    significant digits (None when there is none): the one precision of an interval."""
    finite = [abs(v) for v in values if _finite(v) and v]
    return None if not finite else digits - 1 - math.floor(math.log10(max(finite)))


def interval(value: dict | None) -> str:
    """``median [low, high]``, all three at one precision (3 significant digits of the
    largest); ``-`` for none."""
    if not value or value.get("median") is None:
        return "-"
    shown = rounded({key: value.get(key) for key in ("median", "low", "high")})
    median, low, high = (number(shown[key], "g") for key in ("median", "low", "high"))
    return f"{median} [{low}, {high}]"


def rounded(data: Any, digits: int = 3) -> Any:
    """``data`` with every float to ``digits`` significant digits, those of an interval (a
    dict with ``low`` and ``high``) to one precision, that of its largest (for reading, not
    for report.json)."""
    if isinstance(data, dict) and {"low", "high"} <= data.keys():
        places = decimals(list(data.values()), digits)
        if places is not None:
            return {k: round(v, places) if _finite(v) else v for k, v in data.items()}
    if isinstance(data, dict):
        return {key: rounded(value, digits) for key, value in data.items()}
    if isinstance(data, list):
        return [rounded(value, digits) for value in data]
    if isinstance(data, float) and math.isfinite(data):
        return float(f"{data:.{digits}g}")
    return data


def _finite(value: Any) -> bool:
    return isinstance(value, float) and math.isfinite(value)


def claims_markdown(claims: list[dict]) -> list[str]:
    """A table of claims (their JSON form): kind, claim, verdict, measured, tolerance, why;
    the paper's claims first (the kinds in :data:`KIND_NAMES` order)."""
    order = list(KIND_NAMES)
    claims = sorted(claims, key=lambda c: order.index(c["kind"]) if c.get("kind") in order else 9)
    lines = [
        "",
        "| kind | claim | verdict | measured | tolerance | why |",
        "|---|---|---|---|---|---|",
    ]
    for c in claims:
        cells = [
            c.get("kind") or "-",
            markdown_text(c["claim"]),
            f"**{c['verdict']}**",
            markdown_code(json.dumps(rounded(c["measured"]))),
            markdown_text(c["tolerance"]),
            markdown_text(c["reason"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _overrides(overrides: list[str] | None) -> str:
    """The ``--set`` values every spec was read with (the run's specs are not their files')."""
    if not overrides:
        return ""
    return " Every spec read with " + ", ".join(f"`--set {o}`" for o in overrides) + "."
