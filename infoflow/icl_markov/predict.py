"""``icl_markov`` spec -> predictions: the thresholds K*_1 and K*_2, the timescales, and the
phases a model passes through at this K.

Working forms (theory note, [R] unless marked), each constant from the calibration file:

- tau_2Gen = tau_anchor * g(N) / g(N_anchor), g(N) = N / ln N (the G2 circuit's formation
  time does not depend on K: paper; its N / log N law: [R]);
- tau_1Mem(K) = A K^a, so K*_1, where tau_1Mem = tau_2Gen, scales as
  K*_1 = K*_1,anchor * (g(N) / g(N_anchor))^(1/a) at equal A;
- K*_2 ∝ 2 d_model mlp_width / (C (C - 1)) (MLP2 capacity over the numbers of one task);
- Delta tau_K = transient_scale * tau_2Gen * (1 - K/K*_2)^-gamma for K*_1 < K < K*_2.

Phases (paper): K < K*_1: G1 -> M1 -> M2; K*_1 <= K < K*_2: G1 -> G2 -> M2 (G2 transient);
K >= K*_2: G1 -> G2.
"""

from __future__ import annotations

import math

import sympy

from infoflow.core.errors import SpecError
from infoflow.core.results import Prediction, Result
from infoflow.icl_markov.calibration import (
    LOWER_BOUND,
    Calibration,
    ClockSet,
    differences,
    distance,
    load_calibration,
    settings_of,
)
from infoflow.icl_markov.phases import (
    CONTRADICTION,
    FORMS,
    SEQUENCES,
    contradiction,
    final_phase,
    fmt,
    placed_by,
    regime,
)
from infoflow.icl_markov.race import race
from infoflow.icl_markov.spec import IclMarkovSpec

PAPER = "Gibson, Cui, Reddy 2026"
N, K, C, d, m, a, gamma = sympy.symbols("N K C d_model mlp_width a gamma", positive=True)


def g(n: sympy.Expr) -> sympy.Expr:
    """N / ln N: the context dependence of tau_2Gen [R]."""
    return n / sympy.log(n)


def predict_icl_markov(spec: IclMarkovSpec, source: str | None = None) -> Result:
    """Every ``icl_markov`` prediction for ``spec``; a SpecError when the calibration's
    constants and the spec's sizes give no finite number."""
    try:
        return _predict(spec, source)
    except (OverflowError, ZeroDivisionError) as exc:
        where = spec.calibration or "the shipped calibration"
        what = "a division by zero" if isinstance(exc, ZeroDivisionError) else "an overflow"
        message = f"the working forms give no finite number for this spec with {where} ({what})"
        raise SpecError(source or "<spec>", [(None, message)]) from None


def _predict(spec: IclMarkovSpec, source: str | None) -> Result:
    calibration = load_calibration(spec.calibration, source or "<spec>")
    exponent = calibration.exponents.memorization.value
    values = {
        N: spec.context_len,
        K: spec.chains,
        C: spec.states,
        d: spec.model.d_model,
        m: spec.model.mlp_width,
        a: exponent,
        gamma: calibration.exponents.transient.value,
    }
    (k1, k1_value), (k2, k2_value), (tau, tau_value) = _thresholds(spec, calibration, values)
    _check_positive(spec, k1_value, k2_value, tau_value, source)
    predictions = {"k1_star": k1, "k2_star": k2, "tau_2gen": tau}
    torn = contradiction(spec.chains, k1_value, k2_value, k1.interval)
    placed = None if torn else regime(spec.chains, k1_value, k2_value, k1.interval)
    sequence = SEQUENCES.get(placed)
    sequence = list(sequence) if sequence else None  # a copy: the caller may change it
    unplaced = CONTRADICTION if torn else "unplaced: no K*_1"
    unsourced = FORMS if torn else k1.provenance  # uncalibrated, or the race's bound (a review)
    ordered = placed_by(placed, k1, k2)
    predictions["phase_sequence"] = Prediction(
        sequence,
        "",
        "estimate",
        ordered if sequence else unsourced,
        f"{PAPER}: small K goes G1 -> M1 -> M2, large K G1 -> G2, and between K*_1 and K*_2 "
        f"G2 gives way to M2; K = {spec.chains} is {placed or unplaced} "
        f"(K*_1 {_k1_text(k1_value, k1.interval)}, K*_2 = {fmt(k2_value)}).",
    )
    transient = None
    if placed == "between K*_1 and K*_2" and tau_value is not None:
        scale = calibration.transient_scale
        transient = float(scale.value * tau_value * (1 - spec.chains / k2_value) ** -values[gamma])
        predictions["transient_g2_duration"] = _transient(scale, transient, values[gamma])
    else:
        why = f"G2 is not transient at K = {spec.chains} ({placed or 'unplaced'})"
        provenance = "paper:summary" if placed else unsourced  # was it, whatever the reason
        if tau_value is None:
            why, provenance = "no tau_2Gen calibration", "uncalibrated"
        predictions["transient_g2_duration"] = Prediction(
            None, "steps", "estimate", provenance, f"None: {why}."
        )
    bounded = calibration.transient_scale.provenance == LOWER_BOUND
    predictions["final_phase"] = final_phase(
        spec, sequence, k1_value, tau_value, (transient, bounded), exponent
    )
    if torn:
        predictions["final_phase"] = Prediction(None, "", "estimate", FORMS, f"None: {unplaced}.")
    predictions["task_vector_generalizes"] = _task_vector(spec)
    predictions["final_boundary"] = _final_boundary(spec, calibration)
    if spec.model.layers == 1:
        predictions.update(_one_layer())
    disagreement = _against_the_figure(spec, predictions)
    return Result("icl_markov", spec, predictions, source, messages=disagreement)


