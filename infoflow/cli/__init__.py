"""The ``infoflow`` command line: :data:`app` with every command, and :func:`main`, the
console script.

Exit codes: 0 success; 2 bad input (a message that names the file and the field, no
traceback); 1 anything else. ``app`` (the Typer application), ``options`` (what the commands
share), ``theory`` (predict, explain, graph, compare, plot, sweep, schema) and ``training``
(plan, validate, calibrate: torch is imported inside them).
"""

from __future__ import annotations

import sys

import typer

from infoflow.cli import theory, training
from infoflow.cli.app import app
from infoflow.core.text import one_line

__all__ = ["app", "main", "theory", "training"]


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
