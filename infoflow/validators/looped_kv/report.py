"""A looped_kv experiment's part of the report: the header sentence and the Markdown section
(the model, the error of every method against rho, the stores' bytes, the claims)."""

from __future__ import annotations

import math
from typing import Any

from infoflow.core.text import markdown_code, markdown_text
from infoflow.validators.report import claims_markdown, interval, number


def describe(settings: dict[str, Any]) -> str:
    return (
        "Looped KV: the spec's own model trained on a Markov-mixture corpus (AdamW, one-cycle "
        "schedule), or its checkpoint; the same corpus calibrates and evaluates the codecs."
    )


def _cache_floor(rows: dict) -> str:
    """The plain cache's own error in its dtype (the floor under every codec)."""
    row = rows.get("1")
    if not row:
        return ""
    return (
        f" (the plain cache in it: {number(row['attention_error'])} / {number(row['kl'])}, "
        "the floor under every codec)"
    )


def _plots(spec: dict[str, Any]) -> str:
    """The spec's plot files, where they were drawn (not with ``--no-plots``)."""
    if not spec.get("plotted", True):
        return "No plots (--no-plots)."
    name = spec["name"]
    return f"Plots {markdown_code(name + '-codec.png')}, {markdown_code(name + '-spectra.png')}."


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
        f"(uniform: ln {c['vocab']} = {math.log(c['vocab']):.3f}); {timing}. {_plots(spec)}",
        "",
        "Attention-output error (relative, mean over core slots) / next-token KL to the teacher"
        + (" of the seed-0 model" if spec.get("over_seeds") else "")
        + f", everything stored in {m.get('cache_dtype', 'the model dtype')}"
        + _cache_floor(m["methods"].get("cache", {}))
        + ":",
        "",
        "| method | " + " | ".join(f"rho {r}" for r in rhos) + " |",
        "|---|" + "--:|" * len(rhos),
    ]
    for method, rows in m["methods"].items():
        if method == "cache":
            continue
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
    return (
        lines
        + _over_seeds(spec.get("over_seeds"), rhos)
        + _structure(spec.get("structure"))
        + claims_markdown(spec["claims"])
    )


def _over_seeds(table: dict | None, rhos: list[str]) -> list[str]:
    """Each method's next-token KL over the seeds the claims read, median [low, high]."""
    if not table:
        return []
    seeds = max(
        cell["kl"]["seeds"] + cell["kl"].get("missing", 0)
        for rows in table.values()
        for cell in rows.values()
    )
    lines = [
        "",
        f"Next-token KL over the {seeds} seeds the comparisons are judged on (median [low, "
        "high]; the attention errors are in report.json):",
        "",
        "| method | " + " | ".join(f"rho {r}" for r in rhos) + " |",
        "|---|" + "--:|" * len(rhos),
    ]
    for method, rows in table.items():
        if method != "cache":
            cells = [interval(rows[r]["kl"]) if r in rows else "-" for r in rhos]
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return lines


#: The rhos the structure table shows (the paper's 4x and its 21.3x headline).
SHOWN = ("4", "21.3")


def _structure(summary: dict | None) -> list[str]:
    """The loop margins and LLA's error at each width and training length, median [range]
    over seeds."""
    if not summary:
        return []
    columns = [f"margin:{n}:{r}" for n in "KV" for r in SHOWN] + [f"lla_error:{r}" for r in SHOWN]
    lines = [
        "",
        "Loop-axis structure over seeds (median [low, high]); a margin is the energy the loop "
        "fold captures at matched bytes minus the better of the head and layer folds:",
        "",
        "| width | step | " + " | ".join(c.replace(":", " ") for c in columns) + " |",
        "|---|--:|" + "--:|" * len(columns),
    ]
    for width, steps in summary.items():
        for step, row in sorted(steps.items(), key=lambda item: int(item[0])):
            cells = [interval(row.get(c)) for c in columns]
            lines.append(f"| x{width} | {step} | " + " | ".join(cells) + " |")
    return lines
