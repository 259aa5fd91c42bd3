"""Construction claims of ``validate``: what the compiled witness (:mod:`.construction`) settles
where training on a CPU cannot.

For every architecture of the spec's own points that the engine calls efficient and compile
builds:

- ``witness``: its witness reaches the learns threshold the target's floors set (NMSE below
  the pooling shortcut / LEARNS_FACTOR) and its error falls FALLS times as its precision
  grows (beta 10x, and its MLP 4x where it decodes); refuted, a finding against the plan,
  when either fails. (Until 2026-12-04 a witness that decodes grew its MLP alone, at beta
  100; the pair center's witness, the first whose softmax error is not below its decoders'
  there, fell 3.1x and 1.3x that way at T = 8 and 16, and 80x as beta grew 10x.) Its NMSE at
  the largest trained width is reported beside it (how far the trained ladder is from what
  the architecture represents).
- ``self_exclusion``: where the engine charged a condition s != t whose left-out pair
  decides the value ([R] ``self_exclusion``; compile leaves the token out wherever there is
  PE, the claim is made only there) and the witness leaves each token out by a positional
  term, the witness without that term is wrong where the pair (s, s) decides, on every draw
  or on a share of them: its NMSE is FALLS times the witness's or more; refuted, a finding
  against the rule, when the term changes nothing.
- ``witness_exponent`` and ``witness_flat`` (:mod:`.witness_ladder`): the witness's width
  ladder over the scale's seeds measures the construction's exponent, against the engine's
  at this T, and across the lengths the same architecture is witnessed at.
- ``ablated``: each of the spec's architectures that is the witness's with one head of a
  layer, or one layer, removed starts from the witness without it (for a head, the circuit
  without the head and what read it, ``circuit.without_head``; for a layer, the witness's
  weights without it), its output bias moved by the mean residual, and trains (AdamW, fresh
  batches); the witness trained alike is the control. Where the engine gives it a larger
  exponent than the witness's at this T, the claim is that training does not bring it back:
  confirmed when its best NMSE stays LEARNS_FACTOR times above the control's, refuted when it
  reaches the control's, inconclusive between. Where the exponents are equal the engine
  predicts nothing, and the numbers are reported without a claim.

Results are kept in the checkpoints folder under their content's name (and WITNESS_VERSION),
so a resumed run does not compute them again.
"""

from __future__ import annotations

import json
import math

import torch

from infoflow.core.errors import SpecError
from infoflow.retrieval.canonical_to_tree import self_exclusions
from infoflow.retrieval.circuit import self_penalised, without_head, without_self_penalty
from infoflow.retrieval.derive import derive
from infoflow.retrieval.schedule_to_circuit import circuit_of
from infoflow.validators.claims import Claim
from infoflow.validators.identity import content_name
from infoflow.validators.protocol import Context
from infoflow.validators.retrieval import construction
from infoflow.validators.retrieval.ablation import fine_tune, without_layer
from infoflow.validators.retrieval.circuit_to_weights import TooNarrow
from infoflow.validators.retrieval.experiment import Experiment, Model
from infoflow.validators.retrieval.exponents import Ladder
from infoflow.validators.retrieval.floors import LEARNS_FACTOR
from infoflow.validators.retrieval.witness_ladder import (
    WIDTHS,
    exponent_claim,
    flat_claim,
    ladder_of,
    same_architecture,
)
from infoflow.validators.retrieval.witness_plan import Tune, removed_part, spec_at, tune_of

KIND = "construction"
#: The version of the construction and ablation code: part of every cached result's key, so a
#: change here (bump it) never reuses a result computed by the code before. 11 since the
#: model's last layer computes the readout token alone (2026-12-07, night: the witnesses'
#: and the ablations' numbers move in their last bits).
WITNESS_VERSION = 11


