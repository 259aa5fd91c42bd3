"""mkdocs hooks for the docs site: README.md (outside docs/) becomes the home page, and a link
from a page to a file the site does not hold (a spec, LICENSE, the README from docs/) points
at the repository instead, so ``mkdocs build --strict`` checks every link that remains."""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
REPOSITORY = "https://github.com/infoflow-dev/infoflow/"
LINK = re.compile(r"\]\((?!https?://|#|mailto:)([^)\s]+)\)")


def on_files(files, config):
    """Add the README as ``index.md``."""
    readme = (ROOT / "README.md").read_text()
    files.append(File.generated(config, "index.md", content=readme))
    return files


def on_page_markdown(markdown, page, config, files):
    """Rewrite each relative link to where it resolves on the site, or on the repository."""
    source = page.file.src_uri
    here = ROOT if source == "index.md" else (ROOT / "docs" / source).parent

    def target(match: re.Match) -> str:
        link = match[1]
        path, _, anchor = link.partition("#")
        where = (here / path).resolve()
        anchor = f"#{anchor}" if anchor else ""
        if where == ROOT / "README.md":
            return f"]({_relative('index.md', source)}{anchor})"
        inside = where.is_relative_to(ROOT / "docs") and where.is_file()
        if inside and files.get_file_from_path(str(where.relative_to(ROOT / "docs"))):
            uri = where.relative_to(ROOT / "docs").as_posix()
            return f"]({_relative(uri, source)}{anchor})"
        if where.exists() and where.is_relative_to(ROOT):
            tree = "tree" if where.is_dir() else "blob"
            return f"]({REPOSITORY}{tree}/main/{where.relative_to(ROOT).as_posix()}{anchor})"
        return match[0]  # left as written: the strict build reports it

    return LINK.sub(target, markdown)


def _relative(uri: str, source: str) -> str:
    """``uri`` (relative to docs/) as a link from the page ``source``."""
    depth = source.count("/")
    return "../" * depth + uri
