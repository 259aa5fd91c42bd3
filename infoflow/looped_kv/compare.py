"""``infoflow compare``: one looped model and budget, every way of storing its looped cache
side by side (the full cache, final-loop reuse, the MLA-style head-axis latent, LLA per head,
and LLA-2D, which combines the two) at the spec's ranks: bytes per token, rho, the cache of
one sequence, capacity, codec parameters, and the provenance of each formula."""

from __future__ import annotations

import json

from infoflow.core import records
from infoflow.core.errors import SpecError
from infoflow.looped_kv.predict import VARIANTS, predict_looped_kv
from infoflow.looped_kv.spec import RANKED, Codec, LoopedKVSpec, rank_limit

ROWS = ("none", "final_loop", "head_axis", "per_head", "2d")
COLUMNS = {  # prediction -> column header
    "kv_bytes_per_token_compressed": "bytes/token",
    "compression_ratio": "rho (looped part)",
    "whole_cache_ratio": "whole cache",
    "kv_cache_bytes_compressed": "cache of one sequence",
    "max_batch_compressed": "max batch",
    "max_context_tokens_compressed": "max context",
    "codec_parameters": "codec parameters",
}


def compare(spec: LoopedKVSpec, format: str = "table", source: str = "<spec>") -> str:
    """The comparison as a table, Markdown, JSON (one object per codec) or JSON lines (one
    line per codec, the shape of :mod:`infoflow.core.records`); ``source`` names the spec."""
    model, codec = spec.model, spec.codec
    if model.latent_attention or model.sliding_window or model.mamba:
        raise SpecError(source, [("model", "codecs are compared on per-head caches only")])
    if model.loops == 1:
        message = "codecs compress the loop axis, and this model does not loop (loops 1)"
        raise SpecError(source, [("model.loops", message)])
    if codec.r_k is None or codec.r_v is None:
        raise SpecError(
            source,
            [
                (
                    "codec",
                    "compare needs the latents' ranks: --set "
                    "codec.variant=per_head --set codec.r_k=96 --set "
                    "codec.r_v=160, say",
                )
            ],
        )
    if format == "jsonl":
        return "".join(records.line(_record(spec, variant, source)) + "\n" for variant in ROWS)
    rows = [_row(spec, variant) for variant in ROWS]
    if format == "json":
        return json.dumps(rows, indent=2, allow_nan=False) + "\n"
    if format == "markdown":
        return _markdown(spec, rows)
    return _table(spec, rows)


def _record(spec: LoopedKVSpec, variant: str, source: str) -> dict:
    """One codec's ``--format jsonl`` line: its point (the codec) and every prediction there,
    or a message when the spec's ranks do not fit it."""
    ranks, at, reason = _at(spec, variant)
    point = {"codec.variant": variant, **{f"codec.{k}": v for k, v in ranks.items()}}
    if at is None:
        return records.record("compare", spec.kind, source, point, {}, [reason])
    return records.of_result("compare", predict_looped_kv(at), source, point)


def _row(spec: LoopedKVSpec, variant: str) -> dict:
    """One codec's predictions (a reason instead when the spec's ranks do not fit it)."""
    ranks, at, reason = _at(spec, variant)
    row = {"variant": variant, "keeps": VARIANTS[variant], **ranks}
    if at is None:
        return {**row, "reason": reason}
    result = predict_looped_kv(at)
    for name in COLUMNS:
        if name in result.predictions:
            row[name] = result[name].value
    row["provenance"] = result["kv_bytes_per_token_compressed"].provenance
    return row


def _at(spec: LoopedKVSpec, variant: str) -> tuple[dict, LoopedKVSpec | None, str]:
    """The codec's ranks and the spec with that codec, or None and why the ranks do not fit."""
    ranks = {"r_k": spec.codec.r_k, "r_v": spec.codec.r_v} if variant in RANKED else {}
    limit, formula = rank_limit(spec.model, variant)
    if ranks and max(ranks.values()) > limit:
        return ranks, None, f"rank above {formula} = {limit}"
    return ranks, spec.model_copy(update={"codec": Codec(variant=variant, **ranks)}), ""


def _cells(row: dict) -> list[str]:
    from infoflow.core.text import format_bytes

    if "reason" in row:
        return [row["reason"]] + [""] * (len(COLUMNS) - 1)
    cells = []
    for name in COLUMNS:
        value = row.get(name)
        if value is None:
            cells.append("-")
        elif name.startswith(("kv_bytes", "kv_cache")):
            cells.append(format_bytes(value))
        elif name in ("compression_ratio", "whole_cache_ratio"):
            cells.append(f"{value:.4g}x")
        else:
            cells.append(f"{value:,}")
    return cells


def _title(spec: LoopedKVSpec) -> str:
    n = spec.serving.sequence_tokens
    return (
        f"{spec.model.name}: the looped cache stored every way, ranks (r_k, r_v) = "
        f"({spec.codec.r_k}, {spec.codec.r_v}), sequences of {n:,} tokens"
    )


def _table(spec: LoopedKVSpec, rows: list[dict]) -> str:
    from rich.console import Console
    from rich.table import Table

    from infoflow.core.text import one_line

    table = Table(title=one_line(_title(spec)))
    for header in ("codec", *COLUMNS.values(), "provenance"):
        table.add_column(header, justify="left" if header in ("codec", "provenance") else "right")
    for row in rows:
        table.add_row(row["variant"], *_cells(row), row.get("provenance", ""))
    console = Console(width=170)
    with console.capture() as captured:
        console.print(table)
    return captured.get()


def _markdown(spec: LoopedKVSpec, rows: list[dict]) -> str:
    from infoflow.core.text import markdown_text

    lines = [
        f"### {markdown_text(_title(spec))}",
        "",
        "| codec | keeps | " + " | ".join(COLUMNS.values()) + " | provenance |",
        "|---|---|" + "--:|" * len(COLUMNS) + "---|",
    ]
    for row in rows:
        cells = [
            row["variant"],
            markdown_text(row["keeps"]),
            *_cells(row),
            row.get("provenance", ""),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