#: Why a single layer has no G2 and so no race between it and memorization.
ONE_LAYER = (
    "None: G2 needs two layers (a previous-token head, then the head that reads the bigram "
    "statistic); Edelman et al. found single-layer models never beat the in-context unigram, "
    "so a 1-layer model has no G2 to race memorization, and the paper's phases are for two."
)


#: The predictions a single layer has none of, with their units (final_phase's "at step N"
#: is its value's).
NO_G2 = {"k1_star": "chains", "tau_2gen": "steps", "phase_sequence": ""}
NO_G2 |= {"transient_g2_duration": "steps", "final_phase": ""}


def _one_layer() -> dict:
    """The phase predictions of a single-layer model: none (:data:`ONE_LAYER`)."""
    return {
        name: Prediction(None, unit, "estimate", "prior:edelman2024", ONE_LAYER)
        for name, unit in NO_G2.items()
    }


def _against_the_figure(spec: IclMarkovSpec, predictions: dict) -> tuple[str, ...]:
    """A message when final_phase, read from the working forms, puts K on the other side of
    the end-of-training boundary measured at this very setting (a published figure)."""
    boundary, phase = predictions["final_boundary"], predictions["final_phase"].value
    if boundary.value is None or boundary.interval is None or phase is None:
        return ()
    low, high = boundary.interval
    chains = spec.chains
    if chains >= high and phase != "G2":
        figure = "G2"
    elif chains <= low and phase == "G2":
        figure = "memorizing"
    else:
        return ()
    return (
        f"final_phase {phase} disagrees with the boundary measured at this setting: "
        f"{fmt(boundary.value)} ({fmt(low)} to {fmt(high)}; {boundary.provenance}) has "
        f"K = {chains} end in {figure}. final_phase comes from K*_1 = "
        f"{fmt(predictions['k1_star'].value)} and tau_2Gen, scaled from other settings by the "
        "working forms (a reconstruction); the measurement is the figure.",
    )


def _check_positive(spec: IclMarkovSpec, k1, k2, tau, source: str | None) -> None:
    """A SpecError when the working forms leave their range at this spec's sizes: a
    threshold or tau_2Gen that is not a positive number, or a context shorter than 3 states,
    where g(N) = N / ln N falls as N grows (a K*_2 below one chain is a prediction: the
    phases say where it contradicts the race)."""
    sizes = f"states {spec.states}, context_len {spec.context_len}, d_model {spec.model.d_model}"
    problems = [
        f"{name} = {value:.4g} is not a positive number"
        for name, value in (("K*_1", k1), ("K*_2", k2), ("tau_2Gen", tau))
        if value is not None and not 0 < value < math.inf
    ]
    if spec.context_len < 3:  # g(N) = N / ln N falls below N = e
        why = "g(N) = N / ln N, the working forms' context law, falls below N = e: it needs N >= 3"
        raise SpecError(source or "<spec>", [("context_len", why)])
    if problems:
        message = f"{'; '.join(problems)} at {sizes}: the calibrated working forms do not hold here"
        raise SpecError(source or "<spec>", [(None, message)])


