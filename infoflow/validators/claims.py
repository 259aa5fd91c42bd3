"""What a validator concludes: typed claims, gathered in one report section per spec.

A :class:`Claim` is one prediction put to the test: a stable identifier (``id``: what the
claim is about, in the family's own terms, unchanged when its sentence is reworded; the
database keys claims by it), what was predicted, what was measured, the tolerance used, and
a verdict from a closed set (``confirmed``, ``refuted``,
``inconclusive`` with the reason) and, where it comes from the theory's numbers, which
numbers (``derived_from``, e.g. the predicted exponents of the models it compares). A
:class:`Section` is one spec's part of the report: its claims and the family's own record
of what was trained and measured (``body``, plain JSON data, so that ``report.json`` alone
can redraw the plots or refit a calibration). Their ``to_json`` forms are the shapes
``report.json`` holds (docs/validate.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Verdict = Literal["confirmed", "refuted", "inconclusive"]
VERDICTS: tuple[Verdict, ...] = ("confirmed", "refuted", "inconclusive")


@dataclass(frozen=True)
class Claim:
    """One prediction against one measurement."""

    id: str
    statement: str
    predicted: Any
    measured: Any
    tolerance: str
    verdict: Verdict
    reason: str = ""
    derived_from: Any = None  # the predictions the claim was derived from (JSON data)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")

    @classmethod
    def judged(
        cls,
        id: str,
        statement: str,
        predicted: Any,
        measured: Any,
        tolerance: str,
        holds: bool,
        reason: str = "",
        derived_from: Any = None,
    ) -> Claim:
        """Confirmed when ``holds``, else refuted."""
        verdict: Verdict = "confirmed" if holds else "refuted"
        return cls(id, statement, predicted, measured, tolerance, verdict, reason, derived_from)

    @classmethod
    def undecided(
        cls,
        id: str,
        statement: str,
        predicted: Any,
        measured: Any,
        tolerance: str,
        reason: str,
        derived_from: Any = None,
    ) -> Claim:
        """Inconclusive: the measurement cannot decide the claim, for ``reason``."""
        verdict: Verdict = "inconclusive"
        return cls(id, statement, predicted, measured, tolerance, verdict, reason, derived_from)

    def prefixed(self, prefix: str) -> Claim:
        """The same claim about one group of several: its id ``prefix/id``, its statement
        starting ``[prefix]``."""
        return replace(self, id=f"{prefix}/{self.id}", statement=f"[{prefix}] {self.statement}")

    def to_json(self) -> dict[str, Any]:
        data = {
            "id": self.id,
            "claim": self.statement,
            "predicted": self.predicted,
            "measured": self.measured,
            "tolerance": self.tolerance,
            "verdict": self.verdict,
            "reason": self.reason,
        }
        if self.derived_from is not None:
            data["derived_from"] = self.derived_from
        return _plain(data)


@dataclass(frozen=True)
class Section:
    """One spec's part of the report: ``kind`` and ``name`` (the spec's), the family's
    record ``body`` (JSON data) and the claims."""

    kind: str
    name: str
    body: dict[str, Any] = field(default_factory=dict)
    claims: tuple[Claim, ...] = ()

    def __post_init__(self) -> None:
        """Claims that share an id (a family's slip) keep apart as ``id#2``, ``id#3``: the
        database keys claims by id, and a second would replace the first."""
        seen: dict[str, int] = {}
        unique = []
        for claim in self.claims:
            seen[claim.id] = seen.get(claim.id, 0) + 1
            count = seen[claim.id]
            unique.append(claim if count == 1 else replace(claim, id=f"{claim.id}#{count}"))
        object.__setattr__(self, "claims", tuple(unique))

    def to_json(self) -> dict[str, Any]:
        claims = [claim.to_json() for claim in self.claims]
        return _plain({"kind": self.kind, "name": self.name, **self.body, "claims": claims})


def _plain(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` as report.json will hold it (string keys, lists for tuples)."""
    return json.loads(json.dumps(data))
