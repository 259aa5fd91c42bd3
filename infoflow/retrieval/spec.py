"""The ``retrieval`` spec: a target expression over tokens and an architecture to plan it on.

Options are the theory note's reconstructions ([R]) that have a plausible alternative; each
default is documented in docs/retrieval.md.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, PositiveFloat, PositiveInt, field_validator, model_validator

from infoflow.core.errors import FieldError
from infoflow.core.spec_base import SpecBase, StrictModel
from infoflow.retrieval.canonical_to_tree import fixed_positions, position_number, tree_of
from infoflow.retrieval.domains import check_coordinates, check_domains
from infoflow.retrieval.expression import Apply, Node, Reduce, TargetError, Token
from infoflow.retrieval.infinite_values import check_infinite
from infoflow.retrieval.shapes import check_shapes
from infoflow.retrieval.text_to_expression import parse_target
from infoflow.retrieval.types import ComparisonTree

#: Without a seq_len a target is checked for empty reductions and infinite values at this T,
#: or past every number it holds where that is larger.
UNSIZED_T = 64


class Architecture(StrictModel):
    """The transformer to plan on: ``heads`` per layer, embedding width E, PE or not."""

    layers: PositiveInt = Field(le=1024, description="Layers (at most 1024).")
    heads: list[PositiveInt] | PositiveInt = Field(
        description="Heads per layer (a list, one entry per layer), or one number for all "
        "(at most 4096 a layer)."
    )
    embed_dim: PositiveInt | None = Field(None, description="E; per-head width n = E / heads.")
    positional_encoding: bool = False

    @model_validator(mode="after")
    def _heads_per_layer(self) -> Architecture:
        if len(self.heads_per_layer) != self.layers:
            raise FieldError(
                "heads", f"{len(self.heads)} entries for {self.layers} layers: give one per layer"
            )
        widest = max(self.heads_per_layer)
        if widest > 4096:
            raise FieldError("heads", "at most 4096 heads in a layer")
        if self.embed_dim is not None and widest > self.embed_dim:
            message = (
                f"{widest} heads in a layer at E = {self.embed_dim}: a head needs n = E/h >= 1"
            )
            raise FieldError("heads", message)
        return self

    @property
    def heads_per_layer(self) -> list[int]:
        """``heads`` as a list, one entry per layer (a single number is every layer's)."""
        return [self.heads] * self.layers if isinstance(self.heads, int) else list(self.heads)


class RetrievalOptions(StrictModel):
    """Readings of the theory that the papers leave open (all [R] but kth_cost)."""

    decode_offset: Literal[0, 1] = Field(
        1, description="c in alpha_decode(T0) = T0*d/E - c (one summary writes c = 0)."
    )
    exponent_floor: Literal[0, 1] = Field(
        1, description="alpha never drops below this (the cheapest construction is eps^-1)."
    )
    kth_cost: Literal["theorem2", "summary"] = Field(
        "theorem2",
        description="Single-head k-th largest retrieval: (T-k-1)/(n+1) (Theorem 2, as the "
        "abstract's 'exponential in length' implies) or (k-1)/n (a summary).",
    )
    separable_sum: Literal["pool", "global"] = Field(
        "pool",
        description="A sum over tokens of a score of one token: pooled by one averaging head "
        "(decodes one position) or treated as a global aggregation (decodes T).",
    )
    self_exclusion: Literal["often", "decisive", "always", "never"] = Field(
        "often",
        description="A condition s != t in a max or min over two tokens leaves out the pair "
        "(s, s), which no head tells apart without positional encoding: it needs PE (else "
        "global aggregation) where that pair decides every draw (decisive: the max of a dot "
        "product, the min of a distance), also where its form does not keep it on the "
        "losing side (often, the default since 2026-12-05: a bilinear form of a parameter, "
        "the min of a norm of a sum), wherever it may decide (always), or never (the engine "
        "until 2026-12-04).",
    )
    partner_peel: Literal["positions", "content"] = Field(
        "positions",
        description="A peel over a pair score (every token s learns its j-th best partner t "
        "in layer j) leaves out, for each s, the partners it retrieved before: by their "
        "positions, which needs PE (positions: without PE the k-th step is one head, "
        "Theorem 2, or global aggregation), or by content at no cost (content: the engine "
        "until 2026-12-05; no construction of it is known).",
    )
    squared_norm: bool = Field(
        False,
        description="Read norm() as the squared norm (one summary squares the triangle "
        "center's norm); the plan is the same, the validators' data differ.",
    )


class InputData(StrictModel):
    """How the validators draw tokens: x ~ N(0, std^2 I), norms clamped to a range."""

    std: PositiveFloat = 1.0
    norm_clamp: tuple[PositiveFloat, PositiveFloat] | None = Field(
        None, description="Rescale each token so its norm lies in [low, high]."
    )

    @model_validator(mode="after")
    def _ordered(self) -> InputData:
        low, high = self.norm_clamp or (0, 0)
        if low > high:
            raise FieldError("norm_clamp", f"[{low:g}, {high:g}]: low above high")
        return self


class Validation(StrictModel):
    """Where ``infoflow validate`` trains this spec's models and builds its constructions
    (the theory ignores it). A suite can keep a spec that a CPU cannot settle: on a device
    not in ``train_on`` the models are planned, the constructions built and the claims
    listed, each inconclusive with ``why``. A run with little device time can leave the
    constructions to the device that settled them: on a device not in ``build_on`` no
    construction claim is made, and the design says ``why``."""

    train_on: list[Literal["cpu", "cuda"]] = Field(
        ["cpu", "cuda"], min_length=1, description="The devices that train the models."
    )
    build_on: list[Literal["cpu", "cuda"]] = Field(
        ["cpu", "cuda"],
        min_length=1,
        description="The devices that build the compiled witnesses and fine-tune their "
        "ablations (the construction claims).",
    )
    why: str | None = Field(
        None,
        max_length=2000,
        description="Why the devices left out cannot settle the claims, or need not build the "
        "constructions, and the run that would (required when a device is left out).",
    )

    @model_validator(mode="after")
    def _why_given(self) -> Validation:
        both = {"cpu", "cuda"}
        leaves_out = set(self.train_on) != both or set(self.build_on) != both
        if leaves_out and not (self.why or "").strip():
            raise FieldError(
                "why", "say why the devices left out of train_on or build_on are left out"
            )
        if not leaves_out and self.why is not None:
            raise FieldError(
                "why", "train_on and build_on leave no device out, so no report would print it"
            )
        return self


class RetrievalSpec(SpecBase):
    """A retrieval target and the architecture to plan it on."""

    kind: Literal["retrieval"]
    target: str = Field(description="Nested reductions over tokens, in Python syntax.")
    params: dict[str, int] = Field(
        default_factory=dict, description="Integer constants the target names (D: 4)."
    )
    input_dim: PositiveInt | None = Field(None, description="d: the width of a token.")
    seq_len: PositiveInt | None = Field(None, description="T; omit to keep T symbolic.")
    architecture: Architecture
    epsilon: PositiveFloat = Field(0.01, lt=1, description="Target sup-norm precision.")
    options: RetrievalOptions = RetrievalOptions()
    data: InputData = InputData()
    validation: Validation = Validation()

    @field_validator("params")
    @classmethod
    def _param_names(cls, params: dict[str, int]) -> dict[str, int]:
        for name in params:
            if not name.isidentifier() or name in ("x", "T") or "__" in name:
                raise ValueError(f"{name!r} cannot name a parameter")
        return params

    @model_validator(mode="after")
    def _target_fits(self) -> RetrievalSpec:
        """The target parses into a comparison tree, reads no position and asks for no k
        beyond the sequence, reduces over something at its length, and reads no coordinate
        beyond d. Planning it is predicting: :mod:`~infoflow.retrieval.derive`."""
        from infoflow.retrieval.mechanisms import kth  # its cost laws need sympy

        params = tuple(sorted(self.params.items()))
        try:
            opts = self.options
            written = parse_target(self.target, params)
            check_shapes(written)
            tree = tree_of(self.target, params, opts.separable_sum, opts.self_exclusion)
            if self.seq_len is not None:
                _check_positions(tree, written, self.seq_len)
                check_domains(written, self.seq_len)
                check_infinite(written, self.seq_len)
                for k, left_out in tree.kth_values():
                    kth.rank(k, self.seq_len, left_out)
            elif "seq_len" not in (self.sweep or {}):  # each point has its own T, checked
                _check_unsized(written, self.target)
            if self.input_dim is not None:
                check_coordinates(written, self.input_dim)
        except TargetError as exc:
            raise FieldError("target", str(exc)) from None
        return self


def _check_unsized(written: Node, target: str) -> None:
    """Without a seq_len the predictions are symbolic in T, so a target that runs over
    nothing, or is infinite on every draw, at a T past every number it holds has none to
    make (it was planned, and predicted efficient: an audit, 2026-12-07)."""
    at = max([UNSIZED_T, *(2 * int(n) + 2 for n in re.findall(r"\d+", target))])
    try:
        check_domains(written, at)
        check_infinite(written, at)
    except TargetError as exc:
        why = f"no seq_len is given, so it is checked at T = {at}, past every number it holds"
        raise TargetError(f"{exc} ({why})") from None


def _check_positions(tree: ComparisonTree, written: Node, seq_len: int) -> None:
    """Every fixed position the target reads lies in 1..seq_len: as planned, and as written
    (a rewrite may drop one, x[9] beside a max over every token)."""
    for text in sorted(fixed_positions(tree) | _written_positions(written)):
        if not 1 <= position_number(text, seq_len) <= seq_len:
            raise TargetError(f"{text} lies beyond the sequence (seq_len {seq_len})")


def _written_positions(node: Node) -> set[str]:
    """The fixed positions the target as written reads (``x[3]``, ``x[T-1]``)."""
    if isinstance(node, Token):
        return {node.text()} if node.is_fixed else set()
    if isinstance(node, Apply):
        return set().union(*(_written_positions(a) for a in node.args))
    return _written_positions(node.body) if isinstance(node, Reduce) else set()
