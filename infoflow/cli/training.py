"""The commands that train or plan training: ``plan``, ``validate``, ``calibrate`` and
``compile``. Torch and the families are imported inside the commands, so the others start
without them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from infoflow.cli.app import app
from infoflow.cli.interrupt import interrupted_says_so
from infoflow.cli.options import (
    BAD_INPUT,
    JSONL_HELP,
    Overrides,
    Quiet,
    Verbose,
    console,
    load_for,
    note_base_values,
    user_errors,
)
from infoflow.cli.progress import progress as progress_display


class Scale(StrEnum):
    smoke = "smoke"
    paper = "paper"


class Executor(StrEnum):
    local = "local"
    ray = "ray"


class Device(StrEnum):
    cpu = "cpu"
    cuda = "cuda"


Threads = Annotated[
    int | None,
    typer.Option(
        min=1, max=4096, help="Torch threads (default: OMP_NUM_THREADS, else the free cores)."
    ),
]


@contextmanager
def _free_cores(threads: int | None, device: Device | None) -> Iterator[str]:
    """Train on ``threads`` torch threads, else on the cores the load leaves free, while the
    block runs; yield the line that says so (with a warning when the machine is loaded), ""
    for a CUDA device. Either way the load read on entry is held (``held_load``)."""
    from infoflow.validators.threads import free_cores, held_load

    if device == Device.cuda:
        with held_load():
            yield ""
        return
    with free_cores(threads) as chosen:
        yield chosen.line()


class PlanFormat(StrEnum):
    text = "text"
    jsonl = "jsonl"


ESTIMATE_NOTE = (
    "the planned steps times the step time {how}, and for retrieval the construction claims' "
    "builds and fine-tunes (see messages)"
)


Compile = Annotated[
    bool,
    typer.Option(
        help="torch.compile the retrieval training step: 2.1x on an H200 after 23 s of compiling,"
        " 1.08x on a 2-core CPU after 29 s (recorded 2026-12-04; plan adds them)."
    ),
]
Pilot = Annotated[
    bool,
    typer.Option(
        help="Under a budget, train each retrieval design's efficient models 600 steps first and"
        " take the best whose pilot says they learn (cached: plan then validate pilot once)."
    ),
]


@app.command()
def plan(
    specs: Annotated[
        list[Path],
        typer.Argument(help="Spec files (any family with a validator).", show_default=False),
    ],
    scale: Annotated[
        Scale, typer.Option(help="smoke: minutes on a CPU; paper: the papers' settings.")
    ] = Scale.smoke,
    device: Annotated[
        Device | None,
        typer.Option(
            help="Estimate for it (default: validate's device); cuda with no GPU here: the "
            "step times recorded on an H200. A GPU model (h200) is predict's --device."
        ),
    ] = None,
    budget: Annotated[
        str | None, typer.Option(help="Time per spec: 90s, 10m, 1h30m (default: the scale's).")
    ] = None,
    steps: Annotated[
        int | None, typer.Option(min=1, max=10**9, help="Override the scale's training steps.")
    ] = None,
    seeds: Annotated[int | None, typer.Option(min=1, max=1000, help="Override the seeds.")] = None,
    compile: Compile = False,
    pilot: Pilot = True,
    threads: Threads = None,
    overrides: Overrides = None,
    format: Annotated[
        PlanFormat, typer.Option("--format", "-f", help="text; jsonl: " + JSONL_HELP + ".")
    ] = PlanFormat.text,
    verbose: Verbose = False,
    quiet: Quiet = False,
) -> None:
    """The experiments validate would run and their estimated time on the device: for
    retrieval the design (sizes, predicted exponents, the claims they test); for icl_markov
    the K sweeps and clock runs; for looped_kv the models and their measurements (needs
    torch)."""
    from infoflow.core.units import parse_duration

    total, jsonl = 0.0, format is PlanFormat.jsonl
    with user_errors(), _needs_torch("plan"), _free_cores(threads, device) as note:
        seconds = parse_duration("--budget", budget)
        from infoflow.validators.copies import copied, first_copies

        found = {path: load_for("plan", path, overrides) for path in specs}
        kept = first_copies({path: spec for path, (spec, _) in found.items()})
        for path in sorted(found, key=lambda p: kept[p] != p):  # a copy after what it copies
            loaded, run_plan = found[path]
            if kept[path] != path:  # validate plans it once (a review, 2026-12-06)
                typer.echo(f"{path}: {copied(kept[path], [])}", err=jsonl)
                continue
            chosen = device.value if device else None
            args = (scale.value, chosen, seconds, steps, seeds, compile, pilot)
            text, estimate = run_plan(loaded, str(path), *args, tuple(overrides or ()))
            line = _plan_line(loaded.kind, str(path), text, estimate, chosen) if jsonl else text
            typer.echo(line)
            total += estimate
    if note and not quiet:
        typer.echo(note, err=True)
    if not jsonl:
        typer.echo(f"estimated total: {total / 60:.1f} min")


def _plan_line(kind: str, source: str, text: str, seconds: float, device: str | None) -> str:
    """One spec's plan as a ``--format jsonl`` line: the estimate (from step times measured
    here, or, for a GPU not here, recorded on an H200), the plan's text lines."""
    from infoflow.core import records
    from infoflow.validators.ensemble import recorded_only

    recorded = recorded_only(device)
    how = "recorded on one H200 (not measured here)" if recorded else "measured on the device"
    estimate = {
        "value": seconds,
        "unit": "s",
        "bound": "estimate",
        "provenance": "recorded:step_time" if recorded else "measured:step_time",
    }
    predictions = {"estimated_seconds": {**estimate, "note": ESTIMATE_NOTE.format(how=how)}}
    return records.line(records.record("plan", kind, source, {}, predictions, text.splitlines()))


