"""Each member's loss history -> when it stops training: the plateau rule and the per-member
learning-rate schedule it drives.

Every member of an ensemble trains with warmup, then a constant rate (the "stable" phase),
until its loss stops improving; then its rate decays linearly to zero over a cooldown, and it
is done (its weights no longer change). Warmup-stable-decay: the decay comes when the member
needs it, not at a step fixed in advance, so a small model stops early and a large one
trains on.

The plateau rule: at every evaluation, the slope of the log of the member's mean training
loss (each evaluation window's mean: the smoothing) against the log of the step, fitted by
least squares over the last :data:`WINDOW` evaluations. A slope above ``-PLATEAU_SLOPE``
(the loss falls by less than 7% per doubling of the steps) is a plateau, from a quarter of the
cap on (:data:`EARLIEST`), and once the loss has left the trivial predictor's (below
:data:`STARTED`; the targets are standardised, so the trivial loss is 1): the loss of a
retrieval target often sits there for a while before it falls, and that is no plateau. A
member that has not reached a plateau when the cap is near starts its cooldown anyway, with
its slope recorded: it is still improving at the cap when its loss falls faster than the
plateau rule allows (:func:`improving`), and otherwise stuck (a loss still at the trivial
predictor's that falls by less than 7% per doubling: what a model that cannot represent the
target does), which is not improving.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from infoflow.validators.retrieval.exponents import fit_slope

#: A loss whose log-log slope against the step is above -PLATEAU_SLOPE has stopped improving.
PLATEAU_SLOPE = 0.1
#: Evaluations the slope is fitted over.
WINDOW = 4
#: No plateau is called before this fraction of the cap.
EARLIEST = 0.25
#: A loss at or above this (the trivial predictor's is 1) has not started to fall.
STARTED = 0.9
#: The cooldown lasts this fraction of the steps trained before it (at least one evaluation).
COOLDOWN = 0.2


def loss_slope(steps: list[int], losses: list[float]) -> float | None:
    """d log(loss) / d log(step) over the last :data:`WINDOW` evaluations (None with fewer,
    or a loss that is not a positive finite number)."""
    steps, losses = steps[-WINDOW:], losses[-WINDOW:]
    if len(steps) < WINDOW or not all(v > 0 and math.isfinite(v) for v in losses):
        return None
    return fit_slope(steps, losses)


def plateaued(steps: list[int], losses: list[float]) -> bool:
    """The plateau rule: the fitted slope is above ``-PLATEAU_SLOPE``, and the loss has
    left the trivial predictor's."""
    slope = loss_slope(steps, losses)
    return slope is not None and slope > -PLATEAU_SLOPE and losses[-1] < STARTED


def improving(slope: float | None) -> bool:
    """A loss still falling by more than the plateau rule allows (or too short a history to
    tell)."""
    return slope is None or slope <= -PLATEAU_SLOPE


@dataclass
class MemberState:
    """One member's history and schedule: its cooldown's first step and length (None while
    it is in the stable phase), and whether the cap, not a plateau, started it."""

    steps: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    cooldown_start: int | None = None
    cooldown_length: int = 0
    capped: bool = False  # the cap started the cooldown, not a plateau
    slope: float | None = None  # the loss slope when the cooldown started

    @property
    def still_improving(self) -> bool:
        """The cap stopped it while its loss was still falling."""
        return self.capped and improving(self.slope)

    def factor(self, step: int) -> float:
        """The fraction of the base learning rate at ``step``."""
        if self.cooldown_start is None or step < self.cooldown_start:
            return 1.0
        return max(0.0, 1.0 - (step - self.cooldown_start) / self.cooldown_length)

    def done(self, step: int) -> bool:
        return (
            self.cooldown_start is not None and step >= self.cooldown_start + self.cooldown_length
        )


@dataclass
class MemberSchedule:
    """Every member's :class:`MemberState`, for a group capped at ``cap`` steps."""

    cap: int
    members: list[MemberState]
    every: int | None = None  # the steps between evaluations (None: not known)

    @classmethod
    def start(cls, members: int, cap: int, every: int | None = None) -> MemberSchedule:
        return cls(cap, [MemberState() for _ in range(members)], every)

    def observe(self, step: int, losses: list[float]) -> None:
        """Record each member's mean loss of the window ending at ``step`` and start the
        cooldown of those that reached a plateau, or that the cap leaves just enough steps
        to cool down, or whose next evaluation is the cap's (at a cap a few evaluations
        long, the cap's own came first: a cooldown of one step, never trained)."""
        for state, loss in zip(self.members, losses, strict=True):
            if state.cooldown_start is not None:
                continue
            state.steps.append(step)
            state.losses.append(loss)
            length = max(1, round(COOLDOWN * step))
            last = self.every is not None and step + self.every >= self.cap
            at_cap = step + length >= self.cap or last
            settled = step >= EARLIEST * self.cap and plateaued(state.steps, state.losses)
            if settled or at_cap:
                state.cooldown_start = step
                state.cooldown_length = max(1, min(length, self.cap - step))
                state.slope = loss_slope(state.steps, state.losses)
                state.capped = not plateaued(state.steps, state.losses)

    def factors(self, step: int) -> list[float]:
        return [state.factor(step) for state in self.members]

    def done(self, step: int) -> bool:
        """Every member has finished its cooldown."""
        return all(state.done(step) for state in self.members)

    def to_dict(self) -> dict:
        members = [asdict(state) for state in self.members]
        return {"cap": self.cap, "members": members, "every": self.every}

    @classmethod
    def from_dict(cls, data: dict) -> MemberSchedule:
        members = [MemberState(**state) for state in data["members"]]
        return cls(data["cap"], members, data.get("every"))

    def last_step(self, state: MemberState) -> float:
        """The member's last training step: its cooldown's end, the cap at most (NaN while
        it trains)."""
        if state.cooldown_start is None:
            return math.nan
        return min(state.cooldown_start + state.cooldown_length, self.cap)
