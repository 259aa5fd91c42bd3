"""Specs: read a JSON task spec, apply ``--set`` overrides, validate it into a typed model.

A spec is one JSON object whose ``kind`` field picks its family in the registry
(:mod:`infoflow.families`). Every family's model lives in its own subpackage; this module
joins the registered ones in one discriminated union and turns every failure (file, JSON,
schema, override) into a :class:`~infoflow.core.errors.SpecError` that names the file and the
field.
"""

from __future__ import annotations

import copy
import difflib
import itertools
import json
import math
import re
import types
import typing
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Union

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from infoflow.core.errors import FieldError, SpecError
from infoflow.core.files import check_values, escaped, is_folder, is_text, parse_json, read_json
from infoflow.core.spec_base import SpecBase
from infoflow.core.text import one_line
from infoflow.families import FAMILIES, family, resolve

#: A loaded spec of any family (each family's model subclasses SpecBase and adds ``kind``).
Spec = SpecBase
#: Points a sweep expands to, each a spec predicted in full (about 1 ms a point of a plain
#: target): ``infoflow sweep`` evaluates a retrieval sweep vectorised, up to 10^7.
MAX_SWEEP_POINTS = 10_000
SCHEMA_KEY = "$schema"


def _adapter() -> TypeAdapter:
    return _adapter_for(tuple(f.spec for f in FAMILIES.values()))


@lru_cache(maxsize=8)
def _adapter_for(references: tuple[str, ...]) -> TypeAdapter:
    """The discriminated union of the spec models named by ``references`` (the registry's,
    so the union is rebuilt when the registry changes)."""
    models = tuple(resolve(reference) for reference in references)
    return TypeAdapter(Annotated[Union[models], Field(discriminator="kind")])  # noqa: UP007


def load_spec(source: str | Path | Mapping[str, Any], overrides: Sequence[str] = ()) -> Spec:
    """Read and validate a spec from a JSON file or a dict.

    ``overrides`` are ``key.path=value`` strings applied before validation; ``value`` is
    read as JSON when it parses (numbers, booleans, objects) and as a string otherwise.
    Relative paths inside the spec (``model.hf_config``) are resolved against the spec
    file's folder (the working directory for a dict). A file a family reads without a spec
    (a model's ``config.json``, or its folder) is read as that family's spec. A dict is held
    to the bounds a file is (nesting, integer sizes, finite numbers). Raises
    :class:`SpecError`, for any argument.
    """
    if isinstance(overrides, str | bytes) or not isinstance(overrides, Sequence):
        raise SpecError("<overrides>", [(None, "overrides are a list of 'key.path=value'")])
    if isinstance(source, Mapping):
        check_values(source, "<dict>")
        name, base_dir, data = "<dict>", Path.cwd(), copy.deepcopy(dict(source))
    elif isinstance(source, str | Path):
        path = Path(source)
        data = None if is_folder(path) else _read_json(path)
        if data is None or "kind" not in data:  # a folder, or a model's config.json?
            direct = load_model_file(path, {}, overrides)
            if direct is not None:
                return direct
        name, base_dir, data = str(path), path.parent, data or _read_json(path)
    else:
        kind = type(source).__name__
        raise SpecError("<spec>", [(None, f"a spec is a JSON file's path or a dict, not {kind}")])
    editor = data.pop(SCHEMA_KEY, None)  # an editor's pointer to `infoflow schema`
    if editor is not None and not isinstance(editor, str):
        raise SpecError(name, [(SCHEMA_KEY, "the schema's location is a string (a path or URL)")])
    before = copy.deepcopy(data)
    for override in overrides:
        if not isinstance(override, str):
            raise SpecError(name, [(None, f"an override is 'key.path=value', not {override!r}")])
        _apply_override(data, override, name)
    if "kind" not in data:
        raise SpecError(name, [("kind", f"missing; expected one of {', '.join(FAMILIES)}")])
    model = family(data["kind"], name).spec_model()
    context = {"base_dir": base_dir, "changed": _changes(before, data, overrides)}
    spec = _validated(model, data, context, name)  # the other families not even imported
    if spec.sweep:  # its keys and first point now, as the CLI's expand did (an audit)
        _check_grids(spec, name)
        _at_point(spec, {key: grid[0] for key, grid in spec.sweep.items()}, name)
    return spec


