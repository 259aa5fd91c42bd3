"""The compile soundness sweep of tests/retrieval/test_compile_soundness.py, with the counts
and the witnesses whose plan leaves a condition s != t unenforced (run from the repository
root: python docs/results/2026-12-05-compile-soundness/sweep.py)."""

import sys

sys.path.insert(0, "tests/retrieval")
from test_compile_soundness import _spec, _targets

from infoflow.core.errors import SpecError
from infoflow.retrieval.derive import derive
from infoflow.validators.retrieval.construction import build

for pe in (False, True):
    built = refused = inefficient = 0
    for target in _targets():
        spec = _spec(target, pe)
        if not derive(spec).efficient:
            inefficient += 1
            continue
        try:
            w = build(spec, width=1024)
        except SpecError as exc:
            refused += 1
            print(f"PE={pe} refused: {target}: {str(exc).split('this plan: ')[-1]}")
            continue
        built += 1
        if any("not enforced" in n for n in w.circuit.notes):
            print(f"PE={pe} not enforced: {target}: witness NMSE {w.nmse:.3g}")
    print(
        f"PE={pe}: {built} built, {refused} refused, {inefficient} inefficient of {len(_targets())}"
    )
