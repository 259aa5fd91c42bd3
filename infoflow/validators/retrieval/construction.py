"""A spec -> its compiled witness (``infoflow compile``): the circuit of the engine's plan
written into the validator's own model, its NMSE on the spec's data, its error against the
construction's precision (the softmax sharpness beta and the decode MLPs' width), and the
files that hold it (safetensors and a JSON description, head by head).

The witness answers what training cannot on a CPU: whether the predicted-minimal architecture
represents the target at all, and how its error falls as the construction grows. The width
ladder's slope gives a measured exponent (alpha = -2 / slope, :mod:`.exponents`) beside the
engine's: a constructive upper bound. An error that does not fall is a finding against the
plan, and is reported as one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from infoflow.core.errors import SpecError
from infoflow.core.files import write_text, write_with
from infoflow.retrieval.circuit import Circuit
from infoflow.retrieval.predict import predict_retrieval
from infoflow.retrieval.schedule_to_circuit import circuit_of
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.validators.retrieval.circuit_to_weights import Weights
from infoflow.validators.retrieval.decode import build_decoders
from infoflow.validators.retrieval.exponents import exponent_of, fit_slope
from infoflow.validators.retrieval.model import EnsembleTransformer, Member
from infoflow.validators.retrieval.target_checks import problem_at
from infoflow.validators.retrieval.targets import TargetFunction, sample_inputs

BETA = 100.0  # the default softmax sharpness
WIDTH = 2048  # the default MLP width
SAMPLES = 2048  # sequences the NMSE is measured on
CHUNK = 128  # sequences per forward pass
BETAS = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)
WIDTHS = (128, 256, 512, 1024, 2048)
SHARP = 1000.0  # beta of the width sweep: the softmax's error stays below the decoders'
FALLS = 10.0  # the error "falls" when the last point is this many times below the first
FLOOR = 1e-9  # or when it is at floating-point level throughout
MEMORY = 8 * 2**30  # the most bytes a witness's measurement may take


@dataclass
class Witness:
    """A compiled model with what it was built from and how well it does."""

    spec: RetrievalSpec
    circuit: Circuit
    model: EnsembleTransformer
    beta: float
    width: int
    decoders: dict[str, float]  # each decode MLP's NMSE on exact inputs
    nmse: float
    seed: int

    def to_json(self) -> dict:
        member = self.model.members[0]
        return {
            "spec": json.loads(self.spec.model_dump_json()),
            "seed": self.seed,
            "beta": self.beta,
            "width": self.width,
            "embed_dim": member.embed_dim,
            "dtype": str(next(self.model.parameters()).dtype).removeprefix("torch."),
            "nmse": self.nmse,
            "decoders": self.decoders,
            "decoder_parameters": member.decoder_parameters(),
            "circuit": self.circuit.to_json(),
        }


def build(
    spec: RetrievalSpec,
    source: str = "<spec>",
    *,
    beta: float = BETA,
    width: int = WIDTH,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    circuit: Circuit | None = None,
) -> Witness:
    """The witness of ``spec`` (a SpecError, exit 2, when compile refuses it), evaluated on
    fresh data; ``seed`` draws the target's parameters, as validate's seed does."""
    circuit = circuit or circuit_of(spec, source)
    chunk = chunk_for(spec, width, source)
    unevaluable = problem_at(spec)  # once per target and size, however many builds
    if unevaluable:
        raise SpecError(source, [("target", unevaluable)])
    target = TargetFunction(spec, seed=seed, dtype=dtype)
    weights = Weights(circuit, spec, target, beta=beta, width=width, dtype=dtype)
    model = weights.build()
    decoders = build_decoders(weights, seed)
    weights.balance()
    error = nmse(model, spec, target, seed, chunk)
    return Witness(spec, circuit, model, beta, width, decoders, error, seed)


def memory(spec: RetrievalSpec, width: int, chunk: int = CHUNK) -> tuple[int, int]:
    """Bytes in float64 of a forward pass of ``chunk`` sequences (the widest layer's
    activations, a few at once, and each head's T x T scores) and of the SAMPLES sequences;
    and of the weights (attention and MLP, twice: built, then copied into the model)."""
    t, arch = spec.seq_len or 16, spec.architecture
    e, d = arch.embed_dim or 0, spec.input_dim or 4
    per_sequence = 4 * t * max(e, width, d) + max(arch.heads_per_layer) * t * t
    weights = 2 * arch.layers * (4 * e * e + 2 * e * width)
    return 8 * (chunk * per_sequence + SAMPLES * t * d), 8 * weights


def chunk_for(spec: RetrievalSpec, width: int, source: str) -> int:
    """The most sequences per forward pass, CHUNK down to 1, whose measurement fits in
    MEMORY; a SpecError naming what is too large when even one does not."""
    for chunk in (CHUNK >> i for i in range(CHUNK.bit_length())):
        activations, weights = memory(spec, width, chunk)
        if activations + weights <= MEMORY:
            return chunk
    why = (
        f"measuring the witness at T = {spec.seq_len}, E = {spec.architecture.embed_dim} and "
        f"MLP width {width} needs about {(activations + weights) / 2**30:.0f} GiB one sequence "
        f"at a time, above compile's {MEMORY / 2**30:.0f} GiB: give a smaller seq_len, "
        "embed_dim or --width"
    )
    raise SpecError(
        source, [("seq_len" if activations > weights else "architecture.embed_dim", why)]
    )


def nmse(
    model: EnsembleTransformer,
    spec: RetrievalSpec,
    target: TargetFunction,
    seed: int,
    chunk: int = CHUNK,
) -> float:
    """MSE / Var(y) of the model's first member on SAMPLES fresh sequences, ``chunk`` at a
    time."""
    generator = torch.Generator().manual_seed(10_000 + seed)
    dtype = next(model.parameters()).dtype
    x = sample_inputs(spec, SAMPLES, spec.seq_len or 16, generator).to(target.dtype)
    y = target(x).to(dtype).reshape(SAMPLES, -1)
    with torch.no_grad():
        p = torch.cat([model(x[i : i + chunk].to(dtype))[0] for i in range(0, SAMPLES, chunk)])
    return float(((p - y) ** 2).mean() / y.var(0).mean())


def sweep(spec: RetrievalSpec, source: str = "<spec>", seed: int = 0) -> dict:
    """The witness's NMSE against beta (at WIDTH, wide enough that the heads' error shows,
    whatever compile's --width: at 64 the decoders' error rose with beta) and against the
    MLP width (at SHARP), the width ladder's slope and measured exponent beside the
    engine's, and whether each curve falls."""
    circuit = circuit_of(spec, source)
    betas = [
        {"beta": b, "nmse": build(spec, source, beta=b, seed=seed, circuit=circuit).nmse}
        for b in BETAS
    ]
    out = {"beta": betas, "beta_width": WIDTH, "beta_falls": _falls([r["nmse"] for r in betas])}
    engine = predict_retrieval(spec, source)["cost_exponent"]
    out["engine_alpha"] = engine.value
    out["engine_bound"] = engine.bound
    if not any(m.kind == "decode" for m in circuit.mlps):
        out["width"] = []
        out["width_note"] = "no decode MLP: the construction's size does not enter its error"
        return out
    widths = []
    for w in WIDTHS:
        built = build(spec, source, beta=SHARP, width=w, seed=seed, circuit=circuit)
        params = built.model.members[0].decoder_parameters()
        widths.append({"width": w, "decoder_parameters": params, "nmse": built.nmse})
    slope = fit_slope([r["decoder_parameters"] for r in widths], [r["nmse"] for r in widths])
    out.update(width=widths, slope=slope, measured_alpha=exponent_of(slope))
    out["width_falls"] = _falls([r["nmse"] for r in widths])
    return out