def as_spec(spec: Any, kind: str, name: str, what: str) -> tuple[Spec, str]:
    """``spec`` as a loaded spec of ``kind``, and the name its errors give: a path is loaded
    and names them (unless ``name`` is given), a dict is loaded; anything else, or a spec of
    another kind, is a SpecError saying what ``what`` takes (an AttributeError before)."""
    if isinstance(spec, str | Path):
        name = str(spec) if name == "<spec>" else name
    if isinstance(spec, str | Path | Mapping):
        spec = load_spec(spec)
    if getattr(spec, "kind", None) != kind or not isinstance(spec, SpecBase):
        given = getattr(spec, "kind", None) or type(spec).__name__
        why = f"{what} takes a {kind} spec (loaded, or a path or dict), not {given}"
        raise SpecError(name, [(None, why)])
    return spec, name


def revalidated(spec: Spec, name: str) -> Spec:
    """``spec`` validated again from its fields, against its own folder; a SpecError naming
    ``name`` and the field where it no longer passes."""
    context = {"base_dir": spec.base_dir, "changed": spec.changed}
    return _validated(type(spec), spec.model_dump(mode="json"), context, name)


def _validated(model: type[BaseModel], data: dict, context: dict, name: str) -> Spec:
    """``data`` validated by ``model``; a SpecError naming ``name`` and each field."""
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        raise SpecError(name, describe(exc.errors(), model)) from None


def load_model_file(
    path: Path, serving: Mapping[str, Any], overrides: Sequence[str] = ()
) -> Spec | None:
    """The spec of a file a family reads without a spec file (a model's config.json, or its
    folder), with ``serving`` as its serving fields, loaded (errors name ``path``); None when
    no family reads it."""
    for registered in FAMILIES.values():
        spec = resolve(registered.reads)(path, dict(serving)) if registered.reads else None
        if spec is not None:
            try:
                return load_spec(spec, overrides)
            except SpecError as exc:
                raise SpecError(str(path), exc.problems) from None
    return None


def expand(
    spec: Spec, base_dir: str | Path | None = None, name: str = "<spec>"
) -> list[tuple[dict[str, Any], Spec]]:
    """The points of a spec's ``sweep`` as (the point's values, the spec at that point); a
    spec without a sweep is its own single point. ``base_dir`` resolves relative paths (by
    default the folder the spec was loaded from: ``spec.base_dir``)."""
    if not isinstance(spec, SpecBase):
        kind = type(spec).__name__
        raise SpecError(name, [(None, f"expand takes a loaded spec (load_spec), not a {kind}")])
    if not spec.sweep:
        return [({}, spec)]
    _check_grids(spec, name)
    keys, grids = list(spec.sweep), list(spec.sweep.values())
    size = math.prod(len(grid) for grid in grids)
    if size > MAX_SWEEP_POINTS:
        message = f"{size:,} points, more than the {MAX_SWEEP_POINTS:,} a sweep is expanded to "
        message += "(`infoflow sweep` evaluates a retrieval sweep vectorised, up to 10^7)"
        raise SpecError(name, [("sweep", message)])
    folder = Path(base_dir) if base_dir is not None else spec.base_dir
    base = spec.model_dump(**_FIELDS)
    points = []
    for values in itertools.product(*grids):
        point = dict(zip(keys, values, strict=True))
        points.append((point, _at_point(spec, point, name, (folder, base))))
    return points


#: A spec's fields as a sweep point starts from them.
_FIELDS: dict[str, Any] = {"mode": "json", "exclude": {"sweep"}, "exclude_none": True}


def _check_grids(spec: Spec, name: str) -> None:
    """A SpecError when the sweep varies the kind or itself, or has an empty axis."""
    check_sweep_keys(list(spec.sweep), name)
    if any(not grid for grid in spec.sweep.values()):
        raise SpecError(name, [("sweep", "every sweep entry needs at least one value")])


