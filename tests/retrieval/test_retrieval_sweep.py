"""The vectorised sweep (``infoflow sweep``): at every point, the numbers ``infoflow predict``
gives there (to float64 rounding), grouped by what changes the derivation."""

from __future__ import annotations

import json
import math

import pytest
from conftest import SPECS, refused, run_cli

import infoflow
from infoflow.retrieval.sweep import COLUMNS, sweep

INTRINSIC = {
    "kind": "retrieval",
    "target": "sum(max(bilinear(x[s], A[i], x[t]) for s in T for t in T) for i in range(D))",
    "params": {"D": 2},
    "input_dim": 4,
    "seq_len": 64,
    "architecture": {"layers": 2, "heads": [1, 2], "embed_dim": 60},
    "sweep": {
        "seq_len": [4, 8, 33, 64],
        "architecture.embed_dim": [8, 60, 256],
        "architecture.heads": [[1, 1], [1, 2], [2, 2], [3, 1]],
        "epsilon": [0.5, 1e-3],
    },
}
KTH = {  # the rank of the k-th step depends on T near the end of the sequence
    "kind": "retrieval",
    "target": "kth_largest((dot(q, x[t]) for t in T), k=3)",
    "input_dim": 4,
    "seq_len": 16,
    "architecture": {"layers": 1, "heads": 1, "embed_dim": 32},
    "sweep": {
        "seq_len": [3, 4, 5, 6, 16],
        "architecture.layers": [1, 3],
        "architecture.embed_dim": [7, 32],
        "options.kth_cost": ["theorem2", "summary"],
    },
}
POSITIONS = {  # no positional encoding: the plan is infeasible, the exponent infinite
    "kind": "retrieval",
    "target": "x[1] + x[2] + x[3]",
    "input_dim": 4,
    "seq_len": 10,
    "architecture": {"layers": 1, "heads": [1], "embed_dim": 32},
    "sweep": {"architecture.positional_encoding": [True, False], "seq_len": [3, 10]},
}


def close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.parametrize("data", [INTRINSIC, KTH, POSITIONS], ids=["intrinsic", "kth", "pe"])
def test_every_point_agrees_with_predict(data) -> None:
    spec = infoflow.load_spec(data)
    result = sweep(spec)
    points = infoflow.expand(spec)
    assert len(result) == len(points)
    for i, (point, at) in enumerate(points):
        assert result.point(i) == point
        expected = infoflow.predict(at)
        for name in ("cost_exponent", "param_cost", "min_cost_exponent", "num_comparisons"):
            got = result.columns[name][i]
            assert close(got if math.isfinite(got) else None, expected[name].value), (name, i)
        assert result.columns["efficient"][i] == expected["efficient"].value
        assert result.columns["feasible"][i] == expected["feasible"].value
        assert result.columns["bottleneck"][i] == expected["bottleneck"].value


def test_cli_streams_one_json_line_per_point() -> None:
    path = SPECS / "retrieval" / "kth-largest.json"
    proc = run_cli("sweep", str(path))
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    spec = infoflow.load_spec(path)
    assert [row["point"] for row in rows] == [point for point, _ in infoflow.expand(spec)]
    first = infoflow.predict(infoflow.expand(spec)[0][1])
    assert set(rows[0]) == {"point", *COLUMNS}
    assert rows[0]["cost_exponent"] == first["cost_exponent"].value
    table = run_cli("sweep", str(path), "--format", "table").stdout.splitlines()
    assert table[0].split()[:3] == ["architecture.layers", "seq_len", "cost_exponent"]
    assert len(table) == len(rows) + 1


def test_bad_input_is_exit_2() -> None:
    path = str(SPECS / "retrieval" / "kth-largest.json")
    line = refused("sweep", path, "--set", "sweep.seq_len=[8, 1]")
    assert (
        "(sweep point architecture.layers=1, seq_len=1)" in line and "k = 2 exceeds T = 1" in line
    )
    both = 'sweep={"seq_len": [2, 3], "architecture.layers": [1, 2]}'
    line = refused("sweep", str(SPECS / "retrieval" / "triangle-center.json"), "--set", both)
    assert "(sweep point seq_len=2, architecture.layers=1): field 'architecture.heads'" in line
    typed = 'sweep={"architecture.positional_encoding": [true], "architecture.layers": [1]}'
    line = refused("sweep", str(SPECS / "retrieval" / "triangle-center.json"), "--set", typed)
    assert "(sweep point architecture.positional_encoding=true, architecture.layers=1)" in line
    line = refused("sweep", str(SPECS / "looped_kv" / "ouro-1.4b.json"))
    assert "'sweep' is not available for looped_kv specs (it is for: retrieval)" in line
    assert "needs a sweep" in refused("sweep", path, "--set", "sweep=null")


def test_a_sweep_whose_checks_would_take_hours_is_refused_before_the_first(tmp_path) -> None:
    """4,194,304 architectures (under the 10^7 points) were each checked and derived before
    anything was printed: hours, silent, gigabytes (a review, 2026-12-06). The work before
    the first point is counted and refused with the fields that multiply it; a sweep of the
    numbers, evaluated as arrays, is not."""
    spec = {
        "kind": "retrieval",
        "target": "max(dot(q, x[t]) for t in T)",
        "input_dim": 4,
        "seq_len": 16,
        "architecture": {"layers": 1, "heads": 1, "embed_dim": 64},
        "sweep": {
            "architecture.layers": list(range(1, 1025)),
            "architecture.heads": list(range(1, 4097)),
        },
    }
    (tmp_path / "big.json").write_text(json.dumps(spec))
    line = refused("sweep", str(tmp_path / "big.json"))
    assert "4,194,304 combinations of architecture.layers, architecture.heads" in line
    many_t = {**spec, "sweep": {"seq_len": list(range(2, 600_002))}}
    (tmp_path / "many-t.json").write_text(json.dumps(many_t))
    assert "600,001 spec checks before the first point, more than 500,000" in refused(
        "sweep", str(tmp_path / "many-t.json")
    )
    numbers = {"seq_len": list(range(2, 200)), "epsilon": [0.1, 0.01, 0.001]}
    found = sweep(infoflow.load_spec({**spec, "sweep": numbers}))
    assert len(found) == 198 * 3
