"""Files in and out, with bounds: JSON that a person or another tool wrote is read only from
a regular file of sensible size, with sensible nesting and numbers; what infoflow writes
appears whole or not at all (a temporary file, then a rename).

Every refusal is a :class:`~infoflow.core.errors.SpecError` naming the file (exit code 2).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import secrets
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from infoflow.core.errors import SpecError

MAX_BYTES = 16 * 2**20  # a spec, config or report larger than this is not one
MAX_DEPTH = 32  # nesting of objects and arrays
MAX_INTEGER = 2**53  # beyond exact float arithmetic: no count infoflow reads is this large
TEMPORARY = ".infoflow-"  # how the name of a temporary file starts (a killed writer's are removed)


def read_json(path: Path, what: str = "file", max_bytes: int = MAX_BYTES) -> Any:
    """The JSON value in ``path``; ``what`` names it in messages (``spec``, ``config``).

    Refused promptly, never read forever: a missing file, a directory, anything that is not
    a regular file (a FIFO, a device), a file over ``max_bytes``; then invalid UTF-8 or
    JSON, NaN and Infinity, nesting deeper than MAX_DEPTH, numbers beyond MAX_INTEGER. A
    UTF-8 byte-order mark is skipped."""
    source = str(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise SpecError(source, [(None, f"{what} not found")]) from None
    except OSError as exc:
        raise SpecError(source, [(None, f"cannot read the {what} ({exc.strerror})")]) from None
    except ValueError:  # a path with a null byte: no file can have that name
        raise SpecError(
            source, [(None, f"{what} not found (its path holds a null byte)")]
        ) from None
    if stat.S_ISDIR(info.st_mode):
        raise SpecError(source, [(None, f"is a directory, not a {what}")])
    if not stat.S_ISREG(info.st_mode):
        raise SpecError(source, [(None, f"not a regular file: cannot be a {what}")])
    if info.st_size > max_bytes:
        limit = f"{max_bytes // 2**20} MiB"
        raise SpecError(source, [(None, f"{info.st_size:,} bytes: a {what} is at most {limit}")])
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # a BOM (Windows editors) is skipped
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(source, [(None, f"cannot read the {what} ({exc})")]) from None
    return parse_json(text, source)


def is_folder(path: Path) -> bool:
    """Whether ``path`` is a folder; False for a path no file can have (too long, a link
    loop, a null byte), which reading it then names (a review: ``Path.is_dir`` raised)."""
    try:
        return Path(path).is_dir()
    except (OSError, ValueError):
        return False


def path_trouble(exc: OSError | RuntimeError) -> str:
    """Why a path cannot be used, in words: the system's (a name too long), or a loop of
    symbolic links (``Path.resolve`` raises RuntimeError for it)."""
    return getattr(exc, "strerror", None) or "a loop of symbolic links"


def resolved(path: Path) -> Path:
    """``path`` made absolute, links followed; a SpecError naming it where that cannot be
    done (a link loop, a name too long: a review found a traceback)."""
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError) as exc:
        raise SpecError(
            str(path), [(None, f"cannot use this path ({path_trouble(exc)})")]
        ) from None


def parse_json(text: str, source: str, where: str | None = None) -> Any:
    """``text`` as JSON, held to the same bounds as :func:`read_json`; ``where`` names the
    field the text is the value of (an override)."""
    try:
        data = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        message = f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        raise SpecError(source, [(where, message)]) from None
    except RecursionError:
        raise SpecError(source, [(where, f"nested deeper than {MAX_DEPTH} levels")]) from None
    except RepeatedKey as exc:
        raise SpecError(source, [(where, str(exc))]) from None
    except ValueError as exc:  # NaN / Infinity, or an integer of thousands of digits
        message, place = str(exc), ""
        if "integer string conversion" in message:
            message = "an integer of thousands of digits is beyond any sensible size"
        else:
            place = _at(text)
        raise SpecError(source, [(where, f"unreadable number{place}: {message}")]) from None
    check_values(data, source, where)
    return data


def check_values(data: Any, source: str, where: str | None = None) -> None:
    """Refuse nesting deeper than MAX_DEPTH, non-finite floats, numbers beyond MAX_INTEGER and
    strings that are not text (a lone surrogate) in ``data``, naming the dotted path of the
    first offender."""
    stack: list[tuple[Any, list[str]]] = [(data, [where] if where else [])]
    while stack:
        value, path = stack.pop()
        field = ".".join(path) or None
        if len(path) > MAX_DEPTH:
            raise SpecError(source, [(field, f"nested deeper than {MAX_DEPTH} levels")])
        if isinstance(value, dict):
            for k in value:
                if not isinstance(k, str):  # a dict from Python: JSON's keys are strings
                    why = f"has the key {repr(k)[:40]}: a key is a string"
                    raise SpecError(source, [(field, why)])
                if not is_text(k):
                    raise SpecError(source, [(field, f'the key "{escaped(k)}" {_NOT_TEXT}')])
            stack += [(v, [*path, str(k)]) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(v, [*path, str(i)]) for i, v in enumerate(value)]
        elif isinstance(value, str) and not is_text(value):
            raise SpecError(source, [(field, _NOT_TEXT)])
        elif isinstance(value, float) and not math.isfinite(value):
            raise SpecError(source, [(field, f"{value} is not a finite number")])
        elif isinstance(value, float) and abs(value) > MAX_INTEGER:
            raise SpecError(source, [(field, f"{value:.3g} is beyond any sensible size")])
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INTEGER:
            digits = int(abs(value).bit_length() * math.log10(2)) + 1
            shown = f"{value:.3g}" if digits < 300 else f"an integer of about {digits} digits"
            raise SpecError(source, [(field, f"{shown} is beyond any sensible size")])


_NOT_TEXT = "holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape): not text"


def escaped(value: str) -> str:
    """``value`` printable whatever it holds: a lone surrogate as its ``\\ud800`` escape."""
    return value.encode("utf-8", "backslashreplace").decode()


def is_text(value: str) -> bool:
    """Whether ``value`` encodes as UTF-8 (JSON's \\ud800 escapes do not, alone)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class RepeatedKey(ValueError):
    """A JSON object that gives one key twice."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are each given once (JSON lets the last of a repeat win
    silently: a spec's second "states" would hide its first)."""
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise RepeatedKey(f"the key {json.dumps(key)} is given twice in one object")
        data[key] = value
    return data


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


#: A JSON string (skipped) or a bare NaN / Infinity, which JSON does not allow.
_BARE_CONSTANT = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)')


