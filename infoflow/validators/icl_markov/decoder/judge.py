"""The decoder's metrics -> its measurement (the capacity bracket, and each D_phi's KL on fresh
chains against G2's level) -> its claims at the K*_2 predicted for its setting
(:mod:`.claims`) -> its record in report.json.

The decoder *fits* K when its mean KL(row || decoder) over the K chains and C states is below
the in-context bigram's (G2's) KL to the truth at the spec's context length: only then does
memorising beat G2. The measured capacity is the largest K on the grid it fits (the grid's
next K bounds it). A D_phi *generalises* when on fresh chains its KL is below G2's level. A KL
that is not finite decides nothing (docs/results/2026-12-05-icl-looped-verdicts-preregistered.md).
"""

from __future__ import annotations

import json

import infoflow
from infoflow.icl_markov.calibration import load_calibration
from infoflow.validators.claims import Claim, finite_number, labelled
from infoflow.validators.icl_markov.decoder.claims import decoder_claims, every_seed
from infoflow.validators.icl_markov.decoder.data import STEPS, DecoderGroup
from infoflow.validators.icl_markov.kinds import CLAIM_KINDS
from infoflow.validators.protocol import Context


def by_setting(groups: list[DecoderGroup]) -> list[list[DecoderGroup]]:
    """The decoder groups of each setting (one per seed), in their order."""
    found: dict[str, list[DecoderGroup]] = {}
    for group in groups:
        found.setdefault(json.dumps(group.describe()["setting"], sort_keys=True), []).append(group)
    return list(found.values())


def judge_decoder(seeds: list[DecoderGroup], context: Context) -> tuple[dict, list[Claim]]:
    """One setting's decoders (a group per seed): the record for the report (the first
    seed's measurement in full, every seed's beside it) and the claims over the seeds (against
    the prediction of K*_2 at the setting), each confirmed or refuted only when every seed's
    is (docs/results/2026-12-05-icl-seed-rules-preregistered.md, addendum)."""
    group = seeds[0]
    measured = [measure_decoder(g, context.store.metrics(g.name)) for g in seeds]
    k2 = infoflow.predict(group.spec)["k2_star"].value
    capacity = load_calibration(group.spec.calibration).capacity
    described = group.describe()
    fitted = described["setting"] in (capacity.fitted_at or []) or group.name in capacity.source
    here = capacity.provenance == "fit:decoder" and fitted
    per_seed = {
        g.seed: decoder_claims(m, k2, group.spec.states, here)
        for g, m in zip(seeds, measured, strict=True)
    }
    mine = list(labelled(every_seed(per_seed), CLAIM_KINDS))
    section = {
        "name": group.name,
        **described,
        "k2_star": k2,
        "measurement": measured[0],
        "seeds": [{"seed": g.seed, "measurement": m} for g, m in zip(seeds, measured, strict=True)],
        "claims": [c.to_json() for c in mine],
    }
    return section, mine


def measure_decoder(group: DecoderGroup, metrics: dict) -> dict:
    """The capacity bracket and each D_phi's fresh-chain KL against G2's level; a K whose KL
    is not finite (diverged) is listed apart and fits nor fails, a D_phi's ``generalizes``
    is None."""
    rows = {member: metrics[i][STEPS] for i, member in enumerate(group.members) if i in metrics}
    capacity_rows = {n: row for (what, n), row in rows.items() if what == "capacity"}
    diverged = sorted(n for n, row in capacity_rows.items() if not _finite(row, "decoder:train_kl"))
    fits = {
        n: row["decoder:train_kl"] < row["decoder:g2_level"]
        for n, row in capacity_rows.items()
        if n not in diverged
    }
    fitted = [k for k, ok in sorted(fits.items()) if ok]
    low = max(fitted, default=None)
    high = min((k for k, ok in fits.items() if not ok and (low is None or k > low)), default=None)
    capacity = {
        "low": low,
        "high": high,
        "monotone": fitted == sorted(fits)[: len(fitted)],
        "train_kl": {k: row["decoder:train_kl"] for k, row in capacity_rows.items()},
        "diverged": diverged,
    }
    dims = {
        n: {
            "train_kl": row["decoder:train_kl"],
            "fresh_kl": row["decoder:fresh_kl"],
            "generalizes": row["decoder:fresh_kl"] < row["decoder:g2_level"]
            if _finite(row, "decoder:fresh_kl")
            else None,
        }
        for (what, n), row in rows.items()
        if what == "task_dim"
    }
    level = next(iter(rows.values()))["decoder:g2_level"] if rows else None
    return {"g2_level": level, "capacity": capacity, "task_dims": dims}


def _finite(row: dict, key: str) -> bool:
    """The row's ``key`` and G2's level are finite numbers (the store reads a NaN back as
    None)."""
    return all(finite_number(row[k]) for k in (key, "decoder:g2_level"))
