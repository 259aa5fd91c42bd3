"""``infoflow validate``: plan the experiments of every spec, train them, judge the claims,
and write the database, ``report.json``, ``report.md`` and the plots."""

from __future__ import annotations

import datetime as dt
import platform
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path

import torch
from infoflow.validators import icl_markov, looped_kv, retrieval
from infoflow.validators.executor import train_on_ray
from infoflow.validators.icl_markov import IclExperiment, MemberHistory
from infoflow.validators.icl_train import position_kl, train_icl_group
from infoflow.validators.plots import plot_codec, plot_experiments, plot_icl, plot_positions
from infoflow.validators.report import icl_group_section, write_reports
from infoflow.validators.store import Store
from infoflow.validators.targets import TargetFunction
from infoflow.validators.train import train_group

import infoflow
from infoflow.errors import SpecError
from infoflow.icl_markov.spec import IclMarkovSpec
from infoflow.looped_kv.spec import LoopedKVSpec
from infoflow.retrieval.spec import RetrievalSpec

DATABASE = "results.sqlite"


def pick_device(gpu: bool, device: str | None) -> torch.device:
    """``--gpu`` insists on CUDA; ``--device`` forces one; else the best there is."""
    if not (gpu or device == "cuda" or (device is None and torch.cuda.is_available())):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise SpecError("--gpu / --device cuda", [(None, "no CUDA device is available here")])
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    return torch.device("cuda")


def bundled_specs() -> list[Path]:
    """specs/*/*.json of the working directory, else of the source checkout."""
    for root in (Path.cwd() / "specs", Path(infoflow.__file__).resolve().parent.parent / "specs"):
        if root.is_dir():
            return sorted(root.glob("*/*.json"))
    raise SpecError("specs/", [(None, "no bundled specs here: pass spec files to validate")])


def validate(
    paths: list[Path],
    out: Path,
    scale_name: str = "smoke",
    device: torch.device | None = None,
    resume: bool = False,
    steps: int | None = None,
    seeds: int | None = None,
    progress: Callable | None = None,
    overrides: Sequence[str] = (),
    executor: str = "local",
    address: str | None = None,
    gpus_per_group: float = 1.0,
) -> dict:
    """Validate ``paths`` (all bundled specs when empty) and write the results to ``out``;
    ``overrides`` (``key.path=value``) apply to every spec, as ``--set`` does. With
    ``executor="ray"`` the groups train as Ray tasks (at ``address``, else on a local
    cluster) before the usual pipeline evaluates and reports them."""
    device = device or pick_device(False, None)
    scale, icl_scale, looped_scale = _scales(scale_name, steps, seeds)
    plans, icl_plans, looped_plans, skipped = [], [], [], []
    for path in paths or bundled_specs():
        spec = infoflow.load_spec(path, overrides)
        if isinstance(spec, IclMarkovSpec):
            icl_plans.append(icl_markov.plan(path.stem, spec, icl_scale, path.parent))
            continue
        if isinstance(spec, LoopedKVSpec):
            reason = looped_kv.cannot_train(spec)
            if reason:
                skipped.append({"spec": str(path), "reason": reason})
            else:
                looped_plans.append((path.stem, spec))
            continue
        problem = _cannot_evaluate(spec)
        if problem:
            skipped.append({"spec": str(path), "reason": problem})
            continue
        experiment = retrieval.plan(path.stem, spec, scale, path.parent)
        plans.append((experiment, experiment.groups(scale)))
    database = out / DATABASE
    if database.exists() and not resume:
        raise SpecError(
            str(out), [(None, "already holds a run: add --resume, or pick another --out")]
        )
    checkpoints = out / "checkpoints"
    checkpoints.mkdir(parents=True, exist_ok=True)

    store = Store(database)
    settings = {
        "scale": asdict(scale),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }
    store.start_run(_now(), scale.name, str(device), settings)
    started = store.first_started()
    for experiment, groups in plans:
        for group in groups:
            store.add_group(group.name, experiment.name, group.describe(), group.member_rows())
    for icl in icl_plans:
        for group in icl.groups:
            store.add_group(group.name, icl.name, group.describe(), group.member_rows())
    if progress:
        total = sum(len(groups) for _, groups in plans) * scale.settings.steps
        total += sum(g.spec.training.steps for icl in icl_plans for g in icl.groups)
        total += len(looped_plans) * looped_scale.steps
        progress("start", 0, total, 0.0)

    if executor == "ray":
        jobs = [("retrieval", g, scale.settings) for _, groups in plans for g in groups]
        jobs += [("icl_markov", g) for icl in icl_plans for g in icl.groups]
        jobs = [job for job in jobs if not store.group_done(job[1].name)]
        train_on_ray(jobs, device, checkpoints, store, address, gpus_per_group, progress)

    results = []
    for experiment, groups in plans:
        nmse: dict[retrieval.Model, list[float]] = {}
        attention: dict[retrieval.Model, dict[int, float]] = {}
        for group in groups:
            final, model, x_eval = train_group(
                group, scale.settings, device, store, checkpoints, progress
            )
            for i, value in enumerate(final):
                nmse.setdefault(_model_of(group, i), []).append(value)
            attention.update(_attention(experiment, group, model, x_eval))
        claims = retrieval.claims(experiment, nmse, scale, attention)
        for claim in claims:
            store.record_claim(experiment.name, claim)
        results.append((experiment, nmse, claims))
    # icl_markov and looped_kv results, already in their report form
    sections = [_run_icl(icl, device, store, checkpoints, progress) for icl in icl_plans]
    for name, spec in looped_plans:
        measured = looped_kv.run(spec, looped_scale, checkpoints / f"{name}-looped.pt",
                                 _looped_progress(name, progress))  # fmt: skip
        claims = looped_kv.claims(measured)
        for claim in claims:
            store.record_claim(name, claim)
        sections.append({"kind": "looped_kv", "name": name, "measured": measured,
                             "claims": claims})  # fmt: skip
    finished = _now()
    store.finish_run(finished)
    store.close()
    report = write_reports(out, results, skipped, scale, device, started, finished, sections)
    plot_experiments(out, results)
    for section in sections:
        if section["kind"] == "looped_kv":
            plot_codec(out, section)
            continue
        plot_icl(out, section)
        plot_positions(out, section)
    return report


