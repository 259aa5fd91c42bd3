"""``--format jsonl``, the scripting shape (one object per line, the same keys in every
command), and aligned tables."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from conftest import SPECS, run_cli

import infoflow
from infoflow import render
from infoflow.core import text
from infoflow.core.records import KEYS
from infoflow.retrieval.sweep import Sweep, lines

OURO = str(SPECS / "looped_kv" / "ouro-1.4b-h200.json")
KTH = str(SPECS / "retrieval" / "kth-largest.json")


def jsonl(*args: str) -> list[dict]:
    proc = run_cli(*args, "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    for row in rows:
        assert tuple(row) == KEYS
        assert row["command"] == args[0] and row["infoflow_version"] == infoflow.__version__
        assert all("value" in p for p in row["predictions"].values()), row["predictions"]
    return rows


def test_one_spec_several_specs_a_sweep_and_compare_give_the_same_shape() -> None:
    one = jsonl("predict", OURO)
    several = jsonl("predict", OURO, KTH)
    swept = jsonl("sweep", KTH)
    compared = jsonl("compare", OURO)
    points = [point for point, _ in infoflow.expand(infoflow.load_spec(KTH))]
    assert len(one) == 1 and one[0]["source"] == OURO and one[0]["point"] == {}
    assert one[0] == several[0]
    assert [row["point"] for row in several[1:]] == [row["point"] for row in swept] == points
    assert {row["source"] for row in several[1:] + swept} == {KTH}
    for by_predict, by_sweep in zip(several[1:], swept, strict=True):
        exponent = by_predict["predictions"]["cost_exponent"]["value"]
        assert by_sweep["predictions"]["cost_exponent"] == {"value": exponent}
    assert [row["point"]["codec.variant"] for row in compared] == [
        "none",
        "final_loop",
        "head_axis",
        "per_head",
        "2d",
    ]
    assert compared[3]["point"] == {"codec.variant": "per_head", "codec.r_k": 18, "codec.r_v": 30}
    assert compared[3]["predictions"]["compression_ratio"]["value"] == pytest.approx(64 / 3)


def small_sweep(exponents: list[float]) -> Sweep:
    size = len(exponents)
    columns = {
        "cost_exponent": np.array(exponents),
        "param_cost": 100.0 ** np.array(exponents),
        "min_cost_exponent": np.ones(size),
        "num_comparisons": np.array([8.0, 1024.0][:size]),
        "efficient": np.array([True, False][:size]),
        "feasible": np.array([True, False][:size]),
        "bottleneck": np.array(["a head", "the floor"][:size], dtype=object),
    }
    return Sweep({"seq_len": [8, 1024][:size]}, {"seq_len": np.arange(size)}, columns)


def test_a_number_that_is_not_finite_is_null_with_a_note() -> None:
    rows = [json.loads(line) for line in lines(small_sweep([1.5, np.inf]), "jsonl", "s.json")]
    assert [tuple(row) for row in rows] == [KEYS, KEYS]
    assert rows[0]["predictions"]["cost_exponent"] == {"value": 1.5}
    infinite = rows[1]["predictions"]["cost_exponent"]
    assert infinite == {"value": None, "note": "not a finite number: inf"}
    assert rows[1]["point"] == {"seq_len": 1024} and rows[1]["source"] == "s.json"
    assert rows[1]["predictions"]["bottleneck"] == {"value": "the floor"}


def test_the_sweep_table_aligns_its_columns() -> None:
    table = list(lines(small_sweep([1.0, 1.8484848484848484]), "table"))
    assert table == [
        "seq_len       cost_exponent         param_cost  min_cost_exponent  num_comparisons"
        "  efficient  feasible  bottleneck",
        "      8                   1              100.0                  1                8"
        '  true       true      "a head"',
        "   1024  1.8484848484848484  4977.023564332108                  1             1024"
        '  false      false     "the floor"',
    ]


def test_the_cli_sweep_table_right_aligns_every_number() -> None:
    proc = run_cli("sweep", KTH, "--format", "table")
    assert proc.returncode == 0, proc.stderr
    header, *rows = proc.stdout.splitlines()
    cells = list(re.finditer(r"\S+", header))
    ends = [m.end() for m in cells[:6]]  # the swept values and the numbers: right-aligned
    starts = [m.start() for m in cells[6:9]]  # efficient, feasible, bottleneck: left-aligned
    for row in rows:
        found = list(re.finditer(r"\S+", row))
        assert [m.end() for m in found[:6]] == ends, row
        assert [m.start() for m in found[6:9]] == starts, row


@pytest.mark.slow
def test_plan_gives_the_same_shape() -> None:
    spec = str(SPECS / "looped_kv" / "tiny-looped.json")  # the cheapest plan to estimate
    (row,) = jsonl("plan", spec)
    estimate = row["predictions"]["estimated_seconds"]
    assert estimate["unit"] == "s" and estimate["value"] > 0 and estimate["bound"] == "estimate"
    assert row["kind"] == "looped_kv" and row["messages"][0].startswith(spec)


def test_a_plan_for_a_gpu_not_here_says_its_step_times_are_recorded_not_measured() -> None:
    """`plan --device cuda` on a machine without one estimates from the step times recorded
    on an H200: the jsonl estimate's provenance and note said "measured" (a review)."""
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device here: its step time is measured")
    (row,) = jsonl("plan", str(SPECS / "icl_markov" / "k2-c5.json"), "--device", "cuda")
    estimate = row["predictions"]["estimated_seconds"]
    assert estimate["provenance"] == "recorded:step_time" and estimate["value"] > 0
    assert "recorded on one H200 (not measured here)" in estimate["note"]