def _at_point(spec: Spec, point: dict[str, Any], name: str, at: tuple | None = None) -> Spec:
    """``spec`` at one point of its sweep (its fields set to ``point``'s values), validated;
    a SpecError names the point. ``at``: the folder relative paths resolve against and the
    spec's fields as JSON (by default its own folder and fields)."""
    folder, base = at or (spec.base_dir, None)
    data = copy.deepcopy(base) if base is not None else spec.model_dump(**_FIELDS)
    for key, value in point.items():
        set_path(data, key, value, name, f"sweep.{key}")
    model = family(spec.kind, name).spec_model()
    context = {"base_dir": folder, "changed": spec.changed}
    where = ", ".join(f"{k}={json.dumps(v)}" for k, v in point.items())
    return _validated(model, data, context, f"{name} (sweep point {where})")


def check_sweep_keys(keys: Sequence[str], name: str) -> None:
    """A SpecError naming ``name`` when a sweep would vary the kind or the sweep itself."""
    fixed = [key for key in keys if key.split(".")[0] in ("kind", "sweep")]
    if fixed:
        raise SpecError(name, [(f"sweep.{fixed[0]}", "a sweep cannot vary the kind or the sweep")])


def spec_schema(kind: str | None = None) -> dict[str, Any]:
    """JSON Schema of one spec kind, or of the union of all kinds when ``kind`` is None; a
    spec may name it in ``"$schema"`` (the key editors read), which load_spec ignores."""
    if kind is None:
        schema = _adapter().json_schema()
        specs = [schema["$defs"][ref["$ref"].split("/")[-1]] for ref in schema["oneOf"]]
    else:
        schema = family(kind, "schema").spec_model().model_json_schema()
        specs = [schema]
    for spec in specs:
        spec["properties"][SCHEMA_KEY] = {
            "type": "string",
            "description": "Where an editor finds this schema (`infoflow schema > schema.json`).",
        }
    return schema


def _read_json(path: Path) -> dict[str, Any]:
    data = read_json(path, "spec file")
    if not isinstance(data, dict):
        raise SpecError(str(path), [(None, "a spec must be a JSON object with a 'kind' field")])
    return data


def _apply_override(data: dict[str, Any], override: str, name: str) -> None:
    key, sep, raw = override.partition("=")
    if not is_text(override):  # undecodable bytes on the command line
        raise SpecError(
            name, [(None, f"--set '{escaped(override)}': not text (undecodable bytes)")]
        )
    if not sep or not all(key.strip().split(".")):
        raise SpecError(name, [(None, f"--set {override!r}: expected key.path=value")])
    try:
        value = parse_json(raw, name, key.strip())
    except SpecError as exc:
        if not exc.problems[0][1].startswith("invalid JSON"):
            raise  # JSON, but out of bounds
        value = raw  # not JSON: a string
    sweep, field = data.get("sweep"), key.strip()
    if field.startswith("sweep.") and (sweep is None or isinstance(sweep, dict)):
        # a swept field's key is its dotted path: sweep.training.lr sweeps training.lr (it
        # made {"training": {"lr": ...}}, "not a valid list")
        data["sweep"] = {**(sweep or {}), field.removeprefix("sweep."): value}
        return
    set_path(data, field, value, name, f"--set {override!r}")
    if isinstance(sweep, dict):  # the field set (and any inside it) is no longer swept
        for swept in [k for k in sweep if k == field or k.startswith(f"{field}.")]:
            del sweep[swept]
        for swept in [k for k in sweep if field.startswith(f"{k}.")]:  # inside a swept object
            _set_in_each(sweep, swept, field.removeprefix(f"{swept}."), value, (name, override))
        if not sweep:
            del data["sweep"]


def _set_in_each(sweep: dict, swept: str, key: str, value: Any, given: tuple[str, str]) -> None:
    """Set ``key`` in each object the sweep takes for ``swept`` (``--set codec.r_k=32`` where
    ``codec`` is swept: each swept codec's r_k; the sweep's own value replaced the override,
    which the caption named as applied: an audit, 2026-12-07). ``given``: the spec's name and
    the override, for errors."""
    name, override = given
    if not isinstance(sweep[swept], list):
        return  # not a list of values: the sweep's check names it
    for i, each in enumerate(sweep[swept]):
        if not isinstance(each, dict):
            why = f"--set {override!r}: this value is not an object"
            raise SpecError(name, [(f"sweep.{swept}[{i}]", why)])
        set_path(each, key, value, name, f"--set {override!r}")


