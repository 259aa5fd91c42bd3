"""``infoflow compile``: build a spec's witness, describe it head by head, write it to a folder,
and with ``--sweep`` measure and plot its error against the construction's precision."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

from infoflow.core.errors import SpecError
from infoflow.retrieval.circuit import Circuit
from infoflow.retrieval.spec import RetrievalSpec
from infoflow.validators.retrieval import construction
from infoflow.validators.retrieval.circuit_to_weights import TooNarrow
from infoflow.validators.retrieval.construction import Witness

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def compile_command(
    spec: RetrievalSpec,
    source: str,
    out: Path,
    beta: float = construction.BETA,
    width: int = construction.WIDTH,
    seed: int = 0,
    sweep: bool = False,
) -> str:
    """Build, describe and save the witness (and sweep it); the text to print."""
    _check_out(out)
    try:
        witness = construction.build(spec, source, beta=beta, width=width, seed=seed)
    except TooNarrow as exc:
        raise SpecError(source, [("--width", f"{width} is too narrow here: {exc}")]) from None
    written = construction.save(witness, out)
    lines = describe(witness, source)
    if sweep:
        result = construction.sweep(spec, source, seed)
        (out / "sweep.json").write_text(json.dumps(result, indent=2) + "\n")
        written += [out / "sweep.json", plot_sweep(result, out / "sweep.png", source)]
        lines += ["", *sweep_lines(result)]
    lines += ["", "wrote " + ", ".join(str(p) for p in written)]
    return "\n".join(lines) + "\n"


#: The files compile writes into --out.
WRITES = ("model.safetensors", "witness.json", "sweep.json", "sweep.png")


def _check_out(out: Path) -> None:
    """Refuse an --out compile would write over files in that no compile wrote (it replaced
    a user's witness.json, and wrote into a validate run's folder: an audit, 2026-12-07)."""
    if (out / "results.sqlite").exists():
        raise SpecError(str(out), [("--out", "a validate run's folder: name another")])
    present = [name for name in WRITES if (out / name).exists()]
    if present and not _compiled(out / "witness.json"):
        why = f"holds {present[0]}, which compile did not write: name another folder"
        raise SpecError(str(out), [("--out", why)])


def _compiled(path: Path) -> bool:
    """Whether ``path`` is a witness.json compile wrote."""
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(found, dict) and {"circuit", "nmse", "beta", "width"} <= found.keys()


def describe(witness: Witness, source: str) -> list[str]:
    """The witness head by head: channels, heads (with the engine's step each realises),
    MLPs, the output, the notes and the measured NMSE."""
    c, member = witness.circuit, witness.model.members[0]
    lines = [
        f"Compiled {source}: {c.layers} layer(s), heads {list(c.heads_per_layer)}, "
        f"E = {member.embed_dim} ({c.width} channels in use), MLP width {witness.width}, "
        f"beta {witness.beta:g}, T = {witness.spec.seq_len}",
        "channels: " + ", ".join(_channel_text(c, name) for name in c.channels),
    ]
    for head in sorted(c.heads, key=lambda h: (h.layer, h.slot)):
        lines.append(f"layer {head.layer} head {head.slot} ({head.mechanism}): {head.does}")
        if head.step:
            lines.append(f"    realises: {head.step}")
    for mlp in c.mlps:
        fit = witness.decoders.get(mlp.output)
        how = f" (NMSE {fit:.2g} on exact inputs)" if fit is not None else " (exact)"
        lines.append(f"layer {mlp.layer} MLP ({mlp.kind}): {mlp.does or mlp.output}{how}")
    lines.append("output: " + output_text(c.output, c.constant))
    lines += [f"note: {n}" for n in c.notes]
    lines.append(f"NMSE on {construction.SAMPLES} fresh sequences: {witness.nmse:.3g}")
    if witness.nmse >= 1:  # said nothing at 2.04 (an audit, 2026-12-07)
        lines.append(
            f"WARNING: no better than predicting the mean (NMSE 1): at MLP width "
            f"{witness.width} the witness does not represent the target; try a larger --width"
        )
    return lines


def output_text(output: list[tuple[str, float]], constant: float = 0.0) -> str:
    """The readout's sum of channel groups with their coefficients, and the constant it adds:
    ``p0.out - 2 * p1.out + 1``."""
    text = ""
    for group, c in [*output, *([("", constant)] if constant else [])]:
        sign = "-" if c < 0 else "+"
        scaled = f"{abs(c):g}" if not group else group if abs(c) == 1 else f"{abs(c):g} * {group}"
        text += (f" {sign} " if text else ("-" if c < 0 else "")) + scaled
    return text


def _channel_text(c: Circuit, name: str) -> str:
    first, width = c.offset(name), c.channels[name]
    return f"{name} {first}" if width == 1 else f"{name} {first}-{first + width - 1}"


def sweep_lines(result: dict) -> list[str]:
    """The sweep as text: both curves, the measured exponent and the verdicts."""
    at = result.get("beta_width", construction.WIDTH)  # a sweep.json before 2026-12-07: 2048
    lines = ["Error against precision", f"  beta     NMSE   (MLP width {at})"]
    lines += [f"  {r['beta']:<8g} {r['nmse']:.3g}" for r in result["beta"]]
    lines.append(
        "  the error falls as beta grows"
        if result["beta_falls"]
        else "  FINDING: the error does not fall as beta grows: the heads do not carry out the plan"
    )
    if not result["width"]:
        return [*lines, f"  {result['width_note']}"]
    lines.append(f"  MLP width  decoder params  NMSE   (beta {construction.SHARP:g})")
    lines += [
        f"  {r['width']:<10} {r['decoder_parameters']:<15,} {r['nmse']:.3g}"
        for r in result["width"]
    ]
    slope = result["slope"]
    lines.append(
        f"  slope of log NMSE against log decoder parameters: {slope:.3g}; measured alpha "
        f"{measured_text(result['measured_alpha'])}; engine alpha {result['engine_alpha']} "
        f"({result['engine_bound']})"
        if slope is not None
        else "  no slope: fewer than three usable points"
    )
    lines.append(f"  {compared(result['measured_alpha'], result['engine_alpha'])}")
    if not result["width_falls"]:
        lines.append(
            "  FINDING: the error does not fall as the MLP grows: the decode step does not "
            "carry out the plan"
        )
    return lines


def compared(measured: float | None, engine) -> str:
    """The witness's exponent against the engine's, in words. A witness is one construction,
    so the true minimal cost is at most its exponent."""
    if measured is None or not isinstance(engine, int | float):
        return "no comparison: no measured or no numeric engine exponent"
    if measured < engine - 0.1:
        return (
            "over the widths measured the witness costs less than the engine predicts: its "
            f"exponent {measured:.2g} is below the engine's {engine:g} (a finding against the "
            "engine's number here, e.g. its floor, a reconstruction)"
        )
    if measured > engine + 0.1:
        return (
            f"the witness costs more than the engine's {engine:g}: this construction does not "
            "reach the engine's rate (it bounds the cost from above only)"
        )
    return f"the witness's exponent matches the engine's {engine:g} (within 0.1)"


def plot_sweep(result: dict, path: Path, source: str) -> Path:
    """Write :func:`sweep_figure` to ``path`` (sweep.png); the path."""
    from infoflow.validators.plots import save

    return save(sweep_figure(result, source), path)


def sweep_figure(result: dict, source: str) -> Figure:
    """The sweep (sweep.json's ``result``) drawn: NMSE against beta, and against decoder
    parameters with the engine's slope -2/alpha drawn through the first point (the cost
    law's rate, for comparison)."""
    from matplotlib.ticker import NullFormatter

    from infoflow.validators.plots import finished, subplots

    panels = 2 if result["width"] else 1
    fig, axes = subplots(1, panels, figsize=(5.5 * panels, 4), squeeze=False)
    ax = axes[0][0]
    ax.loglog([r["beta"] for r in result["beta"]], [r["nmse"] for r in result["beta"]], "o-")
    at = result.get("beta_width", construction.WIDTH)
    ax.set(xlabel="beta (softmax sharpness)", ylabel="NMSE", title=f"error against beta (MLP {at})")
    if result["width"]:
        ax = axes[0][1]
        sizes = [r["decoder_parameters"] for r in result["width"]]
        errors = [r["nmse"] for r in result["width"]]
        ax.loglog(
            sizes, errors, "o-", label=f"witness (alpha {measured_text(result['measured_alpha'])})"
        )
        alpha = result["engine_alpha"]
        if isinstance(alpha, int | float) and alpha > 0:
            rate = [errors[0] * (p / sizes[0]) ** (-2 / alpha) for p in sizes]
            ax.loglog(sizes, rate, "--", label=f"engine's rate (alpha {alpha:g})")
        ax.set(xlabel="decoder parameters", ylabel="NMSE", title="error against size")
        ax.xaxis.set_minor_formatter(NullFormatter())  # the minor labels overlap
        ax.legend()
    fig.suptitle(source)
    return finished(fig)


def measured_text(value: float | None) -> str:
    """A measured exponent in words: none, infinite (no fall) or its value."""
    if value is None:
        return "none (fewer than three usable points)"
    return "infinite (the error does not fall)" if math.isinf(value) else f"{value:.3g}"
