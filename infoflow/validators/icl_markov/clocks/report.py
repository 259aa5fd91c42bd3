"""The clock runs' part of the report: per setting, a table of each clock's time per seed,
and for a K sweep group the race's K*_1 with the clocks behind it, in a sentence."""

from __future__ import annotations

from infoflow.validators.icl_markov.ksweep.report import maybe


def clock_table(entries: list[dict]) -> list[str]:
    """The clock runs: per setting, a row per clock, layer-1 rate and K with each seed's
    time (steps to halfway; - where it did not form)."""
    lines = ["", "### The clock runs"]
    for entry in entries:
        lines += ["", CRITERIA[entry.get("criterion", "gap")]]
        s = entry["setting"]
        lines += [
            "",
            f"C = {s['states']}, context {s['context_len']}, d_model "
            f"{s['model']['d_model']}, {entry['steps']:,} steps:",
            "",
            "| clock | layer-1 rate | K | times (per seed) | previous-token head (per seed) |",
            "|---|--:|--:|---|---|",
        ]
        rows: dict[tuple, list] = {}
        for m in entry["members"]:
            key = (m["clock"], m["layer1_attention_lr"], m["chains"])
            rows.setdefault(key, []).append(m)
        for (clock, rate, k), members in rows.items():
            cells = [
                clock,
                f"{rate:g}",
                "inf" if k is None else str(k),
                ", ".join(_time(m["time"], m["status"]) for m in members),
                ", ".join(_time(m.get("previous_head")) for m in members),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


#: What a clock's time is, by the criterion that timed it.
CRITERIA = {
    "projection": "Steps until the mechanism's kind carries half the weight of the projection "
    "(the criterion the K sweep reads), on models where only it can form "
    '(docs/icl_markov.md, "The race"); one value per seed: - where it did not form within '
    "the run, n/t where the data cannot separate its references (the ceiling), g where a "
    "memorising clock generalised first. The previous-token head: steps until layer 1 puts "
    "half its attention on the previous token.",
    "projection_global": "As under projection, with the training mixture's bigram among the "
    "plateau's references.",
    "gap": "Steps until each mechanism is halfway from the unigram plateau to its Bayes "
    'level, on models where only it can form (docs/icl_markov.md, "The race"); one value '
    "per seed, - where it did not form within the run.",
}


def _time(time: float | None, status: str = "formed") -> str:
    marks = {"not timed": "n/t", "generalised first": "g"}
    return marks.get(status) or ("-" if time is None else f"{time:.0f}")


def race_sentence(race: dict) -> str:
    """The race's K*_1 at a group's setting, with the clocks behind it, in a sentence."""
    tau_g, tau_prev = race["tau_g"], race["tau_prev"]
    interval = race["interval"]
    ends = [("open" if v in (None, 0) else f"{v:.3g}") for v in interval or ()]
    k1 = (
        f"K*_1 = {race['k1_star']:.3g} ({ends[0]} to {ends[1]} over the clock seeds)"
        if race["k1_star"] is not None
        else "no K*_1"
    )
    return (
        f"The race of this run's clocks: {k1}; {race['reason']}. tau_G {maybe(tau_g[1])} "
        f"steps (seeds {maybe(tau_g[0])} to {maybe(tau_g[2])}), tau_prev "
        f"{maybe(tau_prev[1])}."
    )