def construction_claims(experiment: Experiment, context: Context) -> tuple[list[Claim], list]:
    """The construction claims and their records (report.json's ``witnesses``); none on a
    device the spec's ``validation.build_on`` leaves out."""
    if experiment.not_built:
        return [], []
    claims, records, ladders = [], [], {}
    floors = experiment.floors
    for model in experiment.points:
        if not experiment.expected[model].efficient or model.seq_len not in floors:
            continue
        spec = spec_at(experiment, model)
        try:
            circuit = circuit_of(spec)
        except SpecError as exc:
            why = "; ".join(message for _, message in exc.problems)  # not "<spec>: field ..."
            records.append({"model": model.label(), "refused": why})
            continue
        record = _witness_record(experiment, model, spec, circuit, context)
        records.append(record)
        learns_below = floors[model.seq_len].learns_below
        claims.append(_witness_claim(model, record, learns_below))
        if "nmse_without_self_penalty" in record:
            claims.append(_self_exclusion_claim(model, record, learns_below))
        if record.get("ladder"):  # its slope derived again: a kept record has the old rule's
            ladders[model] = Ladder(record["ladder"]["sizes"], record["ladder"]["nmse"])
            record["ladder"] = ladders[model].to_json()
            claims.append(exponent_claim(model, ladders[model], experiment.expected[model].alpha))
        for other in experiment.points:
            removed = removed_part(model, other)
            if removed is not None:
                result = _ablation(experiment, other, removed, spec, circuit, context)
                record.setdefault("ablated", []).append(result)
                claim = _ablated_claim(experiment, model, other, result)
                if claim:
                    claims.append(claim)
    return claims + _flat_claims(experiment, ladders), records


def _flat_claims(experiment: Experiment, ladders: dict[Model, Ladder]) -> list[Claim]:
    """One architecture witnessed at two lengths with the engine's same exponent at both."""
    found = []
    models = sorted(ladders, key=lambda m: m.seq_len)
    for i, short in enumerate(models):
        for long in models[i + 1 :]:
            alpha = experiment.expected[short].alpha
            if same_architecture(short, long) and experiment.expected[long].alpha == alpha:
                found.append(flat_claim(short, long, ladders, alpha))
    return found


def _witness_record(experiment, model, spec, circuit, context) -> dict:
    """The witness's NMSE at its default precision, at a coarser one (a tenth of beta, and a
    quarter of the MLP width where it decodes: the knobs its error depends on), at the
    largest trained width, and its width ladder over the scale's seeds."""
    seeds, trained = experiment.scale.seeds, max(experiment.scale.rungs)
    key = witness_key(spec, seeds, trained)
    cached = _cached(context, key)
    if cached:
        return cached
    decodes = any(m.kind == "decode" for m in circuit.mlps)
    knob = "MLP width and beta" if decodes else "beta"
    coarse = {"beta": construction.BETA / 10}
    if decodes:
        coarse["width"] = construction.WIDTH // 4
    out = {"model": model.label(), "key": model.key(), "beta": construction.BETA, "knob": knob}
    for name, setting in (
        ("nmse", {}),
        ("nmse_coarse", coarse),
        ("nmse_trained_width", {"width": trained}),
    ):
        out.update(_built(name, spec, circuit, setting))
    if self_penalised(circuit) and _charged(spec):
        bare = without_self_penalty(circuit)
        out.update(_built("nmse_without_self_penalty", spec, bare, {}))
    ladder = ladder_of(spec, circuit, seeds)
    out["ladder"] = ladder.to_json() if ladder else None
    out["channels"], out["circuit"] = circuit.width, circuit.to_json()
    return _store(context, key, out)


def _built(name: str, spec, circuit, setting: dict) -> dict:
    """``{name: NMSE}`` of ``circuit`` built at ``setting``; ``{name: None, name_why: why}``
    where the MLP width is too narrow for its decoders."""
    try:
        return {name: construction.build(spec, circuit=circuit, **setting).nmse}
    except TooNarrow as exc:
        return {name: None, f"{name}_why": str(exc)}


