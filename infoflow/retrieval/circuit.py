"""What ``infoflow compile`` builds, before any number is written: the residual stream's named
channels, the heads (which layer, which slot, what each scores and copies), the MLPs, and what
the output reads. Torch-free: the validator's ``circuit_to_weights`` turns a circuit into the
weights of its own model class, and explain can name the head that realises each step.

A score or a copy names its matrix instead of holding numbers: ``I`` (the identity), ``e:j``
(the j-th coordinate), a parameter of the target (``q``, ``A[0]``), which the validator
draws from the target's seed, or ``mask:NAME``, a positional mask the circuit holds (for
each query position, the key positions it leaves out: the pairs a window's conditions
exclude).

One thing a head of layer 1 may read is not a channel: ``|x|^2`` (:data:`SQNORM`), a token's
squared norm, which the first LayerNorm carries in its scale once the tokens are written with
their mirror (``-x``, :data:`MIRROR`), so that a key or a value holds it before any MLP has
run.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

#: Channels every circuit has: a constant anchor (it keeps LayerNorm's scale fixed), a channel
#: that is always zero (every read is taken against it), one that balances the others' sum to
#: zero (LayerNorm's mean is the anchor's), the readout's flag, the tokens.
ANCHOR, ZERO, BALANCE, READOUT, TOKENS = "one", "zero", "balance", "readout", "x"
#: The tokens' mirror (-x, so that a token's channels sum to zero and LayerNorm's variance
#: grows by 2 |x|^2 / E), a channel that reads 1 after the first LayerNorm (its bias), and the
#: squared norm read from the two (not a channel).
MIRROR, CONST, SQNORM = "-x", "const", "|x|^2"
EVERY_TOKEN, THE_READOUT = "every token", "the readout"
#: One channel per token position that positional encoding sets to 1 at its own position
#: (the readout's is zero): a score's -SELF_PENALTY * pos(s).pos(t) leaves each token out of
#: its own retrieval, SELF_PENALTY far above any content score's spread.
POSITIONS, SELF_PENALTY = "pos", 1000.0
#: A channel the positional encoding sets, where a head of layer 1 reads |x|^2 beside
#: positional content that differs between positions (flags, logits, position numbers), so
#: that every token's positional content adds the same to LayerNorm's variance (the scale
#: that carries |x|^2).
PAD = "pad"
#: The logit a weighted average gives a position of weight 0 (:meth:`Circuit.logit`): its
#: token's share is e^-100 of a weight-1 token's, whatever beta.
LEFT_OUT = -100.0
#: What a logit channel's values are divided by (they lie in [-10, 0], the left-out's -100
#: kept from swamping LayerNorm): the head that scores it multiplies by this, not by beta,
#: so the weights hold whatever beta (until 2026-12-06 the channel held log w / beta, and
#: float32 rounding grew as beta squared: NMSE 9e-7 at beta 1000, 2e-10 now; a review).
LOGIT_UNIT = 10.0
#: How a score names a positional mask of the circuit (``mask:NAME``).
MASK = "mask:"
#: One channel the positional encoding sets to the token's position p over T (p / T, so that
#: the LayerNorm scale barely moves with p; the readout's is zero): what an argmax copies,
#: times T, from the token it retrieves.
POSITION_NUMBER = "position"


@dataclass(frozen=True)
class Form:
    """``sign * scale * query^T M key``: a bilinear score between two channel groups (query
    and key token), M named by ``matrix``."""

    query: str
    key: str
    matrix: str = "I"
    sign: int = 1
    scale: float = 1.0


@dataclass(frozen=True)
class Copy:
    """``scale * M source`` written from the attended token into ``dest`` of the attending
    one."""

    source: str
    dest: str
    matrix: str = "I"
    scale: float = 1.0


@dataclass(frozen=True)
class Head:
    """One attention head. Its logit is ``beta`` times the sum of ``score`` (``sharp``), or
    zero for an averaging head, and ``-inf`` in effect on the readout as a key (``mask``);
    ``positions`` names a flag channel that marks the fixed positions it attends to."""

    layer: int  # 1-based
    slot: int  # 0-based, within the layer
    mechanism: str
    who: str  # EVERY_TOKEN or THE_READOUT: whose query matters
    does: str  # in words
    score: tuple[Form, ...] = ()
    values: tuple[Copy, ...] = ()
    sharp: bool = True
    mask_readout: bool = True
    positions: str = ""
    step: str = ""  # the engine's sentence for the step it realises


@dataclass(frozen=True)
class Mlp:
    """A function the MLP of ``layer`` writes into ``output``, from ``inputs`` (channel groups).

    ``decode``: ``function`` of the two inputs with its share of the layer's width, built from
    exact inputs: ``bilinear`` is ``inputs[0]^T matrix inputs[1]``; ``sqnorm_less_key`` is
    ``|inputs[0]|^2 + 2 sign inputs[0] . inputs[1]``, the squared norm of inputs[0] + sign *
    inputs[1] less the second's own |.|^2. ``root``: the square root of ``inputs[0]`` (one
    channel). ``peel``: ``-penalty * clip((s - m) / margin
    + 1, 0, 1)`` with ``s = sign * matrix . inputs[0]`` and ``m = inputs[1]``, exact with four
    ReLUs (a token whose score reached the value just retrieved leaves the race); the first
    round also writes ``s`` itself (two ReLUs). ``relu``: ``relu(sum_i weights[i] inputs[i] +
    bias)`` of one-channel inputs, one ReLU (the larger of two branches:
    :mod:`.circuit_branches`). A decode of function ``product`` (:mod:`.circuit_products`) is
    ``scale * inputs[0]^T matrix inputs[-1]`` of two pooled means; the output, and a ReLU
    joining pointwise branches, apply ``scale`` as they read the product, which the MLP
    writes of the means (a product of sums in the residual stream moved LayerNorm's scale:
    NMSE up to 18; where another MLP or a head read it, the MLP would write it whole)."""

    layer: int
    kind: str  # decode | root | peel | threshold | relu
    inputs: tuple[str, ...]
    output: str
    matrix: str = "I"
    sign: int = 1
    first: bool = False
    does: str = ""
    function: str = "bilinear"
    rank: int = 1
    weights: tuple[float, ...] = ()  # a relu's, one per input
    bias: float = 0.0
    scale: float = 1.0  # a product's: its constant and the sums' weights


@dataclass
class Circuit:
    """A construction: channels (name -> width, in order), heads, MLPs, the output (channel
    groups with their coefficients), the fixed positions each flag channel marks, notes on
    what the construction does not do exactly, and the positional masks its scores name
    (``mask:NAME``: per query position, or the readout's one row, the key positions left
    out, 1-based), a constant the output adds (its bias), and the logits a weighted average
    gives the positions (``logits``: a channel holding log w(p) at position p, 1-based, so a
    head that scores it weighs token p by w(p); :meth:`logit`)."""

    layers: int
    heads_per_layer: tuple[int, ...]
    positional_encoding: bool
    channels: dict[str, int] = field(default_factory=dict)
    heads: list[Head] = field(default_factory=list)
    mlps: list[Mlp] = field(default_factory=list)
    output: list[tuple[str, float]] = field(default_factory=list)
    flags: dict[str, tuple[int, ...]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    masks: dict[str, tuple[tuple[int, ...], ...]] = field(default_factory=dict)
    constant: float = 0.0
    logits: dict[str, tuple[float, ...]] = field(default_factory=dict)

    def add(self, name: str, width: int) -> str:
        """A channel group of ``width`` channels (once per name)."""
        self.channels.setdefault(name, width)
        return name

    def flag(self, name: str, positions: tuple[int, ...]) -> str:
        """A flag channel marking ``positions``: one already marking them, or a new one."""
        same = next((f for f, marked in self.flags.items() if marked == positions), None)
        if same is not None:
            return same
        self.flags[self.add(name, 1)] = positions
        return name

    def logit(self, name: str, weights: tuple[int, ...]) -> str:
        """A channel holding log w(p) at each position p, less log of the largest w (the
        softmax's weighting is the same; :data:`LEFT_OUT` where w(p) = 0): one already
        holding them, or a new one."""
        top = max(weights)
        values = tuple(math.log(w / top) if w > 0 else LEFT_OUT for w in weights)
        same = next((f for f, held in self.logits.items() if held == values), None)
        if same is not None:
            return same
        self.logits[self.add(name, 1)] = values
        return name

    def offset(self, name: str) -> int:
        """The first channel of group ``name``."""
        start = 0
        for group, width in self.channels.items():
            if group == name:
                return start
            start += width
        raise KeyError(name)

    @property
    def width(self) -> int:
        """Channels in use: the smallest E that holds the circuit."""
        return sum(self.channels.values())

    def width_of(self, name: str) -> int:
        """The width of what a score or copy reads: a channel group, or the squared norm."""
        return 1 if name == SQNORM else self.channels[name]

    @property
    def padded(self) -> bool:
        """Whether the positional encoding needs :data:`PAD`: a head reads |x|^2 beside
        positional content that differs between positions."""
        return self.reads_norm and bool(
            self.flags or self.logits or POSITION_NUMBER in self.channels
        )

    @property
    def reads_norm(self) -> bool:
        """Whether a head reads the tokens' squared norm from LayerNorm's scale (scores or
        copies it)."""
        return any(SQNORM in head_reads(h) for h in self.heads)

    def decoders(self, layer: int) -> list[Mlp]:
        """The MLPs of ``layer`` built from exact inputs (not written exactly)."""
        return [m for m in self.mlps if m.layer == layer and m.kind in ("decode", "root")]

    def to_json(self) -> dict:
        """The circuit channel by channel and head by head."""
        channels, start = [], 0
        for name, width in self.channels.items():
            channels.append({"group": name, "first": start, "width": width})
            start += width
        return {
            "layers": self.layers,
            "heads_per_layer": list(self.heads_per_layer),
            "positional_encoding": self.positional_encoding,
            "width": self.width,
            "channels": channels,
            "heads": [asdict(h) for h in sorted(self.heads, key=lambda h: (h.layer, h.slot))],
            "mlps": [asdict(m) for m in self.mlps],
            "output": [{"group": g, "coefficient": c} for g, c in self.output],
            "flags": {name: list(ps) for name, ps in self.flags.items()},
            "notes": list(self.notes),
            "masks": {name: [list(row) for row in rows] for name, rows in self.masks.items()},
            "constant": self.constant,
            "logits": {name: list(values) for name, values in self.logits.items()},
        }


def without_head(circuit: Circuit, layer: int, slot: int) -> Circuit:
    """``circuit`` on one head fewer in ``layer``: that head removed (when the circuit uses
    it), with everything that reads what it wrote (MLPs, heads, output terms), transitively;
    the other heads keep their order, slots renumbered. What is left computes the rest of the
    target exactly."""
    heads = [h for h in circuit.heads if (h.layer, h.slot) != (layer, slot)]
    removed = [h for h in circuit.heads if (h.layer, h.slot) == (layer, slot)]
    dead = {c.dest for h in removed for c in h.values}
    mlps = list(circuit.mlps)
    while True:
        gone_mlps = [m for m in mlps if dead & set(m.inputs)]
        gone_heads = [h for h in heads if dead & head_reads(h)]
        if not gone_mlps and not gone_heads:
            break
        dead |= {m.output for m in gone_mlps} | {c.dest for h in gone_heads for c in h.values}
        mlps = [m for m in mlps if m not in gone_mlps]
        heads = [h for h in heads if h not in gone_heads]
    counts = list(circuit.heads_per_layer)
    counts[layer - 1] -= 1
    slots: dict[int, int] = {}
    renumbered = []
    for h in sorted(heads, key=lambda h: (h.layer, h.slot)):
        slots[h.layer] = slots.get(h.layer, -1) + 1
        renumbered.append(replace(h, slot=slots[h.layer]))
    return Circuit(
        circuit.layers,
        tuple(counts),
        circuit.positional_encoding,
        dict(circuit.channels),
        renumbered,
        mlps,
        [(g, c) for g, c in circuit.output if g not in dead],
        dict(circuit.flags),
        [*circuit.notes, f"head {slot} of layer {layer} removed, with what read it"],
        dict(circuit.masks),
        circuit.constant,
        dict(circuit.logits),
    )


def without_self_penalty(circuit: Circuit) -> Circuit:
    """``circuit`` with every score's positional self-penalty removed (:data:`POSITIONS`, the
    identity; a window's mask keeps the other pairs it leaves out, and no token is left
    without a partner): each token's own retrieval scores the token itself again."""
    heads = [
        replace(h, score=tuple(f for f in h.score if not _self_penalty(f))) for h in circuit.heads
    ]
    masks = dict(circuit.masks)
    for name in {f.matrix.removeprefix(MASK) for h in heads for f in h.score if _mask(f)}:
        masks[name] = tuple(tuple(q for q in row if q != p) for p, row in enumerate(masks[name], 1))
        if f"{name}.alone" in masks:  # every token has a partner again: itself
            masks[f"{name}.alone"] = ((),)
    notes = [*circuit.notes, "the positional self-penalty removed"]
    return replace(circuit, heads=heads, notes=notes, masks=masks)


