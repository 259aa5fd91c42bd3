"""The witnesses compile builds since the night of 2026-12-05: sums of parts on one head a
layer (laid out where the engine runs each part), scores that combine parameters or scores,
and constants taken out of scores. Prints one markdown row per target: the architecture, how
the terms were laid out, whether every head carries an engine step, and the NMSE on fresh
data (beta 1000, MLP width 1024, T = 8, float64).

    python docs/results/2026-12-05-compile-layout.py
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "retrieval"))

from test_compile_soundness import PARTS

from infoflow.core.errors import SpecError
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.validators.retrieval.construction import build

OTHERS = [
    (
        "max(dot(q, x[t]) for t in T) - min(dot(p, x[t]) for t in T)"
        " + min(dot(x[s], x[t]) for s in T for t in T if s != t)",
        [1, 1, 1, 1],
    ),
    (
        "max(dot(x[s], x[t]) for s in T for t in T)"
        " + max(bilinear(x[s], A, x[t]) for s in T for t in T)",
        [1, 1, 1, 1],
    ),
    ("max(dot(p - q, x[t]) for t in T)", [1]),
    ("kth_largest((dot(p - 2 * q, x[t]) for t in T), k=2)", [1, 1]),
    ("max(dot(x[s], x[t]) + bilinear(x[s], A, x[t]) for s in T for t in T)", [1, 1]),
    ("max(bilinear(x[s], A - B, x[t]) for s in T for t in T if s != t)", [1, 1]),
    ("max(dot(q, x[t]) + 1 for t in T) - 2", [1]),
    ("max(kth_largest((dot(x[s], x[t]) + 1 for t in T), k=2) for s in T)", [1, 1, 1]),
]


def main() -> None:
    cases = [(f"{a} + {b}", [1, 1, 1, 1]) for a, b in itertools.combinations(PARTS, 2)]
    print("| target | heads | named | NMSE |")
    print("|---|---|---|--:|")
    for target, heads in cases + OTHERS:
        arch = {"layers": len(heads), "heads": heads, "embed_dim": 64, "positional_encoding": True}
        data = {"kind": "retrieval", "target": target, "input_dim": 4, "seq_len": 8}
        spec = RetrievalSpec.model_validate({**data, "architecture": arch})
        try:
            witness = build(spec, beta=1000, width=1024)
        except SpecError as exc:
            print(f"| `{target}` | {heads} | - | refused: {str(exc).split(': ')[-1]} |")
            continue
        named = "yes" if all(h.step for h in witness.circuit.heads) else "no"
        print(f"| `{target}` | {heads} | {named} | {witness.nmse:.1e} |")


if __name__ == "__main__":
    main()
