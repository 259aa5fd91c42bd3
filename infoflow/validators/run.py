"""``infoflow validate``: spec files and :class:`Options` in; the database, ``report.json``,
``report.md``, the plots and the exports (``metrics.csv``, learning curves, TensorBoard) out.

The pipeline reads as its stages, each family taking part through its validator
(:mod:`~infoflow.validators.protocol`), found in the registry by the spec's kind:

1. plan: every spec into its family's experiment (jobs to train) or a "not validated" entry;
2. register: the run and every job's group in the database (``--resume`` continues it);
3. train: the unfinished jobs, here or as Ray tasks (:mod:`~infoflow.validators.executor`);
4. judge: each experiment's trained models into measurements and claims;
5. write: the exports (:mod:`~infoflow.validators.exports`), the reports
   (:mod:`~infoflow.validators.report`) and each family's plots.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import platform
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

import infoflow
from infoflow.core.errors import SpecError
from infoflow.core.files import TEMPORARY, resolved
from infoflow.families import FAMILIES, family
from infoflow.validators.claims import Section, tally
from infoflow.validators.copies import copied, first_copies
from infoflow.validators.ensemble import pick_device
from infoflow.validators.executor import reachable, train_local, train_on_ray
from infoflow.validators.exports import write_exports
from infoflow.validators.folder import check_out, locked
from infoflow.validators.identity import digest
from infoflow.validators.protocol import (
    CannotValidate,
    Context,
    Experiment,
    Job,
    Progress,
    ignored_options,
)
from infoflow.validators.report import finite, write_reports
from infoflow.validators.reuse import adopt, finished_groups, superseded
from infoflow.validators.steptime import recorded
from infoflow.validators.store import Store, recorded_settings
from infoflow.validators.threads import environment, keep_threads

DATABASE = "results.sqlite"
#: Sweep points a spec may train (a model or more each; a retrieval design is searched over
#: them all, so planning grows with their square: 32 points plan in seconds).
MAX_TRAINED_POINTS = 32


@dataclass(frozen=True)
class Options:
    """Everything ``infoflow validate`` takes besides the spec files."""

    out: Path = Path("runs/validate")
    scale: str = "smoke"  # smoke: minutes on a CPU; paper: the papers' settings
    gpu: bool = False  # insist on CUDA
    device: str | None = None  # force "cpu" or "cuda"; None: the best there is
    resume: bool = False  # continue the run in ``out``
    steps: int | None = None  # override every family's training steps
    seeds: int | None = None  # override every family's seeds
    budget: float | None = None  # seconds per spec for families that size their experiments
    overrides: tuple[str, ...] = ()  # ``key.path=value``, applied to every spec
    executor: str = "local"  # or "ray": one Ray task per job
    address: str | None = None  # a Ray cluster to join (default: Ray's rule, executor.py)
    gpus_per_group: float = 1.0  # GPUs each Ray task asks for on CUDA
    plots: bool = True  # draw the figures (the families' plots and the learning curves)
    compile: bool = False  # torch.compile the retrieval training step (for a GPU)
    pilot: bool = True  # a retrieval design's models tried briefly before it is taken

    def __post_init__(self) -> None:
        """Refuse options no run can use (a SpecError naming the option)."""
        for option, value, most in (
            ("--steps", self.steps, 10**9),
            ("--seeds", self.seeds, 1000),
            ("--budget", self.budget, 10**7),
        ):
            if value is not None and (isinstance(value, bool) or not 1 <= value <= most):
                raise SpecError(option, [(None, f"must be from 1 to {most:,} (got {value})")])
        if not 0 < self.gpus_per_group <= 1024:
            problem = f"must be in (0, 1024] (got {self.gpus_per_group})"
            raise SpecError("--gpus-per-group", [(None, problem)])
        if self.address and self.executor != "ray":
            raise SpecError("--address", [(None, "joins a Ray cluster: add --executor ray")])
        if self.gpus_per_group != 1.0 and self.executor != "ray":  # it was ignored (a review)
            why = "sizes each Ray task: add --executor ray"
            raise SpecError("--gpus-per-group", [(None, why)])


@dataclass
class Plan:
    """What the specs need: each experiment with its family's validator, each family's
    scale, and the specs that cannot be validated, with the reason."""

    experiments: list[tuple[Any, Experiment]] = field(default_factory=list)
    scales: dict[str, Any] = field(default_factory=dict)
    skipped: list[dict[str, str]] = field(default_factory=list)
    estimates: dict[str, float] = field(default_factory=dict)  # job -> estimated seconds

    @property
    def jobs(self) -> list[Job]:
        return [job for _, experiment in self.experiments for job in experiment.jobs]


def validate(paths: list[Path], options: Options, progress: Progress | None = None) -> dict:
    """Validate ``paths`` (every bundled spec when empty) into ``options.out``, which this
    process holds locked meanwhile; return the report (report.json's content)."""
    check_out(options.out, DATABASE)  # before minutes of planning (and read as it resumes)
    device = pick_device(options.gpu, options.device)
    if progress:
        progress.phase("planning", "(timing steps and piloting designs where not cached)")
    first = recorded_settings(options.out / DATABASE) if options.resume else {}
    resumed_on = keep_threads(first.get("threads"), device.type)  # and plans so, below
    with recorded(first.get("step_times")) as used:  # a resumed run: what it designed with
        planned = plan(paths or infoflow.specs.bundled(), designed(options, first), device.type)
        step_times = dict(used)
    if options.executor == "ray":
        reachable(options.address)  # before anything is written (a review)
    validators = [validator for validator, _ in planned.experiments]
    with locked(options.out, DATABASE):
        store = register(planned, options, device, step_times)
        if progress:  # once the folder is verified: a refusal stays one line
            ignored = ignored_options(validators, options.budget, options.compile)
            for line in filter(None, [resumed_on, *ignored]):  # this invocation's options
                print(line, file=sys.stderr)
        try:
            context = Context(device, store, options.out / "checkpoints", progress, options.compile)
            trained = train(planned, context, options)
            sections = [section.to_json() for section in judge(planned, context)]
            finished = store.last_finished()  # the run's end so far (this invocation's: none)
            if trained or finished is None:  # a re-report (it trained nothing) keeps it
                finished = _now()
                store.finish_run(finished)
            times = (store.first_started(), finished)
            report = _report(planned, sections, options, device, times, superseded(planned, store))
            report["throughput"] = throughput(planned, store)
            if progress:
                progress.phase("writing", f"the reports and plots to {options.out}")
            judged = list(zip(validators, sections, strict=True))
            report["exports"] = write_exports(options.out, store, judged, options.plots)
        finally:
            store.close()
        write_reports(options.out, report)
        for kind in FAMILIES:  # the plots draw NaN as gaps: they read the sections as measured
            mine = [section for section in sections if section["kind"] == kind]
            if mine and options.plots:
                _plot(kind, options.out, mine)
    return report


def _plot(kind: str, out: Path, sections: list[dict]) -> None:
    """A family's plots of ``sections``; a plot that fails is named in a warning, never the
    end of a finished run (its report is already written)."""
    try:
        family(kind).load_validator().plot(out, sections)
    except Exception as error:  # any plotting error: the report stands
        print(f"warning: the {kind} plots were not drawn ({error})", file=sys.stderr)


def designed(options: Options, first: dict) -> Options:
    """The options a run designs with: a resumed run's ``compile`` and ``pilot`` are those it
    started with (``first``, its settings), as they change the design under a budget; this
    invocation's ``--compile`` still decides how its steps train."""
    if not first:
        return options
    started = {key: first.get(key) is True for key in ("compile", "pilot")}
    return replace(options, **started)


def plan(paths: list[Path], options: Options, device: str = "cpu") -> Plan:
    """Each spec into its family's experiment at the family's scale on ``device`` (a device
    type), or a skipped entry."""
    planned = Plan()
    paths = list({resolved(path): path for path in paths}.values())  # each file once
    stems = Counter(path.stem for path in paths)
    specs = {path: infoflow.load_spec(path, options.overrides) for path in paths}
    kept = first_copies(specs)
    for path in sorted(specs, key=lambda p: kept[p] != p):  # a copy after the spec it copies
        spec = specs[path]
        check_points(spec, str(path))
        if kept[path] != path:  # one experiment, not two trained alike (a review, 2026-12-06)
            reason = copied(kept[path], [entry["spec"] for entry in planned.skipped])
            planned.skipped.append({"spec": str(path), "reason": reason})
            continue
        name = path.stem if stems[path.stem] == 1 else f"{path.stem}-{_tag(path)}"
        kind = family(spec.kind, str(path))
        if kind.validator is None:
            reason = kind.not_validated or "no validator is registered"
            planned.skipped.append({"spec": str(path), "reason": reason})
            continue
        validator = kind.load_validator()
        if spec.kind not in planned.scales:
            sizes = (options.scale, options.steps, options.seeds, device, options.budget)
            planned.scales[spec.kind] = validator.scale(*sizes, options.compile, options.pilot)
        try:
            experiment = validator.plan(name, spec, planned.scales[spec.kind], path.parent)
        except SpecError as exc:  # a spec no model can be built for: named by its file
            raise SpecError(str(path), exc.problems) from None
        except CannotValidate as exc:
            planned.skipped.append({"spec": str(path), "reason": str(exc)})
            continue
        planned.experiments.append((validator, experiment))
        if hasattr(validator, "estimates"):
            planned.estimates.update(validator.estimates(experiment, device))
    if planned.skipped and not planned.experiments:  # nothing to run: say why, as plan does
        (first, *others) = planned.skipped
        problems = [(None, f"cannot be validated: {first['reason']}")]
        problems += [(None, f"nor can {s['spec']}: {s['reason']}") for s in others]
        raise SpecError(first["spec"], problems)
    return planned


def plan_one(
    validator,
    spec,
    source: str,
    scale: str,
    device: str | None,
    budget: float | None,
    steps: int | None,
    seeds: int | None,
    field: str | None = None,
    compile: bool = False,
    pilot: bool = False,
):
    """One spec's experiment as ``validate`` would plan it, with the scale it is sized to and
    the device type (None: the one validate would use, CUDA where there is one): what ``infoflow
    plan`` describes. A spec the validator cannot train is a SpecError naming ``source`` (and
    ``field``), exit 2."""
    check_points(spec, source)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    sized = validator.scale(scale, steps, seeds, device, budget, compile, pilot)
    try:
        experiment = validator.plan(Path(source).stem, spec, sized, Path(source).parent)
    except SpecError as exc:
        raise SpecError(source, exc.problems) from None
    except CannotValidate as exc:
        raise SpecError(source, [(field, f"cannot be validated: {exc}")]) from None
    return experiment, sized, device


def check_points(spec, source: str) -> None:
    """A SpecError naming ``source`` when the spec's sweep has more points than
    :data:`MAX_TRAINED_POINTS`."""
    size = math.prod(len(grid) for grid in (spec.sweep or {}).values())
    if size > MAX_TRAINED_POINTS:
        message = f"{size:,} points; plan and validate train at most {MAX_TRAINED_POINTS} "
        message += "(a model or more each): split the sweep, or use predict"
        message += " or sweep" if "sweep" in family(spec.kind).commands else ""
        raise SpecError(source, [("sweep", message)])


def _tag(path: Path) -> str:
    """Six hex digits of the hash of ``path`` (resolved): what tells apart the experiments
    of two spec files of one name, whatever order they are given in."""
    return hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:6]


