"""Bundled specs as package data (issue 30, item 2): ``infoflow.specs.path`` finds a bundled
spec from any working directory, in a clone and from a built wheel, which carries every JSON
file of specs/ (the configs that specs name by relative path included)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile

import pytest
from conftest import ROOT, SPECS

import infoflow
import infoflow.specs
from infoflow.core.errors import SpecError

#: What a wheel is built from (a copy: the build writes build/ and *.egg-info beside it).
SOURCES = ("infoflow", "specs", "pyproject.toml", "setup.py", "MANIFEST.in", "README.md")


def test_a_bundled_spec_is_found_from_any_working_directory(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    found = infoflow.specs.path("looped_kv/ouro-1.4b-h200.json")
    assert found == SPECS / "looped_kv" / "ouro-1.4b-h200.json"
    assert infoflow.predict(found)["max_batch_compressed"].value == 768
    hf = infoflow.predict(infoflow.specs.path("looped_kv/ouro-1.4b-hf-config.json"))
    assert hf["kv_cache_bytes"].value == 3221225472  # its config, read by relative path
    bundled = sorted(p.relative_to(SPECS).as_posix() for p in SPECS.glob("*/*.json"))
    suite = sorted(p.relative_to(SPECS).as_posix() for p in SPECS.glob("*/*/*.json"))
    assert "retrieval/cpu-suite/triangle-control.json" in suite and len(bundled) > 50
    assert infoflow.specs.names() == sorted(bundled + [s for s in suite if "hf_configs" not in s])


@pytest.mark.parametrize("name", ["looped_kv/nope.json", "../pyproject.toml", "looped_kv"])
def test_a_name_that_is_no_bundled_spec_is_refused(name) -> None:
    with pytest.raises(SpecError, match="no bundled spec by that name") as error:
        infoflow.specs.path(name)
    assert error.value.source == name and "retrieval" in str(error.value)


@pytest.mark.slow
def test_the_wheel_carries_the_specs_and_finds_them(tmp_path) -> None:
    """Built offline from a copy of the sources (pip wheel, no build isolation), then
    imported from the unpacked wheel in another folder: ``path`` gives its own copy."""
    source = tmp_path / "source"
    for name in SOURCES:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy
        copy(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    built = subprocess.run(
        [*pip, "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    inside = zipfile.ZipFile(wheel).namelist()
    expected = sorted(
        f"infoflow/specs/{p.relative_to(SPECS).as_posix()}" for p in SPECS.rglob("*.json")
    )
    assert sorted(n for n in inside if n.endswith(".json") and "/specs/" in n) == expected
    zipfile.ZipFile(wheel).extractall(tmp_path / "installed")
    code = (
        "import infoflow, infoflow.specs as s\n"
        "p = s.path('looped_kv/ouro-1.4b-hf-config.json')\n"
        "print(infoflow.__file__, p.relative_to(s.HERE).as_posix(),"
        " infoflow.predict(p)['kv_cache_bytes'].value)"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "installed")}
    ran = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr
    module, spec, value = ran.stdout.split()
    assert module == str(tmp_path / "installed" / "infoflow" / "__init__.py")
    assert (spec, value) == ("looped_kv/ouro-1.4b-hf-config.json", "3221225472")
