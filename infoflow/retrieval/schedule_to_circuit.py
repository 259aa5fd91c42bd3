"""A spec the engine calls efficient -> the circuit that carries out its plan
(:mod:`.circuit`), the first stage of ``infoflow compile``.

The engine's schedule says which step runs in which layer; the target's expression says what
each step scores. Compile reads both: it refuses a spec the engine calls inefficient or
impossible (naming the bottleneck), reads the target as a sum of terms it can build
(:mod:`.circuit_terms`), asks
each mechanism for the heads and MLPs of its term (from layer 1), lays the terms out on the
architecture's layers (:mod:`.circuit_layout`: side by side where they fit, else where the
engine runs each part) and checks the result fits (head width, E). Terms it builds:

- fixed positions read directly (``x[1] + x[2] + x[3]``, positional encoding): one fetch head;
- ``sum`` over one token of a linear score (``dot(q, x[t])``, ``x[t][j]``, ``x[t]``): pooling
  (at an offset, or tested against numbers: over the positions it reads, the rest left out
  by their logits; with indices it does not read, counted: a constant factor, or weights on
  the positions: :mod:`.circuit_sums`); of a squared norm, read from LayerNorm's scale;
- a product of two such sums, or a sum over two tokens whose score factors into one
  (``dot(x[s], x[t])``, ``x[s][0] * x[t][1]``): both pooled, the MLP multiplying
  (:mod:`.circuit_products`);
- ``max``/``min`` over one token of a linear score: one max-position retrieval;
- ``max``/``min`` over two tokens of ``dot`` or ``bilinear``: two retrievals and a decode;
- ``max``/``min`` over two tokens of ``norm`` or ``sqnorm`` of ``x[s] + x[t]`` (or ``-``,
  not its min): the same, the first retrieval's key reading |x(t)|^2 from LayerNorm's scale,
  and a square root in layer 2 for the norm;
- either pair under conditions on its two positions (a window ``abs(s - t) <= w``, an order
  ``s < t``, a gap ``t - s >= g``, a range of one of them), with positional encoding: the
  same heads, the first score penalised on every pair the conditions leave out (a positional
  mask), the readout's on every token they leave without a partner; so also a max or min
  over one token read at two offsets, a pair a fixed gap apart (:mod:`.circuit_neighbours`);
- ``kth_largest``/``kth_smallest`` over one token of a linear score: the peel;
- ``max``/``min`` over s of the k-th over t (``t != s`` or not) of ``dot`` or ``bilinear``:
  the partner peel, every token's own race, its earlier partners left out by position (so
  with positional encoding from rank 2 on), a decode, the readout's retrieval;
- ``max``/``min`` over a centre and leaves of a sum of pair scores, each leaf in one term (a
  chain of three, a star): each leaf's retrieval in the layer the engine's schedule gives it
  (side by side, or one a layer), a decode each;
- ``max``/``min`` over s != t of f(s) + f(t), f a linear score, or the max of f beside a
  k-th of f: the peel, whose first round holds the max, as the engine plans it;
- ``max``/``min`` over one token of a score against a fixed position (``dot(x[1], x[t])``):
  a fetch for the readout in layer 1, the retrieval and its decode in layer 2; ``argmax``/
  ``argmin`` of a linear score or of one against a fixed position: the readout copies the
  winner's position number; an index read at one offset is retrieved where it reads;
- a pointwise max or min of two sums of these (the engine's per-branch reading of a max whose
  branches differ): one ReLU of the MLP after the last of them (:mod:`.circuit_branches`);
- any of these summed over a range index (``sum(... for i in range(D))``): one copy each;
  a constant factor taken out of its reduction (``max(-2 f)`` is -2 min f), a constant added
  to its score too (``max(f + 1)`` is max f + 1, a sum over the T tokens of f + 1 is the sum
  of f + T: the output's bias), and equal terms built once with the sum of their
  coefficients.

A one-token max or min may test its position against numbers (a positional mask) or rank
``norm(x[t])`` (its |x|^2 read from LayerNorm). Where the target as written is not built, the
engine's reading is (its rewrites), noted, measured against the target as written; of a
target read two ways, the other reading where the one the engine took is not built and the
engine calls the other efficient on the architecture too (one score, ``abs(...)``, is not a
bilinear score; one reduction a branch is built). Anything else is refused with the term and
the reason: a witness is built, never guessed.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from infoflow.core.errors import SpecError
from infoflow.retrieval import circuit_forms as forms
from infoflow.retrieval.algebra import free_indices, key, normal, reads
from infoflow.retrieval.circuit import ANCHOR, BALANCE, READOUT, TOKENS, ZERO, Circuit
from infoflow.retrieval.circuit_branches import Built, join_branches, pointwise_branches
from infoflow.retrieval.circuit_fit import fit, named
from infoflow.retrieval.circuit_forms import Unbuildable
from infoflow.retrieval.circuit_layout import Part, lay_out, shared_retrievals
from infoflow.retrieval.circuit_neighbours import neighbour_pair
from infoflow.retrieval.circuit_pairs import pair_sum_term, pair_term, partner_term, star_term
from infoflow.retrieval.circuit_products import pooled_product, product_term, staggered
from infoflow.retrieval.circuit_sums import pooled_term, shared_pools
from infoflow.retrieval.circuit_terms import ARGS, EXTREMA, terms_of
from infoflow.retrieval.circuit_tokens import fixed_positions, retrieval_term
from infoflow.retrieval.derive import derivations, derive
from infoflow.retrieval.diagonal import unordered_reduce
from infoflow.retrieval.expression import KTH, SEQUENCE, Apply, Const, Node, Reduce, Token
from infoflow.retrieval.expression_rewrite import rewrite
from infoflow.retrieval.increasing_functions import put_back
from infoflow.retrieval.laws import T
from infoflow.retrieval.mechanisms import (
    kth,
    max_position,
    part_sentences,
    sentences,
)
from infoflow.retrieval.predict import BRANCHES, predictions
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.retrieval.text_to_expression import parse_target
from infoflow.retrieval.types import Derivation, Schedule

#: The longest sequence compile builds a circuit for.
MAX_SEQ_LEN = 1024


def circuit_of(spec: RetrievalSpec, source: str = "<spec>") -> Circuit:
    """The circuit of ``spec``'s plan on its own architecture; a SpecError (exit 2) naming
    the bottleneck when the engine calls the spec inefficient, or the term compile cannot
    build, or what does not fit."""
    if spec.seq_len is None:
        why = "compile builds weights for one sequence length: give seq_len a number"
        raise SpecError(source, [("seq_len", why)])
    if spec.seq_len > MAX_SEQ_LEN:
        why = (
            f"compile builds weights up to seq_len {MAX_SEQ_LEN} (it writes masks and flags "
            f"position by position and measures the witness on whole sequences), not {spec.seq_len}"
        )
        raise SpecError(source, [("seq_len", why)])
    der = derive(spec, source)
    if not der.efficient:
        result = predictions(spec, der, source)
        how = "impossible" if not der.schedule.feasible else "not efficient (alpha grows with T)"
        hint = (
            "no architecture makes it efficient"
            if der.minimal_exponent.has(T)
            else "try the minimal architecture `infoflow explain` prints"
        )
        raise SpecError(
            source,
            [
                (
                    "architecture",
                    f"the engine calls this architecture {how}; bottleneck: "
                    f"{result['bottleneck'].value}. Compile builds witnesses of efficient "
                    f"plans only ({hint})",
                )
            ],
        )
    tree = parse_target(spec.target, tuple(sorted(spec.params.items())))
    try:
        return _circuit(spec, tree, der.schedule)
    except Unbuildable as exc:
        return _read_circuit(spec, tree, der, exc, source)


def _read_circuit(
    spec: RetrievalSpec, tree: Node, der: Derivation, written: Unbuildable, source: str
) -> Circuit:
    """The circuit of the engine's reading of ``tree`` (its rewrites), where the target as
    written is not built; where the target is read two ways and compile cannot build the
    reading the engine took, the other where the engine calls it efficient here too."""
    others = [d for d in derivations(spec, source) if d.tree.branches != der.tree.branches]
    taken, refusals = str(written), []  # why the engine's reading is not built; each reading's
    for reading_der in [der, *(d for d in others if d.efficient)]:
        reading = put_back(rewrite(tree, reading_der.tree.branches))  # one function (tests)
        if not _same(reading, tree, spec):
            continue
        name = BRANCHES[reading_der.tree.branches]
        label = "as the engine reads it" if reading_der is der else f"read {name} (also efficient)"
        try:
            circuit = _circuit(spec, reading, reading_der.schedule)
        except Unbuildable as exc:
            taken = str(exc) if reading_der is der else taken
            refusals += [f"; {label}, {exc}"] if str(exc) != str(written) else []
            continue
        how = "the engine's reading of the target (its canonical rewrites)"
        if reading_der is not der:
            why = "the target as written" if taken == str(written) else f"not built: {taken}"
            how = (
                f"the engine's other reading of the target, {name}, which it also calls efficient "
                f"on this architecture (it took {BRANCHES[der.tree.branches]}, {why})"
            )
        circuit.notes.append(
            f"built from {how}, not from the target as written ({written}); the witness is "
            "measured against the target as written"
        )
        return circuit
    why = f"compile cannot build this plan: {written}{''.join(refusals)}"
    raise SpecError(source, [("target", why)]) from None


def _same(reading: Node, tree: Node, spec: RetrievalSpec) -> bool:
    """Whether the engine's reading is another spelling of the written target's function:
    not under ``squared_norm`` (the reading's norm spellings ignore it: ``norm(v) ** 2`` is
    |v|^4 there), nor with an argmax or argmin read at an offset (the reading returns the
    position found, less the offset: a reviewer's counterexamples, NMSE 0.25 to 300)."""
    if reading == tree or spec.options.squared_norm:
        return False
    return not any(
        r.op in ARGS and reads(r.body, r.variables[0].name) - {0} for r in _reductions(tree)
    )


def _reductions(node: Node) -> list[Reduce]:
    """Every reduction in ``node``."""
    if isinstance(node, Reduce):
        return [node, *_reductions(node.body)]
    if isinstance(node, Apply):
        return [r for arg in node.args for r in _reductions(arg)]
    return []


def _circuit(spec: RetrievalSpec, tree: Node, schedule: Schedule) -> Circuit:
    """The circuit of ``tree`` on ``spec``'s architecture (Unbuildable where it is not)."""
    arch = spec.architecture
    circuit = Circuit(arch.layers, tuple(arch.heads_per_layer), arch.positional_encoding)
    fixed = (ANCHOR, 1), (ZERO, 1), (BALANCE, 1), (READOUT, 1), (TOKENS, spec.input_dim or 4)
    for group, width in fixed:
        circuit.add(group, width)
    _build(circuit, tree, spec, schedule)
    fit(circuit, spec)
    return circuit


def _build(circuit: Circuit, tree: Node, spec: RetrievalSpec, schedule: Schedule) -> None:
    """Every term's heads and MLPs, laid out on the architecture's layers
    (:func:`~.circuit_layout.lay_out`) and named after the engine's steps, and the output (of
    a pointwise max of branches: :mod:`.circuit_branches`)."""
    split = pointwise_branches(tree)
    parts: list[Part] = []
    built: dict[Node, str] = {}
    sums = [
        ([], float(piece.value))  # a constant branch (max(f, 0)): no term
        if split and isinstance(piece, Const)
        else _sum_built(circuit, terms_of(piece, spec.seq_len), spec, parts, built, bool(split))
        for piece in (split[1] if split else (tree,))
    ]
    try:
        laid, how, paired = lay_out(
            shared_retrievals(shared_pools(parts)), circuit.heads_per_layer, schedule
        )
    except Unbuildable as side_by_side:  # a product's two sums a layer apart ([1, 1], not [2])
        apart = staggered(parts)
        if apart == parts:
            raise
        try:
            laid, how, paired = lay_out(
                shared_retrievals(shared_pools(apart)), circuit.heads_per_layer, schedule
            )
        except Unbuildable:
            raise side_by_side from None
    if paired is not None:  # each term's heads after its own engine part's steps
        laid = [
            (named(heads, part_sentences(q)) if q else heads, mlps)
            for (heads, mlps), q in zip(laid, paired, strict=True)
        ]
    circuit.heads = [h for part, _ in laid for h in part]
    circuit.mlps = [m for _, part in laid for m in part]
    used: dict[int, int] = {}
    for i, head in enumerate(circuit.heads):
        slot = used.get(head.layer, 0)
        used[head.layer] = slot + 1
        circuit.heads[i] = replace(head, slot=slot)
    if paired is None and how != "search":  # side by side: a layer's heads after its steps
        circuit.heads = named(circuit.heads, sentences(schedule), by_order=False)
    if split:
        join_branches(circuit, split[0], sums)
    else:
        circuit.output, circuit.constant = sums[0]
    unnamed = sorted({h.layer for h in circuit.heads if not h.step})
    if paired is None and how == "search":
        circuit.notes.append(
            "the terms are laid out in layers of compile's own choosing, not the engine's: "
            "the heads are not named after the engine's steps"
        )
    elif unnamed:
        circuit.notes.append(
            f"the heads of layer(s) {', '.join(map(str, unnamed))} are not named after the "
            "engine's steps: the terms do not pair one to one with the engine's parts, and "
            "there compile's heads and the engine's steps match neither by layer nor by the "
            "index they retrieve"
        )


def _sum_built(
    circuit: Circuit,
    found: list,
    spec: RetrievalSpec,
    parts: list[Part],
    built: dict[Node, str],
    branch: bool,
) -> Built:
    """One sum of terms (the target, or a ``branch`` of a pointwise max) built: its terms'
    heads and MLPs appended to ``parts`` (a term ``built`` in another branch is read again),
    and what the output reads of it (channel, coefficient), with its constant."""
    constants = [c * Fraction(str(t.value)) for c, t, _ in found if isinstance(t, Const)]
    terms = [(c, t, op) for c, t, op in found if not isinstance(t, Const)]
    if not terms:
        raise Unbuildable("the target is a constant: there is nothing to build")
    fixed = [t for _, t, _ in terms if isinstance(t, Token)]
    if any(sign != 1 for sign, t, _ in terms if isinstance(t, Token)) or (fixed and branch):
        raise Unbuildable(
            "fixed positions are fetched added, once each, outside a pointwise max (x[1] + "
            "x[2], not x[1] - x[2] or 2 * x[1])"
        )
    output = [(fixed_positions(circuit, fixed, spec, parts), 1.0)] if fixed else []
    scored = [(sign, t) for sign, t, _ in terms if not isinstance(t, Token)]
    written = [op for _, t, op in terms if not isinstance(t, Token)]
    held = forms.peel_firsts(scored, spec.seq_len)
    tags = [built.get(normal(key(term))) for _, term in scored]
    for n, (_, term) in enumerate(scored):
        if n not in held and tags[n] is None:  # held: the first round of a peel holds it
            tags[n] = built[normal(key(term))] = tag = f"p{len(built)}"
            heads, mlps = _term(circuit, term, tag, spec)
            parts.append((heads, mlps, _kind(term, written[n])))
    for n, (sign, _) in enumerate(scored):
        host, scale = held.get(n, (n, 1.0))
        output.append((f"{tags[host]}.m1" if n in held else f"{tags[n]}.out", float(sign) * scale))
    if len({circuit.channels[group] for group, _ in output}) > 1:
        raise Unbuildable("a scalar beside a vector (compile adds terms as they are: x[1][0])")
    return output, float(sum(constants, Fraction(0)))


def _kind(term: Node, written: str) -> tuple[str, int] | None:
    """A term's reduction as the engine's parts are compared: (the op the engine plans, number of
    indices, a max over s of a max over t counting both, as :func:`_term` builds it, a sum
    only those it reads)."""
    if not isinstance(term, Reduce):
        return None
    count, body = len(term.variables), term.body
    if term.op in EXTREMA and count == 1 and isinstance(body, Reduce) and body.op == term.op:
        count += len(body.variables)
    if term.op == "sum":  # the indices it does not read are counted, not planned
        count = len({v.name for v in term.variables} & free_indices(body)) or count
    return written or term.op, count


def _term(circuit: Circuit, term: Node, tag: str, spec: RetrievalSpec) -> tuple[list, list]:
    """The heads and MLPs of one term (not a fixed position, its constant factors already
    taken out: its output carries the value of the term as written)."""
    product = pooled_product(term)
    if product is not None:  # (sum f) (sum g), or a sum over s and t that factors into it
        return product_term(circuit, product, tag, spec)
    pair = neighbour_pair(term) if isinstance(term, Reduce) else None
    if pair is not None:  # max over t of f(x[t-1], x[t+1]): a pair two apart
        sums = pair.op == "sum"
        return pair_sum_term(circuit, pair, tag, spec) if sums else _term(circuit, pair, tag, spec)
    if not isinstance(term, Reduce):
        raise Unbuildable(f"the term {forms.text(term)} is not a reduction over tokens")
    if not all(v.is_token for v in term.variables):  # said "not over tokens" (a review)
        raise Unbuildable(
            f"{forms.text(term)}: a range index beside token indices in one reduction (a sum "
            "over range indices alone is built, one term per value)"
        )
    term = unordered_reduce(term)  # s < t over a symmetric score is s != t, as planned
    names = [v.name for v in term.variables]
    body, op, conditions = term.body, term.op, term.conditions
    if op in EXTREMA and len(names) == 1 and isinstance(body, Reduce) and body.op in KTH:
        return partner_term(circuit, term, tag, spec)
    if op in EXTREMA and len(names) == 1 and isinstance(body, Reduce) and body.op == op:
        names += [v.name for v in body.variables]  # max over s of max over t
        conditions, body = conditions + body.conditions, body.body
    if len(names) > 2 and op in EXTREMA:
        return star_term(circuit, term, tag, names, body, spec)
    if len(names) == 2 and op in EXTREMA:
        return pair_term(circuit, term, tag, names, body, conditions, spec)
    own = all(
        isinstance(side, int) or side in (names[0], SEQUENCE)
        for c in conditions
        for side in (c.left, c.right)
    )
    if op == "sum":  # the indices it does not read counted: weights on positions
        return pooled_term(circuit, term, tag, spec)
    if op in ARGS or op in EXTREMA:  # tests against numbers: a positional mask
        if len(names) != 1 or not own:
            raise Unbuildable(f"{forms.text(term)}: built for one index tested against numbers")
        return retrieval_term(circuit, term, tag, spec)
    if len(names) != 1 or conditions:
        raise Unbuildable(f"{forms.text(term)}: a k-th over one token without conditions")
    if op in KTH:
        matrix, ext, rank = forms.kth_form(term, spec.seq_len)
        if rank == 1:
            return max_position.circuit_single(circuit, tag, matrix, ext)
        return kth.circuit_peel(circuit, tag, matrix, ext, rank)
    raise Unbuildable(f"{forms.text(term)}: compile does not build {op}")
