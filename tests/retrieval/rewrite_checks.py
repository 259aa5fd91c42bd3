"""What the rewrite tests share: a spec of a target at T = 8, and the check that two
spellings of a target are one function (on random draws) and one plan."""

from __future__ import annotations

import random

import torch

import infoflow
from infoflow.retrieval.expression_rewrite import BRANCH_READINGS, COUNT, rewrite
from infoflow.retrieval.text_to_expression import parse_target
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs


def spec_of(target: str, heads: list[int], pe: bool | None = None) -> dict:
    """A retrieval spec of ``target`` at T = 8, d = 4, E = 64 (positional encoding as the
    spec's default where ``pe`` is None)."""
    arch = {"layers": len(heads), "heads": heads, "embed_dim": 64}
    if pe is not None:
        arch["positional_encoding"] = pe
    return {"kind": "retrieval", "target": target, "input_dim": 4, "seq_len": 8} | {
        "architecture": arch
    }


def assert_one_function(written: str, other: str, shapes, names, pes=(None,)) -> None:
    """``written`` and ``other`` agree on 256 random draws, and their predictions ``names``
    agree on every architecture of ``shapes`` (heads per layer) with each of ``pes``."""
    specs = [infoflow.load_spec(spec_of(t, [1], pes[-1])) for t in (written, other)]
    x = sample_inputs(specs[0], 256, 8, torch.Generator().manual_seed(0)).double()
    values = [TargetFunction(s, seed=0, dtype=torch.float64)(x) for s in specs]
    assert torch.allclose(values[0], values[1], atol=1e-9), (values[0] - values[1]).abs().max()
    for heads in shapes:
        for pe in pes:
            plans = [infoflow.predict(spec_of(t, heads, pe)) for t in (written, other)]
            for name in names:
                assert plans[0][name].value == plans[1][name].value, (name, heads, pe)


def assert_reading_is_written(target: str, pe: bool | None = None) -> None:
    """The engine's readings of ``target`` (its rewrites, differing branches read either way)
    have the written target's values on 256 random draws (a nan where the written one has a
    nan)."""
    spec = infoflow.load_spec(spec_of(target, [1], pe))
    x = sample_inputs(spec, 256, 8, torch.Generator().manual_seed(0)).double()
    written, reading = (TargetFunction(spec, seed=0, dtype=torch.float64) for _ in range(2))
    want = written(x)
    reading._params.update(written._params)  # drawn in the order read: q before w, as written
    for branches in BRANCH_READINGS:
        reading.tree = rewrite(parse_target(target), branches)
        assert torch.allclose(want, reading(x), atol=1e-9, equal_nan=True), branches


def ranged_term(rng: random.Random, i: int, op: str) -> str:
    """A reduction ``op`` of x[t][0] over a random range of its index t{i} (bounded by numbers
    up to 6 or T - k, twice on one side, or leaving out two positions), or x[t][0] at a
    random fixed position."""

    def spot() -> str:
        return rng.choice([str(rng.randint(1, 6)), f"T - {rng.randint(1, 3)}", "T"])

    kinds = ["all", "from", "to", "between", "but", "at", "twice"]
    name, kind = f"t{i}", rng.choice(kinds)
    if kind == "at":
        return f"x[{spot()}][0]"
    ops = {"all": [], "from": [">="], "to": ["<="], "between": [">=", "<="], "but": ["!=", "!="]}
    ops["twice"] = [rng.choice([">=", "<="])] * 2  # t <= 4 and t <= T - 2: which binds?
    condition = " and ".join(f"{name} {test} {spot()}" for test in ops[kind])
    return f"{op}(x[{name}][0] for {name} in T{' if ' + condition if condition else ''})"


def reading_at(text: str, length: int):
    """The engine's reading of ``text`` (its rewritten tree) after checking that it and the
    other reading of differing branches have the written target's values on 32 random draws
    at T = ``length``; None where the spec is refused there (a fixed position past T, a
    reduction over nothing)."""
    from infoflow.core.errors import SpecError

    try:
        spec = infoflow.load_spec(spec_of(text, [1]) | {"seq_len": length})
    except SpecError:
        return None
    x = sample_inputs(spec, 32, length, torch.Generator().manual_seed(0)).double()
    written, reading = (TargetFunction(spec, seed=0, dtype=torch.float64) for _ in "ab")
    want = written(x)
    reading._params.update(written._params)  # drawn in the order read: q before w, as written
    reading._params[f"{COUNT.name}/0"] = torch.tensor(length - 1.0, dtype=torch.float64)
    for branches in reversed(BRANCH_READINGS):  # the default's tree is the one returned
        reading.tree = rewrite(parse_target(text), branches)
        assert torch.allclose(want, reading(x), atol=1e-9), (length, text, branches)
    return reading.tree
