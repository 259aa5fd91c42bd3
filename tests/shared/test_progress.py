"""validate's progress line: steps, ETA, tokens/s and MFU from the first step, every phase,
never wider than the terminal."""

from __future__ import annotations

import io
import re

from rich.console import Console

from infoflow.cli.progress import State, progress, shorten
from infoflow.validators.throughput import Meter, Peak, compact

SPEED = "12.3k tok/s, MFU 4.1%"


def _console(terminal: bool, width: int = 80) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=terminal, color_system=None)
    return console, out


def _lines(written: str) -> list[str]:
    """What a terminal shows, line by line: cursor controls removed, each redraw a line."""
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "\n", written.replace("\r", "\n"))
    return [line for line in plain.splitlines() if line.strip()]


def test_the_first_step_shows_steps_rate_mfu_and_the_second_an_eta() -> None:
    state = State(phase="training", total=15_000, first=(100.0, 1))
    state.done = state.timed = 1
    state.group, state.speed = "looped-kv-smoke-0123456789ab", SPEED
    line = state.line(79, 100.0)
    assert "1/15,000 0%" in line and "12.3k tok/s MFU 4.1%" in line
    assert line.endswith("ETA -:--")  # no rate yet
    state.done = state.timed = 2
    line = state.line(79, 100.5)
    assert line.endswith("ETA 2:04:59")  # 14,998 steps to go at 0.5 s a step
    assert len(line) <= 79


def test_the_eta_leaves_out_the_start_up_before_the_first_step(monkeypatch) -> None:
    """A Ray worker's start (half a minute before a group's first note) does not count
    toward the rate: the old ETA, from training's start, said 7:42:23 for a 2-minute resume."""
    import infoflow.cli.progress as shown

    now = [0.0]
    monkeypatch.setattr(shown.time, "monotonic", lambda: now[0])
    with progress(False, _console(terminal=False)[0]) as display:
        display.phase("training", total=1000)
        now[0] = 30.0
        display("g", 1, 1000, None, SPEED)
        assert display.state.eta(now[0]) is None
        now[0] = 31.0
        display("g", 11, 1000, None, SPEED)
        assert display.state.eta(now[0]) == 98.9  # 989 steps to go at ten a second


def test_a_narrow_line_shortens_the_group_then_drops_the_loss_never_the_numbers() -> None:
    state = State("training", done=14_999, timed=14_999, total=15_000, group="x" * 60, loss=0.0123)
    state.speed, state.first = "123.4k tok/s, MFU 14.1%", (0.0, 1)
    wide = state.line(79, 3600.0)
    assert len(wide) <= 79 and "loss 0.0123" in wide and "…" in wide
    assert wide.endswith("14,999/15,000 99% loss 0.0123 123.4k tok/s MFU 14.1% ETA 0:00")
    narrow = state.line(60, 3600.0)
    assert len(narrow) <= 60 and "loss" not in narrow and narrow.endswith("ETA 0:00")
    assert shorten("retrieval-abcdef", 9) == "retr…cdef" and shorten("ab", 9) == "ab"


def test_every_phase_is_shown_at_80_columns() -> None:
    console, out = _console(terminal=True)
    with progress(False, console, note="torch threads: 1 (2 cores, load 1.2: 1 free)") as display:
        display.phase("planning", "(measuring the step time where it is not cached)")
        assert display.state.line(79, display.state.phase_started).startswith("planning (")
        display.phase("training", total=600)
        display("looped-kv-" + "a" * 70, 1, 600, None, SPEED)
        display("looped-kv-" + "a" * 70, 2, 600, None, SPEED)
        first = display.state.line(79, display.state.first[0] + 1.0)
        assert first.startswith("train looped-kv-") and "2/600 0%" in first
        assert "ETA 9:58" in first and "MFU 4.1%" in first
        display("looped-kv-" + "a" * 70, 600, 600, 2.5, SPEED)
        display.phase("judging", "looped-smoke")
        display.phase("writing", "the reports and plots to runs/validate")
    shown = _lines(out.getvalue())
    assert shown and all(len(line) <= 80 for line in shown)
    assert "torch threads: 1 (2 cores, load 1.2: 1 free)" in shown
    assert any(line.startswith("train looped-kv-") and "600/600 100%" in line for line in shown)
    assert any(line.startswith("judging looped-smoke") for line in shown)
    assert shown[-1].startswith("writing the reports and plots to runs/validate")
    assert display.state.done == 600 and display.state.loss == 2.5


def test_a_resumed_group_counts_its_earlier_steps_as_done_not_toward_the_rate() -> None:
    with progress(False, _console(terminal=False)[0]) as display:
        display.phase("training", total=600)
        display("g", 501, 600, None, SPEED)  # resumed at step 500: one step taken now
        display("g", 502, 600, None, SPEED)
        state = display.state
        assert (state.done, state.timed) == (502, 2)
        assert state.eta(state.first[0] + 1.0) == 98.0  # 98 steps to go at a step a second


