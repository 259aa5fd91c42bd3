"""Rewrite every ``$ infoflow ...`` console block in README.md and docs/*.md with the
command's real output. Run from the repository root after a change that alters output;
tests/shared/test_docs.py fails until the pages match again.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONSOLE = re.compile(r"(```console\n\$ (infoflow [^\n]*)\n)(.*?)(```)", re.S)
INFOFLOW = str(Path(sys.executable).parent / "infoflow")


def run(command: str) -> str:
    argv = [INFOFLOW, *shlex.split(command)[1:]]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    return (proc.stdout + proc.stderr).rstrip("\n") + "\n"


def main() -> None:
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text()
        new = CONSOLE.sub(lambda m: m[1] + run(m[2]) + m[4], text)
        if new != text:
            page.write_text(new)
            print(f"updated {page.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