def _check_out(out: Path, resume: bool) -> None:
    """Refuse an ``--out`` no run may write (:func:`~infoflow.validators.folder.check_out`),
    before anything is said (a refusal is its one line); then, resuming a folder that holds
    no run, say that a new one starts."""
    from infoflow.validators.folder import check_out
    from infoflow.validators.run import DATABASE

    check_out(out, DATABASE)
    if resume and not (out / DATABASE).exists():
        typer.echo(f"note: {out} holds no run to resume: starting a new one", err=True)


@contextmanager
def _needs_torch(command: str) -> Iterator[None]:
    """Exit 2 with an install hint when torch is missing."""
    try:
        yield
    except ModuleNotFoundError as exc:
        if exc.name != "torch":
            raise
        from infoflow.core.errors import install_hint

        hint = install_hint("torch matplotlib safetensors", "validate")
        typer.echo(f"error: {command} needs torch: {hint} ({exc})", err=True)
        raise typer.Exit(BAD_INPUT) from None


ValidateSpecs = Annotated[
    list[Path] | None,
    typer.Argument(
        help="Spec files; when omitted, specs/*/*.json of the working directory, else the "
        "bundled specs.",
        show_default=False,
    ),
]
ValidateScale = Annotated[
    Scale, typer.Option(help="smoke: minutes on a CPU; paper: the papers' settings, for a GPU.")
]
Out = Annotated[Path, typer.Option(help="Results folder (database, reports, plots, checkpoints).")]
Gpu = Annotated[
    bool, typer.Option(help="Use CUDA (bf16 autocast, TF32); exit 2 without a CUDA device.")
]
ValidateBudget = Annotated[
    str | None,
    typer.Option(
        help="Time per retrieval spec the design may use: 90s, 10m, 1h30m (default: the "
        "scale's: 5 min at smoke, none at paper)."
    ),
]
ValidateSteps = Annotated[
    int | None, typer.Option(help="Override the scale's training steps (1 to 1e9).")
]
ValidateSeeds = Annotated[int | None, typer.Option(help="Override the scale's seeds (1 to 1000).")]
ExecutorOption = Annotated[
    Executor, typer.Option(help="local: in this process; ray: one Ray task per group.")
]
Address = Annotated[
    str | None,
    typer.Option(
        help="A Ray cluster to join (default: the one RAY_ADDRESS names, else the last one"
        " `ray start` started here, else a new local one)."
    ),
]
GpusPerGroup = Annotated[
    float, typer.Option(help="GPUs each Ray task asks for with --gpu (a fraction shares one).")
]


