"""Calibration files: the constants of the icl_markov working forms, each with provenance.

The theory gives functional forms only (theory note ``icl_markov.md``); every constant
comes from a file like ``calibration.json`` (shipped) or one written by ``infoflow calibrate
icl_markov``. A file holds

- ``exponents``: a, the memorization exponent (tau_1Mem ∝ K^a) and gamma, the transient
  exponent (Delta tau_K ∝ (K*_2 - K)^-gamma);
- ``capacity``: K*_2 = capacity * 2 d_model mlp_width / (C (C - 1)) where no anchor
  measured K*_2;
- ``transient_scale``: Delta tau_K = transient_scale * tau_2Gen * (1 - K/K*_2)^-gamma;
- ``clocks``: the race's clocks measured at a setting (validation runs with ``race``); where
  a spec's setting has them, K*_1 comes from the race instead of an anchor;
- ``anchors``: settings where K*_1, tau_2Gen or K*_2 were measured (a published figure or
  validation runs), each with its source, device and date. A prediction scales the nearest
  anchor that measured the quantity to the spec's settings.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from infoflow.core.errors import SpecError
from infoflow.core.files import read_json, write_text
from infoflow.icl_markov.race import Clocks, clocks_of
from infoflow.icl_markov.spec import ADDED_TRAINING, IclMarkovSpec, Training

SHIPPED = Path(__file__).with_name("calibration.json")

#: The settings an anchor records; numeric ones are compared in log ratio.
NUMERIC_SETTINGS = (
    "states",
    "context_len",
    "dirichlet_alpha",
    "layers",
    "d_model",
    "heads",
    "mlp_width",
    "batch_size",
    "lr",
    "weight_decay",
)
#: The training recipe's settings (since 2026-12-06) at their defaults, which every run
#: recorded without them trained with (a published number without them: :func:`with_recipe`).
RECIPE_DEFAULTS = {name: Training.model_fields[name].default for name in ADDED_TRAINING}
CATEGORICAL_SETTINGS = ("mixture", *RECIPE_DEFAULTS)
#: The numeric settings a run may set to 0.
MAY_BE_ZERO = ("weight_decay",)
#: A published number's recipe setting its source does not give: it matches no spec.
UNRECORDED = "unrecorded"
MAX_EXPONENT = 20.0
#: The provenance of a constant that is only a lower bound (a G2 that persisted to the end of
#: a budget bounds transient_scale from below): predictions from it are lower bounds too.
LOWER_BOUND = "fit:lower-bound"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Constant(_Strict):
    value: float = Field(
        gt=0,
        le=1e6,
        allow_inf_nan=False,
        strict=True,
        description="Every constant is positive (and at most 1e6).",
    )
    stderr: float | None = Field(None, ge=0, allow_inf_nan=False, strict=True)
    provenance: str = Field(description="A tag: paper:summary, prior:<work>, fit:<runs>, ...")
    source: str = Field(description="Where the number comes from, in a sentence.")
    fitted_at: list[dict[str, Any]] | None = Field(
        None,
        description="The settings of the runs it was fitted to (a decoder's: states, "
        "context_len, dirichlet_alpha, model): a measurement at one of them cannot test it.",
    )


class Bracket(_Strict):
    """A measured value with the interval it is known to lie in (the grid resolution)."""

    value: float = Field(gt=0, le=1e12, allow_inf_nan=False, strict=True)
    low: float | None = Field(None, gt=0, le=1e12, allow_inf_nan=False, strict=True)
    high: float | None = Field(None, gt=0, le=1e12, allow_inf_nan=False, strict=True)

    @model_validator(mode="after")
    def _ordered(self) -> Bracket:
        if (self.low is None) != (self.high is None):  # a review: one alone was a traceback
            raise ValueError("give both low and high, or neither")
        if (self.low or self.value) > self.value or (self.high or self.value) < self.value:
            raise ValueError("needs low <= value <= high")
        return self


class Exponents(_Strict):
    memorization: Constant = Field(description="a in tau_1Mem ∝ K^a.")
    transient: Constant = Field(description="gamma in Delta tau_K ∝ (K*_2 - K)^-gamma.")

    @model_validator(mode="after")
    def _moderate(self) -> Exponents:
        for name in ("memorization", "transient"):
            value = getattr(self, name).value
            if not 1 / MAX_EXPONENT <= value <= MAX_EXPONENT:  # K scales by a ratio ** (1 / a)
                raise ValueError(
                    f"{name}.value: an exponent is between {1 / MAX_EXPONENT:g} and "
                    f"{MAX_EXPONENT:g} (got {value:g}; a threshold scales by a ratio to 1 / a)"
                )
        return self


def complete_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """Every setting an anchor is compared on, the numeric ones positive (weight decay may be
    0; context_len at least 3, where g(N) = N / ln N grows, and states at least 2, as the
    working forms need),
    the recipe's as a spec takes them where given (:func:`with_recipe` fills the rest)."""
    missing = [k for k in (*NUMERIC_SETTINGS, "mixture") if k not in settings]
    if missing:
        raise ValueError(f"settings lacks {', '.join(missing)}")
    for key in NUMERIC_SETTINGS:
        value = settings[key]
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or not (value > 0 or (value == 0 and key in MAY_BE_ZERO)):
            what = "a number, 0 or more" if key in MAY_BE_ZERO else "a positive number"
            raise ValueError(f"settings.{key} must be {what} (got {value!r})")
    if settings["context_len"] < 3 or settings["states"] < 2:
        raise ValueError("settings.context_len must be at least 3 and settings.states at least 2")
    mixtures = get_args(IclMarkovSpec.model_fields["mixture"].annotation)
    if settings["mixture"] not in mixtures:  # a review: "x" loaded, and matched no spec
        raise ValueError(f"settings.mixture must be one of {', '.join(mixtures)}")
    for key in RECIPE_DEFAULTS:  # a review: "decay": "bogus" loaded, and matched no spec
        if settings.get(key, UNRECORDED) != UNRECORDED:
            try:
                Training(steps=1, **{key: settings[key]})
            except ValidationError as exc:
                raise ValueError(f"settings.{key}: {exc.errors()[0]['msg']}") from None
    return settings


