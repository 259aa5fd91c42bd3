"""The layer-1 rate intervention as a dose-response: K sweeps of one setting at several rates
r of layer 1's attention (r x the learning rate) -> the direction in which K*_1 moves.

The claim (theory note, the clock race [R]): a slower layer 1 delays the previous-token head,
so G2 and M2 but not M1; memorization then wins up to a larger K, so K*_1 falls as r rises
(and stays put where the M2 path decides, since the head delays both sides of that race).
It is judged on the extreme rates' measured intervals: confirmed when the slowest rate's lies
wholly above the fastest rate's, refuted when wholly below, inconclusive when they overlap or
either is open on the side that decides. Every rate's interval is shown.
"""

from __future__ import annotations

from infoflow.validators.claims import Claim

CLAIM = "K*_1 falls as layer 1's attention learns faster (r = {rates})"
TOLERANCE = (
    "the measured K*_1 interval at the slowest rate lies wholly above the one at the fastest "
    "(refuted: wholly below); each is the logistic fit's 95% interval, the bracket of "
    "separable outcomes, or the grid's end when every outcome falls on one side"
)


def dose_claims(sweeps: list[tuple[str, float, dict]]) -> list[Claim]:
    """One claim per setting swept at three or more rates. ``sweeps``: (the setting's key
    without the rate, the rate, the sweep's ``k1_fit``) per K sweep group."""
    by_setting: dict[str, dict[float, dict]] = {}
    for key, rate, fit in sweeps:
        by_setting.setdefault(key, {})[rate] = fit
    out = []
    for n, fits in enumerate(by_setting.values(), 1):
        if len(fits) >= 3:
            claim = dose_claim(fits)
            out.append(claim if len(by_setting) == 1 else claim.prefixed(f"setting{n}"))
    return out


def dose_claim(fits: dict[float, dict]) -> Claim:
    """The direction of K*_1's shift across the rates of ``fits`` (rate -> ``k1_fit``)."""
    rates = sorted(fits)
    statement = CLAIM.format(rates=", ".join(f"{r:g}" for r in rates))
    shown = {
        f"r={r:g}": {
            "low": fits[r].get("low"),
            "value": fits[r].get("value"),
            "high": fits[r].get("high"),
            "status": fits[r]["status"],
        }
        for r in rates
    }
    slow, fast = fits[rates[0]], fits[rates[-1]]
    ident = "k1_dose"
    if slow["status"] == "none" or fast["status"] == "none":
        why = slow.get("reason") if slow["status"] == "none" else fast.get("reason")
        return Claim.undecided(ident, statement, "falls", shown, TOLERANCE, f"no interval: {why}")
    if slow.get("low") is not None and fast.get("high") is not None and slow["low"] > fast["high"]:
        return Claim.judged(ident, statement, "falls", shown, TOLERANCE, True)
    if slow.get("high") is not None and fast.get("low") is not None and slow["high"] < fast["low"]:
        why = (
            f"K*_1 at r = {rates[0]:g} ends at {slow['high']:.3g}, below its start at "
            f"r = {rates[-1]:g} ({fast['low']:.3g}): it rises with r"
        )
        return Claim.judged(ident, statement, "falls", shown, TOLERANCE, False, why)
    why = (
        f"the intervals at r = {rates[0]:g} ({_text(slow)}) and r = {rates[-1]:g} "
        f"({_text(fast)}) overlap or are open where they would decide"
    )
    return Claim.undecided(ident, statement, "falls", shown, TOLERANCE, why)


def _text(fit: dict) -> str:
    low, high = fit.get("low"), fit.get("high")
    return (
        f"{'open' if low is None else f'{low:.3g}'} to {'open' if high is None else f'{high:.3g}'}"
    )
