"""The icl_markov part of the report: the header sentence, and per spec its experiments'
parts of report.md in order: each K sweep group (:mod:`.ksweep.report`) with the race at its
setting (:mod:`.clocks.report`) and its claims, the clock runs with the race's claims, and the
decoder alone (:mod:`.decoder.report`)."""

from __future__ import annotations

from typing import Any

from infoflow.core.text import markdown_text
from infoflow.validators.icl_markov.clocks.report import clock_table, race_sentence
from infoflow.validators.icl_markov.decoder.report import decoder_markdown
from infoflow.validators.icl_markov.ksweep.report import group_markdown
from infoflow.validators.report import claims_markdown


def describe(settings: dict[str, Any]) -> str:
    return (
        "In-context learning: each group's own settings, below (AdamW betas (0.9, 0.95), "
        "the warmup each names, then a constant rate)."
    )


def markdown(spec: dict[str, Any]) -> list[str]:
    """One icl_markov spec: per group, the setting, a row per K, the thresholds, the claims;
    then the clock runs and the decoder alone."""
    lines = ["", f"## {markdown_text(spec['name'])}"]
    if spec["capped"]:
        lines += ["", "Capped for this scale: " + "; ".join(spec["capped"]) + "."]
    for group in spec["groups"]:
        lines += group_markdown(group, spec.get("plotted", True))
        if "race" in group["measurement"]:
            lines += ["", race_sentence(group["measurement"]["race"])]
        lines += claims_markdown(group["claims"])
    if spec.get("clocks"):
        lines += clock_table(spec["clocks"])
        lines += claims_markdown(spec["race_claims"]) if spec.get("race_claims") else []
    for decoder in spec.get("decoders", []):
        lines += decoder_markdown(decoder)
    return lines
