"""Text for people: one line of what a user wrote, escaped for Markdown or LaTeX, and byte
counts in binary units (KiB, MiB, GiB, as the papers use)."""

from __future__ import annotations

import re
from typing import Any

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


def latex_name(name: str) -> str:
    """A symbol's name in maths mode: a word upright (``bytes``, ``mlp_width``: not the
    product of its letters, which a review found), a Greek letter's name its letter, the
    parts after the first underscore its subscript."""
    from sympy.printing.conventions import split_super_sub
    from sympy.printing.latex import greek_letters_set

    def word(text: str) -> str:
        return text if len(text) == 1 else r"\mathrm{" + text.replace(" ", r"\ ") + "}"

    head, _, subscript = split_super_sub(name)  # K2 is K_{2}, as sympy writes it
    head = "\\" + head if head in greek_letters_set else word(head)
    return head + ("_{" + word(" ".join(subscript)) + "}" if subscript else "")


def sympy_latex(expression: Any) -> str:
    """``expression`` in LaTeX, each symbol as :func:`latex_name` writes it (the JSON form's
    ``latex`` and the LaTeX table alike: a review found ``bytes`` as b y t e s in one)."""
    import sympy

    names = {symbol: latex_name(symbol.name) for symbol in expression.free_symbols}
    return sympy.latex(expression, symbol_names=names)