def test_a_retried_group_counts_its_steps_done_again_not_its_rate_backwards() -> None:
    """A Ray task retried from its group's checkpoint reports a step below the last: the
    steps done go back, the steps taken (the ETA's rate) do not."""
    with progress(False, _console(terminal=False)[0]) as display:
        display.phase("training", total=600)
        display("g", 1, 600, None, SPEED)
        display("g", 300, 600, None, SPEED)
        display("g", 201, 600, None, SPEED)  # retried from step 200's checkpoint
        assert (display.state.done, display.state.timed) == (201, 301)


def test_a_group_that_stops_early_counts_its_skipped_steps_as_done_not_taken(
    monkeypatch,
) -> None:
    """A group whose members all stopped at step 600 of 1,000 (a plateau, a clock that is
    final): the 400 steps it skipped finish the bar but do not speed the ETA's rate; into a
    pipe its finished line is printed once."""
    import infoflow.cli.progress as shown

    now = [0.0]
    monkeypatch.setattr(shown.time, "monotonic", lambda: now[0])
    console, out = _console(terminal=False)
    with progress(False, console) as display:
        display.phase("training", total=2000)
        now[0] = 1.0
        display("g", 1, 1000, None, SPEED)
        now[0] = 600.0
        display("g", 600, 1000, 0.5, SPEED)  # its last step
        display.finish("g", 1000)
        display.finish("g", 1000)  # said again: nothing more
        state = display.state
        assert (state.done, state.timed) == (1000, 600)
        assert state.eta(now[0]) == 1000.0  # 1,000 steps to go at a step a second
    assert [line.split(" ETA")[0] for line in out.getvalue().splitlines()] == [
        f"train g 1/2,000 0% {SPEED.replace(', ', ' ')}",
        f"train g 600/2,000 30% loss 0.5 {SPEED.replace(', ', ' ')}",
        f"train g 1,000/2,000 50% loss 0.5 {SPEED.replace(', ', ' ')}",
    ]


def test_into_a_pipe_lines_are_printed_from_training_on(monkeypatch) -> None:
    """Into a pipe: nothing while planning (a refused spec stays the only line), then the
    thread line, a line at the first step, when a group finishes, once a minute between
    (not at every step), and at each later phase; a resume that trains nothing prints only
    the thread line (a refusal while judging it follows no progress line)."""
    import infoflow.cli.progress as shown

    now = [1000.0]
    monkeypatch.setattr(shown.time, "monotonic", lambda: now[0])
    console, out = _console(terminal=False)
    with progress(False, console, note="torch threads: 2") as display:
        display.phase("planning")
        assert out.getvalue() == ""
        display.phase("training", total=300)
        for step in range(1, 101):  # a step a second: a status line after the first minute
            now[0] += 1.0
            display("g", step, 100, 0.5, SPEED)
        display("h", 200, 200, 0.25, SPEED)  # a resumed group, finished
        display("h", 200, 200, 0.25, SPEED)  # said twice (a trainer's last evaluation): once
        display.phase("judging", "smoke")
        display.phase("writing", "the reports")
    lines = out.getvalue().splitlines()
    assert lines[0] == "torch threads: 2" and lines[1].startswith("train g 1/300 0% loss 0.5")
    assert lines[1].endswith("ETA -:--")  # the first step: no rate yet
    assert lines[2].startswith("train g 61/300 20% loss 0.5") and "ETA" in lines[2]
    assert lines[3].startswith("train g 100/300 33%")  # g finished
    assert lines[4].startswith("train h 300/300 100% loss 0.25")
    assert lines[5:] == ["judging smoke 0:00", "writing the reports 0:00"]
    console, out = _console(terminal=False)
    with progress(False, console, note="torch threads: 1, as when this run started") as display:
        display.phase("training", total=0)
        display.phase("judging", "smoke")
    assert out.getvalue() == "torch threads: 1, as when this run started\n"


def test_quiet_shows_nothing() -> None:
    with progress(True) as display:
        assert display is None


def test_the_speed_keeps_its_digits_at_any_size() -> None:
    assert [compact(v) for v in (850.0, 12_345.0, 4_561_000.0)] == ["850", "12.3k", "4.56M"]
    meter = Meter(1e6, Peak(1e15, "test"))
    meter.started -= 1.0  # a second ago
    meter.add(120)  # 1.2e8 FLOP/s of 1e15: MFU 1.2e-5%
    assert re.fullmatch(r"(1[01]\d|120) tok/s, MFU <0\.01%", meter.text())  # about 120 a second
    meter.add(120_000_000)  # 1.2e14 FLOP/s: MFU 12%
    assert meter.text().endswith("M tok/s, MFU 12%")
