"""``infoflow plot``: a looped_kv spec's serving capacity (the largest batch that fits the
budget) against the context length, one line per way of storing the cache (the rows of
``infoflow compare``, at the spec's ranks): a matplotlib Figure (the validate extra),
which ``infoflow plot`` writes as an image."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from infoflow.core.errors import SpecError, install_hint
from infoflow.core.files import write_with
from infoflow.looped_kv.compare import ROWS
from infoflow.looped_kv.predict import predict_looped_kv
from infoflow.looped_kv.spec import RANKED, Codec, LoopedKVSpec, rank_limit
from infoflow.spec import as_spec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CONTEXTS = [2**k for k in range(10, 21)]  # 1k to 1M tokens


def capacities(spec: LoopedKVSpec) -> dict[str, list[int]]:
    """Max batch at every context of CONTEXTS, per codec that the spec's ranks fit."""
    out = {}
    for variant in _variants(spec):
        ranks = {"r_k": spec.codec.r_k, "r_v": spec.codec.r_v} if variant in RANKED else {}
        point = spec.model_copy(update={"codec": Codec(variant=variant, **ranks)})
        out[variant] = [_max_batch(point, tokens) for tokens in CONTEXTS]
    return out


def plot(spec: LoopedKVSpec, out: str | Path | None = None, source: str = "<spec>") -> Figure:
    """The capacities as a matplotlib Figure (saved to ``out`` when given, its format from
    the suffix). The figure is built without pyplot: the caller's backend and figures are
    left alone, and a notebook shows it as the cell's value."""
    spec, source = as_spec(spec, "looped_kv", source, "capacity.plot")
    if spec.serving.memory_budget_gib is None and spec.serving.device_bytes is None:
        message = "a capacity needs a budget: memory_budget_gib, device_memory_gib or device"
        raise SpecError(source, [("serving", message)])
    try:
        from matplotlib.figure import Figure
    except ModuleNotFoundError:
        hint = install_hint("matplotlib", "validate")
        raise SpecError(source, [(None, f"plot needs matplotlib: {hint}")]) from None
    fig = Figure(figsize=(7, 4.2))
    if out is not None:
        _check_format(fig, Path(out))
    found = capacities(spec)
    if not any(b > 0 for batches in found.values() for b in batches):  # a review: log of 0
        why = f"no sequence of {CONTEXTS[0]:,} tokens or more fits the budget: nothing to plot"
        raise SpecError(source, [("serving", why + " (predict says what the budget holds)")])
    ax = fig.subplots()
    for variant, batches in found.items():
        shown = [b if b > 0 else math.nan for b in batches]  # log axis: no zeros
        ax.plot(CONTEXTS, shown, marker="o", markersize=3, label=variant)
    step = spec.serving.batch_step
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="context (tokens per sequence)",
        ylabel="max batch (sequences" + (f", in steps of {step})" if step else ")"),
        title=f"{spec.model.name}: serving capacity{_budget(spec)}",
    )
    legend = ax.legend(fontsize=8, title=_ranks(spec), title_fontsize=8)
    names = [ax.title, ax.xaxis.label, ax.yaxis.label, legend.get_title(), *legend.get_texts()]
    for text in names:  # a model name with $ is not mathtext; tick labels (10^k) are
        text.set_parse_math(False)
    fig.tight_layout()
    if out is not None:
        write_with(Path(out), lambda temporary: fig.savefig(temporary, dpi=110))
    return fig


def plot_command(spec: LoopedKVSpec, out: str = "capacity.png", source: str = "<spec>") -> str:
    """``infoflow plot``: draw the capacities into ``out``; return what was written, in a
    line."""
    figure = plot(spec, out, source)
    codecs = len(figure.axes[0].get_lines())
    return f"wrote {out}: {codecs} codecs, contexts {CONTEXTS[0]:,} to {CONTEXTS[-1]:,}\n"


def _check_format(fig: Figure, out: Path) -> None:
    """A SpecError (on ``--out``) when matplotlib writes no image format by ``out``'s
    suffix."""
    formats = fig.canvas.get_supported_filetypes()
    if out.suffix.lower().lstrip(".") not in formats:
        known = ", ".join(sorted(formats))
        message = f"not an image format matplotlib writes ({known}): name a .png, .svg or .pdf"
        raise SpecError(str(out), [(None, message)])  # it named --out, from Python too


def _variants(spec: LoopedKVSpec) -> list[str]:
    """The rows of ``compare`` that the spec's ranks fit (without ranks, the full cache and
    final-loop reuse; for latent attention, windows, Mamba layers and models that do not
    loop, the full cache alone)."""
    model, codec = spec.model, spec.codec
    looped = model.loops > 1 or model.prelude_layers or model.coda_layers
    if model.latent_attention or model.sliding_window or model.mamba or not looped:
        return ["none"]
    if codec.r_k is None or codec.r_v is None:
        return ["none", "final_loop"]
    ranks = max(codec.r_k, codec.r_v)
    return [v for v in ROWS if v not in RANKED or ranks <= rank_limit(model, v)[0]]


def _max_batch(spec: LoopedKVSpec, tokens: int) -> int:
    serving = spec.serving.model_copy(update={"context_tokens": tokens, "generated_tokens": 0})
    result = predict_looped_kv(spec.model_copy(update={"serving": serving}))
    for name in ("max_batch_compressed", "max_batch"):  # a plain decoder has no codec rows
        if name in result.predictions:
            return result[name].value
    return 0  # the weights do not fit


def _budget(spec: LoopedKVSpec) -> str:
    """The cache budget of the full cache, for the title (a line that ends early is the
    budget's: a review)."""
    budget = predict_looped_kv(spec).predictions.get("cache_budget_bytes")
    if budget is None or not isinstance(budget.value, int | float) or budget.value <= 0:
        return ""
    return f", a {budget.value / 2**30:.3g} GiB cache budget"


def _ranks(spec: LoopedKVSpec) -> str:
    codec = spec.codec
    return f"ranks ({codec.r_k}, {codec.r_v})" if codec.r_k else "codec"
