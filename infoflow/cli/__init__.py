"""The ``infoflow`` command line: :data:`app` with every command, and :func:`main`, the
console script.

Exit codes: 0 success; 2 bad input (a message that names the file and the field, no
traceback); 1 anything else (a failed allocation: one line, no traceback). Output piped
into a reader that stops early (``| head``) ends the process by SIGPIPE, as ``cat`` would.

``app`` (the Typer application), ``options`` (what the commands share), ``theory`` (predict,
explain, graph, compare, plot, sweep, schema) and ``training`` (plan, validate, calibrate,
compile: torch is imported inside them).
"""

from __future__ import annotations

import errno
import os
import select
import signal
import sys
from typing import NoReturn

import typer

from infoflow.cli import theory, training
from infoflow.cli.app import app
from infoflow.core.errors import out_of_memory
from infoflow.core.text import one_line

__all__ = ["app", "main", "theory", "training"]

#: What to try after a failed allocation.
SMALLER = "try smaller sizes (seq_len, embed_dim, the MLP width) or fewer models at once"


def main() -> None:
    """Console-script entry point: a usage error (a missing argument, an unknown option, a
    bad choice) is one line on stderr and exit code 2, like every other bad input."""
    from typer._click.exceptions import NoArgsIsHelpError, UsageError

    try:
        code = app(standalone_mode=False)
    except BrokenPipeError:
        if not _stdout_closed():  # another pipe or socket: not the reader going away
            raise
        _die_of_closed_pipe()
    except SystemExit as exc:  # typer's own exit 1 on a closed pipe
        if isinstance(exc.__context__, BrokenPipeError) and _stdout_closed():
            _die_of_closed_pipe()
        raise
    except NoArgsIsHelpError as exc:
        exc.show()  # the help, when infoflow is run with no arguments
        code = 0
    except UsageError as exc:
        command = exc.ctx.command_path if exc.ctx else "infoflow"
        typer.echo(f"error: {one_line(exc.format_message())} (see {command} --help)", err=True)
        code = exc.exit_code
    except (MemoryError, RuntimeError) as exc:
        if not out_of_memory(exc):
            raise
        typer.echo(f"error: out of memory ({one_line(str(exc), 200)}): {SMALLER}", err=True)
        code = 1
    except OSError as exc:  # a path no file can have, wherever it was given (a review)
        if exc.errno not in (errno.ENAMETOOLONG, errno.ELOOP):
            raise
        where = one_line(str(exc.filename or "a path"), 200)
        typer.echo(f"error: {where}: cannot use this path ({exc.strerror})", err=True)
        code = 2
    sys.exit(code if isinstance(code, int) else 0)


def _stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader went away (its write end polls an error); a
    broken stderr, socket or child's pipe is not (a review)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(event & select.POLLERR for _, event in poller.poll(0))
    except (OSError, ValueError):  # no stdout, or one without a descriptor
        return False


def _die_of_closed_pipe() -> NoReturn:
    """The reader of stdout went away: end as a shell tool would, killed by SIGPIPE (status
    141 in a shell), and write nothing more (Python's own flush at exit would fail again)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGPIPE)
    os._exit(128 + signal.SIGPIPE)  # where another thread took the signal