def self_penalised(circuit: Circuit) -> bool:
    """Whether a head's score leaves some token out of its own retrieval."""
    return any(_self_penalty(f) or _masks_self(circuit, f) for h in circuit.heads for f in h.score)


def _self_penalty(form: Form) -> bool:
    return form.query == form.key == POSITIONS and form.matrix == "I"


def _mask(form: Form) -> bool:
    """Whether ``form`` is a positional mask between tokens (not the readout's row)."""
    return form.query == form.key == POSITIONS and form.matrix.startswith(MASK)


def _masks_self(circuit: Circuit, form: Form) -> bool:
    """Whether ``form`` is a positional mask that leaves some token out of its own retrieval."""
    if not _mask(form):
        return False
    rows = circuit.masks[form.matrix.removeprefix(MASK)]
    return any(p in row for p, row in enumerate(rows, 1))


def head_reads(head: Head) -> set[str]:
    """The channel groups a head reads."""
    return {g for f in head.score for g in (f.query, f.key)} | {c.source for c in head.values}


def deferred_scales(circuit: Circuit) -> dict[str, float]:
    """The channels only the output reads, each written by one copy (no MLP, no positional
    encoding writes them): that copy's scale, which the output applies instead, so the
    residual stream holds the unscaled value (a sum's mean, not the sum: a content of
    hundreds moves LayerNorm's scale at float32's anchor); and each product's, whose MLP
    then writes the product of the means, which the output and the ReLU joining pointwise
    branches (:mod:`.circuit_branches`) scale as they read it."""
    read = {group for head in circuit.heads for group in head_reads(head)}
    read |= {*circuit.flags, *circuit.logits}  # the positional encoding writes these
    joins = {group for mlp in circuit.mlps if mlp.kind == "relu" for group in mlp.inputs}
    read |= {group for mlp in circuit.mlps if mlp.kind != "relu" for group in mlp.inputs}
    used = read | joins | {mlp.output for mlp in circuit.mlps}
    copies: dict[str, list[float]] = {}
    for copy in (copy for head in circuit.heads for copy in head.values):
        copies.setdefault(copy.dest, []).append(copy.scale)
    products = {  # a product of means, whose scale the output and a join apply (see Mlp)
        mlp.output: mlp.scale
        for mlp in circuit.mlps
        if mlp.function == "product" and mlp.output not in read and mlp.scale
    }
    return products | {
        dest: scales[0]
        for dest, scales in copies.items()
        if len(scales) == 1 and dest not in used and scales[0]
    }
