"""The kind of each icl_markov claim (:data:`~infoflow.validators.claims.KINDS`), by its
id's head, from the theory note: the paper states the phases and the functional forms
(memorisation slows with K, tau_2Gen flat in K); the thresholds' working forms, the clock
race, the capacity fit and the task vector's test (the decoder alone, the task vector given,
not formed: docs/icl_markov.md, Gaps) are the project's reconstructions. A
final phase at K is given its kind where it is made, by its prediction's provenance (the
phase at a budget rests on the reconstructed timescales)."""

from __future__ import annotations

CLAIM_KINDS = {
    "final_boundary": "reproduction",
    "memorization_slows": "paper",
    "tau_2gen_flat": "paper",
    "task_vector": "reconstruction",
    "k1_star": "reconstruction",
    "k1_star_race": "reconstruction",
    "k2_star": "reconstruction",
    "k2_capacity": "reconstruction",
    "tau_2gen": "reconstruction",
    "first": "reconstruction",
    "g2_delay": "reconstruction",
    "k1_shift": "reconstruction",
    "k1_dose": "reconstruction",
    "prev_head": "reconstruction",
}
