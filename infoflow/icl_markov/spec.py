"""The ``icl_markov`` spec: in-context learning of K Markov chains by a small transformer.

Fields follow the theory note ``icl_markov.md``: C ``states``, K ``chains`` (the data
diversity), sequences of ``context_len`` states, transition rows from Dirichlet(alpha), a
``mixture`` over the chains, and the model and training budget that set the timescales.
"""

from __future__ import annotations

from typing import Literal

from pydantic import (
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from infoflow.core.errors import FieldError
from infoflow.core.spec_base import SpecBase, StrictModel, existing_path


class MarkovModel(StrictModel):
    """The transformer: pre-LN blocks (attention + MLP), learned absolute positions."""

    layers: PositiveInt = 2
    d_model: PositiveInt = 64
    heads: PositiveInt = 4
    mlp_width: PositiveInt = Field(256, description="Hidden units of each MLP.")

    @model_validator(mode="after")
    def _heads_divide_width(self) -> MarkovModel:
        if self.d_model % self.heads:
            raise FieldError("heads", f"{self.heads} heads do not divide d_model {self.d_model}")
        return self


#: Training fields added on 2026-12-06, each defaulting to the recipe every earlier run
#: trained with (a record without them had those values).
ADDED_TRAINING = ("decay", "warmup_fraction", "grad_clip")


class Training(StrictModel):
    """AdamW with betas (0.9, 0.95), a linear warmup then a constant rate (see docs). The
    defaults are the recipe every earlier run trained with; Park et al.'s code clips the
    gradient to norm 0.01, has no warmup and decays every parameter (``specs/icl_markov/
    park2025.json`` sets all three)."""

    steps: PositiveInt
    batch_size: PositiveInt = 128
    lr: PositiveFloat = 6e-4
    weight_decay: NonNegativeFloat = 0.1
    decay: Literal["matrices", "all"] = Field(
        "matrices",
        description="What weight decay applies to: the matrices only (nanoGPT's split: no "
        "norms, biases), or every parameter (Park et al.: AdamW over model.parameters()).",
    )
    warmup_fraction: float = Field(
        0.02,
        ge=0,
        le=0.5,
        description="The linear warmup's share of the steps (0: the full rate from the first "
        "step, as Park et al.).",
    )
    grad_clip: PositiveFloat | None = Field(
        None,
        description="Clip each model's gradient to this global norm before every step (Park "
        "et al.: 0.01); none when null.",
    )
    layer1_attention_lr: PositiveFloat = Field(
        1.0,
        le=4.0,
        description="Layer 1's attention learns at this times the rate (the clock race's "
        "intervention [R]: slowing it delays the previous-token head, so G2 and M2 but not "
        "M1; above 1 it hastens them).",
    )


class MarkovOptions(StrictModel):
    """Readings the theory leaves open ([R]); defaults are documented in docs/icl_markov.md."""

    g1_variant: Literal["laplace", "park", "bayes"] = Field(
        "laplace",
        description="The G1 reference: Laplace-smoothed in-context unigram counts, Park et "
        "al.'s stationary distribution of the smoothed in-context bigram estimate, or the "
        "Bayes posterior predictive over a pool of fresh chains.",
    )
    task_vector_dim: Literal["d_model", "mlp_width"] = Field(
        "d_model",
        description="What D_phi, the task-vector dimension compared with C^2, is taken to be.",
    )
    kl_direction: Literal["reference_model", "model_reference"] = Field(
        "reference_model",
        description="The KL every metric uses: KL(reference || model), or Park et al.'s "
        "KL(model || reference) (the reference is the truth or a reference predictor).",
    )
    positions: Literal["uniform", "stationary"] = Field(
        "uniform",
        description="How the scored positions (every one but the last) are weighted: equally, "
        "or each by the generating chain's stationary probability of the current state "
        "(a reading of Park et al.'s stationary-weighted contexts).",
    )
    criterion: Literal["projection", "projection_global", "gap"] = Field(
        "projection",
        description="What decides which mechanism a model has formed, in the K sweep and the "
        "clocks alike: the weights of a convex mixture of the uniform, G1, G2, M1 and M2 "
        "fitted to the model (a kind has formed at weight >= 1/2); projection_global, its "
        "later version, with the training mixture's bigram in the plateau as well; or the "
        "rule before both (nearest reference by a margin, memorization as ID KL <= 0.5 x "
        "OOD KL, clocks halfway from the plateau). Fixed before a run and recorded in it.",
    )
    criterion_tolerance: PositiveFloat = Field(
        0.01,
        description="The ceiling of the projection criterion, in nats: a kind of phase is "
        "testable at K only when each of its references is at least this far (KL to the "
        "midpoint) from every reference of another kind on the run's data; a trained model "
        "strays about this far from the reference it implements.",
    )


def _distinct(values: list[int]) -> list[int]:
    """A list of sizes, each once: a repeat would be one run counted twice."""
    repeated = sorted({v for v in values if values.count(v) > 1})
    if repeated:
        raise ValueError(f"{', '.join(map(str, repeated))} given more than once")
    return values


class RaceClocks(StrictModel):
    """The clock runs behind the race prediction of K*_1 (docs/icl_markov.md, "The race")."""

    chains: list[PositiveInt] = Field(
        min_length=2,
        description="The K at which the memorising paths (M1, M2) are timed; the race "
        "interpolates between them, so they should bracket K*_1.",
    )

    _distinct_chains = field_validator("chains")(_distinct)


class DecoderSweep(StrictModel):
    """The decoder alone (docs/icl_markov.md, "K*_2 as capacity")."""

    chains: list[PositiveInt] = Field(
        min_length=1,
        description="The K at which the second MLP alone is asked to store K chains' rows "
        "(random codes of d_model numbers); the largest it fits below G2's level is its "
        "capacity.",
    )
    task_dims: list[PositiveInt] = Field(
        default_factory=list,
        description="The task-vector dimensions D_phi at which the decoder is tested on fresh "
        "chains (codes: a random projection of the transition matrix).",
    )

    _distinct_sizes = field_validator("chains", "task_dims")(_distinct)


class IclMarkovSpec(SpecBase):
    """K Markov chains over C states, a transformer trained on them, a training budget."""

    kind: Literal["icl_markov"]
    states: PositiveInt = Field(description="C: number of states.")
    chains: PositiveInt = Field(description="K: number of training chains (data diversity).")
    context_len: PositiveInt = Field(description="N: states per training sequence.")
    dirichlet_alpha: PositiveFloat = Field(1.0, description="Each transition row ~ Dir(alpha).")
    mixture: Literal["uniform", "random", "park"] = Field(
        "random",
        description="Weights of the K chains: equal; drawn once from Dirichlet(1) (normalised "
        "Exp(1) draws); or Park et al.'s normalised U(0, 1) draws.",
    )
    model: MarkovModel = Field(default_factory=MarkovModel)
    training: Training
    seed: NonNegativeInt = Field(0, description="Fixes the chains, the mixture and the runs.")
    options: MarkovOptions = Field(default_factory=MarkovOptions)
    decoder: DecoderSweep | None = Field(
        None,
        description="`infoflow validate` also trains the second MLP alone: its capacity "
        "against K*_2, and D_phi against the task vector's generalisation.",
    )
    race: RaceClocks | None = Field(
        None,
        description="`infoflow validate` also trains the clock models and judges K*_1 from "
        "the race of this run's clocks.",
    )
    calibration: str | None = Field(
        None,
        description="A calibration file written by `infoflow calibrate icl_markov`, relative "
        "to the spec file; default: the one shipped with infoflow.",
    )

    @field_validator("calibration")
    @classmethod
    def _resolve_calibration(cls, value: str | None, info: ValidationInfo) -> str | None:
        return existing_path(value, info, "calibration file", folder=False)

    @model_validator(mode="after")
    def _sizes(self) -> IclMarkovSpec:
        if self.states < 2:
            raise FieldError("states", "a Markov chain needs at least 2 states")
        if self.context_len < 2:
            raise FieldError("context_len", "a sequence needs at least 2 states")
        return self
