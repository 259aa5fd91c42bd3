"""Text for people: one line of what a user wrote, escaped for Markdown or LaTeX, and byte
counts in binary units (KiB, MiB, GiB, as the papers use)."""

from __future__ import annotations

import re

BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def one_line(text: object, limit: int = 400) -> str:
    """``text`` on one line (control characters escaped), cut to ``limit`` characters: what
    a user wrote cannot break an error message over lines or flood the terminal."""
    flat = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def format_bytes(count: int | float) -> str:
    """``786432`` -> ``768 KiB``; ``3221225472`` -> ``3 GiB`` (at most two decimals)."""
    value, power = float(count), 0
    while abs(value) >= 1024 and power < len(BINARY_UNITS) - 1:
        value, power = value / 1024, power + 1
    return f"{trim(value)} {BINARY_UNITS[power]}"


def trim(value: float) -> str:
    """At most two decimals, no trailing zeros: 768.0 -> 768, 21.333 -> 21.33; three
    significant digits for very large or small values: 1e+06."""
    if value and not 1e-3 <= abs(value) < 1e5:
        return f"{value:.3g}"
    return f"{value:.2f}".rstrip("0").rstrip(".")


def markdown_text(text: object, starts_line: bool = False) -> str:
    """A string as Markdown shows it, on one line, literally: no table cell, link, image,
    HTML tag, entity, code span or emphasis (and, for text that ``starts_line``, no heading,
    list or quote) can start from what a user wrote (a formula's ``2*N*bytes`` included)."""
    flat = one_line(text, 2000)
    for char in "\\|`*_~":
        flat = flat.replace(char, "\\" + char)
    flat = re.sub(r"\](?=[(\[])", r"\\]", flat)  # no [text](link), ![image](src), [a][ref]
    flat = re.sub(r"&(?=#?\w+;)", "&amp;", flat)
    flat = re.sub(r"<(?=[A-Za-z/!?])", "&lt;", flat)
    return re.sub(r"^([#>+*=-]|\d+[.)])", r"\\\1", flat) if starts_line else flat


def markdown_code(text: object) -> str:
    """A string as a Markdown code span, on one line (backticks inside kept literal)."""
    flat = one_line(text, 2000).replace("|", "\\|")
    return f"`` {flat} ``" if "`" in flat else f"`{flat}`"


_TEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "_": r"\_",
    "&": r"\&",
    "%": r"\%",
    "#": r"\#",
    "{": r"\{",
    "}": r"\}",
    "^": r"\^{}",
    "~": r"\~{}",
    "$": r"\$",
}


def latex_text(text: str) -> str:
    """``text`` as literal LaTeX on one line: a user's string cannot end the line or run a
    command."""
    return "".join(_TEX_ESCAPES.get(char, char) for char in one_line(text, 2000))