def _final_boundary(spec: IclMarkovSpec, calibration: Calibration) -> Prediction:
    """The K at which the phase at the end of training changes from memorizing to G2, where
    an anchor measured it at exactly this setting and budget (it is not scaled: a published
    final-time boundary, such as Park et al.'s, says nothing about another budget)."""
    settings, steps = settings_of(spec), spec.training.steps
    anchor = calibration.nearest("final_boundary", settings)
    rate = spec.training.layer1_attention_lr
    if anchor is None or rate != 1:
        why = "the calibration file has no final-time boundary"
        if rate != 1:
            why = (
                f"layer 1's attention learns at {rate:g} x the rate: a boundary read at the full "
                "rate does not hold where the race moves it"
            )
        return Prediction(None, "chains", "estimate", "uncalibrated", f"None: {why}.")
    if distance(anchor.settings, settings) > 0 or anchor.budget_steps != steps:
        diff = differences(anchor.settings, settings)
        if anchor.budget_steps != steps:
            diff.append(f"steps {anchor.budget_steps:,} (here {steps:,})")
        why = (
            f"the only final-time boundary, {anchor.name}'s, was read at other settings "
            f"({'; '.join(diff)}), and a boundary at the end of training is not scaled to "
            "another budget or setting"
        )
        return Prediction(None, "chains", "estimate", "uncalibrated", f"None: {why}.")
    measured = anchor.final_boundary
    note = (
        f"{fmt(measured.value)} (range {fmt(measured.low)} to {fmt(measured.high)}) at "
        f"{anchor.name} ({anchor.source}; device {anchor.device}, {anchor.date}): the K above "
        f"which the model ends in G2 rather than memorizing after {steps:,} steps."
    )
    interval = (measured.low, measured.high) if measured.low is not None else None
    provenance = f"calibrated:{anchor.name} ({anchor.provenance})"
    return Prediction(measured.value, "chains", "estimate", provenance, note, None, interval)


def _thresholds(spec: IclMarkovSpec, calibration: Calibration, values: dict) -> tuple:
    """(Prediction, value) of K*_1, K*_2 and tau_2Gen: K*_1 from the race where the
    calibration has clocks at the spec's setting, else scaled from the nearest anchor."""
    settings = settings_of(spec)

    def context(at):
        return g(N) / g(at["context_len"])

    steps = spec.training.steps
    tau = _scaled(calibration, "tau_2gen", settings, context, values, "context_len", steps)
    rate = spec.training.layer1_attention_lr
    if rate != 1:
        tau = _rate_blind("steps", rate), None
    clocks = calibration.clocks_at(settings, spec.training.steps, spec.options.criterion)
    if clocks is not None:
        k1 = _raced(clocks, rate)
    elif rate != 1:
        k1 = _rate_blind("chains", rate), None
    else:

        def scaling(at):
            return context(at) ** (1 / a)

        k1 = _scaled(calibration, "k1_star", settings, scaling, values, "context_len", steps)
    return k1, _k2_star(calibration, settings, values, steps), tau


def _transient(scale, value: float, exponent: float) -> Prediction:
    """How long G2 lasts before M2 replaces it, between K*_1 and K*_2."""
    expression = scale.value * sympy.Symbol("tau_2gen") * (1 - K / sympy.Symbol("K2")) ** (-gamma)
    return Prediction(
        round(value),
        "steps",
        "lower" if scale.provenance == LOWER_BOUND else "estimate",
        f"reconstruction:transient_scale ({scale.provenance})",
        f"{PAPER} give Delta tau_K ∝ (K*_2 - K)^-gamma, gamma = {exponent:g}; the "
        f"scale is {scale.source}",
        expression,
    )


def _scaled(calibration: Calibration, quantity: str, settings, law, values, scales: str, steps):
    """(Prediction, value) of ``quantity``: its nearest anchor's measurement times
    ``law(anchor settings)``, the working form's ratio between the spec and the anchor; the
    note says where the anchor's runs were of another length than the spec's ``steps``."""
    anchor = calibration.nearest(quantity, settings)
    unit = "steps" if quantity == "tau_2gen" else "chains"
    if anchor is None:
        missing = f"None: the calibration file has no {quantity} measurement."
        return Prediction(None, unit, "estimate", "uncalibrated", missing), None
    measured = getattr(anchor, quantity)
    ratio = law(anchor.settings)
    factor = float(ratio.subs(values))
    value = measured.value * factor
    spread, interval = "", None
    if measured.low is not None and measured.high is not None:
        interval = (measured.low * factor, measured.high * factor)
        spread = f"; range {fmt(interval[0])} to {fmt(interval[1])}"
    diff = differences(anchor.settings, settings)
    where = (
        f"Calibrated on other settings ({'; '.join(diff)}): the working form scales "
        f"{scales}; the other differences are not modelled."
        if diff
        else "Calibrated at these settings."
    )
    if anchor.run_steps and anchor.run_steps != steps:  # said since a review, 2026-12-06
        where += (
            f" Measured by runs of {anchor.run_steps:,} steps, this spec's are {steps:,}: the "
            "run length (its warmup and schedule) is not scaled."
        )
    note = (
        f"{fmt(measured.value)} measured at {anchor.name} ({anchor.source}; device "
        f"{anchor.device}, {anchor.date}), scaled by {fmt(factor)}{spread}. {where}"
    )
    rounded = round(value) if unit == "steps" else _chains(value)
    provenance = f"calibrated:{anchor.name} ({anchor.provenance})"
    if diff:  # carried to other settings by the working forms
        provenance += f", scaled by {FORMS}"
    expression = sympy.Symbol(f"{quantity}_anchor") * ratio
    prediction = Prediction(rounded, unit, "estimate", provenance, note, expression, interval)
    return prediction, value


