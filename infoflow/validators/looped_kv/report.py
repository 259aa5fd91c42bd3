"""A looped_kv experiment's part of the report: the header sentence and the Markdown section
(the model, the error of every method against rho, the stores' bytes, the claims)."""

from __future__ import annotations

import math
from typing import Any

from infoflow.core.text import markdown_code, markdown_text
from infoflow.validators.report import claims_markdown, number


def describe(settings: dict[str, Any]) -> str:
    return (
        "Looped KV: the spec's own model trained on a Markov-mixture corpus (AdamW, one-cycle "
        "schedule), or its checkpoint; the same corpus calibrates and evaluates the codecs."
    )


def markdown(spec: dict[str, Any]) -> list[str]:
    m, name = spec["measured"], spec["name"]
    c = m["config"]
    rhos = list(m["methods"]["lla"])
    trained = m.get("training_seconds")
    timing = f"{number(m['seconds'], '.0f')} s to measure" + (
        f" after {trained:.0f} s of training" if trained is not None else ""
    )
    lines = [
        "",
        f"## {markdown_text(name)}",
        "",
        f"Prelude {c['prelude']}, core {c['core']} layers x {c['loops']} loops, coda {c['coda']}; "
        f"d_model {c['d_model']}, {c['heads']} heads; teacher loss "
        f"{number(m['teacher_loss'], '.3f')} nats "
        f"(uniform: ln {c['vocab']} = {math.log(c['vocab']):.3f}); {timing}. Plots "
        f"{markdown_code(name + '-codec.png')}, {markdown_code(name + '-spectra.png')}.",
        "",
        "Attention-output error (relative, mean over core slots) / next-token KL to the teacher:",
        "",
        "| method | " + " | ".join(f"rho {r}" for r in rhos) + " |",
        "|---|" + "--:|" * len(rhos),
    ]
    for method, rows in m["methods"].items():
        cells = [
            f"{number(rows[r]['attention_error'])} / {number(rows[r]['kl'])}" if r in rows else "-"
            for r in rhos
        ]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| store | r_k, r_v | tokens | measured bytes | calculator bytes |",
        "|---|---|--:|--:|--:|",
    ]
    for s in m["stores"]:
        ranks = f"{s['r_k']}, {s['r_v']}" if "r_k" in s else "-"
        lines.append(
            f"| {s['variant']} | {ranks} | {s['tokens']} | {s['measured_bytes']:,} | "
            f"{s['predicted_bytes']:,} |"
        )
    return lines + claims_markdown(spec["claims"])