def witness_key(spec, seeds: int, trained: int) -> dict:
    """What a witness's record depends on: the spec, the widths and seeds of its ladder, and
    the largest trained width it is also measured at (left out until a review, 2026-12-06:
    a run resumed at another scale showed the other scale's width's NMSE)."""
    return {
        "witness": spec.model_dump(mode="json", exclude={"validation"}),
        "width": construction.WIDTH,
        "ladder": [list(WIDTHS), seeds],
        "trained_width": trained,
    }


def _witness_claim(model: Model, record: dict, learns_below: float) -> Claim:
    nmse, coarse, knob = record["nmse"], record["nmse_coarse"], record["knob"]
    grows = "MLP width grows 4x and beta 10x" if knob != "beta" else "beta grows 10x"
    statement = (
        f"{model.label()}: the compiled witness represents the target (NMSE below the learns "
        f"threshold {learns_below:.3g}) and its error falls as its {grows}"
    )
    measured = {"nmse": nmse, "nmse_coarser": coarse}
    tolerance = f"NMSE < shortcut / {LEARNS_FACTOR:g}; a fall of {construction.FALLS:g}x"
    ident = f"witness:{model.key()}"
    unmeasured = _unmeasured(record, ("nmse", "nmse_coarse"))
    if unmeasured:
        claim = Claim.undecided(ident, statement, "represents", measured, tolerance, unmeasured)
        return claim.of_kind(KIND)
    holds = nmse < learns_below and nmse * construction.FALLS <= coarse
    reason = "" if holds else "a finding against the plan: the construction does not carry it out"
    claim = Claim.judged(ident, statement, "represents", measured, tolerance, holds, reason)
    return claim.of_kind(KIND)


def _unmeasured(record: dict, names: tuple[str, ...]) -> str:
    """Why a claim on ``record``'s NMSEs ``names`` cannot be judged ("" when it can): one was
    not built (too narrow) or is not a number (a build that diverged)."""
    for name in names:
        value = record.get(name)
        if value is None:
            return f"{name} was not measured: {record.get(f'{name}_why', 'not built')}"
        if not math.isfinite(value):
            return f"{name} is not a number ({value}): the build diverged"
    return ""


def _charged(spec) -> bool:
    """Whether the engine charged a condition s != t of ``spec``'s target (its left-out pair
    decides): compile leaves the token out wherever there is PE, the claim is made only
    where the rule says it matters."""
    return any(self_exclusions(c) for c in derive(spec).tree.parts)


def _self_exclusion_claim(model: Model, record: dict, learns_below: float) -> Claim:
    """The positional term matters: without it the witness scores each token against itself
    again and is wrong wherever the pair (s, s) decides, on every draw or on a share of them
    (the rule's two charged classes), so its NMSE is FALLS times the witness's or more."""
    bare, nmse = record["nmse_without_self_penalty"], record["nmse"]
    statement = (
        f"{model.label()}: without its positional self-penalty the compiled witness is wrong "
        f"where the left-out pair (s, s) decides the value"
    )
    measured = {"nmse": nmse, "nmse_without_self_penalty": bare}
    tolerance = f"NMSE without it >= {construction.FALLS:g} x the witness's"
    ident = f"self_exclusion:{model.key()}"
    unmeasured = _unmeasured(record, ("nmse", "nmse_without_self_penalty"))
    if unmeasured or nmse >= learns_below:
        why = unmeasured or "the witness itself does not represent the target"
        claim = Claim.undecided(ident, statement, "is wrong", measured, tolerance, why)
    else:
        holds = bare >= construction.FALLS * nmse
        why = "" if holds else "a finding against the self-exclusion rule: the pair did not decide"
        claim = Claim.judged(ident, statement, "is wrong", measured, tolerance, holds, why)
    return claim.of_kind(KIND)