@app.command()
def validate(
    specs: ValidateSpecs = None,
    scale: ValidateScale = Scale.smoke,
    out: Out = Path("runs/validate"),
    resume: Annotated[bool, typer.Option(help="Continue the run in --out.")] = False,
    gpu: Gpu = False,
    device: Annotated[Device | None, typer.Option(help="Force a device.")] = None,
    steps: ValidateSteps = None,
    seeds: ValidateSeeds = None,
    budget: ValidateBudget = None,
    strict: Annotated[bool, typer.Option(help="Exit 1 when a claim is refuted.")] = False,
    overrides: Overrides = None,
    executor: ExecutorOption = Executor.local,
    address: Address = None,
    gpus_per_group: GpusPerGroup = 1.0,
    threads: Threads = None,
    plots: Annotated[
        bool, typer.Option(help="Draw the figures (plots, learning curves); the data are kept.")
    ] = True,
    compile: Compile = False,
    pilot: Pilot = True,
    verbose: Verbose = False,
    quiet: Quiet = False,
) -> None:
    """Train real models and check every prediction that can be tested (needs torch)."""
    from infoflow.core.units import parse_duration

    with _needs_torch("validate"):
        from infoflow.validators.run import Options
        from infoflow.validators.run import validate as run_validate
        from infoflow.validators.run_report import summary_line

    with user_errors():
        options = Options(
            out=out,
            scale=scale.value,
            gpu=gpu,
            device=device.value if device else None,
            resume=resume,
            steps=steps,
            seeds=seeds,
            budget=parse_duration("--budget", budget),
            overrides=tuple(overrides or ()),
            executor=executor.value,
            address=address,
            gpus_per_group=gpus_per_group,
            plots=plots,
            compile=compile,
            pilot=pilot,
        )
        cuda = Device.cuda if gpu else device
        _check_out(out, resume)
        with _free_cores(threads, cuda) as note:
            note = None if resume else note  # a resumed run trains on its recorded count
            with interrupted_says_so(out), progress_display(quiet, note=note) as progress:
                report = run_validate(list(specs or []), options, progress)
    typer.echo(f"{summary_line(report)}; report: {out / 'report.md'}")
    if strict and report["summary"]["refuted"]:
        raise typer.Exit(1)


@app.command()
def calibrate(
    kind: Annotated[str, typer.Argument(help="The spec kind to calibrate: icl_markov.")],
    results: Annotated[
        list[Path],
        typer.Argument(help="validate output folders or report.json files.", show_default=False),
    ],
    base: Annotated[
        Path | None, typer.Option(help="Calibration to start from; default: the shipped one.")
    ] = None,
    out: Annotated[
        Path,
        typer.Option(
            help="Where to write the new calibration file (a calibration file there is "
            "replaced; any other file is refused)."
        ),
    ] = Path("calibration.json"),
    verbose: Verbose = False,
    quiet: Quiet = False,
) -> None:
    """Fit the constants of a family's working forms from validation results and write a
    calibration file (point a spec's calibration field at it)."""
    from infoflow.families import family

    with user_errors():
        rows = family(kind, kind).command("calibrate", kind)(results, base, out)
    from rich.markup import escape
    from rich.table import Table

    from infoflow.core.text import one_line

    table = Table(title=escape(one_line(f"{kind} calibration -> {out}")))
    for column in ("quantity", "value", "note"):
        table.add_column(column, justify="right" if column == "value" else "left")
    for row in rows:  # a report's group names are what a user wrote: shown, never obeyed
        table.add_row(*(escape(one_line(cell, 2000)) for cell in row))
    console().print(table)


def _sharpness(value: float) -> float:
    """--beta: a number from 0.01 to 1e6 (NaN was refused as "at most 1000000")."""
    if not 0.01 <= value <= 1e6:
        raise typer.BadParameter(f"must be a number from 0.01 to 1e6 (got {value:g})")
    return value


@app.command(name="compile")
def compile_(
    spec: Annotated[Path, typer.Argument(help="A retrieval spec.", show_default=False)],
    out: Annotated[
        Path, typer.Option(help="Folder for model.safetensors, witness.json (and the sweep).")
    ] = Path("witness"),
    beta: Annotated[
        float,
        typer.Option(callback=_sharpness, help="Softmax sharpness of the heads (0.01 to 1e6)."),
    ] = 100.0,
    width: Annotated[int, typer.Option(min=8, max=65536, help="The MLPs' hidden width.")] = 2048,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the target's parameters.")] = 0,
    sweep: Annotated[
        bool,
        typer.Option(
            help="Measure the error against beta (at width 2048, whatever --width says) and "
            "the MLP width (at beta 1000), fit the exponent."
        ),
    ] = False,
    overrides: Overrides = None,
    verbose: Verbose = False,
    quiet: Quiet = False,
) -> None:
    """The engine's plan as explicit weights of the validator's model: a witness that the
    architecture represents the target, with its NMSE (exit 2 for a spec the engine calls
    inefficient, naming the bottleneck)."""
    with user_errors(), _needs_torch("compile"):
        from infoflow.core.files import creatable_folder

        creatable_folder(out, "--out")
        loaded, run_compile = load_for("compile", spec, overrides)
        typer.echo(run_compile(loaded, str(spec), out, beta, width, seed, sweep), nl=False)
    note_base_values("compile", spec, loaded)
