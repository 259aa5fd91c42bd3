"""Base classes every spec family builds on."""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, model_validator

from infoflow.core.errors import FieldError
from infoflow.core.files import path_trouble
from infoflow.core.tables import Tabular, flat
from infoflow.core.text import one_line


class StrictModel(BaseModel):
    """A spec section: unknown fields are errors, so a typo cannot pass silently; nor can a
    boolean where a number belongs (pydantic would read ``true`` as 1), nor a string where
    only a number does (``"3"`` as 3), in a list's entries and a dict's values too, nor a
    string or a number where a boolean belongs (it would read ``"yes"`` as true), nor a
    number that is not finite (pydantic would read the string ``"inf"`` as infinity)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _no_boolean_for_a_number(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, field in cls.model_fields.items():
                key = field.alias or name
                mistyped = _mistyped(key, data.get(key), field.annotation)
                if mistyped:
                    raise FieldError(*mistyped)
        return data


def fill_derived(model: BaseModel, name: str, value: Any) -> None:
    """Set a field a spec model derives from its others (``head_dim`` from ``hidden_size``),
    from the model's own after-validator: specs are frozen once validated, so that no
    assignment can bypass validation."""
    model.__dict__[name] = value
    model.__pydantic_fields_set__.add(name)


def _mistyped(key: str, value: Any, annotation: Any) -> tuple[str, str] | None:
    """(dotted field, message) where ``value``, or an entry of a list or a value of a dict
    in it (``heads.0``, ``params.D``), is a boolean where a number belongs, a string where
    only a number does, or anything but a boolean where only a boolean does; else None."""
    if isinstance(value, list | dict):
        inner = _inside(annotation, type(value))
        items = enumerate(value) if isinstance(value, list) else value.items()
        found = (_mistyped(f"{key}.{at}", item, inner) for at, item in items)
        return next(filter(None, found), None) if inner is not None else None
    if isinstance(value, bool) and _takes_numbers(annotation):
        return key, "a boolean, where a number belongs"
    if isinstance(value, str) and _takes_numbers(annotation, only=True):
        return key, f"the string {json.dumps(value[:40])}, where a number belongs"
    if value is not None and not isinstance(value, bool) and _takes_bool(annotation):
        shown = json.dumps(value)[:40] if isinstance(value, str | int | float) else "a value"
        return key, f"{shown}, where a boolean (true or false) belongs"
    return None


def _members(annotation: Any) -> list[Any]:
    """A union's members (an ``Annotated`` one unwrapped), or the annotation alone."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _members(arg)]
    return [annotation]


def _inside(annotation: Any, container: type) -> Any:
    """The annotation of the entries of a ``container`` (a list, which a tuple of one kind
    is in JSON, or a dict: its values) that ``annotation`` takes (``list[int] | int``:
    int); None where it takes none."""
    for member in _members(annotation):
        origin, args = typing.get_origin(member), typing.get_args(member)
        kinds = {arg for arg in args if arg is not Ellipsis}
        if origin is tuple and container is list and len(kinds) == 1:
            return kinds.pop()
        if origin is container and args:
            return args[-1]
    return None


def _takes_bool(annotation: Any) -> bool:
    """The annotation takes a boolean and nothing else but None (pydantic would read "yes"
    and 1 as true)."""
    members = _members(annotation)
    return bool in members and all(m in (bool, type(None)) for m in members)


def _takes_numbers(annotation: Any, only: bool = False) -> bool:
    """The annotation takes numbers and not booleans (``int``, ``float | None``, an
    ``Annotated`` int, ...); ``only``: and no string (None, lists, tuples and dicts aside)."""
    members = [m for m in _members(annotation) if m is not type(None)]
    if only:  # a list, a tuple or a dict does not take a string either
        members = [m for m in members if typing.get_origin(m) not in (list, tuple, dict)]
    numeric = [m in (int, float) for m in members]
    return bool not in members and (bool(numeric) and all(numeric) if only else any(numeric))


