"""The protocol every family's validator implements, and what flows between its stages.

``infoflow validate`` runs plan -> register -> train -> judge -> write (:mod:`run`). A
family takes part by implementing :class:`Validator`:

- ``scale(name, steps, seeds, device, budget, compile, pilot)``: its settings at a named
  scale (a frozen dataclass, recorded in the report), with ``--steps`` and ``--seeds``
  applied, for the device type the run trains on ("cpu" or "cuda"); ``budget``
  (``--budget``, seconds per spec) and ``pilot`` (``--pilot``: try a design's models
  briefly before taking it) are for a family that sizes its experiments to the time at
  hand, and ``compile`` (``--compile``) for one whose trainer compiles its step; the others
  ignore them;
- ``plan(name, spec, scale, base_dir)``: the experiment for one spec, whose ``jobs`` are the
  groups to train (a group: members that train together in one process on one device); it
  raises :class:`CannotValidate` for a spec it cannot train or measure;
- ``train(job, context)``: train one job to the end, resuming from its checkpoint, recording
  through ``context.store`` (the database, or a Recorder in a Ray worker);
- ``judge(experiment, context)``: load what was trained, measure, and turn the predictions
  into claims: a :class:`~infoflow.validators.claims.Section`;
- ``describe(settings)``, ``markdown(section)``, ``plot(out, sections)``: its sentence in the
  report's header, its part of ``report.md`` and its plots, all from report.json's data;
  ``figures(sections)``: those plots as matplotlib Figures by file name, unsaved (what
  ``plot`` writes, and :meth:`~infoflow.validators.run_report.Report.figures` shows).

The registry (:mod:`infoflow.families`) names each family's validator object.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from infoflow.validators.identity import content_name

if TYPE_CHECKING:
    import torch
    from matplotlib.figure import Figure

    from infoflow.core.spec_base import SpecBase
    from infoflow.validators.claims import Section
    from infoflow.validators.store import Recorder, Store


class Progress(Protocol):
    """Where a run is, for a display: a call per training step of a group (its mean loss at
    the steps that measure it, else None; speed: a short text, tokens per second and MFU,
    where the trainer measures it), and :meth:`phase` at each stage of the run."""

    def __call__(
        self, group: str, step: int, total: int, loss: float | None = None, speed: str = ""
    ) -> None: ...

    def phase(self, name: str, detail: str = "", total: int = 0) -> None:
        """A stage begins: planning, training (``total`` steps of all groups), judging,
        writing; ``detail`` says what on."""

    def finish(self, group: str, steps: int) -> None:
        """Group ``group`` (``steps`` long) ended: the steps it did not take (it stopped
        early) count as done, not toward the rate."""


class CannotValidate(Exception):
    """A spec this family's validator cannot train or measure; the message says why and
    goes to the report's "not validated" list."""


class Group:
    """Members that train together in one process on one device (a stacked ensemble, or one
    model). A family's group is a dataclass that subclasses this: it sets ``kind`` and
    ``code`` (the version of its training code: bump it and no checkpoint trained before is
    ever resumed), has a ``prefix`` and says what it trains (:meth:`trained`: everything
    that determines its models), how it reads in the report (:meth:`describe`) and who its
    members are (:meth:`member_rows`). Its ``name`` is the prefix and the digest of its
    :meth:`identity`, so two groups share a name only when they train the same models."""

    kind: ClassVar[str]
    code: ClassVar[int]
    prefix: str

    @cached_property
    def name(self) -> str:
        return content_name(self.prefix, self.identity())

    def identity(self) -> dict[str, Any]:
        """The family, the version of its training code, and what the group trains."""
        return {"kind": self.kind, "code": self.code, **self.trained()}

    def trained(self) -> dict[str, Any]:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        raise NotImplementedError

    def member_rows(self) -> list[dict[str, Any]]:
        raise NotImplementedError


@dataclass(frozen=True)
class Job:
    """One group to train, of the family ``kind``, for the experiment named ``experiment``
    (a :class:`Group`); ``steps`` is its length, for progress."""

    kind: str
    experiment: str
    group: Group
    steps: int

    @property
    def name(self) -> str:
        return self.group.name


@dataclass(frozen=True)
class Context:
    """Where a stage runs and records: the device, the store, the checkpoints folder, an
    optional progress callback, and whether trainers that can compile their step do
    (``torch.compile``; the retrieval trainer)."""

    device: torch.device
    store: Store | Recorder
    checkpoints: Path
    progress: Progress | None = None
    compile: bool = False


class Experiment(Protocol):
    """One spec's plan: its name and the jobs it needs trained."""

    name: str

    @property
    def jobs(self) -> list[Job]: ...


class Validator(Protocol):
    """A family's validator. Optional: ``preregister(experiment)``, the criterion that
    decides its verdicts, recorded before training; ``floors(section)``, each group's
    thresholds its claims use (group -> metric -> [(value, what)]), drawn on its learning
    curves; ``estimates(experiment, device)``, each group's estimated training seconds on
    the step-time model, set beside the measured time in report.md."""

    kind: str
    #: The run options it uses among ``--budget``, ``--compile`` and ``--pilot`` (validate
    #: says on stderr when it ignores ``--budget`` or ``--compile``; ``--pilot`` is on by
    #: default, so a family that ignores it goes unnamed).
    run_options: tuple[str, ...]

    def scale(
        self,
        name: str,
        steps: int | None,
        seeds: int | None,
        device: str,
        budget: float | None = None,
        compile: bool = False,
        pilot: bool = False,
    ) -> Any: ...

    def plan(self, name: str, spec: SpecBase, scale: Any, base_dir: Path) -> Experiment: ...

    def train(self, job: Job, context: Context) -> None: ...

    def judge(self, experiment: Any, context: Context) -> Section: ...

    def describe(self, settings: dict[str, Any]) -> str: ...

    def markdown(self, section: dict[str, Any]) -> list[str]: ...

    def plot(self, out: Path, sections: list[dict[str, Any]]) -> list[Path]: ...

    def figures(self, sections: list[dict[str, Any]]) -> dict[str, Figure]: ...


def ignored_options(validators: list[Validator], budget: float | None, compile: bool) -> list[str]:
    """A note for each family of ``validators`` that does not use the options given
    (``--budget``, ``--compile``), once a family."""
    given = [name for name, on in (("--budget", budget is not None), ("--compile", compile)) if on]
    notes = {}
    for validator in validators:
        ignored = [name for name in given if name not in validator.run_options]
        if ignored:
            notes[validator.kind] = (
                f"note: {validator.kind} does not use {' or '.join(ignored)}: its specs train at "
                "the scale's settings (`infoflow plan` estimates their time; --steps and --seeds "
                "change it)"
            )
    return list(notes.values())
