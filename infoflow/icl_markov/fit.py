"""Validation results -> a new calibration file (``infoflow calibrate icl_markov``).

From every icl_markov group of every ``report.json`` given:

- an anchor at the group's settings with the measured K*_1 (the logistic fit over every
  seed's outcome and its 95% interval, else the bracket of separable outcomes, else the
  grid's) and tau_2Gen (the first-G2 checkpoint, known to lie between the one before and it);
- the memorization exponent a: the least-squares slope of log tau_1Mem against log K over
  the K where memorization won and the ceiling can show it, pooled over the given groups by
  inverse variance, with its standard error (at least SLOPE_POINTS, four, K per group); it
  replaces the base file's a.

K*_2 and gamma need a K*_2 bracket, which one budget cannot give (a G2 that persists may
still give way later): the fit reports the lower bound on K*_2 and keeps them. A G2 that
persists to the end of the budget does bound transient_scale from below; when the current
value is under that bound, the bound replaces it (provenance ``fit:lower-bound``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from infoflow.core.errors import SpecError
from infoflow.core.files import is_folder, read_json
from infoflow.icl_markov.calibration import (
    A_REPORT,
    LOWER_BOUND,
    Anchor,
    Bracket,
    Calibration,
    Constant,
    load_calibration,
    write_calibration,
)
from infoflow.icl_markov.fit_clocks import clocks_from, report_settings
from infoflow.icl_markov.report_fields import check, memorizing_testable

MAX_REPORT_BYTES = 256 * 2**20
#: K at which memorization won that a slope of log tau_1Mem against log K needs: its standard
#: error weighs it in the pooled a, and from three points (one degree of freedom) that error
#: is itself too noisy to weigh by (a near-collinear triple would outweigh every other run).
SLOPE_POINTS = 4
REFITTED = " Refitted by infoflow calibrate icl_markov."  # a paper-scale report with every curve


@dataclass
class Fit:
    """The new calibration and what the fit found, line by line, for people."""

    calibration: Calibration
    lines: list[tuple[str, str, str]] = field(default_factory=list)  # quantity, value, note


def calibrate(results: list[Path], base: Path | None, out: Path) -> list[tuple[str, str, str]]:
    """``infoflow calibrate icl_markov``: fit ``results`` (validate folders or report.json
    files) on top of ``base`` (default: the shipped calibration), write the new calibration
    to ``out`` and return what the fit found, as (quantity, value, note) rows."""
    reports = read_reports(results)
    base_calibration = load_calibration(base)
    _writable(out)
    try:
        found = fit(reports, base_calibration)
    except (ValidationError, ArithmeticError) as exc:  # its fields are checked on reading
        files = ", ".join(str(file) for file, _ in reports)
        message = f"not a report of an icl_markov validation this version can read ({_why(exc)})"
        raise SpecError(files, [("specs", message)]) from None
    write_calibration(found.calibration, out)
    return found.lines + found.calibration.shadowed()


def _writable(out: Path) -> None:
    """Refuse an ``--out`` that holds something other than a calibration file (a report or
    a spec given by mistake was written over); a calibration file is updated in place."""
    if not Path(out).is_file() or Path(out).stat().st_size == 0:  # an empty one: mktemp's
        return
    try:
        load_calibration(out)
    except SpecError as exc:
        why = "; ".join(f"field '{f}': {w}" if f else w for f, w in exc.problems)
        what = f"{out} is " + (
            A_REPORT if why.startswith(A_REPORT) else f"not a calibration file ({why})"
        )
        message = f"{what}: will not write over it; name a new file"
        raise SpecError("--out", [(None, message)]) from None


def _why(exc: Exception) -> str:
    """What is wrong with a report, in a few words."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
    return f"{type(exc).__name__}: {exc}"


def read_reports(paths: list[Path]) -> list[tuple[Path, dict]]:
    """``report.json`` files, or folders that hold one; exit-2 errors name the file."""
    files = [path / "report.json" if is_folder(path) else path for path in paths]
    reports = [(file, read_json(file, "report", max_bytes=MAX_REPORT_BYTES)) for file in files]
    for file, report in reports:  # each spec's section an object (a review: AttributeError)
        specs = report.get("specs") if isinstance(report, dict) else None
        if not isinstance(specs, list) or not all(isinstance(spec, dict) for spec in specs):
            raise SpecError(str(file), [("specs", "not an infoflow validate report")])
        check(str(file), report)
    for i, (file, report) in enumerate(reports):  # counted twice, a run shrank the error
        for other, earlier in reports[:i]:
            if earlier["started"] == report["started"] and _trained(earlier) & _trained(report):
                why = f"the same run as {other} (started {report['started']}; a copy, or a "
                why += "resume of it): give one, the latest; its groups would count twice"
                if other.resolve() == file.resolve():
                    why = "given twice: its groups would count twice"
                raise SpecError(str(file), [(None, why)])
    return reports


