"""Quantities a user types on the command line, read into numbers (no torch, no sympy)."""

from __future__ import annotations

import re

from infoflow.core.errors import SpecError

#: The longest --budget (seconds).
MAX_DURATION = 10**7

_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?")


def parse_duration(option: str, text: str | None) -> float | None:
    """Seconds from ``90s``, ``10m``, ``1h30m`` or a plain number of seconds, from 1 s to
    10^7 s; a SpecError naming ``option`` otherwise. None stays None."""
    if text is None:
        return None
    match = _DURATION.fullmatch(text.strip())
    if not text.strip() or not match:
        raise SpecError(option, [(None, f"not a duration: {text!r} (write 90s, 10m or 1h30m)")])
    hours, minutes, secs = (float(part or 0) for part in match.groups())
    seconds = hours * 3600 + minutes * 60 + secs
    if not 1 <= seconds <= MAX_DURATION:
        raise SpecError(option, [(None, f"must be from 1 s to 10^7 s (got {text!r})")])
    return seconds
