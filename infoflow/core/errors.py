"""Errors that are the user's to fix: a bad spec file, field or override (exit code 2)."""

from __future__ import annotations

from infoflow.core.text import one_line


class SpecError(Exception):
    """A spec that cannot be used: the file, and each problem with the field it is about.

    ``source`` is the spec file (``<dict>`` for a spec given as a Python dict); ``problems``
    pairs a dotted field path (``None`` when the whole spec is at fault) with a message.
    """

    def __init__(self, source: str, problems: list[tuple[str | None, str]]):
        self.source = source
        self.problems = problems
        super().__init__(str(self))

    @property
    def field(self) -> str | None:
        """The field of the first problem."""
        return self.problems[0][0]

    def __str__(self) -> str:
        parts = [
            f"field '{one_line(field, 80)}': {one_line(msg)}" if field else one_line(msg)
            for field, msg in self.problems
        ]
        return f"{one_line(self.source, 200)}: " + "; ".join(parts)


class FieldError(ValueError):
    """Raised inside a spec validator to blame one field by its dotted path.

    Pydantic reports errors of whole-model validators at the model's root; the loader reads
    this exception back from the error's context and names ``field`` instead.
    """

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(message)


def out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is an allocation that failed: Python's, torch's on a GPU or a CPU."""
    return (
        isinstance(exc, MemoryError)
        or type(exc).__name__ == "OutOfMemoryError"
        or "can't allocate memory" in str(exc)
    )


def install_hint(packages: str, extra: str) -> str:
    """How to install what is missing, in words that work from an installed package and from
    a clone of the repository (where an extra of a package named infoflow would be looked
    for on the package index, not in the clone)."""
    return f"pip install {packages} (or, in a clone of infoflow: pip install -e '.[{extra}]')"