def _falls(errors: list[float]) -> bool:
    """Whether a curve falls: its last point FALLS times below its first, or every point at
    floating-point level."""
    return errors[-1] * FALLS <= errors[0] or max(errors) <= FLOOR


def save(witness: Witness, folder: Path) -> list[Path]:
    """witness.json, then model.safetensors (the validator's parameter layout, one member),
    each whole or not at all, readable as any file the user writes (safetensors alone makes
    its file private). witness.json first: it marks the folder as compile's, so a compile
    killed between the two is run again into it (the weights first left a folder compile
    refused as not its own)."""
    from safetensors.torch import save

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SpecError(str(folder), [("--out", f"cannot create it ({exc.strerror})")]) from None
    tensors = {k: v.detach().contiguous() for k, v in witness.model.state_dict().items()}
    data = save(tensors)
    write_text(folder / "witness.json", json.dumps(witness.to_json(), indent=2) + "\n")
    write_with(folder / "model.safetensors", lambda temporary: temporary.write_bytes(data))
    return [folder / "model.safetensors", folder / "witness.json"]


def load(folder: str | Path) -> tuple[EnsembleTransformer, dict]:
    """A saved witness: the model (the validator's class) and its description; ``folder``
    a path or str (a SpecError when it holds no witness)."""
    from safetensors.torch import load_file

    folder = Path(folder)
    if not (folder / "witness.json").is_file() or not (folder / "model.safetensors").is_file():
        why = "holds no witness (witness.json and model.safetensors, as compile writes them)"
        raise SpecError(str(folder), [(None, why)])
    meta = json.loads((folder / "witness.json").read_text())
    spec = RetrievalSpec.model_validate(meta["spec"])
    circuit = meta["circuit"]
    member = Member(
        tuple(circuit["heads_per_layer"]),
        circuit["positional_encoding"],
        meta["seed"],
        meta["embed_dim"],
        mlp_width=meta["width"],
    )
    dtype = getattr(torch, meta["dtype"])
    target = TargetFunction(spec, seed=meta["seed"], dtype=dtype)
    seq_len = spec.seq_len or 16
    model = EnsembleTransformer([member], seq_len, spec.input_dim or 4, target.output_dim(seq_len))
    model = model.to(dtype)
    model.load_state_dict(load_file(folder / "model.safetensors"))
    return model, meta