def _trained(report: dict) -> set[tuple[str, int]]:
    """(group or decoder name, seed) of every model a report's icl_markov runs trained."""
    return {
        (group["name"], seed["seed"] if isinstance(seed, dict) else seed)
        for spec in report["specs"]
        if spec.get("kind") == "icl_markov"
        for group in spec.get("groups", []) + spec.get("decoders", [])
        for seed in group.get("seeds") or [group.get("seed", 0)]
    }


def fit(reports: list[tuple[Path, dict]], base: Calibration) -> Fit:
    """Anchors and exponent from ``reports``, on top of ``base`` (same-named anchors are
    replaced)."""
    anchors = {a.name: a for a in base.anchors}
    slopes: list[tuple[float, float]] = []  # (slope, variance)
    out = Fit(base)
    groups = [
        (file, report, group)
        for file, report in reports
        for spec in report["specs"]
        if spec.get("kind") == "icl_markov"
        for group in spec["groups"]
    ]
    empty = [file for file, _ in reports if not any(file == f for f, _, _ in groups)]
    if empty:  # one among others was skipped without a word (a review)
        files = ", ".join(map(str, empty))
        raise SpecError(files, [("specs", "no icl_markov results to calibrate from")])
    slowed = [
        g for _, _, g in groups if g["setting"]["training"].get("layer1_attention_lr", 1) != 1
    ]
    out.lines += [
        (
            g["name"],
            "-",
            "layer 1's attention slowed: an anchor does not model the rate (the race does)",
        )
        for g in slowed
    ]
    groups = [(file, report, g) for file, report, g in groups if g not in slowed]
    for file, report, group in groups:
        anchor, notes = _anchor(file, report, group)
        out.lines += notes
        if anchor.k1_star or anchor.tau_2gen:
            anchors[anchor.name] = anchor
        slope = _slope(group, out.lines)
        if slope is not None:
            slopes.append((*slope, str(file)))
    clocks = clocks_from(reports, base, out.lines)
    exponents = _memorization(slopes, base, out.lines)
    capacity = _capacity(reports, out.lines)
    transient = _transient(groups, base, out.lines)
    out.lines.append(("gamma", "kept", "needs a K*_2 bracket; one budget gives only a lower bound"))
    out.calibration = base.model_copy(
        update={
            "exponents": exponents,
            "anchors": list(anchors.values()),
            "clocks": clocks,
            "transient_scale": transient or base.transient_scale,
            "capacity": capacity or base.capacity,
            "description": base.description.removesuffix(REFITTED) + REFITTED,
        }
    )
    return out


def _transient(groups, base: Calibration, lines: list) -> Constant | None:
    """The transient_scale these runs bound from below, where it exceeds ``base``'s (None:
    ``base``'s is kept); a line for the table either way (it showed the bound where the file
    kept the larger value, a review)."""
    transient = _transient_bound(groups, base)
    if transient is None:
        return None
    bound = transient.value
    if bound > base.transient_scale.value:
        lines.append(("transient_scale", f">= {bound:.3g}", transient.source))
        return transient
    note = f"kept: these runs bound it only from below, at {bound:.3g}; {transient.source}"
    lines.append(("transient_scale", f"{base.transient_scale.value:.3g}", note))
    return None


