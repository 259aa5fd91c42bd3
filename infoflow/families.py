"""The registry of spec families: each ``kind`` is named here once, with everything that
serves it.

A :class:`Family` names, as ``module:attribute`` strings imported only when used, the spec
model, the predict function, the extra commands the family supports (those in
:data:`EXTRA_COMMANDS`), its validator (or why it has none), the files it reads without a
spec (a model's config.json), plus its docs page and specs folder. Everything that
dispatches on a kind (the spec loader, ``predict``, the CLI, the validate pipeline, the
report, the plots, the executor) asks :func:`family`; an unknown kind is a
:class:`~infoflow.core.errors.SpecError` (exit code 2), never another family's code.

Adding a family is its own packages (``infoflow/<kind>/``, ``infoflow/validators/<kind>/``)
plus one entry in :data:`FAMILIES`. This module imports nothing heavy, so ``infoflow
--help`` stays fast.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

#: Commands beyond predict and validate that a family may support.
EXTRA_COMMANDS = (
    "explain",
    "graph",
    "calibrate",
    "compare",
    "plot",
    "sweep",
    "plan",
    "compile",
)


@dataclass(frozen=True)
class Family:
    """One spec family. Every reference is a ``"module:attribute"`` string."""

    kind: str
    spec: str  # the pydantic spec model
    predict: str  # (spec, source) -> Result
    commands: dict[str, str] = field(default_factory=dict)  # name in EXTRA_COMMANDS -> callable
    validator: str | None = None  # an object implementing validators.protocol.Validator
    not_validated: str | None = None  # why there is no validator (when ``validator`` is None)
    # (path, serving fields) -> a spec (a dict) for a file the family reads without one (a
    # model's config.json), or None when the file is not such a file
    reads: str | None = None
    docs: str = ""  # the family's page, relative to the repository root
    specs: str = ""  # the folder of its bundled specs, relative to the repository root

    def spec_model(self) -> type:
        return resolve(self.spec)

    def predictor(self) -> Any:
        return resolve(self.predict)

    def command(self, name: str, source: str = "<spec>") -> Any:
        """The callable behind ``infoflow NAME`` for this family; a SpecError (exit 2) naming
        ``source`` and the families that have it when this one does not."""
        if name not in self.commands:
            from infoflow.core.errors import SpecError

            having = ", ".join(k for k, f in FAMILIES.items() if name in f.commands) or "none"
            message = f"'{name}' is not available for {self.kind} specs (it is for: {having})"
            raise SpecError(source, [("kind", message)])
        return resolve(self.commands[name])

    def load_validator(self) -> Any:
        """The family's validator; a SpecError (exit 2) with the reason when it has none."""
        if self.validator is None:
            from infoflow.core.errors import SpecError

            reason = self.not_validated or "no validator is registered"
            raise SpecError(self.kind, [("kind", f"{self.kind} specs are not validated: {reason}")])
        return resolve(self.validator)


FAMILIES: dict[str, Family] = {
    family.kind: family
    for family in (
        Family(
            kind="looped_kv",
            spec="infoflow.looped_kv.spec:LoopedKVSpec",
            predict="infoflow.looped_kv.predict:predict_looped_kv",
            commands={
                "compare": "infoflow.looped_kv.compare:compare",
                "plot": "infoflow.looped_kv.capacity:plot_command",
                "plan": "infoflow.validators.looped_kv.estimate:plan_command",
            },
            validator="infoflow.validators.looped_kv.validator:VALIDATOR",
            reads="infoflow.looped_kv.direct:spec_for_file",
            docs="docs/looped_kv.md",
            specs="specs/looped_kv",
        ),
        Family(
            kind="retrieval",
            spec="infoflow.retrieval.spec:RetrievalSpec",
            predict="infoflow.retrieval.predict:predict_retrieval",
            commands={
                "explain": "infoflow.retrieval.explain:explain",
                "graph": "infoflow.retrieval.explain:graph",
                "sweep": "infoflow.retrieval.sweep:sweep_lines",
                "plan": "infoflow.validators.retrieval.validator:plan_command",
                "compile": "infoflow.validators.retrieval.compile_report:compile_command",
            },
            validator="infoflow.validators.retrieval.validator:VALIDATOR",
            docs="docs/retrieval.md",
            specs="specs/retrieval",
        ),
        Family(
            kind="icl_markov",
            spec="infoflow.icl_markov.spec:IclMarkovSpec",
            predict="infoflow.icl_markov.predict:predict_icl_markov",
            commands={
                "calibrate": "infoflow.icl_markov.fit:calibrate",
                "plan": "infoflow.validators.icl_markov.estimate:plan_command",
            },
            validator="infoflow.validators.icl_markov.validator:VALIDATOR",
            docs="docs/icl_markov.md",
            specs="specs/icl_markov",
        ),
    )
}


def family(kind: object, source: str = "<spec>") -> Family:
    """The family of ``kind``; a SpecError (exit 2) naming ``source`` and the known kinds
    when there is none."""
    if isinstance(kind, str) and kind in FAMILIES:
        return FAMILIES[kind]
    from infoflow.core.errors import SpecError

    raise SpecError(source, [("kind", f"unknown kind {kind!r}; expected one of {kinds()}")])


def kinds() -> str:
    """The registered kinds, for messages: ``looped_kv, retrieval, icl_markov``."""
    return ", ".join(FAMILIES)


def resolve(reference: str) -> Any:
    """The object a ``"module:attribute"`` reference names (imported now)."""
    module, _, attribute = reference.partition(":")
    return getattr(import_module(module), attribute)
