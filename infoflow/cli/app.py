"""The ``infoflow`` Typer application and its global options; the commands register on
:data:`app` from :mod:`~infoflow.cli.theory` and :mod:`~infoflow.cli.training`."""

from __future__ import annotations

from typing import Annotated

import typer

app = typer.Typer(
    name="infoflow",
    help="Predict what a transformer needs for a task, symbolically; check it by experiment.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from infoflow.core.version import __version__

        typer.echo(f"infoflow {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Predict what a transformer needs for a task, symbolically; check it by experiment."""
