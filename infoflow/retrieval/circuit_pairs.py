"""A max or min over two tokens -> its heads and MLPs (the pair retrieval of
:mod:`~infoflow.retrieval.mechanisms.max_position`): a ``dot`` or ``bilinear`` score, or a
norm pair, with ``s != t`` (the positional self-penalty) or under conditions on the two
positions (a window: a positional mask); a star of pair scores around a centre; a token's
k-th partner (the partner peel). A stage of
:mod:`~infoflow.retrieval.schedule_to_circuit`."""

from __future__ import annotations

from dataclasses import replace

from infoflow.retrieval import circuit_forms as forms
from infoflow.retrieval.algebra import free_indices
from infoflow.retrieval.circuit import Circuit, Copy
from infoflow.retrieval.circuit_forms import Unbuildable
from infoflow.retrieval.derive import derive
from infoflow.retrieval.expression import SEQUENCE, Node, Reduce
from infoflow.retrieval.mechanisms import kth, max_position, pooling
from infoflow.retrieval.spec import RetrievalSpec


def pair_term(
    circuit: Circuit,
    term: Reduce,
    tag: str,
    names: list[str],
    body: Node,
    conditions: tuple,
    spec: RetrievalSpec,
) -> tuple[list, list]:
    """The heads and MLPs of a max or min of ``body`` over the tokens ``names`` under
    ``conditions``."""
    if any(c.op != "!=" or c.shift or {c.left, c.right} != set(names) for c in conditions):
        return _window_term(circuit, term, tag, names, body, conditions, spec)
    norm = forms.norm_pair(body, *names)
    if norm is not None:
        return _norm_term(circuit, term, tag, norm, bool(conditions), spec)
    exclude = spec.seq_len if conditions and circuit.positional_encoding else 0
    if conditions and not exclude:
        circuit.notes.append(
            f"{tag}: the condition {names[0]} != {names[1]} is not enforced: without "
            "positional encoding a token cannot tell itself from another; the pair (s, s) "
            "competes, which changes the value only where it is the best pair"
        )
    matrix = forms.bilinear(body, *names)
    return max_position.circuit_pair(circuit, tag, matrix, forms.sign(term.op), exclude)


def _window_term(
    circuit: Circuit,
    term: Reduce,
    tag: str,
    names: list[str],
    body: Node,
    conditions: tuple,
    spec: RetrievalSpec,
) -> tuple[list, list]:
    """A pair under conditions on its two positions (a window ``abs(s - t) <= w``, an order
    ``s < t``): the pair retrieval, every token's first score penalised on each partner the
    conditions leave out, the readout's on each token they leave without one
    (:func:`~infoflow.retrieval.mechanisms.max_position.circuit_pair`); positional encoding
    carries the positions."""
    s, t = names
    if any(not _between(c, s, t) for c in conditions):
        raise Unbuildable(
            f"{forms.text(term)}: conditions between {s} and {t}, or on one of them against "
            "numbers and T, only are built"
        )
    if not circuit.positional_encoding:
        raise Unbuildable(f"{forms.text(term)}: its conditions read positions (no PE)")
    partners = _partners(conditions, s, t, spec.seq_len)
    if not any(partners):
        raise Unbuildable(f"{forms.text(term)}: its conditions leave no pair at T = {spec.seq_len}")
    _mask(circuit, tag, partners)
    norm = forms.norm_pair(body, s, t)
    if norm is not None:
        plus, squared = norm
        squared = squared or spec.options.squared_norm
        best = forms.sign(term.op)
        return max_position.circuit_norm_pair(circuit, tag, plus, squared, best, window=tag)
    matrix = forms.bilinear(body, s, t)
    return max_position.circuit_pair(circuit, tag, matrix, forms.sign(term.op), window=tag)