def register(planned: Plan, options: Options, device: torch.device, step_times: dict) -> Store:
    """Open the run's database (a new one, or the one ``--resume`` continues; its finished
    groups verified against their digests), record the run's settings and every job's group
    (a group recorded with another identity is refused), and clear temporary files a killed
    run left."""
    database = options.out / DATABASE
    if database.exists() and not options.resume:
        raise SpecError(
            str(options.out), [(None, "already holds a run: add --resume, or pick another --out")]
        )
    checkpoints = options.out / "checkpoints"
    try:
        checkpoints.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SpecError(str(checkpoints), [(None, f"cannot create it ({exc.strerror})")]) from None
    for stale in [*checkpoints.glob(f"{TEMPORARY}*"), *options.out.glob(f"{TEMPORARY}*")]:
        if stale.is_file():  # a killed writer's; a folder of that name is not infoflow's
            stale.unlink(missing_ok=True)
    store = Store(database)
    store.verify()
    settings = {
        "families": _settings(planned),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "compile": options.compile,
        "pilot": options.pilot,
        "step_times": step_times,
        "python": platform.python_version(),
    }
    store.start_run(_now(), _scale_name(options), str(device), settings)
    finished = finished_groups(store)
    for _, experiment in planned.experiments:
        for job in experiment.jobs:
            group = job.group
            store.add_group(
                job.name,
                experiment.name,
                group.describe(),
                group.member_rows(),
                group.identity(),
                device.type,
            )
            twin = finished.get(digest(group.identity()))
            if twin and twin != job.name and not store.metrics(job.name):
                adopt(store, checkpoints, twin, job.name)
    return store


