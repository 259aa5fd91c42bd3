"""One-token terms -> heads: a max, min, argmax or argmin over one token (a stage of
:mod:`~infoflow.retrieval.schedule_to_circuit`), and fixed positions fetched."""

from __future__ import annotations

from infoflow.retrieval import circuit_forms as forms
from infoflow.retrieval.algebra import reads
from infoflow.retrieval.circuit import ANCHOR, TOKENS, Circuit, Copy
from infoflow.retrieval.circuit_forms import Unbuildable
from infoflow.retrieval.circuit_layout import Part
from infoflow.retrieval.circuit_terms import ARGS, EXTREMA
from infoflow.retrieval.expression import Reduce, Token
from infoflow.retrieval.mechanisms import fetch, max_position
from infoflow.retrieval.shifted_indices import unshift
from infoflow.retrieval.spec import RetrievalSpec


def retrieval_term(
    circuit: Circuit, term: Reduce, tag: str, spec: RetrievalSpec
) -> tuple[list, list]:
    """A max, min, argmax or argmin over one token t of a linear score, or of a score against
    a fixed position (``dot(x[t-1], x[T])``: a head fetches x[T] for the readout in layer 1,
    the retrieval runs in layer 2 and its MLP decodes the score of the token it copies). An
    index read at one offset o is retrieved at the position it reads, u = t + o, leaving out
    the u no t reads (a flag marks them); an argmax returns u - o, the position's number
    less o (positional encoding)."""
    var = term.variables[0].name
    if term.op in ARGS and not circuit.positional_encoding:
        raise Unbuildable(f"{forms.text(term)}: its value is a position (no PE)")
    offset = forms.one_offset(term, var, reads(term.body, var))
    body = unshift(term.body, var, offset)
    norm = forms.own_norm(body, var)
    if norm is not None and term.op in EXTREMA:
        squared, sign = norm[0] or spec.options.squared_norm, forms.sign(term.op)
        skip = _skip(circuit, term, offset, tag, spec)
        return max_position.circuit_norm_single(circuit, tag, sign, squared, norm[1], skip)
    heads = []
    fixed = forms.fixed_query(body, var, spec.seq_len)
    if fixed is None:
        matrix, query, layer = forms.linear(body, var), ANCHOR, 1
        if matrix == "I":
            raise Unbuildable(f"{forms.text(term)}: the {term.op} of a vector")
    else:
        matrix, position = fixed
        query, layer = circuit.add(f"{tag}.query", circuit.channels[TOKENS]), 2
        flag = circuit.flag(f"{tag}.at", (position,))
        does = f"the readout fetches x[{position}] into {query}"
        heads.append(fetch.circuit_head(flag, Copy(TOKENS, query), does))
    skip = _skip(circuit, term, offset, tag, spec)  # after the fetch: it may share its flag
    best = 1 if term.op in ("max", "argmax") else -1
    if term.op in ARGS:
        found = max_position.circuit_argmax(
            circuit, tag, query, matrix, best, -offset, layer, spec.seq_len, skip
        )
        return [*heads, *found[0]], found[1]
    if query != ANCHOR:
        found = max_position.circuit_fixed_query(circuit, tag, query, matrix, best, skip)
        return [*heads, *found[0]], found[1]
    return max_position.circuit_single(circuit, tag, matrix, best, skip)


def _skip(circuit: Circuit, term: Reduce, offset: int, tag: str, spec: RetrievalSpec) -> str:
    """The flag marking the positions a one-token retrieval's index, read at ``offset``,
    never reads (its tests or the offset leave them out: PE); "" if none."""
    var = term.variables[0].name
    skipped = forms.left_out(term.conditions, var, offset, spec.seq_len)
    if not skipped:
        return ""
    if not circuit.positional_encoding:
        raise Unbuildable(f"{forms.text(term)}: its range leaves positions out (no PE)")
    return circuit.flag(f"{tag}.skip", skipped)


def fixed_positions(
    circuit: Circuit, tokens: list[Token], spec: RetrievalSpec, parts: list[Part]
) -> str:
    """``x[1] + x[2] + ...``, or ``x[1][0] + x[2][0]``: one fetch head, times the count (a
    part of ``parts``); the channel it writes."""
    component = tokens[0].component if len({t.component for t in tokens}) == 1 else None
    whole, one = component == (), component and len(component) == 1 and type(component[0]) is int
    if not (whole or one):
        why = "(x[1] + x[2] or x[1][0] + x[2][0], not x[1][0] + x[2][1])"
        raise Unbuildable(f"fixed positions are fetched whole or by one coordinate, alike {why}")
    positions = sorted(
        {t.index if isinstance(t.index, int) else spec.seq_len + t.offset for t in tokens}
    )
    if len(positions) != len(tokens):
        raise Unbuildable("a fixed position read twice")
    flag = circuit.flag("fixed", tuple(positions))
    out = circuit.add("fixed.out", circuit.channels[TOKENS] if whole else 1)
    copy = Copy(TOKENS, out, "I" if whole else f"e:{component[0]}", float(len(positions)))
    where = ", ".join(f"x[{p}]" + ("" if whole else f"[{component[0]}]") for p in positions)
    parts.insert(
        0, ([fetch.circuit_head(flag, copy, f"the readout sums {where} into {out}")], [], None)
    )
    return out
