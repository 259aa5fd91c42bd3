"""What the commands share: the exit code of bad input, the ``--set`` help, reporting a
bad spec, loading specs for a command, and the console a table is printed on."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from infoflow.core.notes import LEVEL, verbosity

if TYPE_CHECKING:
    from rich.console import Console

BAD_INPUT = 2
SET_HELP = (
    "Override a spec field before validation: key.path=value (value read as JSON when it "
    "parses); a field the spec sweeps is then fixed at that value, and sweep.key.path=[...] "
    "sweeps it. Repeatable; applies to every spec the command reads."
)
#: The ``--set`` option every command that reads a spec takes.
Overrides = Annotated[list[str] | None, typer.Option("--set", help=SET_HELP)]
#: What ``--format jsonl`` is, in every command that has it.
JSONL_HELP = (
    "one JSON object per line (per spec, sweep point or variant) with the same keys in every "
    "command: infoflow_version, command, kind, source, point, predictions, messages"
)


def _verbose(ctx: typer.Context, value: bool) -> bool:
    """``--verbose``: more detail, and the command's time on stderr when it ends."""
    if value:
        _level(ctx, 1)
        start = time.perf_counter()
        name = ctx.command_path

        def took() -> None:
            if sys.exc_info()[0] is None:  # a failed command's one line stays the only one
                typer.echo(f"{name}: {time.perf_counter() - start:.2f} s", err=True)

        ctx.find_root().call_on_close(took)
    return value


def _quiet(ctx: typer.Context, value: bool) -> bool:
    """``--quiet``: no progress display and no notes, only the results."""
    if value:
        _level(ctx, -1)
    return value


def _level(ctx: typer.Context, level: int) -> None:
    meta = ctx.find_root().meta
    if meta.get(LEVEL, level) != level:
        raise typer.BadParameter("--verbose and --quiet exclude each other")
    meta[LEVEL] = level


#: The verbosity flags every command takes.
Verbose = Annotated[
    bool,
    typer.Option(
        "--verbose", "-v", callback=_verbose, help="More detail; the time taken, on stderr."
    ),
]
Quiet = Annotated[
    bool,
    typer.Option("--quiet", "-q", callback=_quiet, help="Results only: no progress, no notes."),
]


@contextmanager
def user_errors() -> Iterator[None]:
    """Report a bad spec as one paragraph on stderr and exit 2."""
    from infoflow.core.errors import SpecError

    try:
        yield
    except SpecError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(BAD_INPUT) from None


def load_points(
    paths: list[Path], overrides: list[str] | None, serving: dict[str, Any] | None = None
) -> list[tuple[str, dict[str, Any], Any]]:
    """Every spec with its sweep expanded, as (its path, the point's swept values, the spec
    at that point), exiting 2 on the first bad one. A path that a family reads without a
    spec (a model's config.json, or a folder holding one) is sized with the ``serving``
    options."""
    from infoflow.spec import expand

    loaded = []
    with user_errors():
        for path in paths:
            spec = _load(path, list(overrides or ()), serving or {})
            loaded += [(str(path), point, at) for point, at in expand(spec, path.parent, str(path))]
    return loaded


def point_name(path: str, point: dict[str, Any]) -> str:
    """A spec's name in output: its path, and the point's swept values when it has some."""
    where = ", ".join(f"{k}={v}" for k, v in point.items())
    return f"{path} [{where}]" if where else path


#: The serving fields that each give the cache budget, one at a time.
BUDGETS = {"device", "memory_budget_gib", "device_memory_gib"}
#: The command-line option of each serving field (``predict``'s).
OPTIONS = {
    "context_tokens": "--context",
    "batch": "--batch",
    "device": "--device",
    "cache_dtype": "--cache-dtype",
    "tensor_parallel": "--tp",
    "memory_budget_gib": "--budget-gib",
    "engine": "--engine",
}


def _set_fields(overrides: list[str]) -> dict[str, str]:
    """The fields ``overrides`` set, each with its value's text, and those a ``--set
    sweep={...}`` sweeps (their value: "swept")."""
    fields = {}
    for override in overrides:
        key, _, raw = override.partition("=") if isinstance(override, str) else ("", "", "")
        fields[key.strip()] = raw.strip()
        if key.strip() == "sweep":
            try:
                swept = json.loads(raw)
            except ValueError:
                continue
            fields |= dict.fromkeys(swept, "swept") if isinstance(swept, dict) else {}
    return fields