def throughput(planned: Plan, store: Store) -> dict[str, dict]:
    """Each trained group's speed (tokens/s, FLOP/s, MFU against the device's peak; a resumed
    group's since it resumed), its training seconds (a resumed group's whole, runs before
    the resume included) and, where made, the design's estimate."""
    out = {}
    for job in planned.jobs:
        speed = store.throughput(job.name)
        if speed:
            estimate = planned.estimates.get(job.name)
            more = {} if estimate is None else {"estimated_seconds": estimate}
            out[job.name] = {**speed, "seconds": store.seconds(job.name), **more}
    return out


def train(planned: Plan, context: Context, options: Options) -> bool:
    """Train every job the database does not hold as finished; whether there was one."""
    pending = [job for job in planned.jobs if not context.store.group_done(job.name)]
    if context.progress:
        context.progress.phase("training", total=sum(job.steps for job in pending))
    if options.executor == "ray":
        train_on_ray(pending, context, options.address, options.gpus_per_group)
    else:
        train_local(pending, context)
    return bool(pending)


def judge(planned: Plan, context: Context) -> list[Section]:
    """Each experiment's measurements and claims; the claims also go to the database."""
    sections = []
    for validator, experiment in planned.experiments:
        if context.progress:
            context.progress.phase("judging", experiment.name)
        section = validator.judge(experiment, context)
        context.store.record_claims(experiment.name, section.claims)
        sections.append(section)
    return sections