def _partners(conditions, s: str, t: str, seq_len: int) -> list[list[int]]:
    """For each position p of s (1-based), the positions of t the conditions allow."""
    seq, at = range(1, seq_len + 1), {SEQUENCE: seq_len}
    return [
        [q for q in seq if all(forms.holds(c, {**at, s: p, t: q}) for c in conditions)] for p in seq
    ]


def _mask(circuit: Circuit, tag: str, partners: list[list[int]]) -> None:
    """The window's masks: for each token the positions it may not retrieve (``tag``), and
    the tokens left without a partner (``tag.alone``)."""
    seq = range(1, len(partners) + 1)
    circuit.masks[tag] = tuple(tuple(q for q in seq if q not in row) for row in partners)
    circuit.masks[f"{tag}.alone"] = (
        tuple(p for p, row in zip(seq, partners, strict=True) if not row),
    )


def _between(condition, s: str, t: str) -> bool:
    """A condition between s and t, or on one of them against a number or T (a token whose
    own test fails is left without a partner: since 2026-12-07, for neighbours' ranges)."""
    if condition.left not in (s, t):
        return False
    other = condition.right
    return isinstance(other, int) or other == SEQUENCE or other in {s, t} - {condition.left}


def _norm_term(
    circuit: Circuit,
    term: Reduce,
    tag: str,
    norm: tuple[int, bool],
    distinct: bool,
    spec: RetrievalSpec,
) -> tuple[list, list]:
    """A norm pair's heads and MLPs (``distinct``: the target says s != t). With positional
    encoding the first head leaves each token out of its own retrieval; without, refused
    where the pair (s, s) would decide the value: the nearest pair of a difference (each
    token's nearest is itself), and s != t on a sum (its farthest pair is (s, s) often; its
    closest, sometimes). The farthest pair of a difference keeps s != t exactly: (s, s) is
    at 0, never the farthest."""
    plus, squared = norm
    exclude = spec.seq_len if distinct and circuit.positional_encoding else 0
    if plus < 0 and term.op == "min" and not exclude:
        raise Unbuildable(
            f"{forms.text(term)}: the nearest pair is built only with s != t and positional "
            "encoding: each token's nearest is itself (distance 0)"
        )
    if distinct and plus > 0 and not exclude:
        raise Unbuildable(
            f"{forms.text(term)}: the condition s != t on the norm of a sum is not built without "
            "positional encoding: the pair (s, s) competes, and decides the value often"
        )
    squared = squared or spec.options.squared_norm
    return max_position.circuit_norm_pair(circuit, tag, plus, squared, forms.sign(term.op), exclude)


def star_term(
    circuit: Circuit, term: Reduce, tag: str, names: list[str], body: Node, spec: RetrievalSpec
) -> tuple[list, list]:
    """A max or min over a centre and its leaves of a sum of pair scores, each leaf in one
    (a chain of three, a star): every token retrieves each leaf's best in the layer the
    engine's schedule gives it, side by side or one a layer
    (:func:`~infoflow.retrieval.mechanisms.max_position.circuit_star`)."""
    if term.conditions:
        raise Unbuildable(f"{forms.text(term)}: a star is built without conditions")
    pieces = forms.signed_terms(body)
    reads = [free_indices(piece) & set(names) for _, piece in pieces]
    centre = set.intersection(*reads)
    leaves = [next(iter(r - centre)) for r in reads if len(r) == 2 and r - centre]
    if (
        len(centre) != 1
        or len(leaves) != len(pieces)
        or sorted(leaves) != sorted(set(names) - centre)
    ):
        raise Unbuildable(
            f"{forms.text(term)}: compile builds a star, every term a pair score of one index "
            "all terms read (the centre) and a leaf no other term reads"
        )
    (hub,) = centre
    layers = _layers_of(spec)
    grouped: dict[tuple[str, int], list] = {}  # leaves with one score: one retrieval, n times
    for (sign, piece), leaf in zip(pieces, leaves, strict=True):
        grouped.setdefault((forms.bilinear(piece, hub, leaf), sign), []).append(leaf)
    scores = [  # equal leaves share the engine's step, under whichever name it kept
        (same[0], matrix, sign, max(layers.get((leaf, hub), 1) for leaf in same), len(same))
        for (matrix, sign), same in grouped.items()
    ]
    last = layers.get((hub, None), 1 + max(score[3] for score in scores))
    return max_position.circuit_star(circuit, tag, hub, scores, forms.sign(term.op), last)


