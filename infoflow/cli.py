"""The ``infoflow`` command line.

Exit codes: 0 success; 2 bad input (a message that names the file and the field, no
traceback); 1 anything else. Heavy modules (sympy, pydantic, the families) are imported
inside the commands, so ``infoflow --help`` starts fast.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from infoflow.errors import one_line

app = typer.Typer(
    name="infoflow",
    help="Predict what a transformer needs for a task, symbolically; check it by experiment.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

BAD_INPUT = 2
SET_HELP = (
    "Override a spec field before validation: key.path=value (value read as JSON when it "
    "parses). Repeatable; applies to every spec."
)


class Format(StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"
    latex = "latex"


class GraphFormat(StrEnum):
    dot = "dot"
    json = "json"


@contextmanager
def _user_errors() -> Iterator[None]:
    """Report a bad spec as one paragraph on stderr and exit 2."""
    from infoflow.errors import SpecError

    try:
        yield
    except SpecError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(BAD_INPUT) from None


def _version(value: bool) -> None:
    if value:
        from infoflow import __version__

        typer.echo(f"infoflow {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Predict what a transformer needs for a task, symbolically; check it by experiment."""


@app.command()
def predict(
    specs: Annotated[list[Path], typer.Argument(help="Spec files (JSON).", show_default=False)],
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.table,
    overrides: Annotated[list[str] | None, typer.Option("--set", help=SET_HELP)] = None,
) -> None:
    """Predict, symbolically, what each spec's task needs (a spec with a sweep: each point)."""
    from infoflow import render
    from infoflow.predictor import predict as run_predict

    loaded = _load(specs, overrides)
    with _user_errors():  # a family's own inputs (a calibration file) can be bad too
        results = [run_predict(spec, source) for source, spec in loaded]
    if format is Format.json:
        typer.echo(render.to_json(results))
    elif format is Format.markdown:
        typer.echo("\n".join(render.to_markdown(r) for r in results))
    elif format is Format.latex:
        typer.echo("\n".join(render.to_latex(r) for r in results))
    else:
        from rich.console import Console

        console = Console(width=None if sys.stdout.isatty() else 120)
        for result in results:
            console.print(render.to_table(result))


@app.command()
def explain(
    spec: Annotated[Path, typer.Argument(help="A retrieval spec (JSON).", show_default=False)],
    overrides: Annotated[list[str] | None, typer.Option("--set", help=SET_HELP)] = None,
) -> None:
    """Show the derivation step by step: tree, plan per layer, rules, exponent."""
    with _user_errors():
        loaded, run_explain = _load_for("explain", spec, overrides)
    typer.echo(run_explain(loaded, str(spec)), nl=False)


@app.command()
def graph(
    spec: Annotated[Path, typer.Argument(help="A retrieval spec (JSON).", show_default=False)],
    format: Annotated[
        GraphFormat, typer.Option("--format", "-f", help="dot (Graphviz) or json (networkx).")
    ] = GraphFormat.dot,
    overrides: Annotated[list[str] | None, typer.Option("--set", help=SET_HELP)] = None,
) -> None:
    """Print the information-set DAG: nodes (role, layer), edges by propagation mode."""
    with _user_errors():
        loaded, run_graph = _load_for("graph", spec, overrides)
    typer.echo(run_graph(loaded, format.value), nl=False)


