"""``check_family(kind)``: does a registered family hold its end of every contract? As
scikit-learn's ``check_estimator`` does for an estimator, it runs the checks every family must
pass, on the family's own bundled specs, and raises :class:`FamilyCheckError` listing every
problem found (it trains nothing):

- the registry entry: a spec model whose ``kind`` is the kind, a predict function, extra
  commands among :data:`~infoflow.families.EXTRA_COMMANDS`, a validator or the reason there
  is none, a docs page and a specs folder (when run from a source checkout);
- every bundled spec loads, is of this kind, and predicts a result whose predictions have
  snake_case names, a bound, a provenance, and a strict JSON form;
- the validator: it implements the protocol, its smoke scale is a dataclass, and it plans
  every bundled spec into jobs whose groups are :class:`~infoflow.validators.protocol.Group`
  s of this kind, named by their identity, or refuses the spec with a reason (without torch
  the validator cannot be imported: ``check_family`` returns that it was not checked);
- the family's packages import no other family (:func:`foreign_imports`).
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import infoflow
from infoflow.families import EXTRA_COMMANDS, FAMILIES, Family, family

PACKAGE = Path(infoflow.__file__).resolve().parent
SNAKE = re.compile(r"[a-z][a-z0-9_]*")


class FamilyCheckError(AssertionError):
    """What a family gets wrong, one problem per line."""

    def __init__(self, kind: str, problems: list[str]):
        self.kind, self.problems = kind, problems
        super().__init__(f"{kind}: " + "\n".join(problems))


def check_family(kind: str, root: Path | None = None, plans: int | None = None) -> list[str]:
    """Run every check on the family ``kind`` and return what could not be checked here, and
    why; ``root`` is the source checkout holding its docs and specs (default: the one this
    package sits in, when there is one); ``plans`` caps how many bundled specs the validator
    plans (None: every one; planning a retrieval spec designs its experiment, a second or
    so)."""
    entry = family(kind)
    root = root or PACKAGE.parent
    problems = _registry(entry, root)
    specs = sorted((root / entry.specs).glob("*.json")) if entry.specs else []
    if (root / "specs").is_dir() and entry.specs and not specs:
        problems.append(f"no bundled specs in {entry.specs}")
    loaded = []
    for path in specs:
        found, spec = _predicts(kind, path)
        problems += found
        if spec is not None:
            loaded.append((path, spec))
    found, unchecked = _validator(entry, loaded[:plans])
    problems += found
    problems += [f"imports another family: {line}" for line in foreign_imports(kind)]
    if problems:
        raise FamilyCheckError(kind, problems)
    return unchecked


def _registry(entry: Family, root: Path) -> list[str]:
    problems = []
    model = entry.spec_model()
    literal = getattr(model.model_fields.get("kind"), "annotation", None)
    if getattr(literal, "__args__", None) != (entry.kind,):
        problems.append(f"the spec model's kind is not Literal[{entry.kind!r}]")
    if not callable(entry.predictor()):
        problems.append("the predict function is not callable")
    for name in entry.commands:
        if name not in EXTRA_COMMANDS or not callable(entry.command(name)):
            problems.append(f"command {name!r} is not an extra command with a callable")
    if entry.validator is None and not entry.not_validated:
        problems.append("no validator and no reason (not_validated)")
    if (root / "docs").is_dir() and not (entry.docs and (root / entry.docs).is_file()):
        problems.append(f"no docs page ({entry.docs or 'docs/<kind>.md'})")
    if (root / "specs").is_dir() and not (entry.specs and (root / entry.specs).is_dir()):
        problems.append(f"no bundled specs folder ({entry.specs or 'specs/<kind>'})")
    return problems


def _predicts(kind: str, path: Path) -> tuple[list[str], Any]:
    """A bundled spec loads as this kind and predicts a well-formed result."""
    try:
        spec = infoflow.load_spec(path)
    except infoflow.SpecError as exc:
        return [f"{path.name} does not load: {exc}"], None
    if spec.kind != kind:
        return [f"{path.name} is a {spec.kind} spec"], None
    try:
        result = infoflow.predict(spec, source=str(path))
    except infoflow.SpecError as exc:
        return [f"{path.name} does not predict: {exc}"], None
    problems = []
    for name, prediction in result.predictions.items():
        if not SNAKE.fullmatch(name):
            problems.append(f"{path.name}: prediction {name!r} is not a snake_case name")
        if prediction.bound not in ("exact", "upper", "lower", "estimate") or not (
            prediction.provenance
        ):
            problems.append(f"{path.name}: prediction {name!r} lacks a bound or a provenance")
    try:
        json.dumps(result.to_json(), allow_nan=False)
    except (TypeError, ValueError) as exc:
        problems.append(f"{path.name}: the JSON form is not strict JSON ({exc})")
    return problems, spec


def _method(name: str, value: Any) -> bool:
    """A method the :class:`~infoflow.validators.protocol.Validator` protocol declares."""
    return callable(value) and not name.startswith("_")


def _validator(entry: Family, loaded: list[tuple[Path, Any]]) -> tuple[list[str], list[str]]:
    """The validator implements the protocol and plans every bundled spec into groups: the
    problems found, and what could not be checked."""
    if entry.validator is None:
        return [], []
    try:
        from infoflow.validators.identity import content_name
        from infoflow.validators.protocol import CannotValidate, Group, Validator
    except ModuleNotFoundError as exc:  # no torch: the validator cannot be imported
        return [], [f"the validator: it needs {exc.name}, which is not installed"]
    validator = entry.load_validator()
    methods = [name for name, value in vars(Validator).items() if _method(name, value)]
    missing = [name for name in methods if not callable(getattr(validator, name, None))]
    missing += [name for name in Validator.__annotations__ if not hasattr(validator, name)]
    if missing or validator.kind != entry.kind:
        return [f"the validator lacks {missing} or is not of kind {entry.kind}"], []
    scale = validator.scale("smoke", None, None, "cpu")
    problems = [] if dataclasses.is_dataclass(scale) else ["the smoke scale is not a dataclass"]
    for path, spec in loaded:
        try:
            experiment = validator.plan(path.stem, spec, scale, path.parent)
        except CannotValidate as exc:
            problems += [] if str(exc) else [f"{path.name}: refused without a reason"]
            continue
        for job in experiment.jobs:
            group = job.group
            if not isinstance(group, Group) or group.kind != entry.kind:
                problems.append(f"{path.name}: job {job.name} is not a {entry.kind} Group")
                continue
            try:
                json.dumps([group.identity(), group.describe(), group.member_rows()])
            except (TypeError, ValueError) as exc:
                problems.append(f"{path.name}: group {group.name} is not JSON data ({exc})")
            if group.name != content_name(group.prefix, group.identity()):
                problems.append(f"{path.name}: group {group.name} is not named by its identity")
    return problems, []


def family_modules(kind: str) -> list[Path]:
    """The modules of a family: its theory package and its validator package."""
    folders = [PACKAGE / kind, PACKAGE / "validators" / kind]
    return [path for folder in folders if folder.is_dir() for path in sorted(folder.rglob("*.py"))]


def imported(path: Path) -> list[str]:
    """Every module ``path`` imports, at any level (relative imports resolved inside the
    package)."""
    inside = PACKAGE in path.resolve().parents
    parts = path.resolve().relative_to(PACKAGE.parent).with_suffix("").parts if inside else ()
    package = ".".join(parts[:-1])
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}".rstrip(".")
            names += [base] + [f"{base}.{alias.name}" for alias in node.names]
    return names


def foreign_imports(kind: str) -> list[str]:
    """``module imports name`` for every import of another family in ``kind``'s packages."""
    others = [k for k in FAMILIES if k != kind]
    owned = [f"infoflow.{k}" for k in others] + [f"infoflow.validators.{k}" for k in others]
    found = []
    for path in family_modules(kind):
        for name in imported(path):
            if any(name == o or name.startswith(o + ".") for o in owned):
                found.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    return sorted(set(found))