def _scales(name: str, steps: int | None, seeds: int | None):
    """The retrieval, icl_markov and looped_kv scales called ``name``, with ``--steps`` and
    ``--seeds`` applied."""
    scale = retrieval.SCALES[name]
    icl_scale = replace(icl_markov.SCALES[name], seeds=seeds or 1)
    looped_scale = looped_kv.SCALES[name]
    if steps:
        settings = replace(
            scale.settings,
            steps=steps,
            eval_every=max(1, min(scale.settings.eval_every, steps // 4)),
        )
        scale = replace(scale, settings=settings, name=f"{scale.name} ({steps} steps)")
        icl_scale = replace(icl_scale, max_steps=steps, name=scale.name)
        distill = min(looped_scale.distill_steps, steps)
        looped_scale = replace(looped_scale, steps=steps, distill_steps=distill)
    if seeds:
        scale = replace(scale, seeds=seeds)
    return scale, icl_scale, looped_scale


def _looped_progress(name: str, progress):
    if progress is None:
        return None
    return lambda step, steps, loss: progress(name, step, steps, loss)


def _run_icl(experiment: IclExperiment, device, store: Store, checkpoints, progress) -> dict:
    """Train every group of an icl_markov experiment; measure, judge, and return its report
    section."""
    groups = []
    for group in experiment.groups:
        data, model = train_icl_group(group, device, store, checkpoints, progress)
        levels, positions = data.levels(), position_kl(model, data)
        metrics = store.metrics(group.name)
        variant = group.spec.options.g1_variant
        histories = [MemberHistory.from_metrics(k, seed, metrics[i], variant)
                     for i, (k, seed) in enumerate(group.members)]  # fmt: skip
        measurement = icl_markov.measure(histories)
        claims = icl_markov.claims(experiment, group, measurement)
        if len(experiment.groups) > 1:
            for claim in claims:
                claim["claim"] = f"[{group.name}] {claim['claim']}"
        for claim in claims:
            store.record_claim(experiment.name, claim)
        section = icl_group_section(
            experiment, group, histories, measurement, levels, metrics, positions, claims
        )
        groups.append(section)
    return {"kind": "icl_markov", "name": experiment.name, "capped": experiment.capped,
            "groups": groups, "claims": [c for g in groups for c in g["claims"]]}  # fmt: skip


def _cannot_evaluate(spec: RetrievalSpec) -> str | None:
    """Why the validators cannot compute this target on tensors (None when they can)."""
    try:
        TargetFunction(spec, seed=0)(torch.zeros(2, spec.seq_len or 8, spec.input_dim or 4))
    except NotImplementedError as exc:
        return f"the validator cannot evaluate this target yet: {exc}"
    return None


def _model_of(group, index: int) -> retrieval.Model:
    member = group.members[index]
    return retrieval.Model(
        group.seq_len, member.embed_dim, member.heads, member.positional_encoding
    )


@torch.no_grad()
def _attention(experiment, group, model, x_eval) -> dict:
    """For targets that read fixed positions: the readout's mean first-layer attention on
    each of them, over the heads in use, averaged over seeds."""
    from infoflow.retrieval.predict import derive

    positions = sorted(derive(experiment.base).tree.positions)
    if not positions:
        return {}
    model.eval()
    _, probs = model(x_eval[:512], return_attention=True)  # [members, batch, heads, T + 1]
    seeds: dict = {}
    for i, member in enumerate(group.members):
        if member.positional_encoding:
            active = probs[i, :, : member.heads[0]].float().mean((0, 1))
            seeds.setdefault(_model_of(group, i), []).append(active)
    return {
        key: {p: float(torch.stack(values).mean(0)[p - 1]) for p in positions}
        for key, values in seeds.items()
    }


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def summary_line(report: dict) -> str:
    counts = report["summary"]
    return ", ".join(f"{counts[k]} {k}" for k in ("confirmed", "refuted", "inconclusive"))
