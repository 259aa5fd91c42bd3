"""report.json's content -> ``report.json`` (for tools) and ``report.md`` (for people).

The header (scale, device, times, each family's settings in a sentence, the verdict counts)
and the "not validated" list are shared; every spec's part comes from its family's
validator (``markdown``), found in the registry, so report.md can be rebuilt from
report.json alone.
"""

from __future__ import annotations

import json
from pathlib import Path

from infoflow.families import family


def write_reports(out: Path, report: dict) -> None:
    """Write ``report.json`` and ``report.md`` into ``out``."""
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "report.md").write_text(markdown(report))


def markdown(report: dict) -> str:
    """The whole of report.md."""
    families = " ".join(
        family(kind).load_validator().describe(settings)
        for kind, settings in report["settings"].items()
    )
    verdicts = ", ".join(f"{n} {verdict}" for verdict, n in report["summary"].items())
    lines = [
        "# infoflow validate",
        "",
        f"Scale `{report['scale']}` on `{report['device']}`, {report['started']} to "
        f"{report['finished']}." + (f" {families}" if families else ""),
        "",
        f"Verdicts: {verdicts}.",
    ]
    for spec in report["specs"]:
        lines += family(spec["kind"]).load_validator().markdown(spec)
    if report["skipped"]:
        lines += ["", "## Not validated", ""]
        lines += [f"- {s['spec']}: {s['reason']}" for s in report["skipped"]]
    return "\n".join(lines) + "\n"


def claims_markdown(claims: list[dict]) -> list[str]:
    """A table of claims (their JSON form): claim, verdict, measured, tolerance, why."""
    lines = ["", "| claim | verdict | measured | tolerance | why |", "|---|---|---|---|---|"]
    for c in claims:
        measured = json.dumps(c["measured"], default=str)
        cells = [c["claim"], f"**{c['verdict']}**", f"`{measured}`", c["tolerance"], c["reason"]]
        lines.append("| " + " | ".join(cells) + " |")
    return lines
