"""Compile forced past the engine's refusal: for every sum of one or two of the soundness
sweep's parts on architectures of up to three layers of one or two heads (T = 8, PE) that
the engine calls inefficient but feasible, try to build the witness anyway. A witness that
builds and computes its target there would contradict the engine's minimal heads or layers.
Prints how many pairs were tried and why each was not built.

    python docs/results/2026-12-05-compile-past-the-engine.py
"""

from __future__ import annotations

import collections
import itertools
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "retrieval"))

from test_compile_soundness import PARTS

import infoflow.retrieval.schedule_to_circuit as compile_stage
from infoflow.core.errors import SpecError
from infoflow.retrieval.derive import derive
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.validators.retrieval.construction import build

ARCHITECTURES = [[1], [2], [1, 1], [2, 1], [1, 2], [2, 2], [1, 1, 1], [2, 1, 1], [1, 1, 2]]


def main() -> None:
    compile_stage.derive = lambda spec, source="<spec>": replace(
        derive(spec, source), efficient=True
    )
    targets = [*PARTS, *(f"{a} + {b}" for a, b in itertools.combinations(PARTS, 2))]
    why: collections.Counter = collections.Counter()
    for target, heads in itertools.product(targets, ARCHITECTURES):
        arch = {"layers": len(heads), "heads": heads, "embed_dim": 64, "positional_encoding": True}
        data = {"kind": "retrieval", "target": target, "input_dim": 4, "seq_len": 8}
        spec = RetrievalSpec.model_validate({**data, "architecture": arch})
        found = derive(spec)
        if found.efficient or not found.schedule.feasible:
            continue
        try:
            witness = build(spec, beta=1000, width=512)
        except SpecError as exc:
            why[str(exc).split("plan: ")[-1].split(":")[0]] += 1
            continue
        why[f"BUILT, NMSE {witness.nmse:.1e}: {target} on {heads}"] += 1
    print(f"{sum(why.values())} pairs the engine calls inefficient")
    for reason, count in why.most_common():
        print(f"  {count:3d}  {reason}")


if __name__ == "__main__":
    main()
