"""A retrieval spec's ``sweep`` -> the numeric predictions at every point, vectorised.

The grid's numbers (``seq_len`` T, ``input_dim`` d, ``architecture.embed_dim`` E,
``epsilon``) become numpy arrays. Points are grouped by what changes the derivation: every
other swept field (heads, layers, positional encoding, options, the target), and T through
the ranks of k-th steps near the end of the sequence. Each group's exponents are compiled
once from their sympy expressions (``lambdify``, numpy) and evaluated over the group's arrays
in float64, so a value agrees with ``infoflow predict`` at that point to float64 rounding
(``predict`` itself evaluates exactly). A spec is valid at every point when it is valid at
every value of each swept field, since no check couples two numbers.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import sympy

from infoflow.core import records
from infoflow.core.errors import SpecError
from infoflow.core.tables import Tabular
from infoflow.retrieval.derive import derive
from infoflow.retrieval.laws import E, T, d, n
from infoflow.retrieval.mechanisms import kth
from infoflow.retrieval.schedule_to_cost import bottleneck
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.retrieval.types import CostTerm, Derivation
from infoflow.spec import as_spec, check_sweep_keys, load_spec, set_path

#: The swept fields that are numbers in the formulas (evaluated as arrays).
NUMBERS = ("seq_len", "input_dim", "architecture.embed_dim", "epsilon")
#: The predictions a sweep reports at each point.
COLUMNS = (
    "cost_exponent",
    "param_cost",
    "min_cost_exponent",
    "num_comparisons",
    "efficient",
    "feasible",
    "bottleneck",
)
MAX_POINTS = 10_000_000
#: The spec checks a sweep makes before its first point (about 0.4 ms each on the project's
#: CPU; a T's derivation is cached where its ranks do not change): one at every value of a
#: number for every combination of the other fields. More than :data:`MAX_CHECKS` (about 3
#: minutes) is refused: a review's 4 million architectures ran silent for hours.
MAX_CHECKS = 500_000
#: Points evaluated and printed at a time.
CHUNK = 1 << 16


@dataclass(frozen=True)
class Sweep(Tabular):
    """Every point of a sweep: ``grids`` (each swept field's values, in grid order),
    ``index`` (per field, each point's position in its grid) and ``columns`` (per
    prediction, one array entry per point; an infinite exponent is ``inf``). As a table
    (``rows()``, ``to_dataframe()``, a notebook's display): one row per point, the swept
    fields then the predictions."""

    grids: dict[str, list[Any]]
    index: dict[str, np.ndarray]
    columns: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.columns["cost_exponent"])

    def point(self, i: int) -> dict[str, Any]:
        """The swept values of point ``i``."""
        return {key: grid[self.index[key][i]] for key, grid in self.grids.items()}

    def rows(self) -> list[dict[str, Any]]:
        """One flat row per point: its swept values, then :data:`COLUMNS`."""
        fields = {
            key: [grid[j] for j in self.index[key].tolist()] for key, grid in self.grids.items()
        }
        fields |= {column: self.columns[column].tolist() for column in COLUMNS}
        for column in ("efficient", "feasible"):  # stored as 0.0 / 1.0
            fields[column] = [bool(value) for value in fields[column]]
        return [
            dict(zip(fields, values, strict=True)) for values in zip(*fields.values(), strict=True)
        ]

    def headers(self) -> tuple[str, ...]:
        return (*self.grids, *COLUMNS)

    def caption(self) -> str:
        return f"sweep: {len(self):,} points"


def sweep(spec: RetrievalSpec, name: str = "<spec>") -> Sweep:
    """Evaluate every point of ``spec.sweep`` (points in the order of ``infoflow.expand``);
    ``spec`` a loaded retrieval spec, or a path or dict loaded first."""
    spec, name = as_spec(spec, "retrieval", name, "sweep")
    parts = list(chunks(spec, name))
    grids = parts[0].grids
    index = {k: np.concatenate([p.index[k] for p in parts]) for k in grids}
    return Sweep(grids, index, {c: np.concatenate([p.columns[c] for p in parts]) for c in COLUMNS})


def chunks(spec: RetrievalSpec, name: str = "<spec>", size: int = CHUNK) -> Iterator[Sweep]:
    """The sweep as consecutive :class:`Sweep` parts of ``size`` points each (memory bounded
    by ``size``). Every point is checked and every derivation made now, before the first part:
    a bad point is a SpecError here, never halfway through the output."""
    grids = dict(spec.sweep or {})
    if not grids or any(not grid for grid in grids.values()):
        raise SpecError(name, [("sweep", "a vectorised sweep needs a sweep, with values")])
    check_sweep_keys(list(grids), name)
    shape = [len(grid) for grid in grids.values()]
    if np.prod(shape, dtype=float) > MAX_POINTS:
        raise SpecError(name, [("sweep", f"more than {MAX_POINTS:,} points")])
    _check_work(grids, name)
    groups = _groups(spec, grids, name)
    return _parts(grids, shape, groups, size)


def _check_work(grids: dict[str, list[Any]], name: str) -> None:
    """Refuse a sweep whose checks before the first point exceed :data:`MAX_CHECKS`."""
    grouped = [key for key in grids if key not in NUMBERS]
    combinations = math.prod(len(grids[key]) for key in grouped)
    per = 1 + sum(len(grids[key]) for key in NUMBERS if key in grids)
    if combinations * per > MAX_CHECKS:
        head = f" ({combinations:,} combinations of {', '.join(grouped)}, {per:,} each)"
        message = (
            f"{combinations * per:,} spec checks before the first point{head if grouped else ''}"
            f", more than {MAX_CHECKS:,}: sweep fewer values"
        )
        raise SpecError(name, [("sweep", message)])


@dataclass(frozen=True)
class _Groups:
    """Per group of points (the values of the swept fields that are not numbers): the values
    of the unswept numbers (``fixed``, [group, number]) and, per index into the ``seq_len``
    grid, which of ``derivations`` holds (``which``, [group, T index])."""

    fixed: np.ndarray
    which: np.ndarray
    derivations: list[Derivation]


def _groups(spec: RetrievalSpec, grids: dict[str, list[Any]], name: str) -> _Groups:
    """Check every value of every group and derive each group at each T."""
    base = spec.model_dump(mode="json", exclude={"sweep"}, exclude_none=True)
    grouped = [key for key in grids if key not in NUMBERS]
    fixed, which, derivations, seen = [], [], [], {}
    for values in itertools.product(*(grids[k] for k in grouped)):
        point = dict(zip(grouped, values, strict=True))
        data = _with(base, point, name)
        specs = {
            key: [_load(_with(data, {key: v}, name), name, {**point, key: v}) for v in grids[key]]
            for key in NUMBERS
            if key in grids
        }
        fixed.append([float(_get(data, key) or np.nan) for key in NUMBERS])
        if any(k not in grids and np.isnan(fixed[-1][j]) for j, k in enumerate(NUMBERS[:3])):
            message = "a vectorised sweep needs seq_len, input_dim and architecture.embed_dim"
            raise SpecError(name, [("sweep", message)])
        row = []
        for at in specs.get("seq_len") or [_load(data, name, point)]:
            swept = {**point, "seq_len": at.seq_len} if "seq_len" in grids else point
            der = derive(at, _named(name, swept))
            if id(der) not in seen:
                seen[id(der)] = len(derivations)
                derivations.append(der)
            row.append(seen[id(der)])
        which.append(row)
    return _Groups(np.array(fixed, dtype=float), np.array(which, dtype=np.int64), derivations)


def _parts(grids, shape, groups: _Groups, size: int) -> Iterator[Sweep]:
    """The points ``size`` at a time: each part's points sorted by their derivation, each
    derivation's expressions evaluated over its points' arrays at once."""
    keys = list(grids)
    grouped = [i for i, key in enumerate(keys) if key not in NUMBERS]
    total = int(np.prod(shape))
    for start in range(0, total, size):
        at = np.unravel_index(np.arange(start, min(start + size, total)), shape)
        index = dict(zip(keys, at, strict=True))
        group = np.zeros(len(at[0]), dtype=np.int64)
        for i in grouped:  # the group's number, as itertools.product counts them
            group = group * shape[i] + at[i]
        t_index = index["seq_len"] if "seq_len" in grids else np.zeros_like(group)
        numbers = {
            key: np.asarray(grids[key], dtype=float)[index[key]]
            if key in grids
            else groups.fixed[group, j]
            for j, key in enumerate(NUMBERS)
        }
        code = groups.which[group, t_index]
        order = np.argsort(code, kind="stable")
        bounds = np.flatnonzero(np.diff(code[order])) + 1
        columns = {
            c: np.empty(len(code), dtype=object if c == "bottleneck" else float) for c in COLUMNS
        }
        for chosen in np.split(order, bounds):
            der = groups.derivations[code[chosen[0]]]
            for column, values in _columns(der, {k: v[chosen] for k, v in numbers.items()}).items():
                columns[column][chosen] = values
        yield Sweep(grids, index, columns)


def _columns(der: Derivation, at: dict[str, np.ndarray]) -> dict[str, Any]:
    """The predictions of one derivation at the arrays ``at``."""
    embed_dim = at["architecture.embed_dim"]
    args = (at["seq_len"], at["input_dim"], embed_dim, embed_dim / kth.fewest_heads(der.schedule))
    alpha = _compiled(der.exponent)(*args)
    with np.errstate(over="ignore"):  # eps^-alpha beyond float64 is inf, as predict says
        param_cost = (1 / at["epsilon"]) ** alpha
    return {
        "cost_exponent": alpha,
        "param_cost": param_cost,
        "min_cost_exponent": _compiled(der.minimal_exponent)(*args),
        "num_comparisons": der.tree.dimension * at["seq_len"] ** der.tree.order,
        "efficient": der.efficient,
        "feasible": der.schedule.feasible,
        "bottleneck": _bottleneck(der, args),
    }


def _bottleneck(der: Derivation, args) -> np.ndarray:
    """What sets the exponent at each point (the rule ``predict`` follows:
    :func:`~infoflow.retrieval.schedule_to_cost.bottleneck`)."""
    chosen = bottleneck(der, lambda expression: _compiled(expression)(*args))
    return np.broadcast_to(_words(chosen), args[0].shape)


def _what(term: CostTerm) -> str:
    return term.what


_words = np.frompyfunc(_what, 1, 1)  # the bottleneck terms' words, element by element


@lru_cache(maxsize=1024)
def _compiled(expression) -> Any:
    """``expression`` as a numpy function of (T, d, E, n), compiled once."""
    function = sympy.lambdify((T, d, E, n), expression, "numpy")
    return lambda *args: np.broadcast_to(np.asarray(function(*args), dtype=float), args[0].shape)


def _load(data: dict, name: str, point: dict[str, Any]) -> RetrievalSpec:
    """The spec ``data`` (at the sweep's ``point``), validated; a SpecError names the
    point, every swept value in it (it named the number alone: a fresh-user audit)."""
    try:
        return load_spec(data)
    except SpecError as error:
        raise SpecError(_named(name, point), error.problems) from None


def _named(name: str, point: dict[str, Any]) -> str:
    """The spec's file and the sweep's point, its values as JSON writes them (``true``)."""
    where = ", ".join(f"{key}={json.dumps(value)}" for key, value in point.items())
    return f"{name} (sweep point {where})" if where else name


def _with(data: dict, values: dict[str, Any], name: str) -> dict:
    """A copy of the raw spec ``data`` with dotted ``values`` set (``name``: the spec's file,
    for errors)."""
    out = copy.deepcopy(data)
    for key, value in values.items():
        set_path(out, key, value, name, f"sweep.{key}")
    return out


def _get(data: dict, key: str) -> Any:
    node: Any = data
    for part in key.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def sweep_lines(spec: RetrievalSpec, format: str, name: str = "<spec>") -> Iterator[str]:
    """``infoflow sweep``: check every point and derive now (a bad point is a SpecError
    before any output), then the lines of :func:`lines`, a part at a time as evaluated."""
    parts = chunks(spec, name)
    return (  # a table's every part has its header, its columns aligned within the part
        line
        for i, part in enumerate(parts)
        for line in lines(part, format, name, i == 0 or format == "table")
    )


def lines(result: Sweep, format: str, name: str = "<spec>", header: bool = True) -> Iterator[str]:
    """The sweep as text, a line at a time: ``json`` (one object per point, numbers as
    ``predict`` writes them), ``jsonl`` (the scripting shape of :mod:`infoflow.core.records`)
    or a table (a header unless ``header`` is false, then one row per point; numbers
    right-aligned, each column as wide as its widest cell of this part)."""
    keys = list(result.grids)
    fields = []
    for key, grid in result.grids.items():
        text = [json.dumps(value) for value in grid]
        fields.append([text[j] for j in result.index[key].tolist()])
    cols = {c: result.columns[c].tolist() for c in COLUMNS}
    numbers = {"cost_exponent": True, "param_cost": False, "min_cost_exponent": True}
    numbers["num_comparisons"] = True
    text = _value if format == "jsonl" else _number
    fields += [[text(v, whole) for v in cols[c]] for c, whole in numbers.items()]
    fields += [["true" if v else "false" for v in cols[c]] for c in ("efficient", "feasible")]
    names = {what: json.dumps(what) for what in set(cols["bottleneck"])}
    fields.append([names[what] for what in cols["bottleneck"]])
    if format == "table":
        table = _table([*keys, *COLUMNS], fields)
        if not header:
            next(table)
        yield from table
        return
    if format == "jsonl":
        template = _jsonl_template(keys, name)
    else:
        quoted = [json.dumps(k).replace("{", "{{").replace("}", "}}") for k in keys]
        where = ", ".join(f"{k}: {{}}" for k in quoted)
        values = ", ".join(f'"{c}": {{}}' for c in COLUMNS)
        template = '{{"point": {{' + where + "}}, " + values + "}}"
    for parts in zip(*fields, strict=True):
        yield template.format(*parts)


def _table(header: list[str], fields: list[list[str]]) -> Iterator[str]:
    """Aligned rows: each column as wide as its widest cell, numbers right-aligned."""
    widths = [max([len(h), *map(len, column)]) for h, column in zip(header, fields, strict=True)]
    right = [all(_numeric(cell) for cell in column) for column in fields]
    cells = (h.rjust(w) if r else h.ljust(w) for h, w, r in zip(header, widths, right, strict=True))
    yield "  ".join(cells).rstrip()
    for parts in zip(*fields, strict=True):
        cells = (
            c.rjust(w) if r else c.ljust(w) for c, w, r in zip(parts, widths, right, strict=True)
        )
        yield "  ".join(cells).rstrip()


def _numeric(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return cell == "null"
    return True


def _jsonl_template(keys: list[str], name: str) -> str:
    """A format string of one jsonl line, with a slot per swept value and per prediction."""
    head = records.line(records.record("sweep", "retrieval", name))
    head = head.replace("{", "{{").replace("}", "}}")
    quoted = [json.dumps(k).replace("{", "{{").replace("}", "}}") for k in keys]
    where = "{{" + ", ".join(f"{k}: {{}}" for k in quoted) + "}}"
    values = "{{" + ", ".join(f'"{c}": {{{{"value": {{}}}}}}' for c in COLUMNS) + "}}"
    head = head.replace('"point": {{}}', f'"point": {where}')
    return head.replace('"predictions": {{}}', f'"predictions": {values}')


def _value(value: float, whole: bool = True) -> str:
    """What follows ``{"value": `` in a jsonl prediction: the number as :func:`_number`
    writes it, or null and a note saying what it was."""
    if np.isfinite(value):
        return _number(value, whole)
    return f'null, "note": "not a finite number: {value}"'


def _number(value: float, whole: bool = True) -> str:
    """A float as ``predict``'s JSON writes it: null when infinite, an integer when whole
    (exact rationals that are whole are integers there), else the shortest repr."""
    if not np.isfinite(value):
        return "null"
    return str(int(value)) if whole and value.is_integer() else repr(value)
