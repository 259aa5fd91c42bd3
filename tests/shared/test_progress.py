"""validate's progress line: steps, ETA, tokens/s and MFU from the first step, every phase,
never wider than the terminal."""

from __future__ import annotations

import io

from rich.console import Console

from infoflow.cli.progress import State, progress, shorten

SPEED = "12.3k tok/s, MFU 4.1%"


def _console(width: int = 80) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=width, force_terminal=False, color_system=None), out


def test_the_first_step_shows_steps_rate_mfu_and_an_eta() -> None:
    state = State(phase="training", total=15_000, started=100.0)
    state.done, state.group, state.speed = 1, "looped-kv-smoke-0123456789ab", SPEED
    line = state.line(79, 100.5)
    assert "1/15,000 0%" in line and "12.3k tok/s MFU 4.1%" in line
    assert line.endswith("ETA 2:05:00")  # 14,999 steps to go at 0.5 s a step
    assert len(line) <= 79


def test_a_narrow_line_shortens_the_group_then_drops_the_loss_never_the_numbers() -> None:
    state = State("training", done=14_999, total=15_000, group="x" * 60, loss=0.0123)
    state.speed, state.started = "123.4k tok/s, MFU 14.1%", 0.0
    wide = state.line(79, 3600.0)
    assert len(wide) <= 79 and "loss 0.0123" in wide and "…" in wide
    assert wide.endswith("14,999/15,000 99% loss 0.0123 123.4k tok/s MFU 14.1% ETA 0:00")
    narrow = state.line(60, 3600.0)
    assert len(narrow) <= 60 and "loss" not in narrow and narrow.endswith("ETA 0:00")
    assert shorten("retrieval-abcdef", 9) == "retr…cdef" and shorten("ab", 9) == "ab"


def test_every_phase_is_shown_at_80_columns() -> None:
    console, out = _console()
    with progress(False, console) as display:
        display.phase("planning", "(measuring the step time where it is not cached)")
        assert display.state.line(79, display.state.phase_started).startswith("planning (")
        display.phase("training", total=600)
        display("looped-kv-" + "a" * 70, 1, 600, None, SPEED)
        first = display.state.line(79, display.state.started + 1.0)
        assert first.startswith("train looped-kv-") and "1/600 0%" in first
        assert "ETA 9:59" in first and "MFU 4.1%" in first
        display("looped-kv-" + "a" * 70, 600, 600, 2.5, SPEED)
        display.phase("judging", "looped-smoke")
        display.phase("writing", "the reports and plots to runs/validate")
    assert out.getvalue().endswith("\n")
    shown = out.getvalue().splitlines()
    assert shown and all(len(line) <= 80 for line in shown)
    assert shown[-1].startswith("writing the reports and plots to runs/validate")
    assert display.state.done == 600 and display.state.loss == 2.5


def test_quiet_shows_nothing() -> None:
    with progress(True) as display:
        assert display is None