def _slope(group: dict, lines: list) -> tuple[float, float] | None:
    """(slope, variance) of log tau_1Mem against log K over the K where memorization won in
    ``group`` and the run's ceiling could tell memorizing apart (a K it marks untestable
    gave a = 0.07 from a run that called memorizing early), or None with fewer than
    SLOPE_POINTS of them; a line for the table either way."""
    ceiling = group["measurement"].get("ceiling") or {}
    untestable = {int(k) for k, c in ceiling.items() if not memorizing_testable(c)}
    times = {
        int(k): v["memorized_at"]
        for k, v in group["measurement"]["per_k"].items()
        if v["outcome"] == "memorization" and v["memorized_at"] and int(k) not in untestable
    }
    if len(times) < SLOPE_POINTS:
        why = f"memorization won at {len(times)} K; {SLOPE_POINTS} needed"
        if untestable:
            why += f" (memorizing untestable at K = {sorted(untestable)})"
        lines.append((f"{group['name']}: a", "-", why))
        return None
    slope, stderr = regression([math.log(k) for k in times], [math.log(t) for t in times.values()])
    lines.append(
        (f"{group['name']}: a", f"{slope:.3g} ± {stderr:.2g}", f"slope over K = {sorted(times)}")
    )
    return slope, max(stderr, 1e-6) ** 2


def _memorization(slopes, base: Calibration, lines: list):
    """``base``'s exponents with a pooled over the groups' slopes (slope, variance, report),
    by inverse variance; the base's a is replaced, not pooled (which groups it came from is
    not known here), and the table says so."""
    exponents = base.exponents
    if not slopes:
        lines.append(
            (
                "a (memorization exponent)",
                f"{exponents.memorization.value:g}",
                "kept: not identifiable from these results",
            )
        )
        return exponents
    weights = [1 / var for _, var, _ in slopes]
    value = sum(w * s for w, (s, _, _) in zip(weights, slopes, strict=True)) / sum(weights)
    stderr = math.sqrt(1 / sum(weights))
    runs = ", ".join(sorted({file for _, _, file in slopes}))  # those that gave a slope
    memorization = Constant(
        value=value,
        stderr=stderr,
        provenance="fit:validate",
        source=f"slope of log tau_1Mem against log K, {len(slopes)} group(s), from {runs}",
    )
    was = exponents.memorization
    spread = f" ± {was.stderr:.2g}" if was.stderr else ""
    lines.append(  # a single report replaced two groups' a unsaid (an audit, 2026-12-07)
        (
            "a (memorization exponent)",
            f"{value:.3g} ± {stderr:.2g}",
            f"replaces {was.value:.3g}{spread} (not pooled: give its reports too to pool them)",
        )
    )
    return exponents.model_copy(update={"memorization": memorization})


def _capacity(reports: list[tuple[Path, dict]], lines: list) -> Constant | None:
    """The capacity constant from the decoder's measured capacity (the geometric middle of
    its bracket) over 2 d_model mlp_width / (C (C - 1)); the geometric mean over settings and
    seeds.
    None (kept) without a two-sided bracket."""
    found, sources, settings = [], [], []
    for file, report in reports:
        for spec in report["specs"]:
            for decoder in spec.get("decoders", []) if spec.get("kind") == "icl_markov" else []:
                s, c = decoder["setting"], decoder["setting"]["states"]
                form = 2 * s["model"]["d_model"] * s["model"]["mlp_width"] / (c * (c - 1))
                for seed, bracket in _brackets(decoder):
                    low, high = bracket["low"], bracket["high"]
                    if low and high:
                        found.append(math.sqrt(low * high) / form)
                        sources.append(
                            f"{decoder['name']} seed {seed} ({file}): fits K = {low}, not {high}"
                        )
                        settings += [s] if s not in settings else []
    if not found:
        lines.append(("capacity", "kept", "no decoder run bracketed the capacity"))
        return None
    value = math.exp(sum(math.log(v) for v in found) / len(found))
    lines.append(("capacity", f"{value:.3g}", "; ".join(sources)))
    return Constant(
        value=value,
        provenance="fit:decoder",
        source="the second MLP alone, capacity measured directly: " + "; ".join(sources),
        fitted_at=settings,
    )


def _brackets(decoder: dict) -> list[tuple[int, dict]]:
    """Each seed's capacity bracket (a report before 2026-12-05 has one decoder seed)."""
    seeds = decoder.get("seeds") or [
        {"seed": decoder.get("seed", 0), "measurement": decoder["measurement"]}
    ]
    return [(row["seed"], row["measurement"]["capacity"]) for row in seeds]


def _no_transient(row: dict) -> bool:
    """No seed of the K had a transient G2 (reports since 2026-12-05 list each seed's; before,
    the K's median was over the seeds that had one, so None meant none had)."""
    durations = row.get("transient_durations")
    if durations is None:
        return row["transient_duration"] is None
    return all(d is None for d in durations.values())


