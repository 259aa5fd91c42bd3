"""``validate``'s interruption: Ctrl-C or SIGTERM (a ``timeout``, a scheduler's stop) during
a run ends it with one line on what was kept and how to go on, exit code 130 or 143."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer


class Terminated(KeyboardInterrupt):
    """SIGTERM during a run, handled as Ctrl-C is."""


#: Whether SIGTERM came: code between the handler and here may raise a KeyboardInterrupt of
#: its own for it (Ray's wait did: exit 130).
_received: list[int] = []


def _terminated(signum, frame) -> None:
    _received.append(signum)
    raise Terminated


@contextmanager
def interrupted_says_so(out: Path) -> Iterator[None]:
    """Ctrl-C or SIGTERM during a run: one line on what was kept and how to go on, exit
    code 130 or 143 (SIGTERM exited 143 without the line: an audit, 2026-12-07). SIGTERM is
    handled only from the main thread (where a signal can be), and not where it is ignored."""
    previous = signal.getsignal(signal.SIGTERM)
    handled = threading.current_thread() is threading.main_thread()
    handled = handled and previous is not signal.SIG_IGN
    _received.clear()
    if handled:
        signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    except KeyboardInterrupt:
        message = f"interrupted: what was trained is kept; continue with --resume --out {out}"
        typer.echo(message, err=True)
        raise typer.Exit(143 if _received else 130) from None
    finally:
        if handled:
            signal.signal(signal.SIGTERM, previous)
