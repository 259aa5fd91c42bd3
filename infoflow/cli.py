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
from typing import Annotated

import typer

app = typer.Typer(
    name="infoflow",
    help="Predict what a transformer needs for a task, symbolically; check it by experiment.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

BAD_INPUT = 2


class Format(StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"


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
    overrides: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="Override a spec field before validation: key.path=value (value read as "
            "JSON when it parses). Repeatable; applies to every spec.",
        ),
    ] = None,
) -> None:
    """Predict, symbolically, what each spec's task needs."""
    from infoflow import render
    from infoflow.predictor import predict as run_predict
    from infoflow.spec import load_spec

    with _user_errors():
        loaded = [(str(path), load_spec(path, overrides or ())) for path in specs]
    results = [run_predict(spec, source) for source, spec in loaded]
    if format is Format.json:
        typer.echo(render.to_json(results))
    elif format is Format.markdown:
        typer.echo("\n".join(render.to_markdown(r) for r in results))
    else:
        from rich.console import Console

        console = Console(width=None if sys.stdout.isatty() else 120)
        for result in results:
            console.print(render.to_table(result))


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


def main() -> None:
    """Console-script entry point."""
    app()
