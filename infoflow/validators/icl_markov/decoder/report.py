"""The decoder alone's part of the report: its capacity grid and D_phi sweep against G2's
level (the first seed's), every seed's bracket and calls, then its claims."""

from __future__ import annotations

from infoflow.core.text import markdown_text
from infoflow.validators.report import claims_markdown, number


def decoder_markdown(decoder: dict) -> list[str]:
    """The decoder alone: its capacity grid and the D_phi sweep, then its claims."""
    m = decoder["measurement"]
    capacity = m["capacity"]
    lines = [
        "",
        f"### The decoder alone ({markdown_text(decoder['name'])})",
        "",
        f"The second MLP (d_model {decoder['setting']['model']['d_model']}, MLP "
        f"{decoder['setting']['model']['mlp_width']}) by itself; G2's level at this context: "
        f"{number(m['g2_level'], '.4f')}. Capacity: fits up to K = "
        f"{number(capacity['low'], ',')}, fails from {number(capacity['high'], ',')} "
        f"(predicted K*_2 {number(decoder['k2_star'], '.4g')}).",
        "",
        "| test | K or D_phi | KL on its chains | KL on fresh chains | below G2's level |",
        "|---|--:|--:|--:|---|",
    ]
    for k, kl in capacity["train_kl"].items():
        fits = "yes" if kl < m["g2_level"] else "no"
        lines.append(f"| capacity | {k} | {number(kl, '.4f')} | - | {fits} |")
    for dim, found in m["task_dims"].items():
        lines.append(
            f"| D_phi | {dim} | {number(found['train_kl'], '.4f')} | "
            f"{number(found['fresh_kl'], '.4f')} | "
            f"{'yes' if found['generalizes'] else 'no'} |"
        )
    return lines + _seeds(decoder.get("seeds", [])) + claims_markdown(decoder["claims"])


def _seeds(seeds: list[dict]) -> list[str]:
    """Each seed's capacity bracket and D_phi calls (the table above is the first seed's)."""
    if len(seeds) < 2:
        return []
    lines = ["", "Every seed's decoder (the table is the first's; the claims read them all):", ""]
    for row in seeds:
        m = row["measurement"]
        calls = ", ".join(f"{dim}: {_call(found)}" for dim, found in m["task_dims"].items())
        lines.append(
            f"- seed {row['seed']}: fits up to K = {number(m['capacity']['low'], ',')}, fails "
            f"from {number(m['capacity']['high'], ',')}; generalizes at D_phi {calls or '-'}"
        )
    return lines


def _call(found: dict) -> str:
    """Whether a D_phi generalizes: yes, no, or - (its KL is not finite)."""
    return "-" if found["generalizes"] is None else "yes" if found["generalizes"] else "no"