class CompareFormat(StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"


@app.command()
def compare(
    spec: Annotated[
        Path, typer.Argument(help="A looped_kv spec with codec ranks.", show_default=False)
    ],
    format: Annotated[
        CompareFormat, typer.Option("--format", "-f", help="Output format.")
    ] = CompareFormat.table,
    overrides: Annotated[list[str] | None, typer.Option("--set", help=SET_HELP)] = None,
) -> None:
    """Compare every way of storing a looped cache side by side (full, final-loop reuse,
    MLA-style head-axis latent, LLA per head, LLA-2D) at the spec's ranks."""
    with _user_errors():
        loaded, run_compare = _load_for("compare", spec, overrides)
        typer.echo(run_compare(loaded, format.value, str(spec)), nl=False)


@app.command()
def plot(
    spec: Annotated[
        Path, typer.Argument(help="A looped_kv spec with a budget.", show_default=False)
    ],
    out: Annotated[Path, typer.Option(help="The PNG to write.")] = Path("capacity.png"),
    overrides: Annotated[list[str] | None, typer.Option("--set", help=SET_HELP)] = None,
) -> None:
    """Plot serving capacity against context, one line per way of storing the cache."""
    with _user_errors():
        loaded, run_plot = _load_for("plot", spec, overrides)
        typer.echo(run_plot(loaded, str(out), str(spec)), nl=False)


class SweepFormat(StrEnum):
    json = "json"
    table = "table"


@app.command()
def sweep(
    spec: Annotated[
        Path, typer.Argument(help="A retrieval spec with a sweep.", show_default=False)
    ],
    format: Annotated[
        SweepFormat, typer.Option("--format", "-f", help="json: one object per point.")
    ] = SweepFormat.json,
    overrides: Annotated[list[str] | None, typer.Option("--set", help=SET_HELP)] = None,
) -> None:
    """Evaluate a spec's sweep vectorised (up to 10^7 points): the numeric predictions at
    every point, one line each."""
    from infoflow.families import family
    from infoflow.spec import load_spec

    with _user_errors():
        loaded = load_spec(spec, overrides or ())
        run_sweep = family(loaded.kind, str(spec)).command("sweep", str(spec))
        text = run_sweep(loaded, format.value, str(spec))
    write = sys.stdout.write
    for line in text:
        write(line + "\n")


def _load(paths: list[Path], overrides: list[str] | None) -> list[tuple[str, Any]]:
    """Load every spec and expand sweeps, exiting 2 on the first bad one."""
    from infoflow.spec import expand, load_spec

    loaded = []
    with _user_errors():
        for path in paths:
            spec = load_spec(path, overrides or ())
            for point, at in expand(spec, path.parent, str(path)):
                where = ", ".join(f"{k}={v}" for k, v in point.items())
                loaded.append((f"{path} [{where}]" if where else str(path), at))
    return loaded


def _load_for(command: str, path: Path, overrides: list[str] | None) -> tuple[Any, Any]:
    """The spec at ``path`` (its base values: a sweep is checked, point by point, but not
    expanded) and its family's implementation of ``command`` (a SpecError when the family
    has none)."""
    from infoflow.families import family
    from infoflow.spec import expand, load_spec

    spec = load_spec(path, overrides or ())
    run = family(spec.kind, str(path)).command(command, str(path))
    expand(spec, path.parent, str(path))
    return spec, run


@app.command()
def schema(
    kind: Annotated[
        str | None, typer.Argument(help="A spec kind; all kinds when omitted.", show_default=False)
    ] = None,
) -> None:
    """Print the JSON Schema of the specs (editors use it for completion)."""
    from infoflow.spec import spec_schema

    with _user_errors():
        typer.echo(json.dumps(spec_schema(kind), indent=2))


# The commands that train or plan training, registered on ``app`` by importing them.
from infoflow import cli_training  # noqa: E402, F401


def main() -> None:
    """Console-script entry point: a usage error (a missing argument, an unknown option, a
    bad choice) is one line on stderr and exit code 2, like every other bad input."""
    from typer._click.exceptions import NoArgsIsHelpError, UsageError

    try:
        code = app(standalone_mode=False)
    except NoArgsIsHelpError as exc:
        exc.show()  # the help, when infoflow is run with no arguments
        code = 0
    except UsageError as exc:
        command = exc.ctx.command_path if exc.ctx else "infoflow"
        typer.echo(f"error: {one_line(exc.format_message())} (see {command} --help)", err=True)
        code = exc.exit_code
    sys.exit(code if isinstance(code, int) else 0)
