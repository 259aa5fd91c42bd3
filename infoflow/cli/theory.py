"""The commands that predict, without training: ``predict``, ``explain``, ``graph``,
``compare``, ``plot``, ``sweep`` and ``schema``. Heavy modules (sympy, pydantic, the
families) are imported inside the commands, so ``infoflow --help`` starts fast."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from infoflow.cli.app import app
from infoflow.cli.options import (
    JSONL_HELP,
    Overrides,
    Quiet,
    Verbose,
    console,
    load_for,
    load_points,
    note_base_values,
    point_name,
    user_errors,
    verbosity,
)
from infoflow.core.version import __version__


class Format(StrEnum):
    table = "table"
    json = "json"
    jsonl = "jsonl"
    markdown = "markdown"
    latex = "latex"


FORMAT_HELP = (
    "table; json: one object per spec, an array for several; markdown; latex; jsonl: "
    + JSONL_HELP
    + "."
)


class GraphFormat(StrEnum):
    dot = "dot"
    json = "json"


JSONL_EXAMPLE = (
    "Scripting (--format jsonl), e.g. infoflow {command} specs/retrieval/kth-largest.json -f jsonl"
    ' prints per point: {{"infoflow_version": "{version}", "command": "{command}", "kind":'
    ' "retrieval", "source": "specs/retrieval/kth-largest.json", "point": {{"architecture.layers":'
    ' 1, "seq_len": 8}}, "predictions": {{"cost_exponent": {{"value": 1{more}}}, ...}},'
    ' "messages": []}}'
)


def _option(help: str, name: str) -> Any:
    return typer.Option(name, help=help, show_default=False)


@app.command(
    epilog=JSONL_EXAMPLE.format(command="predict", version=__version__, more=', "unit": "", ...')
)
def predict(
    specs: Annotated[
        list[Path],
        typer.Argument(
            help="Spec files (JSON), or a model's config.json (or a folder holding one).",
            show_default=False,
        ),
    ],
    format: Annotated[Format, typer.Option("--format", "-f", help=FORMAT_HELP)] = Format.table,
    overrides: Overrides = None,
    context: Annotated[
        int | None, _option("Tokens per sequence (a config: default 4096).", "--context")
    ] = None,
    batch: Annotated[int | None, _option("Sequences served at once.", "--batch")] = None,
    device: Annotated[
        str | None, _option("A GPU preset (h200, h100-sxm, ...).", "--device")
    ] = None,
    cache_dtype: Annotated[
        str | None, _option("KV-cache dtype (bfloat16, float8, int8, int4...).", "--cache-dtype")
    ] = None,
    tp: Annotated[int | None, _option("Tensor-parallel devices.", "--tp")] = None,
    budget_gib: Annotated[
        float | None, _option("Memory for the cache, in GiB.", "--budget-gib")
    ] = None,
    engine: Annotated[
        str | None, _option("Cache allocation: peak, transformers or vllm.", "--engine")
    ] = None,
    verbose: Verbose = False,
    quiet: Quiet = False,
) -> None:
    """Predict, symbolically, what each spec's task needs (a spec with a sweep: each point).
    A model's config.json is sized as served: cache, weights and, with --device or
    --budget-gib, the largest batch and context that fit."""
    from infoflow.predictor import predict as run_predict

    serving = {
        "context_tokens": context,
        "batch": batch,
        "device": device,
        "cache_dtype": cache_dtype,
        "tensor_parallel": tp,
        "memory_budget_gib": budget_gib,
        "engine": engine,
    }
    serving = {key: value for key, value in serving.items() if value is not None}
    loaded = load_points(specs, overrides, serving)
    with user_errors():  # a family's own inputs (a calibration file) can be bad too
        results = []
        for path, point, spec in loaded:
            results.append(run_predict(spec, source=point_name(path, point)))
            if len(results) == 1:
                _check_size(results[0], len(loaded), path)
    _show(results, [(path, point) for path, point, _ in loaded], format)


#: The predictions a ``predict`` holds and writes at most, estimated from its first point:
#: more is refused before the rest is computed (a review: a 10,000-point sweep of a
#: 100,000-layer plan would have taken 21 minutes and written 6 GB).
MAX_OUTPUT_BYTES = 256 * 2**20


def _check_size(first, points: int, path: str) -> None:
    """Refuse a predict of ``points`` points whose first point's JSON says the whole would
    pass :data:`MAX_OUTPUT_BYTES`."""
    from infoflow.core.errors import SpecError
    from infoflow.core.text import format_bytes

    size = len(json.dumps(first.to_json(), default=str))
    if size * points > MAX_OUTPUT_BYTES:
        why = (
            f"{points:,} points of about {format_bytes(size)} of predictions each, more than "
            f"the {format_bytes(MAX_OUTPUT_BYTES)} a predict writes: sweep fewer points "
            "(`infoflow sweep` evaluates a retrieval sweep's main predictions vectorised)"
        )
        raise SpecError(path, [("sweep", why)])


def _show(results: list, points: list[tuple[str, dict]], format: Format) -> None:
    """``predict``'s results in ``format`` (``points``: each result's path and sweep point)."""
    from infoflow import render
    from infoflow.core import records

    if format is Format.json:
        typer.echo(render.to_json(results))
    elif format is Format.jsonl:
        for (path, point), result in zip(points, results, strict=True):
            typer.echo(records.line(records.of_result("predict", result, path, point)))
    elif format is Format.markdown:
        typer.echo("\n".join(render.to_markdown(r) for r in results))
    elif format is Format.latex:
        typer.echo("\n".join(render.to_latex(r) for r in results))
    else:
        screen = console()
        for result in results:
            screen.print(render.to_table(result, verbosity()))


@app.command()
def explain(
    spec: Annotated[Path, typer.Argument(help="A retrieval spec (JSON).", show_default=False)],
    overrides: Overrides = None,
    verbose: Verbose = False,
    quiet: Quiet = False,
) -> None:
    """Show the derivation step by step: tree, plan per layer, rules, exponent."""
    with user_errors():
        loaded, run_explain = load_for("explain", spec, overrides)
        typer.echo(run_explain(loaded, str(spec)), nl=False)
    note_base_values("explain", spec, loaded)


@app.command()
def graph(
    spec: Annotated[Path, typer.Argument(help="A retrieval spec (JSON).", show_default=False)],
    format: Annotated[
        GraphFormat, typer.Option("--format", "-f", help="dot (Graphviz) or json (networkx).")
    ] = GraphFormat.dot,
    overrides: Overrides = None,
    verbose: Verbose = False,
    quiet: Quiet = False,
) -> None:
    """Print the information-set DAG: nodes (role, layer), edges by propagation mode."""
    with user_errors():
        loaded, run_graph = load_for("graph", spec, overrides)
        typer.echo(run_graph(loaded, format.value, str(spec)), nl=False)
    note_base_values("graph", spec, loaded)


class CompareFormat(StrEnum):
    table = "table"
    json = "json"
    jsonl = "jsonl"
    markdown = "markdown"


@app.command()
def compare(
    spec: Annotated[
        Path, typer.Argument(help="A looped_kv spec with codec ranks.", show_default=False)
    ],
    format: Annotated[
        CompareFormat,
        typer.Option(
            "--format",
            "-f",
            help="table; json: one object per codec; markdown; jsonl: " + JSONL_HELP,
        ),
    ] = CompareFormat.table,
    overrides: Overrides = None,
    verbose: Verbose = False,
    quiet: Quiet = False,
) -> None:
    """Compare every way of storing a looped cache side by side (full, final-loop reuse,
    MLA-style head-axis latent, LLA per head, LLA-2D) at the spec's ranks."""
    with user_errors():
        loaded, run_compare = load_for("compare", spec, overrides)
        typer.echo(run_compare(loaded, format.value, str(spec)), nl=False)
    note_base_values("compare", spec, loaded)