def with_recipe(settings: dict[str, Any], provenance: str) -> dict[str, Any]:
    """``settings`` with the recipe settings they lack: the defaults, which every run before
    them trained with; for a published number (``paper:``), "unrecorded", which matches no
    spec (a file written before 2026-12-06 holds Park et al.'s figure without their recipe,
    which is not the default: a review)."""
    unknown = provenance.startswith("paper:")
    return {**{k: UNRECORDED if unknown else v for k, v in RECIPE_DEFAULTS.items()}, **settings}


class Anchor(_Strict):
    name: str
    settings: dict[str, Any] = Field(description="Numeric settings are positive numbers.")
    provenance: str
    source: str
    device: str
    date: str
    k1_star: Bracket | None = None
    k2_star: Bracket | None = None
    tau_2gen: Bracket | None = None
    final_boundary: Bracket | None = Field(
        None,
        description="The K at which the phase at the end of training changes from memorizing "
        "to G2 at this budget (a published final-time boundary such as Park et al.'s Figure "
        "1(a)): not K*_1, which asks which mechanism forms first.",
    )
    budget_steps: int | None = Field(
        None, gt=0, strict=True, description="The training steps behind final_boundary."
    )
    run_steps: int | None = Field(
        None,
        gt=0,
        strict=True,
        description="The steps of the runs that measured K*_1, tau_2Gen or K*_2.",
    )

    _complete = field_validator("settings")(complete_settings)

    @model_validator(mode="after")
    def _recipe(self) -> Anchor:
        if self.final_boundary is not None and self.budget_steps is None:
            raise ValueError("budget_steps: a final_boundary needs the steps it was read at")
        self.settings = with_recipe(self.settings, self.provenance)
        return self


class ClockRun(_Strict):
    """One member of a clock run: which clock, at what layer-1 rate, K (None: infinity),
    seed, and the step its mechanism formed (None: not within the run)."""

    clock: Literal["G", "G_prev", "M2_prev", "M1"]
    layer1_attention_lr: float = Field(gt=0, le=4, strict=True)
    chains: int | None = Field(None, gt=0, strict=True)
    seed: int = Field(ge=0, strict=True)
    time: float | None = Field(None, gt=0, allow_inf_nan=False, strict=True)
    status: Literal["formed", "not formed", "generalised first", "not timed"] = "formed"


class ClockSet(_Strict):
    """The clocks of the race (:mod:`infoflow.icl_markov.race`) measured at one setting."""

    name: str
    settings: dict[str, Any]
    provenance: str
    source: str
    device: str
    date: str
    steps: int = Field(
        gt=0, strict=True, description="The clock runs' length: a clock past it is None."
    )
    criterion: Literal["projection", "projection_global", "gap"] = Field(
        "gap",
        description="What timed the clocks (the spec's options.criterion): clocks of one "
        "criterion are never pooled with, or raced for a spec of, another.",
    )
    members: list[ClockRun]

    _complete = field_validator("settings")(complete_settings)

    @model_validator(mode="after")
    def _recipe(self) -> ClockSet:
        self.settings = with_recipe(self.settings, self.provenance)
        return self

    def clocks(self) -> Clocks:
        return clocks_of([m.model_dump() for m in self.members], self.steps)