def _layers_of(spec: RetrievalSpec) -> dict[tuple[str, str | None], int]:
    """The layer the engine's schedule ends each retrieval in, by (what is retrieved, for
    whom): a star's leaves side by side in layer 1 ([L, 1]), or one a layer (the sequential
    schedule, [1, 1, 1])."""
    out = {}
    for q in derive(spec).schedule.placements:
        if q.mode == "scheduled" and q.fragment:
            for step, layers in zip(q.fragment.steps, q.layers, strict=True):
                out.setdefault((step.variable, step.holder), layers[-1])
    return out


def partner_term(
    circuit: Circuit, term: Reduce, tag: str, spec: RetrievalSpec
) -> tuple[list, list]:
    """The max or min over s of a token's k-th partner: the partner peel
    (:func:`~infoflow.retrieval.mechanisms.kth.circuit_partner_peel`)."""
    inner = term.body
    s, t = term.variables[0].name, inner.variables[0].name
    if term.conditions or any(
        c.op != "!=" or c.shift or {c.left, c.right} != {s, t} for c in inner.conditions
    ):
        raise Unbuildable(f"{forms.text(inner)}: only the condition {t} != {s}")
    distinct = bool(inner.conditions)
    rank = kth.rank(inner.k, spec.seq_len, int(distinct))
    if rank > 1 and not circuit.positional_encoding:
        raise Unbuildable(f"{forms.text(inner)}: {kth.BY_POSITION}")
    if distinct and not circuit.positional_encoding:
        circuit.notes.append(
            f"{tag}: the condition {t} != {s} is not enforced: without positional encoding a "
            f"token cannot tell itself from another; the pair (s, s) competes"
        )
    largest = (inner.op == "kth_largest") == (rank == inner.k)
    pair = (forms.bilinear(inner.body, s, t), 1 if largest else -1)
    own = distinct and circuit.positional_encoding
    best = forms.sign(term.op)
    return kth.circuit_partner_peel(circuit, tag, pair, best, rank, spec.seq_len, own)


def pair_sum_term(
    circuit: Circuit, term: Reduce, tag: str, spec: RetrievalSpec
) -> tuple[list, list]:
    """A sum over pairs a fixed gap apart (one token read at two offsets:
    :mod:`.circuit_neighbours`): every token s retrieves its one partner (a window's mask),
    the MLP decodes the pair's score, and in layer 2 the readout averages it over the tokens
    that have a partner (the others' logit :data:`~.circuit.LEFT_OUT`), times their number."""
    s, t = (v.name for v in term.variables)
    if not circuit.positional_encoding:
        raise Unbuildable(f"{forms.text(term)}: its pairs are a gap apart (positions: no PE)")
    partners = _partners(term.conditions, s, t, spec.seq_len)
    if any(len(row) > 1 for row in partners) or not any(partners):
        raise Unbuildable(f"{forms.text(term)}: a sum is built over one partner a token")
    matrix = forms.bilinear(term.body, s, t)
    _mask(circuit, tag, partners)
    (first, _), mlps = max_position.circuit_pair(circuit, tag, matrix, 1, window=tag)
    weights = circuit.logit(f"{tag}.weight", tuple(int(bool(row)) for row in partners))
    counted = float(sum(map(bool, partners)))
    copy = Copy(f"{tag}.value", f"{tag}.out", "I", counted)
    does = f"the readout sums {tag}.value over the tokens with a partner into {tag}.out"
    return [first, replace(pooling.circuit_head(copy, does, weights), layer=2)], mlps
