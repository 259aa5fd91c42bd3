"""A looped_kv spec -> an experiment: the looped model to measure, trained here (a spec small
enough: the bundled ``tiny-looped.json``) or loaded from the Ouro-style checkpoint the spec
names in ``model.checkpoint`` (then nothing is trained). The corpus is sequences of a
mixture of Markov chains over the model's vocabulary: language-like and cheap to generate;
it is the training, calibration and evaluation data.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import ClassVar

import torch

import infoflow
from infoflow.looped_kv.spec import LoopedKVSpec
from infoflow.validators.chains import ChainSampler, sample_chains
from infoflow.validators.looped_kv.model import LoopedConfig
from infoflow.validators.protocol import CannotValidate, Group, Job

MAX_PARAMETERS = 5_000_000
#: Layer passes a token makes (core layers times loops, plus prelude and coda) that a model
#: the validator runs may make: weight tying adds no parameters, so loops need a bound of
#: their own (a billion loops passed the parameter cap and filled memory: a review).
MAX_LAYER_PASSES = 1024
#: The largest vocabulary the corpus is drawn over (:func:`corpus`: 8 Markov chains of V x V
#: float64 transitions, 256 MiB at 2,048; Ouro's 49,152 would need 144 GiB).
MAX_VOCAB = 2048
#: The version of the model, corpus and training code: part of the group's identity, so a
#: change here (bump it) never resumes a checkpoint trained by the code before.
TRAINING_VERSION = 1
TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class LoopedScale:
    """How the looped models train and are measured: the main model (the spec's, seed 0) is
    measured whole; ``seeds`` x ``widths`` (multiples of the spec's d_model) models, the main
    one among them, record the loop-axis structure at ``snapshots`` (fractions of the
    steps)."""

    name: str
    steps: int
    batch: int
    length: int
    calibration: int  # sequences
    evaluation: int
    distill_steps: int  # refinement of the LLA codec, teacher frozen
    seeds: int = 3
    widths: tuple[int, ...] = (1, 2)
    snapshots: tuple[float, ...] = (0.25, 0.5, 1.0)


SCALES = {
    "smoke": LoopedScale("smoke", 600, 32, 64, 64, 32, distill_steps=60),
    "paper": LoopedScale("paper", 4000, 64, 128, 256, 128, distill_steps=500),
}


@dataclass
class LoopedGroup(Group):
    """The one model a looped_kv spec trains."""

    kind: ClassVar[str] = "looped_kv"
    code: ClassVar[int] = TRAINING_VERSION
    prefix: str
    config: LoopedConfig
    scale: LoopedScale
    seed: int = 0
    snapshots: tuple[int, ...] = ()  # steps at which the loop-axis structure is recorded

    def trained(self) -> dict:
        """Everything that determines the trained model (the corpus and the seeds are fixed
        in the code, whose version this names)."""
        return self.describe()

    def describe(self) -> dict:
        return {
            "config": asdict(self.config),
            "steps": self.scale.steps,
            "batch": self.scale.batch,
            "length": self.scale.length,
            "seed": self.seed,
            "snapshots": list(self.snapshots),
        }

    def member_rows(self) -> list[dict]:
        c = self.config
        label = f"looped {c.core} x {c.loops}, d_model {c.d_model}, seed {self.seed}"
        return [{"label": label, "seed": self.seed}]  # metrics.csv's seed (none before)


@dataclass(frozen=True)
class LoopedExperiment:
    name: str
    spec: LoopedKVSpec
    scale: LoopedScale
    group: LoopedGroup | None  # the main model; None: loaded from ``spec.model.checkpoint``
    structure: tuple[LoopedGroup, ...] = ()  # every seed and width, the main model first

    @property
    def jobs(self) -> list[Job]:
        return [Job("looped_kv", self.name, g, self.scale.steps) for g in self.structure]


def plan(name: str, spec: LoopedKVSpec, scale: LoopedScale) -> LoopedExperiment:
    """The model to measure: trained here, or loaded; CannotValidate when it is neither."""
    reason = cannot_train(spec)
    if reason:
        raise CannotValidate(reason)
    if spec.model.checkpoint:
        return LoopedExperiment(name, spec, scale, None)
    snapshots = tuple(sorted({max(1, round(f * scale.steps)) for f in scale.snapshots}))
    structure = tuple(
        LoopedGroup(
            f"{name}-looped" + (f"-w{width}-s{seed}" if (width, seed) != (1, 0) else ""),
            config_of(spec, scale.length, width),
            scale,
            seed,
            snapshots,
        )
        for width in scale.widths
        for seed in range(scale.seeds)
    )
    return LoopedExperiment(name, spec, scale, structure[0], structure)


def cannot_train(spec: LoopedKVSpec) -> str | None:
    """Why this spec's model is neither loaded nor trained here (None when it is)."""
    model = spec.model
    passes = model.layers * model.loops + model.prelude_layers + model.coda_layers
    if passes > MAX_LAYER_PASSES:
        return (
            f"a token makes {passes:,} layer passes (model.loops {model.loops:,} times "
            f"{model.layers:,} core layers, with prelude and coda): the looped_kv validator "
            f"runs models of up to {MAX_LAYER_PASSES:,}"
        )
    dtype = spec.serving.cache_dtype or model.dtype
    if dtype not in TORCH_DTYPES:
        return f"{dtype} caches are not simulated"
    if model.experts or model.latent_attention or model.sliding_window:
        return "the validator's model is a dense decoder: no experts, latent attention or windows"
    if model.checkpoint:
        return _too_large_a_vocabulary(model.vocab_size)
    params = infoflow.predict(spec)["model_parameters"].value
    if params > MAX_PARAMETERS:
        return (
            f"{model.name} has {params:,} parameters: the looped_kv validator trains models "
            f"up to {MAX_PARAMETERS:,} (specs/looped_kv/tiny-looped.json); a larger one is "
            "measured from a local checkpoint folder (model.checkpoint) whose vocabulary is "
            f"at most {MAX_VOCAB:,} tokens"
        )
    if model.kv_heads != model.heads or model.hidden_size != model.heads * model.head_dim:
        return "the validator's model has as many KV heads as heads, of width hidden / heads"
    return _too_large_a_vocabulary(model.vocab_size)


def _too_large_a_vocabulary(vocab: int) -> str | None:
    if vocab <= MAX_VOCAB:
        return None
    return (
        f"a vocabulary of {vocab:,}: the measurement's corpus (8 Markov chains over the"
        f" vocabulary) is drawn for up to {MAX_VOCAB:,} tokens"
    )


def config_of(spec: LoopedKVSpec, length: int, width: int = 1) -> LoopedConfig:
    """The spec's model, its widths (d_model, head width, MLP) times ``width``."""
    m = spec.model
    return LoopedConfig(
        vocab=m.vocab_size,
        d_model=m.hidden_size * width,
        heads=m.heads,
        prelude=m.prelude_layers,
        core=m.layers,
        loops=m.loops,
        coda=m.coda_layers,
        mlp_width=m.intermediate_size * width,
        max_len=length,
    )


def corpus(vocab: int, seed: int):
    """Sequences of a mixture of 8 Markov chains over the vocabulary (Dirichlet(0.3) rows,
    so each chain is fairly predictable): language-like, and cheap to generate."""
    chains = sample_chains(8, vocab, 0.3, seed)
    sampler = ChainSampler(chains)

    def draw(batch: int, length: int, generator: torch.Generator) -> torch.Tensor:
        chain = torch.randint(0, len(chains), (batch,), generator=generator)
        return sampler.sample(chain, length, generator)

    return draw