def _rate_blind(unit: str, rate: float) -> Prediction:
    """No prediction: the anchors were measured at layer 1's full learning rate (tau_2Gen's
    slowing is what the race's tau_G at that rate measures, by another criterion)."""
    note = (
        f"None: layer 1's attention learns at {rate:g} x the rate, and the anchors' scaling "
        f"does not model it; clocks measured at this setting would (the race)."
    )
    return Prediction(None, unit, "estimate", "uncalibrated", note)


def _raced(clocks: ClockSet, layer1_lr: float) -> tuple[Prediction, float | None]:
    """K*_1 from the race of the clocks measured at this setting (no K*_1 data enters it)."""
    measured = clocks.clocks()
    result = race(measured, layer1_lr)
    tau_g, tau_prev = result.tau_g[1], result.tau_prev[1]
    if layer1_lr == 1:
        rate = ""
    elif layer1_lr in measured.g_slowed:
        rate = f" tau_G at layer-1 rate {layer1_lr:g} is measured."
    else:
        rate = f" At layer-1 rate {layer1_lr:g}, tau_prev / {layer1_lr:g} [R] (not measured)."
    note = (
        f"The race of the subcircuits' clocks: {result.reason}; tau_G = {fmt(tau_g)}, "
        f"tau_prev = {fmt(tau_prev)} steps.{rate} Clocks {clocks.name} ({clocks.source}; "
        f"device {clocks.device}, {clocks.date})."
    )
    value = None if result.k1_star is None else round(result.k1_star, 1)
    provenance = f"mechanism:clock_race (calibrated:{clocks.name})"
    return (
        Prediction(value, "chains", "estimate", provenance, note, None, result.interval),
        result.k1_star,
    )


def _k2_star(calibration: Calibration, settings, values, steps: int):
    """K*_2 from the nearest anchor that measured it, else from the capacity constant."""
    capacity = 2 * d * m / (C * (C - 1))
    if calibration.nearest("k2_star", settings) is not None:

        def at(s):
            return capacity / capacity.subs({C: s["states"], d: s["d_model"], m: s["mlp_width"]})

        scales = "states, d_model, mlp_width"
        return _scaled(calibration, "k2_star", settings, at, values, scales, steps)
    constant = calibration.capacity
    value = float(constant.value * capacity.subs(values))
    note = (
        f"K*_2 = {constant.value:g} x 2 d_model mlp_width / (C (C - 1)): the capacity of the "
        f"second MLP over the C (C - 1) numbers of one transition matrix; {constant.source}"
    )
    prediction = Prediction(
        _chains(value),
        "chains",
        "estimate",
        f"reconstruction:capacity ({constant.provenance})",
        note,
        constant.value * capacity,
    )
    return prediction, value


def generalizes(task_dim: int, states: int) -> bool:
    """The paper's criterion: the task-recognition head generalizes when D_phi >~ C^2."""
    return task_dim >= states**2


def _task_vector(spec: IclMarkovSpec) -> Prediction:
    dim = getattr(spec.model, spec.options.task_vector_dim)
    needed = spec.states**2
    return Prediction(
        generalizes(dim, spec.states),
        "",
        "estimate",
        "paper:summary, D_phi by reconstruction:task_vector_dim",
        f"{PAPER}: the task-recognition head generalizes when D_phi >~ C^2; D_phi is taken to "
        f"be {spec.options.task_vector_dim} = {dim} [R, option task_vector_dim], C^2 = {needed}.",
    )


def _k1_text(value: float | None, interval) -> str:
    """``= 45.2``, or the side a one-sided interval puts K*_1 on."""
    if value is not None or not interval:
        return f"= {fmt(value)}"
    low, high = interval
    return f"> {fmt(low)}" if math.isinf(high) else f"< {fmt(high)}"


def _chains(value: float) -> float:
    """A threshold in chains: one decimal, or three significant digits below one chain (never
    a 0.0 that is not 0)."""
    return round(value, 1) if value >= 1 else float(f"{value:.3g}")
