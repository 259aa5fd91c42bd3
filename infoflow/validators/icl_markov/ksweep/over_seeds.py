"""The seeds of one K -> one value: the majority's phase, and the medians of their times.

A time a seed never reached within the budget is censored, not missing: where the claim is
"how soon", it counts as later than every time measured (infinite), so that one seed that
reached it does not speak for the seeds that did not
(docs/results/2026-12-05-icl-looped-verdicts-preregistered.md).
"""

from __future__ import annotations

import math
import statistics


def mode(values: list[str]) -> str | None:
    """The most common value; None when two or more tie (never decided by name)."""
    counts = sorted((values.count(v) for v in set(values)), reverse=True)
    if len(counts) > 1 and counts[0] == counts[1]:
        return None
    return max(set(values), key=values.count)


def median_found(values: list) -> float | None:
    """The median of the values the seeds have (None: none has one)."""
    found = [v for v in values if v is not None]
    return statistics.median(found) if found else None


def censored_median(values: list) -> float | None:
    """The median with a seed that never reached it (None) counted as infinite; None when
    that median is infinite (at least half the seeds never reached it)."""
    if not values:
        return None
    median = statistics.median([math.inf if v is None else v for v in values])
    return None if math.isinf(median) else median


def majority_median(values: list) -> float | None:
    """The median over the seeds that have a value, when more than half of them do (a
    minority does not make the K's value); else None."""
    found = [v for v in values if v is not None]
    return statistics.median(found) if 2 * len(found) > len(values) else None