def _at(text: str) -> str:
    """`` at line L, column C`` of the first bare NaN or Infinity in ``text``, as invalid
    JSON is placed (a review: the error named no place); '' where there is none."""
    for match in _BARE_CONSTANT.finditer(text):
        if match.group(1):
            line = text.count("\n", 0, match.start()) + 1
            column = match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1
            return f" at line {line}, column {column}"
    return ""


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all."""
    write_with(path, lambda temporary: temporary.write_text(text, encoding="utf-8"))


def creatable_folder(path: Path, option: str) -> None:
    """A SpecError naming ``option`` when ``path`` is not a folder, nor one that could be
    made (its nearest existing ancestor a file, or not writable): checked before long work
    whose results would go there, so it fails first, creating nothing."""
    path = Path(path).absolute()
    if path.exists() and not path.is_dir():
        raise SpecError(str(path), [(option, "exists and is not a folder")])
    ancestor = path
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise SpecError(str(path), [(option, f"{ancestor} is a file, not a folder")])
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise SpecError(str(path), [(option, f"cannot create or write it ({ancestor}: read-only)")])


def cache_folder() -> Path:
    """Where measurements worth keeping go: ``$INFOFLOW_CACHE``, else
    ``$XDG_CACHE_HOME/infoflow`` (an absolute one, as the XDG rules say), else
    ``~/.cache/infoflow``."""
    if os.environ.get("INFOFLOW_CACHE"):
        return Path(os.environ["INFOFLOW_CACHE"])
    xdg = Path(os.environ.get("XDG_CACHE_HOME") or "")
    return (xdg if xdg.is_absolute() else Path.home() / ".cache") / "infoflow"


def write_cache(path: Path, text: str) -> None:
    """Write a cache file (a measurement worth keeping, not a result): a folder that cannot
    hold it (``$INFOFLOW_CACHE`` a file, or read-only) is a warning, and the caller goes on
    with what it measured."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, text)
    except (OSError, SpecError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else str(exc).split(": ", 1)[-1]
        print(f"warning: cannot cache {path} ({why}): measured, not kept", file=sys.stderr)


def write_with(path: Path, write: Callable[[Path], Any]) -> None:
    """Have ``write`` fill a temporary file beside ``path`` (same suffix, unique to this
    process), flush it to disk, then rename it over ``path``: the file appears whole or not
    at all. A link is written through (its target replaced); anything at ``path`` that is
    not a regular file (a directory, a device, a FIFO) is a SpecError, never replaced."""
    path = Path(path)
    suffix = path.suffix  # the format asked for, whatever a link points to (a review)
    try:
        path = path.resolve() if path.is_symlink() else path
        elsewhere = path.exists() and not path.is_file()
    except (OSError, RuntimeError) as exc:  # too long, a link loop (a review: a traceback)
        raise SpecError(str(path), [(None, f"cannot write it ({path_trouble(exc)})")]) from None
    if elsewhere:
        raise SpecError(str(path), [(None, "not a regular file: will not write over it")])
    temporary = path.with_name(f"{TEMPORARY}{os.getpid()}-{secrets.token_hex(4)}.tmp{suffix}")
    try:
        write(temporary)
        with open(temporary, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        raise SpecError(str(path), [(None, f"cannot write it ({exc.strerror or exc})")]) from None
    finally:
        with contextlib.suppress(OSError):  # read-only: the error above is the one to tell
            temporary.unlink(missing_ok=True)
