"""Run docs/notebook.ipynb's code cells in order, in one namespace, in the notebook's folder,
as Jupyter would (no kernel needed), and write what they print and show back as the cells'
outputs. Run from anywhere after a change that alters what the notebook shows;
tests/shared/test_notebook.py runs the cells the same way and fails until the stored outputs
match again.

A cell's last line, when it is an expression, is shown as Jupyter shows it: its
``text/plain`` repr, with ``text/markdown`` and ``text/html`` from the object's
``_repr_markdown_`` and ``_repr_html_`` and, for a matplotlib Figure, ``image/png`` (as the
inline backend draws it).
"""

from __future__ import annotations

import ast
import base64
import contextlib
import io
import json
import os
from pathlib import Path
from typing import Any

NOTEBOOK = Path(__file__).resolve().parent / "notebook.ipynb"


def execute(path: Path = NOTEBOOK) -> list[list[dict[str, Any]]]:
    """Every code cell's outputs (nbformat's shapes), the cells run in order in one
    namespace with the notebook's folder as the working directory."""
    cells = json.loads(path.read_text())["cells"]
    namespace: dict[str, Any] = {"__name__": "__main__"}
    outputs = []
    previous = Path.cwd()
    os.chdir(path.parent)
    try:
        count = 0
        for cell in cells:
            if cell["cell_type"] == "code":
                count += 1
                outputs.append(_run("".join(cell["source"]), namespace, count))
    finally:
        os.chdir(previous)
    return outputs


def _run(source: str, namespace: dict[str, Any], count: int) -> list[dict[str, Any]]:
    """One cell's outputs: what it printed, then its last expression's value."""
    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(tree, f"<cell {count}>", "exec"), namespace)
        value = None
        if last is not None:
            value = eval(compile(ast.Expression(last.value), f"<cell {count}>", "eval"), namespace)
    out: list[dict[str, Any]] = []
    if printed.getvalue():
        out.append({"name": "stdout", "output_type": "stream", "text": printed.getvalue()})
    if value is not None:
        out.append(
            {
                "data": shown(value),
                "execution_count": count,
                "metadata": {},
                "output_type": "execute_result",
            }
        )
    return out


def shown(value: Any) -> dict[str, str]:
    """What Jupyter shows of ``value``, by MIME type."""
    data = {"text/plain": repr(value)}
    for mime, method in (("text/markdown", "_repr_markdown_"), ("text/html", "_repr_html_")):
        found = getattr(value, method, None)
        text = found() if callable(found) else None
        if text is not None:
            data[mime] = text
    if type(value).__name__ == "Figure" and hasattr(value, "savefig"):
        image = io.BytesIO()
        value.savefig(image, format="png", bbox_inches="tight")
        data["image/png"] = base64.b64encode(image.getvalue()).decode()
    return data


def main() -> None:
    notebook = json.loads(NOTEBOOK.read_text())
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    for number, (cell, outputs) in enumerate(zip(code, execute(), strict=True), start=1):
        cell["outputs"], cell["execution_count"] = outputs, number
    NOTEBOOK.write_text(json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"updated {NOTEBOOK.name}: {len(code)} code cells")


if __name__ == "__main__":
    main()