def _load(path: Path, overrides: list[str], serving: dict[str, Any]) -> Any:
    """The spec a family reads ``path`` as (a model's config.json), or the spec file at
    ``path`` with the serving options as overrides of its ``serving`` fields; a problem with
    a field an option set names the option (a review: "field 'serving.device'" for
    ``--device cuda``)."""
    from infoflow.core.errors import SpecError

    _refuse_conflicts(path, overrides, serving)
    try:
        return _load_with(path, overrides, serving)
    except SpecError as exc:
        problems = [(_option_of(field, serving), why) for field, why in exc.problems]
        if problems == exc.problems:
            raise
        raise SpecError(exc.source, problems) from None


def _option_of(field: str | None, serving: dict[str, Any]) -> str | None:
    key = (field or "").removeprefix("serving.")
    return f"{OPTIONS[key]} (serving.{key})" if key in serving and key in OPTIONS else field


def _refuse_conflicts(path: Path, overrides: list[str], serving: dict[str, Any]) -> None:
    """An option and a --set of one field (the --set came last and won, silently), or an
    option's budget beside another, by option or by --set (each gives the cache budget): a
    SpecError naming both (a review)."""
    from infoflow.core.errors import SpecError

    fields = _set_fields(overrides)
    for key in serving:
        both = fields.keys() & {f"serving.{key}", "serving"}
        if both:
            message = f"{OPTIONS.get(key, key)} and --set {min(both)}: two values for one field"
            raise SpecError(str(path), [(f"serving.{key}", message + "; give one")])
    budgets = sorted(OPTIONS.get(key, key) for key in BUDGETS & serving.keys())
    if budgets:  # an option's budget beside another budget, by option or by --set (not null)
        others = {f"serving.{key}" for key in BUDGETS}
        budgets += sorted(
            f"--set {f}" for f, raw in fields.items() if f in others and raw != "null"
        )
    if len(budgets) > 1:
        message = f"{' and '.join(budgets)}: each gives the cache budget; give one"
        raise SpecError(str(path), [(None, message)])


def _load_with(path: Path, overrides: list[str], serving: dict[str, Any]) -> Any:
    from infoflow.core.errors import SpecError
    from infoflow.spec import load_model_file, load_spec

    direct = load_model_file(path, serving, overrides)
    if direct is not None:
        return direct
    as_overrides = [f"serving.{key}={value}" for key, value in serving.items()]
    if BUDGETS & serving.keys():  # one budget replaces the spec's: they are alternatives
        as_overrides += [f"serving.{key}=null" for key in sorted(BUDGETS - serving.keys())]
    try:
        return load_spec(path, [*as_overrides, *overrides])
    except SpecError:
        if not serving:
            raise
        written = load_spec(path, overrides)  # the spec alone: is it the options' fault?
        if "serving" in type(written).model_fields:
            raise
    given = ", ".join(OPTIONS.get(key, key) for key in serving)
    message = f"{given}: options of a looped_kv spec or a model's config; this spec's kind is "
    raise SpecError(str(path), [(None, message + written.kind)])


def load_for(command: str, path: Path, overrides: list[str] | None) -> tuple[Any, Any]:
    """The spec at ``path`` (its base values: a sweep is checked, point by point, but not
    expanded) and its family's implementation of ``command`` (a SpecError when the family
    has none)."""
    from infoflow.families import family
    from infoflow.spec import expand

    spec = _load(path, list(overrides or ()), {})  # a model's config.json too
    run = family(spec.kind, str(path)).command(command, str(path))
    expand(spec, path.parent, str(path))
    return spec, run


def note_base_values(command: str, path: Path, spec: Any) -> None:
    """After ``command``'s output, on stderr: a swept spec was read at its base values (it
    said nothing: a review; after, so that a refusal stays one line)."""
    if getattr(spec, "sweep", None) and verbosity() >= 0:
        swept = ", ".join(spec.sweep)
        typer.echo(f"note: {path} sweeps {swept}; {command} reads its base values", err=True)


def console() -> Console:
    """The console tables are printed on: the terminal's width, 120 columns into a pipe; a
    closed pipe is left to :func:`infoflow.cli.main` (rich would exit 1 on its own)."""
    from rich.console import Console

    class PipedConsole(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError

    return PipedConsole(width=None if sys.stdout.isatty() else 120)
