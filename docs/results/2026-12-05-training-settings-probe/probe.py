"""Which training setting moves a trained group's plateau, and does it steepen a ladder?

Run from the repository root (one thread each, seed 0, batch 64 unless set):

    python docs/results/2026-12-05-training-settings-probe/probe.py pairwise-min base
    python docs/results/2026-12-05-training-settings-probe/probe.py pairwise-min wd0
    python docs/results/2026-12-05-training-settings-probe/probe.py pairwise-min lr3e-3
    python docs/results/2026-12-05-training-settings-probe/probe.py pairwise-min b512
    python docs/results/2026-12-05-training-settings-probe/probe.py intrinsic-dimension lr1e-3
    python docs/results/2026-12-05-training-settings-probe/probe.py intrinsic-dimension lr3e-3
    python docs/results/2026-12-05-training-settings-probe/probe.py intrinsic-dimension lr1e-2
    python docs/results/2026-12-05-training-settings-probe/probe.py intrinsic-dimension lr3e-3-long

pairwise-min: T = 8, E = 24, heads [1, 1] and [1] at MLP widths 2, 8, 32.
intrinsic-dimension: D = 2, T = 16, E = 20, MLP width 20, heads [2, 2], [1, 2], [2, 1].
"""

import json
import sys
import tempfile
import time
from pathlib import Path

import torch

from infoflow.retrieval.spec import RetrievalSpec
from infoflow.validators.protocol import Context
from infoflow.validators.retrieval.model import Member
from infoflow.validators.retrieval.pilot import recorded_curves
from infoflow.validators.retrieval.train import Group, TrainSettings, train_group
from infoflow.validators.store import Recorder

SETTINGS = {
    "base": TrainSettings(steps=2000, batch=64),
    "wd0": TrainSettings(steps=2000, batch=64, weight_decay=0.0),
    "b512": TrainSettings(steps=2000, batch=512),
    "lr1e-3": TrainSettings(steps=2000, batch=64, lr=1e-3),
    "lr3e-3": TrainSettings(steps=2000, batch=64, lr=3e-3),
    "lr1e-2": TrainSettings(steps=2000, batch=64, lr=1e-2),
    "lr3e-3-long": TrainSettings(steps=8000, batch=64, lr=3e-3),
}


def spec_of(name: str) -> RetrievalSpec:
    data = json.loads(Path(f"specs/retrieval/cpu-suite/{name}.json").read_text())
    data.pop("validation", None)
    return RetrievalSpec.model_validate(data)


def members_of(name: str) -> tuple[int, list[Member]]:
    if name == "pairwise-min":
        return 8, [Member(h, False, 0, 24, w) for h in [(1, 1), (1,)] for w in (2, 8, 32)]
    return 16, [Member(h, False, 0, 20, 20) for h in [(2, 2), (1, 2), (2, 1)]]


def main(name: str, variant: str) -> None:
    torch.set_num_threads(1)
    seq_len, members = members_of(name)
    labels = [f"heads {list(m.heads)} w{m.hidden}" for m in members]
    group = Group(
        f"probe-{name}-{variant}", spec_of(name), seq_len, members, labels, SETTINGS[variant]
    )
    recorder, started = Recorder(), time.time()
    with tempfile.TemporaryDirectory() as folder:
        train_group(group, Context(torch.device("cpu"), recorder, Path(folder)))
    print(f"{name} {variant}: {time.time() - started:.0f} s")
    for label, curve in zip(labels, recorded_curves(recorder, len(members)), strict=True):
        print(f"  {label:22s} best {min(curve.values()):.4f}  last step {max(curve)}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
