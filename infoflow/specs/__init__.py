"""The bundled specs (the papers' experiments, ready to run), found wherever infoflow is:
``infoflow.specs.path("looped_kv/ouro-1.4b-h200.json")`` works from any working directory, in
a clone (the repository's ``specs/`` folder, which the CLI and the docs name) as from an
installed wheel (which carries that folder's JSON files here, beside this module: setup.py's
build step)."""

from __future__ import annotations

from pathlib import Path

from infoflow.core.errors import SpecError

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parents[1] / "specs"  # the repository's specs/, in a clone


def root() -> Path:
    """The folder of the bundled specs: the installed copy when there is one, else the
    clone's ``specs/``."""
    return HERE if any(HERE.glob("*/*.json")) else CHECKOUT


def path(name: str | Path) -> Path:
    """The bundled spec ``name`` (``family/file.json``, as under ``specs/``), an absolute
    path; a SpecError naming it (and what is bundled) when there is no such spec."""
    if not isinstance(name, str | Path):
        kind = type(name).__name__
        raise SpecError("<name>", [(None, f"a bundled spec's name is a string, not {kind}")])
    folder = root().resolve()
    found = (folder / name).resolve()
    if not found.is_relative_to(folder) or not found.is_file():
        families = ", ".join(sorted(p.name for p in folder.iterdir() if p.is_dir()))
        message = f"no bundled spec by that name (they are family/file.json: {families})"
        raise SpecError(str(name), [(None, message)])
    return found


def names() -> list[str]:
    """Every bundled spec, as ``family/file.json`` or ``family/suite/file.json`` (the files
    :func:`path` takes, the retrieval CPU suite's among them), not the model configs under
    ``looped_kv/hf_configs/`` that specs read."""
    folder = root()
    found = (p for p in sorted(folder.rglob("*.json")) if "hf_configs" not in p.parts)
    return [p.relative_to(folder).as_posix() for p in found]


def bundled() -> list[Path]:
    """The specs ``validate`` runs when given none: specs/*/*.json of the working directory,
    else the bundled ones (the checkout's, or the installed package's): the first of the
    two that holds any (SpecError, exit 2, when neither does)."""
    for folder in (Path.cwd() / "specs", root()):
        if folder.is_dir():
            found = sorted(folder.glob("*/*.json"))
            if found:
                return found
    raise SpecError("specs/", [(None, "no bundled specs here: pass spec files to validate")])