def _changes(
    before: dict[str, Any], after: dict[str, Any], overrides: Sequence[str]
) -> tuple[str, ...]:
    """What the overrides changed, ``key=value`` as given (the last value of a key; not one
    that leaves a field as the file writes it, or sets null a field the file leaves out,
    unless it took the field out of the sweep): the description was written for the file's
    values. Nothing when one sets the description, the caller's own text."""
    given = {o.partition("=")[0].strip(): o.partition("=")[2].strip() for o in overrides}
    if "description" in given:
        return ()
    swept = [
        set(data["sweep"]) if isinstance(data.get("sweep"), dict) else set()
        for data in (before, after)
    ]
    cut = swept[0] - swept[1] if "sweep" not in given else set()  # a --set sweep says it
    inside = {  # swept objects an override set a field in (at the base value too: a review)
        s for s in swept[1] if _at(before, f"sweep.{s}") != _at(after, f"sweep.{s}")
    }
    return tuple(
        f"{k}={v}"
        for k, v in given.items()
        if _at(before, k) != _at(after, k)
        or any(f"{s}.".startswith(f"{k}.") for s in cut)
        or any(k.startswith(f"{s}.") for s in inside)
    )


def _at(data: dict[str, Any], key: str) -> Any:
    """The value at the dotted ``key`` of a raw spec (None where there is none); a swept
    field's, ``sweep.a.b``, is the sweep's entry ``a.b``."""
    sweep = data.get("sweep")
    if key.startswith("sweep.") and isinstance(sweep, dict):
        return sweep.get(key.removeprefix("sweep."))
    for part in key.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data


def set_path(data: dict[str, Any], key: str, value: Any, name: str, what: str) -> None:
    """Set the dotted field ``key`` of a raw spec, creating objects on the way; a SpecError
    naming ``name`` and the field when one on the way is not an object (``what`` says what
    set it: an override, a sweep)."""
    parts = key.split(".")
    node = data
    for i, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            field = ".".join(parts[: i + 1])
            raise SpecError(name, [(field, f"{what}: this field is not an object")])
        node = child
    node[parts[-1]] = value


#: pydantic's names for the members of a union (``heads: int | list[int]``), put in an
#: error's location beside the field names.
_UNION_MEMBERS = {"int", "float", "str", "bool", "list", "dict", "tuple", "none"}
_UNION_TAG = r"constrained-\w+|(list|dict|tuple|set|nullable|function-\w+|lax-or-strict)\[.*\]"


def describe(errors: list, model: type[BaseModel]) -> list[tuple[str | None, str]]:
    """pydantic's errors as (dotted field, message), each once: a union's members out of the
    names, and where one member's value was wrong, not the others' "not a list"."""
    found = [(_describe(err, model), err["type"].endswith("_type")) for err in errors]
    fields = {problem[0] or "" for problem, mistyped in found if not mistyped}

    def explained(field: str | None) -> bool:  # by another member's error, here or inside
        return any(f == field or f.startswith(f"{field}.") for f in fields)

    kept = [p for p, mistyped in found if not (mistyped and explained(p[0]))]
    return list(dict.fromkeys(kept))


def _describe(err: Mapping[str, Any], model: type[BaseModel]) -> tuple[str | None, str]:
    """One pydantic error as (dotted field, message a person can act on)."""
    loc = [str(part) for part in err["loc"]]
    if loc and loc[0] in FAMILIES:
        loc = loc[1:]  # the discriminated union puts the tag first
    if err["type"] != "extra_forbidden":  # there the last part is the user's own key
        loc = [part for part in loc if not _union_member(part)]
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
        msg += f" (got {one_line(json.dumps(value), 80)})"
    return field, msg


def _union_member(part: str) -> bool:
    """A location part that names a union's member (``list[constrained-int]``), not a field,
    a key or an index."""
    return part in _UNION_MEMBERS or re.fullmatch(_UNION_TAG, part) is not None


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
