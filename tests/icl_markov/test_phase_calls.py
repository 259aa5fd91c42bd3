"""Phase calls with a margin: a model is called only when it sits clearly nearer one phase
reference than every other, relative to how far apart the references are; otherwise
"undetermined", which is never G2 and never decided by name."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from infoflow.validators.icl_markov import references  # noqa: E402
from infoflow.validators.icl_markov.ksweep.phases import (  # noqa: E402
    MARGIN,
    UNDETERMINED,
    MemberHistory,
    phase,
    position,
)
from infoflow.validators.icl_markov.ksweep.thresholds import measure  # noqa: E402

NAMES = ("G1", "G2", "M1", "M2")


def _row(distances: dict[str, float], truth: float = 0.2) -> dict[str, float]:
    """Metrics with the model at ``distances`` (mean of ID and OOD) from the references; 1.0
    from any not named."""
    row = {"id:truth": truth, "ood:truth": truth}
    for ref in references.REFERENCES:
        row[f"id:{ref}"] = row[f"ood:{ref}"] = distances.get(ref, 1.0)
    return row


def _apart(distance: float, **pairs: float) -> dict[str, float]:
    """Every reference ``distance`` from every other, except ``pairs`` (``G2_M2=0.1``: the
    score of G2 against a model equal to M2)."""
    found = {
        f"{p}>{q}": distance for p in references.REFERENCES for q in references.REFERENCES if p != q
    }
    found.update({name.replace("_", ">"): value for name, value in pairs.items()})
    return found


def test_a_model_at_a_reference_is_called() -> None:
    call = phase(_row({"G2": 0.0, "M2": 0.4}, truth=0.1), _apart(0.4))
    assert (call.phase, call.nearest, call.contender, call.position) == ("G2", "G2", "M2", 1.0)


def test_a_model_between_two_references_is_undetermined() -> None:
    """Nearer M2 than G2, but only a little relative to how far apart they are."""
    call = phase(_row({"G2": 0.22, "M2": 0.18}), _apart(1.0, G2_M2=0.4, M2_G2=0.4))
    assert call.nearest == "M2" and call.phase == UNDETERMINED
    assert call.contender == "G2" and call.position == pytest.approx((0.04 + 0.4) / 0.8)
    clear = phase(_row({"G2": 0.35, "M2": 0.05}), _apart(1.0, G2_M2=0.4, M2_G2=0.4))
    assert clear.phase == "M2" and clear.position >= (1 + MARGIN) / 2


def test_references_that_coincide_on_the_data_cannot_be_told_apart() -> None:
    """Close references still call a model exactly at one; identical ones never do, but
    when both are memorizing (M1 and M2 at K = 1) the kind of phase is known."""
    close = _apart(1.0, G2_M2=0.001, M2_G2=0.001)
    assert phase(_row({"G2": 0.0, "M2": 0.001}), close).phase == "G2"  # exactly at one
    same = _apart(1.0, G2_M2=0.0, M2_G2=0.0)
    call = phase(_row({"G2": 0.1, "M2": 0.1000001}), same)
    assert (call.phase, call.among, call.kind) == (UNDETERMINED, ("G2", "M2"), UNDETERMINED)
    k1 = phase(_row({"M1": 0.01, "M2": 0.01}), _apart(1.0, M1_M2=0.0, M2_M1=0.0))
    assert (k1.phase, k1.among, k1.kind) == (UNDETERMINED, ("M1", "M2"), "memorizing")


def test_an_exact_tie_is_undetermined_whatever_the_names() -> None:
    for first, second in (("G2", "M2"), ("M2", "G2"), ("G1", "M1"), ("M1", "G1")):
        apart = _apart(1.0, **{f"{first}_{second}": 0.9, f"{second}_{first}": 0.1})
        call = phase(_row({first: 0.2, second: 0.2}), apart)
        assert call.phase == UNDETERMINED


def test_an_asymmetric_pair_still_calls_the_reference_the_model_equals() -> None:
    """A model equal to G2 is 0.05 from M2 (M2's score against it) while M2 scores G2 at 1.0:
    at G2 the gap is 0.05, small against the symmetrised distance 0.525, yet the model sits at
    the G2 end of the segment."""
    apart = _apart(1.0, M2_G2=0.05, G2_M2=1.0)
    assert phase(_row({"G2": 0.0, "M2": 0.05}), apart).phase == "G2"
    assert phase(_row({"M2": 0.0, "G2": 1.0}), apart).phase == "M2"


def test_the_position_is_the_projection_for_nearby_distributions() -> None:
    """For a model q = s a + (1 - s) b between two nearby distributions, the position from
    the KLs alone is s (the local quadratic approximation)."""
    a = torch.tensor([0.30, 0.40, 0.30], dtype=torch.float64)
    b = torch.tensor([0.33, 0.35, 0.32], dtype=torch.float64)
    for s in (0.1, 0.5, 0.8):
        q = s * a + (1 - s) * b
        found = position(
            float(references.kl(b, q) - references.kl(a, q)),
            float(references.kl(a, b)),
            float(references.kl(b, a)),
        )
        assert found == pytest.approx(s, abs=0.01)


def test_undetermined_checkpoints_are_never_g2() -> None:
    """The nearest reference is G2 from step 20, but within the margin of M2 until step 40:
    the first G2 is step 40, not 20; with no called G2 the model memorizing wins."""
    apart = _apart(1.0, G2_M2=0.4, M2_G2=0.4)
    near = _row({"G2": 0.18, "M2": 0.22})
    g2 = _row({"G2": 0.02, "M2": 0.38})
    steps = {10: _row({"G1": 0.0}), 20: near, 30: near, 40: g2}
    history = MemberHistory.from_metrics(64, 0, steps, apart)
    assert history.phases == ["G1", UNDETERMINED, UNDETERMINED, "G2"]
    assert history.trajectory == ["G1", "G2/M2?", "G2"]
    assert (history.first_g2, history.outcome) == (40, "generalization")
    memorized = {**steps, 30: _row({"G2": 0.18, "M2": 0.22}, truth=0.0) | {"ood:truth": 0.3}}
    late = MemberHistory.from_metrics(64, 0, memorized, apart)
    assert (late.memorized_at, late.outcome) == (30, "memorization")
    never = MemberHistory.from_metrics(64, 0, {10: near, 20: near}, apart)
    assert (never.first_g2, never.outcome) == (None, "undecided")
    assert measure([never])["per_k"][64]["final_phase"] == UNDETERMINED