class SpecBase(StrictModel, Tabular):
    """Fields common to every spec; each family adds ``kind`` as a literal and its own. In a
    notebook a spec is a table of its fields (dotted paths) and the values set."""

    description: str | None = Field(None, description="Free text: what this spec is and why.")
    sweep: dict[str, list[Any]] | None = Field(
        None,
        description="A grid: dotted field paths to lists of values (seq_len: [8, 16]); the "
        "spec stands for every combination. Predictions are made once per point.",
    )

    _folder: Path | None = PrivateAttr(default=None)
    _changed: tuple[str, ...] = PrivateAttr(default=())
    _validated: str = PrivateAttr(default="")  # the fields as validated, as JSON

    @model_validator(mode="after")
    def _remember_context(self, info: ValidationInfo) -> SpecBase:
        context = info.context or {}
        folder = context.get("base_dir")
        self._folder = Path(folder if folder is not None else Path.cwd()).resolve()
        self._changed = tuple(context.get("changed", ()))
        self._validated = self._fields_json()
        return self

    def _fields_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, default=str)

    def changed_in_place(self) -> bool:
        """Whether a field differs from what was validated: a list or dict changed inside
        (``spec.params["D"] = 0``, ``heads.append(5)``: the model is frozen, what it holds is
        not), or a ``model_copy(update=...)``, which pydantic does not validate."""
        return self._fields_json() != self._validated

    def __eq__(self, other: object) -> bool:
        """Fields, folder and :attr:`changed`, as pydantic compares them; not the record of
        what was validated (a spec changed in place equals one loaded so)."""
        if not isinstance(other, SpecBase):
            return NotImplemented
        return (
            type(self) is type(other)
            and self.__dict__ == other.__dict__
            and (self._folder, self._changed) == (other._folder, other._changed)
        )

    @property
    def base_dir(self) -> Path:
        """The folder the spec's relative paths are read from: its file's, or the working
        directory when a dict was validated (at that moment, not now). Two specs are equal
        when their fields, their folders (a relative path names another file) and their
        :attr:`changed` are."""
        return self._folder or Path.cwd()

    @property
    def changed(self) -> tuple[str, ...]:
        """The overrides (``--set``, or an option that sets a field) that changed a field
        since the description was written, ``key=value`` as given."""
        return self._changed

    def described(self) -> str | None:
        """The description, saying what was changed since it was written (it was written for
        the file's values: "d = 4" read under a table computed with d = 8, a review)."""
        if not self.description or not self._changed:
            return self.description
        return f"{self.description} (Changed since it was written: {', '.join(self._changed)}.)"

    def rows(self) -> list[dict[str, Any]]:
        """One row per field that is set (nested fields as dotted paths), the description
        aside (the table's note)."""
        data = flat(self.model_dump(mode="json", exclude={"description"}, exclude_none=True))
        return [{"field": key, "value": value} for key, value in data.items()]

    def headers(self) -> tuple[str, ...]:
        return ("field", "value")

    def caption(self) -> str:
        return f"{getattr(self, 'kind', 'spec')} spec"

    def notes(self) -> tuple[str, ...]:
        return (self.described(),) if self.description else ()


def existing_path(value: str | None, info: ValidationInfo, what: str, folder: bool) -> str | None:
    """A path field given relative to the spec file, resolved to an absolute path; an error
    names ``what`` when the file (or ``folder``) is not there."""
    if value is None:
        return None
    path = Path((info.context or {}).get("base_dir", ".")) / value
    try:
        there = path.is_dir() if folder else path.is_file()
        found = there or path.exists()
        absolute = path.resolve() if there else None
    except (OSError, RuntimeError) as exc:  # too long, a link loop (a review: a traceback)
        raise ValueError(
            f"{what}: cannot use {one_line(str(path), 120)} ({path_trouble(exc)})"
        ) from None
    if absolute is None:
        kind = "a folder" if folder else "a regular file"
        raise ValueError(f"{what}: {path} is not {kind}" if found else f"{what} not found: {path}")
    return str(absolute)
