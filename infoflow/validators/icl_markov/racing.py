"""The race in a validation run: a spec with ``race`` -> its clock groups (planned beside the
K sweep) -> this run's clocks -> K*_1 from the race (:mod:`infoflow.icl_markov.race`) at each
setting of the sweep -> claims against the K sweep's measured K*_1, and the intervention's
shift (slowing layer 1's attention) against the shift the sweep measured.

The race uses no K*_1 measurement: its clocks come from the clock groups alone.
"""

from __future__ import annotations

import json
import math

from infoflow.icl_markov.race import Race, clocks_of, race
from infoflow.icl_markov.spec import IclMarkovSpec
from infoflow.validators.claims import Claim
from infoflow.validators.icl_markov.clocks import ClockGroup, clock_time

CLOCK_EVALUATIONS = 48  # log-spaced evaluations of a clock run


def plan_clocks(name: str, settings: list[IclMarkovSpec], seeds: list[int],
                checkpoints) -> list[ClockGroup]:  # fmt: skip
    """The clock groups the race needs for ``settings`` (the K sweep's, capped): per setting
    at the measured rate, G, G_prev, M2_prev and M1; per slowed rate, G at that rate."""
    groups: dict[str, ClockGroup] = {}
    for spec in settings:
        training = spec.training
        base = spec.model_copy(update={"training": training.model_copy(
            update={"layer1_attention_lr": 1.0})})  # fmt: skip
        steps = checkpoints(training.steps, CLOCK_EVALUATIONS)
        for clock, chains in (("G", [None]), ("G_prev", [None]),
                              ("M2_prev", spec.race.chains), ("M1", spec.race.chains)):  # fmt: skip
            group = ClockGroup(name, clock, base, sorted(chains, key=lambda k: k or 0), seeds,
                               steps, 128)  # fmt: skip
            groups.setdefault(group.name, group)
        if training.layer1_attention_lr != 1:
            group = ClockGroup(name, "G", spec, [None], seeds, steps, 128)
            groups.setdefault(group.name, group)
    return list(groups.values())


def measured_clocks(groups: list[ClockGroup], metrics_of) -> dict[str, dict]:
    """Per setting (its key: the base setting's JSON): the setting, the clock runs' length,
    every member's clock and the :class:`Clocks` the race reads. ``metrics_of(name)`` is the
    store's metrics."""
    out: dict[str, dict] = {}
    for group in groups:
        metrics = metrics_of(group.name)
        rate = group.spec.training.layer1_attention_lr
        key = _base_key(group.spec)
        setting = json.loads(key)
        entry = out.setdefault(key, {"setting": setting, "steps": group.spec.training.steps,
                                     "members": []})  # fmt: skip
        for i, (k, seed) in enumerate(group.members):
            entry["members"].append({"clock": group.clock, "layer1_attention_lr": rate,
                                     "chains": k, "seed": seed,
                                     "time": clock_time(metrics[i])})  # fmt: skip
    for entry in out.values():
        entry["clocks"] = clocks_of(entry["members"], entry["steps"])
    return out


def _base_key(spec: IclMarkovSpec) -> str:
    training = spec.training.model_copy(update={"layer1_attention_lr": 1.0})
    base = spec.model_copy(update={"training": training})
    return base.model_dump_json(exclude={"chains", "sweep", "description", "calibration"})


def race_for(spec: IclMarkovSpec, clocks: dict[str, dict]) -> Race | None:
    """The race at ``spec``'s setting and layer-1 rate, from this run's clocks."""
    entry = clocks.get(_base_key(spec))
    return race(entry["clocks"], spec.training.layer1_attention_lr) if entry else None


def race_claim(result: Race, measured: dict) -> Claim:
    """K*_1 from the race against the K sweep's measured K*_1 (``measurement["k1_star"]``):
    confirmed when the race's interval overlaps the measured one."""
    claim = "K*_1 from the race of the subcircuits' clocks (no K*_1 data enters it)"
    tolerance = "the race's interval (over the clock seeds) overlaps the measured K*_1 interval"
    low, high = _measured_interval(measured)
    derived = result.to_json()
    if result.interval is None:
        return Claim.undecided(claim, None, measured, tolerance, result.reason, derived)
    if low is None and high is None:
        return Claim.undecided(claim, result.k1_star, measured, tolerance,
                               "the K sweep does not place K*_1", derived)  # fmt: skip
    holds = (high is None or result.interval[0] <= high) and (
        low is None or result.interval[1] >= low
    )
    reason = "" if holds else (f"race {result.interval[0]:.3g}..{result.interval[1]:.3g} against "
                               f"measured {low}..{high}")  # fmt: skip
    return Claim.judged(claim, result.k1_star, measured, tolerance, holds, reason, derived)


def shift_claims(groups: list, raced: dict[str, tuple[Race, dict]]) -> list[Claim]:
    """A shift claim for every K sweep at a slowed rate whose setting was also swept at the
    measured rate (``raced``: group name -> its race and measured K*_1)."""
    by_base = {_base_key(g.spec): g for g in groups if g.spec.training.layer1_attention_lr == 1}
    out = []
    for group in groups:
        rate, base = group.spec.training.layer1_attention_lr, by_base.get(_base_key(group.spec))
        if rate != 1 and base is not None and {group.name, base.name} <= raced.keys():
            out.append(shift_claim(rate, raced[base.name], raced[group.name]))
    return out


def shift_claim(rate: float, base: tuple[Race, dict], slowed: tuple[Race, dict]) -> Claim:
    """Slowing layer 1's attention to ``rate`` moves K*_1 by the factor the race predicts:
    the predicted and the measured ratio intervals overlap."""
    claim = f"layer 1's attention at {rate:g} x the learning rate shifts K*_1 as the race says"
    tolerance = "the race's ratio K*_1(slowed) / K*_1 overlaps the measured ratio's interval"
    (race0, measured0), (race1, measured1) = base, slowed
    derived = {"race": race0.to_json(), "race_slowed": race1.to_json()}
    if race0.interval is None or race1.interval is None:
        reason = "the race places no K*_1 " + ("at the slowed rate" if race0.interval else "")
        return Claim.undecided(claim, None, None, tolerance, reason, derived)
    predicted = (race1.interval[0] / race0.interval[1], race1.interval[1] / race0.interval[0])
    (low0, high0), (low1, high1) = _measured_interval(measured0), _measured_interval(measured1)
    measured = (low1 / high0 if low1 and high0 else 0.0,
                high1 / low0 if high1 and low0 else math.inf)  # fmt: skip
    shown = {"ratio": measured, "k1_star": measured0, "k1_star_slowed": measured1}
    if measured == (0.0, math.inf):
        return Claim.undecided(claim, predicted, shown, tolerance,
                               "the K sweeps do not bound the shift", derived)  # fmt: skip
    holds = predicted[0] <= measured[1] and predicted[1] >= measured[0]
    return Claim.judged(claim, predicted, shown, tolerance, holds, "", derived)


def _measured_interval(measured: dict) -> tuple[float | None, float | None]:
    """The measured K*_1 interval: the logistic fit's where it has one, else the grid's."""
    fit = measured.get("fit") or {}
    if fit.get("low") is not None or fit.get("high") is not None:
        return fit.get("low"), fit.get("high")
    return measured.get("low"), measured.get("high")
