"""``infoflow ARGS`` run in the test's own process, as the console script would run it in a
fresh one: the same :func:`~infoflow.cli.main`, its exit code, stdout and stderr, without the
one to four seconds a fresh interpreter spends importing sympy and torch (most of the suite's
time in 2026-12, over its 10-minute budget). What a fresh process would not inherit is reset
or put back around the call: the caches the validators read once per process, the warnings
filters, the program name click derives from ``__main__``, the TF32 switches a GPU run
turns on, torch.compile's compiled code."""

from __future__ import annotations

import subprocess
import sys
import traceback
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

#: The interpreter's own warnings filters (a fresh ``infoflow`` starts with these, not with
#: pytest's), most recent first.
PYTHON_DEFAULTS = (
    ("default", DeprecationWarning, "__main__"),
    ("ignore", DeprecationWarning, ""),
    ("ignore", PendingDeprecationWarning, ""),
    ("ignore", ImportWarning, ""),
    ("ignore", ResourceWarning, ""),
)


def in_process(args: list[str]) -> subprocess.CompletedProcess[str]:
    """``infoflow ARGS`` by :func:`~infoflow.cli.main` in this process: an uncaught exception
    is printed as the interpreter prints it, exit code 1."""
    from typer.testing import CliRunner

    from infoflow.cli import main

    code = 0
    with CliRunner().isolation() as (stdout, stderr, _), fresh(args):
        try:
            main()
        except SystemExit as exc:  # as the interpreter maps sys.exit's argument
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
        except Exception:
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        out, err = stdout.getvalue().decode(), stderr.getvalue().decode()
    return subprocess.CompletedProcess(["infoflow", *args], code, out, err)


@contextmanager
def fresh(args: list[str]) -> Iterator[None]:
    """``sys.argv`` set to the command, the rest as a fresh process has it, put back after."""
    try:
        import torch
    except ImportError:  # the theory's commands need no torch
        torch = None
    timing = sys.modules.get("infoflow.validators.retrieval.timing")
    if timing is not None:
        timing._CACHED.clear()  # read once per process: a child run may have written since
    main_module = sys.modules["__main__"]
    argv, package = sys.argv, getattr(main_module, "__package__", None)
    sys.argv = ["infoflow", *args]
    main_module.__package__ = None  # click names the program after it: "python -m pytest"
    if torch is not None:
        tf32 = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:
        with warnings.catch_warnings():
            warnings.resetwarnings()
            for action, category, module in reversed(PYTHON_DEFAULTS):
                warnings.filterwarnings(action, category=category, module=module)
            warnings.showwarning = _to_stderr
            yield
    finally:
        sys.argv, main_module.__package__ = argv, package
        if torch is not None:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
        if "torch._dynamo" in sys.modules:
            sys.modules["torch._dynamo"].reset()


def _to_stderr(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning printed where the interpreter prints it: on (the captured) stderr."""
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))