def _ablation(experiment, other, removed, spec, circuit, context) -> dict:
    """Train ``other`` from the witness without the removed head (or layer), and the witness
    itself the same way (the control); best NMSE of each."""
    tune = tune_of(experiment)
    key = {
        "ablated": spec.model_dump(mode="json", exclude={"validation"}),
        "removed": list(removed),
        "tune": vars(tune),
    }
    cached = _cached(context, key)
    if cached:
        return cached
    layer, slot = removed
    # float32 trains faster; a circuit reading |x|^2 from LayerNorm is built in float64 only
    dtype = torch.float64 if circuit.reads_norm else torch.float32
    witness = construction.build(spec, width=tune.width, dtype=dtype, circuit=circuit)
    if slot is None:  # a layer: the witness's weights without it
        model = without_layer(witness.model, layer)
    else:  # a head: the circuit without it and what read it, built on the smaller model
        smaller = without_head(circuit, layer, slot)
        model = construction.build(
            spec_at(experiment, other), circuit=smaller, width=tune.width, dtype=dtype
        ).model
    control = _control(witness, tune, context)  # after the ablated model is taken from it
    initial, best = fine_tune(model, spec, tune, context.device)
    what = f"layer {layer}" if slot is None else f"head {slot} of layer {layer}"
    out = {
        "model": other.label(),
        "removed": what,
        "witness_nmse": witness.nmse,  # records before 2026-12-04 say witness_float32
        "dtype": str(dtype).removeprefix("torch."),
        "control_best": control,
        "ablated_start": initial,
        "ablated_best": best,
        "steps": tune.steps,
    }
    return _store(context, key, out)


def _control(witness: construction.Witness, tune: Tune, context: Context) -> float:
    """The witness fine-tuned as its ablations are (changed in place): its best NMSE, computed
    once for all of them."""
    key = {
        "control": witness.spec.model_dump(mode="json", exclude={"validation"}),
        "tune": vars(tune),
        "dtype": str(witness.model.W_in.dtype),
    }
    cached = _cached(context, key)
    if cached:
        return cached["control_best"]
    _, best = fine_tune(witness.model, witness.spec, tune, context.device)
    return _store(context, key, {"control_best": best})["control_best"]


def _ablated_claim(experiment, witness: Model, other: Model, result: dict) -> Claim | None:
    a, b = experiment.expected[witness].alpha, experiment.expected[other].alpha
    if not b > a:
        result["no_claim"] = f"the engine gives both alpha {a:g} at this T: it predicts nothing"
        return None
    best, control = result["ablated_best"], result["control_best"]
    statement = (
        f"{other.label()} (the witness without {result['removed']}, trained {result['steps']} "
        f"steps) stays above the witness trained alike: alpha {b:.3g} > {a:.3g}"
    )
    measured = {"ablated_best": best, "control_best": control}
    tolerance = f"confirmed above {LEARNS_FACTOR:g}x the control, refuted at or below it"
    ident = f"ablated:{other.key()}"
    if best > LEARNS_FACTOR * control:
        claim = Claim.judged(ident, statement, "above", measured, tolerance, True)
    elif best <= control:
        claim = Claim.judged(ident, statement, "above", measured, tolerance, False)
    else:
        why = f"between the control and {LEARNS_FACTOR:g}x it"
        claim = Claim.undecided(ident, statement, "above", measured, tolerance, why)
    return claim.of_kind(KIND)


def _path(context: Context, key: dict):
    named = content_name("witness", {**key, "version": WITNESS_VERSION})
    return context.checkpoints / f"{named}.json"


def _cached(context: Context, key: dict) -> dict | None:
    path = _path(context, key)
    return json.loads(path.read_text()) if path.exists() else None


def _store(context: Context, key: dict, value: dict) -> dict:
    context.checkpoints.mkdir(parents=True, exist_ok=True)
    path = _path(context, key)
    clean = {
        k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in value.items()
    }
    path.write_text(json.dumps(clean, indent=2) + "\n")
    return clean
