"""``--format jsonl``, the scripting shape: one JSON object per line, one line per spec, per
sweep point or per compared variant, with the same keys in every command::

    {"infoflow_version", "command", "kind", "source", "point", "predictions", "messages"}

``source`` is the spec's path as given, ``point`` the fields a sweep (or ``compare``) set at
this line (``{}`` when none), ``predictions`` maps each name to an object with at least a
``value`` (``predict``'s also carry unit, bound, provenance and note), ``messages`` what a
reader must know about the line. JSON is strict: a number that is not finite is null, and its
note says what it was.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from infoflow.core.version import __version__

if TYPE_CHECKING:
    from infoflow.core.results import Result

#: The keys of every line, in order.
KEYS = ("infoflow_version", "command", "kind", "source", "point", "predictions", "messages")


def record(
    command: str,
    kind: str,
    source: str,
    point: dict[str, Any] | None = None,
    predictions: dict[str, dict[str, Any]] | None = None,
    messages: list[str] | tuple[str, ...] = (),
) -> dict[str, Any]:
    """One line's object (``KEYS`` in order)."""
    values = (__version__, command, kind, source, point or {}, predictions or {}, list(messages))
    return dict(zip(KEYS, values, strict=True))


def of_result(
    command: str, result: Result, source: str, point: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The line of one :class:`~infoflow.core.results.Result` (its predictions' JSON form)."""
    predictions = {name: p.to_json() for name, p in result.predictions.items()}
    return record(command, result.kind, source, point, predictions, result.messages)


def line(data: dict[str, Any]) -> str:
    """``data`` as one line of strict JSON."""
    return json.dumps(data, allow_nan=False)
