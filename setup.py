"""The build's one addition to pyproject.toml: the bundled specs (``specs/`` at the
repository's root, where the CLI and the docs name them) ship inside the wheel as
``infoflow/specs/<family>/...json``, where :func:`infoflow.specs.path` finds them."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SPECS = Path(__file__).resolve().parent / "specs"


class BuildWithSpecs(build_py):
    """build_py, then every JSON file under specs/ copied into the built package."""

    def run(self) -> None:
        super().run()
        for source in sorted(SPECS.rglob("*.json")):
            target = Path(self.build_lib) / "infoflow" / "specs" / source.relative_to(SPECS)
            self.mkpath(str(target.parent))
            self.copy_file(str(source), str(target))


setup(cmdclass={"build_py": BuildWithSpecs})
