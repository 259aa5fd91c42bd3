"""Specs: read a JSON task spec, apply ``--set`` overrides, validate it into a typed model.

A spec is one JSON object whose ``kind`` field picks its family. Every family's model lives
in its own subpackage; this module joins them in one discriminated union and turns every
failure (file, JSON, schema, override) into a :class:`~infoflow.errors.SpecError` that
names the file and the field.
"""

from __future__ import annotations

import copy
import difflib
import json
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Union

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from infoflow.errors import FieldError, SpecError
from infoflow.looped_kv.spec import LoopedKVSpec
from infoflow.retrieval.spec import RetrievalSpec

#: Every spec family, by its ``kind``.
SPEC_KINDS: dict[str, type[BaseModel]] = {"looped_kv": LoopedKVSpec, "retrieval": RetrievalSpec}

AnySpec = Annotated[Union[tuple(SPEC_KINDS.values())], Field(discriminator="kind")]  # noqa: UP007
Spec = LoopedKVSpec | RetrievalSpec  # the union of the spec models, for type hints

_ADAPTER = TypeAdapter(AnySpec)


def load_spec(source: str | Path | Mapping[str, Any], overrides: Sequence[str] = ()) -> Spec:
    """Read and validate a spec from a JSON file or a dict.

    ``overrides`` are ``key.path=value`` strings applied before validation; ``value`` is
    read as JSON when it parses (numbers, booleans, objects) and as a string otherwise.
    Relative paths inside the spec (``model.hf_config``) are resolved against the spec
    file's folder (the working directory for a dict). Raises :class:`SpecError`.
    """
    if isinstance(source, Mapping):
        name, base_dir, data = "<dict>", Path.cwd(), copy.deepcopy(dict(source))
    else:
        path = Path(source)
        name, base_dir, data = str(path), path.parent, _read_json(path)
    for override in overrides:
        _apply_override(data, override, name)
    if "kind" not in data:
        raise SpecError(name, [("kind", f"missing; expected one of {_kinds()}")])
    if data["kind"] not in SPEC_KINDS:
        raise SpecError(
            name, [("kind", f"unknown kind {data['kind']!r}; expected one of {_kinds()}")]
        )
    try:
        return _ADAPTER.validate_python(data, context={"base_dir": base_dir})
    except ValidationError as exc:
        model = SPEC_KINDS[data["kind"]]
        raise SpecError(name, [_describe(err, model) for err in exc.errors()]) from None


def spec_schema(kind: str | None = None) -> dict[str, Any]:
    """JSON Schema of one spec kind, or of the union of all kinds when ``kind`` is None."""
    if kind is None:
        return _ADAPTER.json_schema()
    if kind not in SPEC_KINDS:
        raise SpecError("schema", [("kind", f"unknown kind {kind!r}; expected one of {_kinds()}")])
    return SPEC_KINDS[kind].model_json_schema()


def _kinds() -> str:
    return ", ".join(SPEC_KINDS)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(str(path), [(None, "file not found")]) from None
    except IsADirectoryError:
        raise SpecError(str(path), [(None, "is a directory, not a spec file")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(str(path), [(None, f"cannot read the file ({exc})")]) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        raise SpecError(str(path), [(None, msg)]) from None
    if not isinstance(data, dict):
        raise SpecError(str(path), [(None, "a spec must be a JSON object with a 'kind' field")])
    return data


def _apply_override(data: dict[str, Any], override: str, name: str) -> None:
    key, sep, raw = override.partition("=")
    parts = key.strip().split(".")
    if not sep or not all(parts):
        msg = f"--set {override!r}: expected key.path=value"
        raise SpecError(name, [(None, msg)])
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    node = data
    for i, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            field = ".".join(parts[: i + 1])
            msg = f"--set {override!r}: this field is not an object"
            raise SpecError(name, [(field, msg)])
        node = child
    node[parts[-1]] = value


def _describe(err: Mapping[str, Any], model: type[BaseModel]) -> tuple[str | None, str]:
    """One pydantic error as (dotted field, message a person can act on)."""
    loc = [str(part) for part in err["loc"]]
    if loc and loc[0] in SPEC_KINDS:
        loc = loc[1:]  # the discriminated union puts the tag first
    cause = err.get("ctx", {}).get("error")
    if isinstance(cause, FieldError):
        return ".".join([*loc, cause.field]), str(cause)
    field = ".".join(loc) or None
    kind = err["type"]
    if kind == "missing":
        return field, "required field is missing"
    if kind == "extra_forbidden":
        allowed = _fields_at(model, loc[:-1])
        close = difflib.get_close_matches(loc[-1], allowed, n=1)
        hint = f"did you mean '{close[0]}'?" if close else f"allowed: {', '.join(allowed)}"
        return field, f"unknown field; {hint}"
    msg = err["msg"].removeprefix("Value error, ")
    value = err.get("input")
    if isinstance(value, str | int | float):
        msg += f" (got {json.dumps(value)})"
    return field, msg


def _fields_at(model: type[BaseModel], loc: list[str]) -> list[str]:
    """Names of the fields of the (nested) model found at ``loc``."""
    for part in loc:
        annotation = model.model_fields[part].annotation
        nested = [
            a for a in _flatten(annotation) if isinstance(a, type) and issubclass(a, BaseModel)
        ]
        if not nested:
            return []
        model = nested[0]
    return list(model.model_fields)


def _flatten(annotation: Any) -> list[Any]:
    if typing.get_origin(annotation) in (Union, types.UnionType):
        return [a for arg in typing.get_args(annotation) for a in _flatten(arg)]
    return [annotation]