@app.command()  # the help is rich markup: "\[" keeps "[validate]" from being read as a tag
def plot(
    spec: Annotated[
        Path, typer.Argument(help="A looped_kv spec with a budget.", show_default=False)
    ],
    out: Annotated[
        Path, typer.Option(help="The figure to write; its suffix picks the format (png, svg, pdf).")
    ] = Path("capacity.png"),
    overrides: Overrides = None,
    verbose: Verbose = False,
    quiet: Quiet = False,
) -> None:
    r"""Plot serving capacity against context, one line per way of storing the cache. Needs
    matplotlib (not in the base install): pip install matplotlib, or in a clone of infoflow
    pip install -e '.\[validate]'."""
    with user_errors():
        loaded, run_plot = load_for("plot", spec, overrides)
        wrote = run_plot(loaded, str(out), str(spec))
    if not quiet:
        typer.echo(wrote, nl=False)
    note_base_values("plot", spec, loaded)


class SweepFormat(StrEnum):
    json = "json"
    jsonl = "jsonl"
    table = "table"


SWEEP_FORMAT_HELP = "json: one object per point; jsonl: " + JSONL_HELP


@app.command(epilog=JSONL_EXAMPLE.format(command="sweep", version=__version__, more=""))
def sweep(
    spec: Annotated[
        Path, typer.Argument(help="A retrieval spec with a sweep.", show_default=False)
    ],
    format: Annotated[
        SweepFormat, typer.Option("--format", "-f", help=SWEEP_FORMAT_HELP)
    ] = SweepFormat.json,
    overrides: Overrides = None,
    verbose: Verbose = False,
    quiet: Quiet = False,
) -> None:
    """Evaluate a spec's sweep vectorised (up to 10^7 points): the numeric predictions at
    every point, one line each."""
    from infoflow.families import family
    from infoflow.spec import load_spec

    with user_errors():
        loaded = load_spec(spec, overrides or ())
        run_sweep = family(loaded.kind, str(spec)).command("sweep", str(spec))
        text = run_sweep(loaded, format.value, str(spec))
    write = sys.stdout.write
    for line in text:
        write(line + "\n")


@app.command()
def schema(
    kind: Annotated[
        str | None, typer.Argument(help="A spec kind; all kinds when omitted.", show_default=False)
    ] = None,
    verbose: Verbose = False,
    quiet: Quiet = False,
) -> None:
    """Print the JSON Schema of the specs (editors use it for completion)."""
    from infoflow.spec import spec_schema

    with user_errors():
        typer.echo(json.dumps(spec_schema(kind), indent=2))
