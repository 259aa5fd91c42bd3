"""``validate``'s progress display: one line, as wide as the terminal and never wider, that
follows every phase (planning and measuring, training, judging, writing). While training it
shows the steps done of all groups, the ETA (at the rate since the first step: start-up, a
Ray worker's included, does not count), tokens/s and MFU from the first step, the last mean
loss and the group training; a narrow terminal shortens the group's name first, then drops
the loss, never cuts the numbers. Into a pipe (a log), the same line is printed from the
first training step on: then, when a group finishes, once a minute, and at each later
phase."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

#: Seconds between two redraws while training (a tiny model steps every millisecond).
REDRAW = 0.1

#: Into a pipe (a log file), a status line at most this often while training, besides one
#: per finished group and per later phase; and how wide those lines may be.
PIPE_EVERY = 60.0
PIPE_WIDTH = 119


def clock(seconds: float | None) -> str:
    """``1:02:03`` or ``2:03``; ``-:--`` before there is a rate to extrapolate."""
    if seconds is None:
        return "-:--"
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def shorten(name: str, width: int) -> str:
    """``name`` in at most ``width`` characters: its start and end around an ellipsis (a
    group's end is its digest, what tells it apart)."""
    if len(name) <= width:
        return name
    if width < 5:
        return ""
    tail = (width - 1) // 2
    return f"{name[: width - 1 - tail]}…{name[-tail:]}"


@dataclass
class State:
    """Where the run is: its phase, the steps of all groups (done and total), the group
    training and its last mean loss and speed, when the phase began, and when the first step
    was reported with the steps taken by then (the ETA's rate counts from there)."""

    phase: str = "planning"
    detail: str = ""
    done: int = 0
    timed: int = 0  # the steps taken since training began (a resumed group's earlier: not)
    total: int = 0
    group: str = ""
    loss: float | None = None
    speed: str = ""
    phase_started: float = field(default_factory=time.monotonic)
    first: tuple[float, int] | None = None  # the first step's report: (time, steps taken)

    def eta(self, now: float) -> float | None:
        """Seconds left at the rate since the first step was reported; None until a step
        more is (a first step's time is mostly start-up: 7:42:23 for a 2-minute resume)."""
        if self.first is None or self.timed == self.first[1] or now <= self.first[0]:
            return None
        return (self.total - self.done) * (now - self.first[0]) / (self.timed - self.first[1])

    def line(self, width: int, now: float) -> str:
        """The display's line in at most ``width`` columns."""
        if self.phase != "training":
            elapsed = clock(now - self.phase_started)
            room = width - len(self.phase) - len(elapsed) - 2
            return " ".join(filter(None, (self.phase, shorten(self.detail, room), elapsed)))
        percent = 100 * self.done // max(self.total, 1)
        loss = [] if self.loss is None else [f"loss {self.loss:.3g}"]
        speed = self.speed.replace(", ", " ")
        parts = [
            f"{self.done:,}/{self.total:,} {percent}%",
            *loss,
            speed,
            f"ETA {clock(self.eta(now))}",
        ]
        room = width - len(" ".join(["train", *parts])) - 1
        if room < 8 and loss:  # too narrow: the loss goes before the group's name does
            parts.remove(loss[0])
            room += len(loss[0]) + 1
        return " ".join(filter(None, ["train", shorten(self.group, room), *parts]))[:width]


class Display:
    """The progress callback (:class:`~infoflow.validators.protocol.Progress`) drawing
    :class:`State` on a rich live line; into a pipe, from the first training step on, as
    printed lines (that step, each finished group, a status every ``PIPE_EVERY`` seconds,
    then each later phase), nothing before (a spec refused while planning, or a resume that
    trains nothing, prints no progress). ``note`` (the thread count) is printed when
    training begins."""

    def __init__(self, console, live, note: str = "") -> None:
        self.console, self.live, self.note, self.state = console, live, note, State()
        self.last: dict[str, int] = {}
        self.drawn = 0.0
        self.logged = -math.inf  # into a pipe: when the last line was printed
        self.finished: set[str] = set()

    def phase(self, name: str, detail: str = "", total: int = 0) -> None:
        """A new phase (``training`` with its ``total`` steps)."""
        self.state.phase, self.state.detail = name, detail
        self.state.phase_started = time.monotonic()
        if name == "training":
            self.state.total = total
            if self.note:
                self.console.print(self.note, markup=False, highlight=False, soft_wrap=True)
        self.draw()

    def __call__(
        self, group: str, step: int, total: int, loss: float | None = None, speed: str = ""
    ) -> None:
        """Group ``group`` reached ``step`` of ``total`` (its mean ``loss`` where measured)."""
        state, now = self.state, time.monotonic()
        state.done += step - self.last.get(group, 0)
        before = self.last.get(group, step - 1)  # a resumed group counts from here
        # a retried one, back at its checkpoint, took this step again (and the earlier ones)
        state.timed += step - before if step >= before else 1
        self.last[group] = step
        state.first = state.first or (now, state.timed)
        state.group = group
        state.speed = speed or state.speed
        state.loss = state.loss if loss is None else loss
        finished = step == total and group not in self.finished  # a trainer may say it twice
        if finished:
            self.finished.add(group)
        if now - self.drawn >= REDRAW or step == total:
            self.draw(finished)

    def finish(self, group: str, steps: int) -> None:
        """Group ``group`` (``steps`` long) ended: the steps it skipped (an early stop) count
        as done, not as taken; its finished line is printed once."""
        state = self.state
        state.done += steps - self.last.get(group, 0)
        self.last[group] = steps
        if group not in self.finished:
            self.finished.add(group)
            state.group = group
            self.draw(finished=True)

    def draw(self, finished: bool = False) -> None:
        """Show the state now (the live line also redraws itself four times a second); into
        a pipe, print it where a group ``finished``, a phase began, or a minute passed."""
        self.drawn = now = time.monotonic()
        if self.live is not None:
            self.live.refresh()
            return
        state = self.state
        if state.phase == "training":  # from the first step on (a resume may train nothing)
            due = state.timed > 0 and (finished or now - self.logged >= PIPE_EVERY)
        else:  # the phases after training, once training printed (planning: never)
            due = state.phase != "planning" and self.logged > -math.inf
        if due:
            self.logged = now
            line = state.line(PIPE_WIDTH, now)
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def __rich__(self):
        """The live line as of now, one column narrower than the console."""
        from rich.text import Text

        width = max(self.console.width - 1, 20)
        return Text(self.state.line(width, time.monotonic()), no_wrap=True)


@contextmanager
def progress(quiet: bool, console=None, note: str = "") -> Iterator[Display | None]:
    """The display on stderr's console (or ``console``), or None with ``quiet``; into a
    pipe, printed lines from the first training step on."""
    if quiet:
        yield None
        return
    from rich.console import Console
    from rich.live import Live

    console = console or Console(stderr=True)
    if not console.is_terminal:
        yield Display(console, None, note)
        return
    with Live(console=console, refresh_per_second=4, transient=False) as live:
        display = Display(console, live, note)
        live.update(display)
        yield display
