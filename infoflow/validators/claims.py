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
import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from infoflow.core.tables import Tabular

Verdict = Literal["confirmed", "refuted", "inconclusive"]
VERDICTS: tuple[Verdict, ...] = ("confirmed", "refuted", "inconclusive")

#: What a claim puts to the test, in the order reports list them: a claim the paper states
#: (``paper``), a published number reproduced (``reproduction``), a rule the project
#: reconstructed where the paper is not public (``reconstruction``), a hand-built witness
#: (``construction``), and a check of the tool itself: byte counts, identities, training
#: that converges (``engineering``). Reports tally each kind apart.
KINDS = ("paper", "reproduction", "reconstruction", "construction", "engineering")


#: Seeds a verdict over seeds needs: one seed's measurement has no spread to judge it by.
MIN_SEEDS = 2


def fewer_seeds(count: int) -> str | None:
    """Why a judgment over ``count`` seeds decides nothing (None: it has MIN_SEEDS at least)."""
    if count >= MIN_SEEDS:
        return None
    return f"{count} seed(s): an interval over seeds needs {MIN_SEEDS} at least"


#: A claim's columns as a table (its JSON form's keys, ``derived_from`` aside).
CLAIM_COLUMNS = ("id", "kind", "claim", "verdict", "predicted", "measured", "tolerance", "reason")


@dataclass(frozen=True)
class Claim(Tabular):
    """One prediction against one measurement (in a notebook: a one-row table)."""

    id: str
    statement: str
    predicted: Any
    measured: Any
    tolerance: str
    verdict: Verdict
    reason: str = ""
    derived_from: Any = None  # the predictions the claim was derived from (JSON data)
    kind: str = ""  # one of KINDS; a Section refuses a claim without one

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")
        if self.kind and self.kind not in KINDS:
            raise ValueError(f"claim kind {self.kind!r} is not one of {KINDS}")

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

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Claim:
        """The claim whose JSON form (report.json's) is ``data``."""
        return cls(
            data.get("id", ""),
            data["claim"],
            data["predicted"],
            data["measured"],
            data["tolerance"],
            data["verdict"],
            data.get("reason", ""),
            data.get("derived_from"),
            data.get("kind", ""),
        )

    def rows(self) -> list[dict[str, Any]]:
        data = self.to_json()
        return [{key: data.get(key) for key in CLAIM_COLUMNS}]

    def headers(self) -> tuple[str, ...]:
        return CLAIM_COLUMNS

    def caption(self) -> str:
        return f"{self.kind or 'claim'}: {self.verdict}"

    def prefixed(self, prefix: str) -> Claim:
        """The same claim about one group of several: its id ``prefix/id``, its statement
        starting ``[prefix]``."""
        return replace(self, id=f"{prefix}/{self.id}", statement=f"[{prefix}] {self.statement}")

    def over_seeds(self, seeds: int) -> Claim:
        """This claim, judged over ``seeds`` seeds: inconclusive with fewer than MIN_SEEDS,
        its reason saying what the seed alone showed."""
        why = fewer_seeds(seeds)
        if why is None or self.verdict == "inconclusive":
            return self
        alone = "agrees" if self.verdict == "confirmed" else "disagrees"
        reason = f"{why} (alone, it {alone}" + (f": {self.reason})" if self.reason else ")")
        return replace(self, verdict="inconclusive", reason=reason)

    def of_kind(self, kind: str) -> Claim:
        return replace(self, kind=kind)

    def to_json(self) -> dict[str, Any]:
        data = {
            "id": self.id,
            "kind": self.kind,
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
        """Every claim has a kind (ValueError otherwise). Claims that share an id (a family's
        slip) keep apart as ``id#2``, ``id#3``: the database keys claims by id, and a second
        would replace the first."""
        seen: dict[str, int] = {}
        unique = []
        for claim in self.claims:
            if not claim.kind:
                raise ValueError(f"claim {claim.id!r} has no kind (one of {KINDS})")
            seen[claim.id] = seen.get(claim.id, 0) + 1
            count = seen[claim.id]
            unique.append(claim if count == 1 else replace(claim, id=f"{claim.id}#{count}"))
        object.__setattr__(self, "claims", tuple(unique))

    def to_json(self) -> dict[str, Any]:
        claims = [claim.to_json() for claim in self.claims]
        return _plain({"kind": self.kind, "name": self.name, **self.body, "claims": claims})


def finite_number(value: Any) -> bool:
    """A measurement a verdict can rest on: a finite number (not a diverged NaN or infinity,
    nor the None a NaN reads back as from the run's database)."""
    return isinstance(value, int | float) and math.isfinite(value)


def labelled(claims: list[Claim], kinds: dict[str, str]) -> tuple[Claim, ...]:
    """``claims`` with their kinds, looked up in ``kinds`` by the id's head (what comes
    before the first ``:``, after any ``prefix/``); a claim whose head is not there keeps
    the kind it has (a Section refuses it if it has none)."""
    out = []
    for claim in claims:
        head = claim.id.rsplit("/", 1)[-1].split(":", 1)[0]
        out.append(claim.of_kind(kinds[head]) if head in kinds else claim)
    return tuple(out)


def tally(claims: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Verdict counts per kind (claims in their JSON form), kinds in :data:`KINDS` order,
    only the kinds present."""
    out = {}
    for kind in KINDS:
        verdicts = [c["verdict"] for c in claims if c.get("kind") == kind]
        if verdicts:
            out[kind] = {v: verdicts.count(v) for v in VERDICTS}
    return out


def _plain(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` as report.json will hold it (string keys, lists for tuples)."""
    return json.loads(json.dumps(data))