class Calibration(_Strict):
    format: Literal[1] = Field(1, description="The file format this version reads.")
    description: str = ""
    exponents: Exponents
    capacity: Constant
    transient_scale: Constant
    anchors: list[Anchor] = []
    clocks: list[ClockSet] = []

    def nearest(self, quantity: str, settings: dict[str, Any]) -> Anchor | None:
        """The anchor that measured ``quantity`` at the settings closest to ``settings`` (the
        first listed of anchors equally close)."""
        found = [a for a in self.anchors if getattr(a, quantity) is not None]
        return min(found, key=lambda a: distance(a.settings, settings), default=None)

    def shadowed(self) -> list[tuple[str, str, str]]:
        """A calibrate table row for each anchor that :meth:`nearest` never reads for a
        quantity, an earlier one measuring it at the same settings (a newer run's anchor at a
        setting the file had was written and never used, unsaid: an audit, 2026-12-07)."""
        out = []
        for quantity in ("k1_star", "tau_2gen", "k2_star"):
            found = [a for a in self.anchors if getattr(a, quantity) is not None]
            for i, anchor in enumerate(found):
                first = next(a for a in found[: i + 1] if not distance(a.settings, anchor.settings))
                if first is not anchor:
                    why = f"not read: {first.name} is listed first at these settings"
                    out.append((f"{anchor.name}: {quantity}", "-", why))
        return out

    def clocks_at(
        self, settings: dict[str, Any], steps: int, criterion: str = "gap"
    ) -> ClockSet | None:
        """The clocks timed by ``criterion`` at exactly ``settings`` by runs of ``steps`` steps
        (the race is not scaled; the warmup, a share of the steps, differs between lengths), pooled
        over every set measured there. A seed two sets share (the same clock, rate and K run
        again with that seed, or the same group in two reports) counts once, as the first set
        lists it: the order statistics of the race's interval take its seeds as independent
        (a re-run counted twice narrowed it: an audit, 2026-12-07)."""
        same = [
            c
            for c in self.clocks
            if distance(c.settings, settings) == 0 and c.steps == steps and c.criterion == criterion
        ]
        if len(same) < 2:
            return same[0] if same else None
        members: dict[tuple, ClockRun] = {}
        for m in (m for c in same for m in c.members):
            members.setdefault((m.clock, m.layer1_attention_lr, m.chains, m.seed), m)
        dates = sorted({c.date[:10] for c in same})
        return same[0].model_copy(
            update={
                "name": " + ".join(c.name for c in same),
                "source": "; ".join(c.source for c in same),
                "device": ", ".join(sorted({c.device for c in same})),
                "date": dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}",
                "members": list(members.values()),
            }
        )


def settings_of(spec) -> dict[str, Any]:
    """The settings of an ``icl_markov`` spec that an anchor is compared on."""
    return {
        "states": spec.states,
        "context_len": spec.context_len,
        "dirichlet_alpha": spec.dirichlet_alpha,
        "mixture": spec.mixture,
        **spec.model.model_dump(),
        "batch_size": spec.training.batch_size,
        "lr": spec.training.lr,
        "weight_decay": spec.training.weight_decay,
        **{key: getattr(spec.training, key) for key in RECIPE_DEFAULTS},
    }


def distance(a: dict[str, Any], b: dict[str, Any]) -> float:
    """Sum of |log ratio| over the numeric settings plus 1 per differing category (a recipe
    setting missing is its default); a weight decay of 0 against another counts 1, as a
    category (its log ratio was a division by zero: a review)."""
    a, b = {**RECIPE_DEFAULTS, **a}, {**RECIPE_DEFAULTS, **b}
    total = sum(_apart(a[k], b[k]) for k in NUMERIC_SETTINGS if k in a and k in b)
    return total + sum(a.get(k) != b.get(k) for k in CATEGORICAL_SETTINGS)


def _apart(a: float, b: float) -> float:
    """How far two settings lie: |log ratio|, or 1 where one is 0 and the other is not."""
    if a == b:
        return 0.0
    return 1.0 if not a or not b else abs(math.log(a / b))


def differences(anchor: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    """``name spec-value vs anchor-value`` for every setting that differs (a recipe setting
    missing is its default)."""
    anchor, settings = {**RECIPE_DEFAULTS, **anchor}, {**RECIPE_DEFAULTS, **settings}
    keys = (*NUMERIC_SETTINGS, *CATEGORICAL_SETTINGS)
    return [
        f"{k} {settings[k]} vs {anchor[k]}"
        for k in keys
        if k in anchor and k in settings and anchor[k] != settings[k]
    ]


#: What a validate report given where a calibration file belongs is called.
A_REPORT = "a validate report, not a calibration file"


def load_calibration(path: str | Path | None = None, spec: str | None = None) -> Calibration:
    """Read a calibration file (the shipped one when ``path`` is None); a bad file is a
    :class:`SpecError` naming it and the field, or, for the file a spec names (``spec``: the
    spec's source), naming the spec and its ``calibration`` field with the file's problem."""
    path = Path(path) if path else SHIPPED
    try:
        data = read_json(path, "calibration file")
        if isinstance(data, dict) and "specs" in data and "exponents" not in data:
            why = f"{A_REPORT}: infoflow calibrate icl_markov makes one from it"
            raise SpecError(str(path), [(None, why)])
        try:
            return Calibration.model_validate(data)
        except ValidationError as exc:
            problems = [(".".join(map(str, e["loc"])) or None, e["msg"]) for e in exc.errors()]
            raise SpecError(str(path), problems) from None
    except SpecError as exc:
        if spec is None:
            raise
        problems = [f"field '{field}': {why}" if field else why for field, why in exc.problems]
        message = f"the calibration file {exc.source}: {'; '.join(problems)}"
        raise SpecError(spec, [("calibration", message)]) from None


def write_calibration(calibration: Calibration, path: Path) -> None:
    write_text(path, calibration.model_dump_json(indent=2, exclude_none=True) + "\n")