def test_an_infinite_exponent_reads_infinite_in_every_text_format() -> None:
    """A fresh-user audit (2026-12-07): the no-PE point's alpha printed as Python's None in
    the table, Markdown and LaTeX; JSON keeps null with its note."""
    from infoflow.render import to_latex, to_markdown

    path = SPECS / "retrieval" / "specific-position.json"
    spec = infoflow.load_spec(path, ["architecture.positional_encoding=false", "sweep=null"])
    result = infoflow.predict(spec)
    assert result.predictions["cost_exponent"].value is None
    assert "| `cost_exponent` | infinite | exact |" in to_markdown(result)
    assert r"\texttt{param\_cost} & infinite params (order) & exact" in to_latex(result)


def test_the_table_folds_a_long_provenance_never_cuts_it() -> None:
    """At 80 columns with notes the provenance column read "reconstruction:variable…"."""
    from rich.console import Console

    from infoflow.render import to_table

    path = SPECS / "retrieval" / "pairwise-min.json"
    result = infoflow.predict(infoflow.load_spec(path, ["architecture.layers=1", "sweep=null"]))
    console = Console(width=80, record=True, color_system=None)
    console.print(to_table(result, verbosity=1))
    shown = console.export_text()
    assert "…" not in shown and max(map(len, shown.splitlines())) <= 80
    rows = [line.split("│") for line in shown.splitlines() if line.startswith("│")]
    column = "".join(cells[4].strip() for cells in rows)  # each cell's folded lines in order
    assert all(p.provenance in column for p in result.predictions.values())


def test_latex_carries_the_result_s_messages_as_markdown_does() -> None:
    """Park's measured boundary against final_phase at K = 64: LaTeX dropped the warning
    the table, Markdown and JSON carry (a review); a comment above its table now."""
    spec = json.loads((SPECS / "icl_markov" / "park2025.json").read_text())
    spec.pop("sweep", None)
    result = infoflow.predict({**spec, "chains": 64})
    (message,) = result.messages
    assert "disagrees with the boundary measured" in message
    assert "disagrees with the boundary" in render.to_markdown(result)
    assert f"% {message}" in render.to_latex(result)


@pytest.mark.parametrize(
    ("name", "latex"),
    [
        ("bytes", r"\mathrm{bytes}"),  # was b y t e s, a product of five symbols
        ("d_head", r"d_{\mathrm{head}}"),
        ("mlp_width", r"\mathrm{mlp}_{\mathrm{width}}"),
        ("tau_2gen_anchor", r"\tau_{\mathrm{2gen\ anchor}}"),
        ("n_q", "n_{q}"),
        ("K2", "K_{2}"),  # trailing digits a subscript, as sympy writes them (a review)
        ("k1_star_anchor", r"k_{\mathrm{1\ star\ anchor}}"),
        ("T", "T"),
        ("epsilon", r"\epsilon"),
    ],
)
def test_latex_sets_a_word_upright_and_a_greek_name_as_its_letter(name, latex) -> None:
    assert text.latex_name(name) == latex


def test_the_latex_table_writes_each_symbol_as_latex_name_gives_it() -> None:
    result = infoflow.predict(SPECS / "looped_kv" / "ouro-1.4b.json")
    table = render.to_latex(result)
    assert r"2 \mathrm{bytes} d_{\mathrm{head}} n_{\mathrm{kv}}" in table
    maths = " ".join(re.findall(r"\$[^$]*\$", table))
    assert maths and not re.search(r"(?<!\\mathrm\{)bytes", maths)
    # the JSON form's latex is the table's (a review found b y t e s in JSON still)
    for prediction in result.to_json()["predictions"].values():
        if "latex" in prediction:
            assert f"${prediction['latex']}$" in table
            assert not re.search(r"(?<!\\mathrm\{)bytes", prediction["latex"])
