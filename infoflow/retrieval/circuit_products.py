"""Products of two sums over tokens -> what compile builds for them: a stage of
:mod:`~infoflow.retrieval.schedule_to_circuit`.

A sum over two tokens of a score that factors, ``f(x[s]) g(x[t])`` or ``x[s]^T M x[t]``, each
index tested against numbers and T only, is the product of two sums: (sum_s f) (sum_t g), or
(sum_s x)^T M (sum_t x); so is a product of two sums written as one. The engine pools it (one
averaging head, the readout's MLP multiplying). Compile builds each sum as an averaging head
(:func:`~.circuit_sums.pooled_term`; two sums weighing the positions alike are copied by one
head, and a sum read twice, ``sum(dot(x[s], x[t]) for s in T for t in T)`` = |sum x|^2, is
pooled once), and the MLP of the same layer decodes their bilinear form (an Mlp of function
``product``, built like every decode from exact inputs: :mod:`~.decode`). The heads copy the
weighted means and the MLP writes their product: the output, or a ReLU joining pointwise
branches, applies the weights' sums (``Mlp.scale``), since a product of sums written whole
moved the last LayerNorm's scale (NMSE 0.5 to 18, a fuzz). Until 2026-12-07 compile refused
both (a sum read two indices; the product was not a reduction).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from infoflow.retrieval import circuit_forms as forms
from infoflow.retrieval.algebra import key, normal, product_factors
from infoflow.retrieval.circuit import SQNORM, Circuit, Head, Mlp, head_reads
from infoflow.retrieval.circuit_forms import Unbuildable
from infoflow.retrieval.circuit_sums import one_head, pooled_term
from infoflow.retrieval.expression import SEQUENCE, Node, Reduce, Token
from infoflow.retrieval.spec import RetrievalSpec


@dataclass(frozen=True)
class Product:
    """``scale * left^T M right``: two sums over one token each, M named by ``matrix``; no
    matrix: a product of two numbers (a vector there would be multiplied elementwise, which
    is not built)."""

    scale: Fraction
    left: Reduce
    right: Reduce
    matrix: str = ""


def pooled_product(term: Node) -> Product | None:
    """``term`` as a product of two sums over one token each, or None: a sum over two tokens
    of a bilinear score or of a product of a linear score of each, every condition naming one
    of the two (against numbers or T), or a product of two sums written as one."""
    if isinstance(term, Reduce):
        return _factored_sum(term)
    scale, factors = product_factors(term)
    signed = [forms.scaled(f) for f in factors]  # -sum(...) is -1 times the sum (a review)
    if len(signed) != 2 or not all(_one_token_sum(f) for _, f in signed):
        return None
    return Product(scale * signed[0][0] * signed[1][0], signed[0][1], signed[1][1])


def _factored_sum(term: Reduce) -> Product | None:
    """A sum over s and t whose score and conditions factor into one over s and one over t."""
    names = [v.name for v in term.variables]
    if term.op != "sum" or len(names) != 2 or not all(v.is_token for v in term.variables):
        return None
    s, t = names
    own = {s: [], t: []}
    for condition in term.conditions:
        named = {side for side in (condition.left, condition.right) if isinstance(side, str)}
        named.discard(SEQUENCE)
        if len(named) != 1 or not named <= {s, t}:
            return None  # a test between the two (s < t, a window): no product
        own[named.pop()].append(condition)
    scale, factors = product_factors(term.body)
    if len(factors) == 1:  # x[s]^T M x[t]
        try:
            matrix = forms.bilinear(factors[0], s, t)
        except Unbuildable:
            return None
        left, right = Token(s), Token(t)
    else:  # f(x[s]) g(x[t])
        split = forms.factor_pair(term.body, s, t)
        if split is None:
            return None
        scale, left, right = split
        matrix = ""
    return Product(
        scale,
        Reduce("sum", (term.variables[0],), left, tuple(own[s])),
        Reduce("sum", (term.variables[1],), right, tuple(own[t])),
        matrix,
    )


def _one_token_sum(node: Node) -> bool:
    return (
        isinstance(node, Reduce)
        and node.op == "sum"
        and len(node.variables) == 1
        and node.variables[0].is_token
    )


def product_term(circuit: Circuit, product: Product, tag: str, spec: RetrievalSpec):
    """The heads and MLP of ``product``: each sum's mean pooled into its channel (one head
    where both weigh the positions alike, one channel where they are one sum), the MLP of
    layer 1 taking ``left^T M right`` of the means into ``tag.out``, its ``scale`` the
    product's constant times the weights' sums."""
    left, _ = pooled_term(circuit, product.left, f"{tag}.left", spec)
    inputs = (f"{tag}.left.out",)
    heads = left
    if normal(key(product.left)) != normal(key(product.right)):
        right, _ = pooled_term(circuit, product.right, f"{tag}.right", spec)
        inputs += (f"{tag}.right.out",)
        if right[0].score == left[0].score:  # alike: one head copies both
            heads = [one_head([(left[0], True), (right[0], True)])]
        else:
            heads = left + right
    if not product.matrix and any(circuit.channels[group] > 1 for group in inputs):
        sums = " and ".join(forms.text(r) for r in (product.left, product.right))
        raise Unbuildable(f"{sums}: a product of sums of vectors (elementwise) is not built")
    heads, sums = _means(heads, inputs)
    scale = float(product.scale) * sums[0] * sums[-1]
    out = circuit.add(f"{tag}.out", 1)
    matrix = product.matrix or "I"
    does = f"{scale:g} * {inputs[0]}^T {matrix} {inputs[-1]} (of means)"
    mlp = Mlp(1, "decode", inputs, out, matrix, does=does, function="product", scale=scale)
    return heads, [mlp]


def _means(heads: list[Head], inputs: tuple[str, ...]) -> tuple[list[Head], list[float]]:
    """``heads`` copying the weighted mean into each input, not the sum (a copy's scale, the
    weights' sum and the score's constant, comes out), and those scales, input by input."""
    scales = {c.dest: c.scale for h in heads for c in h.values if c.dest in inputs}
    means = [
        replace(h, values=tuple(replace(c, scale=1.0) if c.dest in inputs else c for c in h.values))
        for h in heads
    ]
    return means, [scales[group] for group in inputs]


def staggered(parts: list) -> list:
    """``parts`` with each product that pools its two sums in two heads of layer 1 pooling the
    second in layer 2 instead, where the MLP multiplies them: two layers of one head (the
    engine's [1, 1]) rather than one of two; a sum read from LayerNorm's scale (|x|^2) stays
    in layer 1, where only the first LayerNorm carries it (a self-review found it moved: NMSE
    1)."""
    out = []
    for heads, mlps, kind in parts:
        if len(heads) == 2 and mlps and all(m.function == "product" for m in mlps):
            first, second = sorted(heads, key=lambda h: SQNORM not in head_reads(h))
            if SQNORM not in head_reads(second):
                heads = [first, replace(second, layer=2)]
                mlps = [replace(m, layer=2) for m in mlps]
        out.append((heads, mlps, kind))
    return out
