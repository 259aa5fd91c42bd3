"""The fields of a validate ``report.json`` that ``infoflow calibrate icl_markov`` reads, as
strict models: a report is checked against them before the fit
(:mod:`~infoflow.icl_markov.fit`), so a damaged one is refused naming the field
(``specs.0.groups.1.setting.training``), not with Python's exception from deep in the fit.
The fit reads the report as it is; fields it does not read are not checked.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from infoflow.core.errors import SpecError
from infoflow.icl_markov.calibration import ClockRun

#: The names pydantic puts in an error's location for the member of ``int | float`` it tried.
UNION_TAGS = ("int", "float")
Number = Annotated[int | float, Field(allow_inf_nan=False)]
Positive = Annotated[int | float, Field(gt=0, allow_inf_nan=False)]


class _Read(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class _Training(_Read):
    steps: int = Field(gt=0)
    batch_size: Positive
    lr: Positive
    weight_decay: Number


class _Model(_Read):
    d_model: int = Field(gt=0)
    mlp_width: int = Field(gt=0)


class _DecoderSetting(_Read):
    states: int = Field(ge=2)
    model: _Model


class _Setting(_DecoderSetting):
    context_len: int
    dirichlet_alpha: Number
    mixture: str
    training: _Training


class _PerK(_Read):
    outcome: str
    memorized_at: Positive | None
    transient_durations: dict[str, Number | None] | None = None
    transient_duration: Number | None = None  # reports before 2026-12-05

    @model_validator(mode="after")
    def _transient(self) -> _PerK:
        if self.transient_durations is None and "transient_duration" not in self.model_fields_set:
            raise ValueError("needs transient_durations or transient_duration")
        return self


class _Tau2Gen(_Read):
    value: Positive | None
    min: Positive | None = None
    max: Positive | None = None
    checkpoint_ratio: Positive | None = None

    @model_validator(mode="after")
    def _timed(self) -> _Tau2Gen:
        if self.value and None in (self.min, self.max, self.checkpoint_ratio):
            raise ValueError("a value needs min, max and checkpoint_ratio")
        return self


class _Lower(_Read):
    low: Positive | None


class _Bracket(_Lower):
    high: Positive | None


class _K1(_Bracket):
    monotone: bool


class _K1Fit(_Read):
    status: str
    low: Positive | None = None
    high: Positive | None = None
    value: Positive | None = None
    outcomes: int | None = None

    @model_validator(mode="after")
    def _fitted(self) -> _K1Fit:
        if self.status == "fit" and self.low and self.high and None in (self.value, self.outcomes):
            raise ValueError("a fit needs value and outcomes")
        return self


class _Measurement(_Read):
    per_k: dict[str, _PerK]
    tau_2gen: _Tau2Gen
    k2_star: _Lower
    k1_star: _K1
    k1_fit: _K1Fit | None = None

    @field_validator("per_k")
    @classmethod
    def _chains(cls, per_k: dict[str, _PerK]) -> dict[str, _PerK]:
        if not all(k.isdigit() and int(k) > 0 for k in per_k):
            raise ValueError("its keys are numbers of chains")
        return per_k


class _Group(_Read):
    name: str
    setting: _Setting
    chains: list[Any]
    seeds: list[Any]
    measurement: _Measurement


class _Capacity(_Read):
    capacity: _Bracket


class _DecoderSeed(_Read):
    seed: int
    measurement: _Capacity


class _Decoder(_Read):
    name: str
    setting: _DecoderSetting
    seeds: list[_DecoderSeed] | None = None
    measurement: _Capacity | None = None

    @model_validator(mode="after")
    def _measured(self) -> _Decoder:
        if not self.seeds and self.measurement is None:
            raise ValueError("needs seeds or measurement")
        return self


class _Clock(ClockRun):
    """A clock run as the report lists it (fields beside the calibration's allowed)."""

    model_config = ConfigDict(extra="allow", strict=True)


class _Clocks(_Read):
    setting: _Setting
    members: list[_Clock]
    steps: int = Field(gt=0)


class _Spec(_Read):
    name: str
    groups: list[_Group]
    decoders: list[_Decoder] = []
    clocks: list[_Clocks] = []


class _Report(_Read):
    started: str
    scale: str
    device: str
    specs: list[dict[str, Any]]


def check(file: str, report: dict) -> None:
    """Raise a :class:`SpecError` naming ``file`` and the first bad field the fit would read
    in ``report`` (an object whose ``specs`` is a list of objects; one without icl_markov
    sections is left to the fit, which says it holds nothing to calibrate from)."""
    ours = [(i, spec) for i, spec in enumerate(report["specs"]) if spec.get("kind") == "icl_markov"]
    if not ours:
        return
    try:
        _Report.model_validate(report)
    except ValidationError as exc:
        raise _named(file, exc, ()) from None
    for index, spec in ours:
        try:
            _Spec.model_validate(spec)
        except ValidationError as exc:
            raise _named(file, exc, ("specs", index)) from None


def _named(file: str, exc: ValidationError, within: tuple) -> SpecError:
    first = exc.errors()[0]
    message = "should be an object" if first["type"] == "model_type" else first["msg"]
    where = [str(part) for part in within + first["loc"] if part not in UNION_TAGS]
    return SpecError(file, [(".".join(where), message)])


def memorizing_testable(limit: dict | None) -> bool:
    """Whether a K's ceiling entry (a group's ``measurement.ceiling``) lets memorizing be read
    there: a projection's ``testable`` memorizing; a gap criterion's ceiling says only
    whether the phases are ``detectable``."""
    limit = limit or {}
    return limit.get("testable", {}).get("memorizing", limit.get("detectable", True))