def _report(planned: Plan, sections: list[dict], options: Options, device, times, replaced) -> dict:
    """report.json's content from the sections' JSON; ``times`` is (started, finished) (the
    first start, for a resumed run); a value that is not a finite number is null, its place
    listed in ``non_finite``."""
    specs, non_finite = finite(sections, "specs")
    claims = [claim for spec in specs for claim in spec["claims"]]
    verdicts = [claim["verdict"] for claim in claims]
    return {
        "infoflow_version": infoflow.__version__,
        "scale": _scale_name(options),
        "settings": _settings(planned),
        "device": str(device),
        "environment": environment(),
        "compile": options.compile,
        "overrides": list(options.overrides),
        "plots": options.plots,  # report.md names a plot only where one is drawn
        "started": times[0],
        "finished": times[1],
        "summary": {v: verdicts.count(v) for v in ("confirmed", "refuted", "inconclusive")},
        "by_kind": tally(claims),
        "specs": specs,
        "skipped": planned.skipped,
        "superseded": replaced,
        "non_finite": non_finite,
    }


def _settings(planned: Plan) -> dict[str, dict]:
    """Each family's scale, for the families that have experiments in this run, with what
    decides each experiment's verdicts where its validator pre-registers it (the scale's
    ``preregistered``: experiment -> criterion), recorded before anything trains."""
    ran = {validator.kind for validator, _ in planned.experiments}
    found = {kind: asdict(planned.scales[kind]) for kind in FAMILIES if kind in ran}
    for validator, experiment in planned.experiments:
        if hasattr(validator, "preregister"):
            criteria = found[validator.kind].setdefault("preregistered", {})
            criteria[experiment.name] = validator.preregister(experiment)
    return found


def _scale_name(options: Options) -> str:
    return f"{options.scale} ({options.steps} steps)" if options.steps else options.scale


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