def _transient_bound(groups, base: Calibration) -> Constant | None:
    """The smallest transient_scale that keeps G2 to the end of the budget at every K where
    it persisted, with the measured tau_2Gen and K*_2 from ``base``'s capacity: a lower
    bound (None when no G2 persisted below K*_2)."""
    gamma, bounds = base.exponents.transient.value, []
    for _, _, group in groups:
        setting, m = group["setting"], group["measurement"]
        tau, steps = m["tau_2gen"]["value"], setting["training"]["steps"]
        model, c = setting["model"], setting["states"]
        k2 = base.capacity.value * 2 * model["d_model"] * model["mlp_width"] / (c * (c - 1))
        for k, row in m["per_k"].items():
            persisted = row["outcome"] == "generalization" and _no_transient(row)
            if tau and persisted and int(k) < k2:
                bounds.append(((steps - tau) / (tau * (1 - int(k) / k2) ** -gamma), k))
    if not bounds:
        return None
    value, k = max(bounds)
    return Constant(
        value=value,
        provenance=LOWER_BOUND,
        source=f"a lower bound: G2 persisted to the end of the budget at K = {k} "
        f"(K*_2 from capacity {base.capacity.value:g}, gamma {gamma:g})",
    )


def _anchor(file: Path, report: dict, group: dict) -> tuple[Anchor, list]:
    setting, m = group["setting"], group["measurement"]
    settings = report_settings(setting)
    tau, k2 = m["tau_2gen"], m["k2_star"]
    bracket, why = _k1(m)
    notes = [(f"{group['name']}: K*_1", f"{bracket.value:.3g}" if bracket else "-", why)]
    timing = None
    if tau["value"]:
        low = tau["min"] / tau["checkpoint_ratio"]
        timing = Bracket(value=tau["value"], low=low, high=tau["max"])
        notes.append(
            (
                f"{group['name']}: tau_2Gen",
                f"{tau['value']:.4g} steps",
                f"first-G2 checkpoints {tau['min']}..{tau['max']}",
            )
        )
    if k2["low"]:
        notes.append((f"{group['name']}: K*_2", f"> {k2['low']}", "a lower bound only"))
    steps = setting["training"]["steps"]
    anchor = Anchor(
        name=f"{group['name']}@{report['started'][:10]}",
        settings=settings,
        provenance=f"validate:{report['scale']}",
        source=f"infoflow validate, K = {group['chains']}, seeds {group['seeds']}, {steps:,} "
        f"steps ({file})",
        device=report["device"],
        date=report["started"],
        k1_star=bracket,
        tau_2gen=timing,
        run_steps=steps,
    )
    return anchor, notes


def _k1(measurement: dict) -> tuple[Bracket | None, str]:
    """K*_1 from a K sweep's measurement, and where from: the logistic fit over every seed's
    outcome with its two-sided 95% interval; else the bracket of separable outcomes; else
    the grid bracket of the majority outcomes where monotone (used alone until 2026-12-06)."""
    fitted, k1 = measurement.get("k1_fit") or {}, measurement["k1_star"]
    low, high = fitted.get("low"), fitted.get("high")
    if fitted.get("status") == "fit" and low and high:
        value, outcomes = fitted["value"], fitted["outcomes"]
        why = f"logistic fit over {outcomes} seed outcomes, 95% interval {low:.3g} to {high:.3g}"
        return Bracket(value=value, low=low, high=high), why
    if fitted.get("status") == "separable" and low and high:
        why = f"between {low:g} and {high:g} (every seed's outcome separates there)"
        return Bracket(value=math.sqrt(low * high), low=low, high=high), why
    fit_said = f"; the logistic fit: {fitted['status']}" if fitted else ""
    if k1["low"] and k1["high"] and k1["monotone"]:
        why = f"between {k1['low']} and {k1['high']} (grid{fit_said})"
        return Bracket(value=math.sqrt(k1["low"] * k1["high"]), low=k1["low"], high=k1["high"]), why
    return None, f"no two-sided monotone bracket on the grid{fit_said}"


def regression(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares slope of y on x and its standard error (0 with two points)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("all x equal: no slope")
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    residual = sum((y - my - slope * (x - mx)) ** 2 for x, y in zip(xs, ys, strict=True))
    return slope, math.sqrt(residual / (n - 2) / sxx) if n > 2 else 0.0
