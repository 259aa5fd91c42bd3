"""explain, graph, --format latex and sweeps through the real entry point."""

from __future__ import annotations

import json

import networkx as nx
from conftest import LOOPED_KV, SPECS, run_cli

import infoflow

RETRIEVAL = SPECS / "retrieval"


def test_explain_walks_through_the_derivation() -> None:
    proc = run_cli(
        "explain", str(RETRIEVAL / "pairwise-min.json"), "--set", "architecture.layers=1"
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for section in (
        "1. Canonical form and comparison tree",
        "2. Plan on 1 layer(s)",
        "3. Cost exponent",
        "fewest layers: 2 layer(s), heads [1, 1]",
    ):
        assert section in out
    assert "too few layers: it needs 2" in out and "[reconstruction:theorem1_coefficient]" in out
    assert "not efficient: alpha grows with T" in out


def test_graph_json_loads_into_networkx() -> None:
    proc = run_cli("graph", "-f", "json", str(RETRIEVAL / "intrinsic-dimension-D3.json"))
    assert proc.returncode == 0, proc.stderr
    dag = nx.node_link_graph(json.loads(proc.stdout), edges="edges")
    assert nx.is_directed_acyclic_graph(dag)
    modes = {data["mode"] for _, _, data in dag.edges(data=True)}
    assert modes == {"residual", "max-position"}
    retrievals = [d for _, v, d in dag.edges(data=True) if d["mode"] == "max-position"]
    assert sum(d["heads"] for d in retrievals) == 6  # D = 3 heads in each of two layers
    assert len(dag.nodes["readout@2"]["info"]) == 6


def test_graph_dot() -> None:
    proc = run_cli("graph", str(RETRIEVAL / "specific-position.json"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("digraph infoflow {") and proc.stdout.rstrip().endswith("}")
    assert '"x[1]@0" -> "readout@1" [label="specific-position' in proc.stdout


def test_a_graph_of_a_plan_that_does_not_work_says_so() -> None:
    """Without PE the fixed positions cannot be read: the DAG drawn is not a working plan,
    and said nothing (only explain did)."""
    spec = str(RETRIEVAL / "specific-position.json")
    off = ["--set", "sweep=null", "--set", "architecture.positional_encoding=false"]
    dot = run_cli("graph", spec, *off).stdout
    assert 'label="impossible; bottleneck: fixed positions' in dot
    data = json.loads(run_cli("graph", "-f", "json", spec, *off).stdout)
    assert data["graph"]["verdict"].startswith("impossible; bottleneck:")
    working = json.loads(run_cli("graph", "-f", "json", spec, "--set", "sweep=null").stdout)
    assert "verdict" not in working["graph"]


def test_graph_needs_a_retrieval_spec() -> None:
    proc = run_cli("graph", str(LOOPED_KV / "ouro-1.4b.json"))
    assert proc.returncode == 2 and "'graph' is not available for looped_kv" in proc.stderr
    assert "it is for: retrieval" in proc.stderr and "Traceback" not in proc.stderr


def test_latex_format() -> None:
    proc = run_cli(
        "predict", "-f", "latex", str(RETRIEVAL / "kth-largest.json"), "--set", "sweep=null"
    )
    assert proc.returncode == 0, proc.stderr
    assert r"\begin{tabular}" in proc.stdout and r"\texttt{cost\_exponent}" in proc.stdout
    assert r"\frac{T - 3}{n + 1}" in proc.stdout
    assert r"prediction & value & bound & provenance & expression \\" in proc.stdout
    # a reconstruction stays told apart: at T = 8 the floor sets the exponent, Theorem 2's
    # term (0.394) is under it (it was credited to the theorem: a review)
    assert r"& estimate & reconstruction:exponent\_floor" in proc.stdout
    assert r"& exact & paper:theorem-2" in proc.stdout  # the bottleneck


def test_sweep_expands_to_every_point() -> None:
    proc = run_cli("predict", "-f", "json", str(RETRIEVAL / "triangle-center.json"))
    results = json.loads(proc.stdout)
    assert len(results) == 5 * 2 * 2
    seq_lens = sorted({r["spec"]["seq_len"] for r in results})
    assert seq_lens == [3, 8, 16, 32, 64]
    assert all(r["spec"]["sweep"] is None for r in results)
    assert all(not r["predictions"]["efficient"]["value"] for r in results)


def test_bad_sweep_point_names_the_point(tmp_path) -> None:
    spec = json.loads((RETRIEVAL / "kth-largest.json").read_text())
    spec["sweep"] = {"architecture.heads": [[1], [1, 1]]}
    path = tmp_path / "bad-sweep.json"
    path.write_text(json.dumps(spec))
    proc = run_cli("predict", str(path))
    assert proc.returncode == 2
    assert "sweep point architecture.heads=[1, 1]" in proc.stderr
    assert "field 'architecture.heads'" in proc.stderr


def test_position_beyond_the_sequence_is_refused() -> None:
    spec = infoflow.load_spec(RETRIEVAL / "specific-position.json")
    assert spec.seq_len == 10
    proc = run_cli("predict", str(RETRIEVAL / "specific-position.json"), "--set", "seq_len=2")
    assert proc.returncode == 2 and "x[3] lies beyond the sequence" in proc.stderr


def test_a_cost_beyond_a_float_is_null_and_says_its_size() -> None:
    """eps = 1e-300 with alpha 3 is 10^900 parameters: finite, printed as inf before."""
    spec = RETRIEVAL / "pairwise-min.json"
    args = ["--set", "sweep=null", "--set", "architecture.layers=1", "--set", "epsilon=1e-300"]
    proc = run_cli("predict", "-f", "json", str(spec), *args)
    cost = json.loads(proc.stdout)["predictions"]["param_cost"]
    assert cost["value"] is None and "About 10^900: beyond a float" in cost["note"]
    table = run_cli("predict", str(spec), *args).stdout  # it printed None (a review)
    assert "about 10^900 params (order)" in table


def test_a_swept_spec_is_said_to_be_read_at_its_base_values() -> None:
    """explain of a swept spec said nothing of the sweep (a review); the note is on stderr,
    after the output, and not under --quiet."""
    spec = str(RETRIEVAL / "pairwise-min.json")
    proc = run_cli("explain", spec)
    assert proc.returncode == 0 and proc.stdout.startswith("Target:")
    assert (
        proc.stderr
        == f"note: {spec} sweeps architecture.layers, seq_len; explain reads its base values\n"
    )
    assert run_cli("explain", spec, "--set", "sweep=null").stderr == ""
    assert run_cli("explain", spec, "--quiet").stderr == ""


def test_explain_names_the_head_width_alpha_is_evaluated_at() -> None:
    """A fresh-user audit (2026-12-07): "1.848 at T = 64, d = 4, E = 32" left out n, which
    (T - 3)/(n + 1) needs; n = E / h = 32 gives 61 / 33."""
    from infoflow.retrieval.explain import explain

    spec = infoflow.load_spec(SPECS / "retrieval" / "kth-largest.json", ["seq_len=64"])
    (line,) = [x for x in explain(spec).splitlines() if x.lstrip().startswith("alpha = ")]
    assert "(T - 3)/(n + 1)" in line and line.endswith("= 1.848 at T = 64, d = 4, E = 32, n = 32")
