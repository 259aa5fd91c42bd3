"""Progress notes on stderr that ``--quiet`` silences (a step time being measured, a pilot's
minutes of training), and the verbosity they read: the running command's, kept in its root
context's meta (-1 quiet, 0 normal, 1 verbose); 0 outside a command (``import infoflow``)."""

from __future__ import annotations

import sys

LEVEL = "infoflow.verbosity"  # the root context's meta key


def verbosity() -> int:
    """-1 under ``--quiet``, 1 under ``--verbose``, else 0 (outside a command too)."""
    from typer._click.globals import get_current_context

    ctx = get_current_context(silent=True)
    return ctx.find_root().meta.get(LEVEL, 0) if ctx else 0


def progress_note(message: str) -> None:
    """``message`` on stderr, unless the command runs ``--quiet``."""
    if verbosity() >= 0:
        print(message, file=sys.stderr)
