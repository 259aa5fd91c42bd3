"""Compile builds a one-token retrieval whose range tests its position against numbers (a
positional mask), and where the target as written is not a form it builds, the engine's
reading of it (its canonical rewrites), measured against the target as written."""

from __future__ import annotations

import pytest
from test_compile import spec

from infoflow.core.errors import SpecError
from infoflow.retrieval.schedule_to_circuit import circuit_of
from infoflow.validators.retrieval import construction

READING = "built from the engine's reading of the target"


@pytest.mark.parametrize(
    "target",
    [
        "max(x[t][0] for t in T if t <= 3)",
        "min(dot(q, x[t]) for t in T if t >= 2 and t < T)",
        "min(x[t-1][0] for t in T if t <= 5)",
        "argmax(dot(q, x[t]) for t in T if t >= 4)",
    ],
)
def test_a_retrieval_over_a_masked_range_is_built(target: str) -> None:
    built = construction.build(spec(target, [1], positional_encoding=True), beta=1000, width=64)
    assert built.nmse < 1e-3, built.nmse
    assert READING not in " ".join(built.circuit.notes)


@pytest.mark.parametrize(
    "target",
    [
        "min(max(x[t][0] for t in T if t <= s) for s in T)",  # x[1][0]: the max over t <= 1
        "max(max(dot(q, x[t]) for t in T if t < s) for s in T)",  # the max over t <= T - 1
        "max(x[t][0] + x[s-1][0] - x[s-1][0] for s in T for t in T if t > s)",  # t >= 3
    ],
)
def test_a_target_compile_cannot_build_as_written_is_built_as_the_engine_reads_it(target):
    built = construction.build(spec(target, [1], positional_encoding=True), beta=1000, width=64)
    assert built.nmse < 1e-3, built.nmse  # against the target as written
    assert any(note.startswith(READING) for note in built.circuit.notes)


def test_where_neither_reading_builds_the_written_reason_is_given() -> None:
    """max of x(s).x(t) is the largest |x|^2 (one head), which compile does not build (not a
    linear score); the refusal names what the target as written lacks."""
    with pytest.raises(SpecError, match="no layout of the terms fits heads"):
        circuit_of(spec("max(dot(x[s], x[t]) for s in T for t in T)", [1]))
    with pytest.raises(SpecError, match="one token index without conditions"):
        circuit_of(spec("sum(x[t][0] for t in T if t <= 3)", [1], positional_encoding=True))
