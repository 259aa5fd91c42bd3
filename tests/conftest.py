"""Shared helpers: the bundled specs, the real ``infoflow`` entry point, a toy fourth family,
the step-time model every test's design uses; and the plugins every run loads: the guard
that keeps the fast loop fast (tests/fast_loop.py) and pytester (to test that guard)."""

from __future__ import annotations

import itertools
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from in_process import in_process

pytest_plugins = ["fast_loop", "pytester"]

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"
LOOPED_KV = SPECS / "looped_kv"

#: ``--set`` arguments that shrink specs/looped_kv/tiny-looped.json from d_model 64 and 4 heads
#: to d_model 16 and 2 heads: the same pipeline, claims, stores and snapshots at a third of the
#: time, for tests of the plumbing (the spec's own size is what docs/results/ measure).
SMALLER_LOOPED = [
    *("--set", "model.hidden_size=16", "--set", "model.heads=2", "--set", "model.kv_heads=2"),
    *("--set", "model.head_dim=8", "--set", "model.intermediate_size=32"),
]


def infoflow_cmd() -> list[str]:
    """The installed console script (the entry point a user runs)."""
    script = Path(sys.executable).parent / "infoflow"
    if not script.exists():
        pytest.fail(f"the infoflow console script is not installed next to {sys.executable}")
    return [str(script)]


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``infoflow ARGS``: its exit code, stdout and stderr. In this process
    (:mod:`in_process`), except where only a process of its own can answer
    (:func:`run_process`): an ``env`` (read at start-up: the import profile, shell
    completion, torch's threads) or Ray (``ray.init`` would outlive the call)."""
    words = [str(a) for a in args]
    if env or any(w == "ray" or w.endswith("=ray") for w in words):
        return run_process(*words, env=env)
    return in_process(words)


def run_process(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``infoflow ARGS`` run by the installed console script, in a process of its own."""
    return subprocess.run(
        [*infoflow_cmd(), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
    )


def _default_sigint() -> None:
    """In the child: Ctrl-C as a foreground run gets it. A shell starts a background job
    with SIGINT ignored and its children inherit that (the suite run with `&` failed here)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt_and_resume(out: Path, stop: int, code: int, *more: str) -> str:
    """``validate --resume`` of the specific position into ``out``, which holds no run, with
    ``more`` options, stopped by signal ``stop`` once a checkpoint is written: it said it
    starts a new run, exits ``code`` with the line that says how to go on and no traceback
    (its stderr is returned); run again without ``more`` (the local executor: a Ray worker
    resuming a group is test_ray_executor.py's killed worker), it finishes."""
    args = ["validate", str(SPECS / "retrieval" / "specific-position.json"), "--steps", "400"]
    args += ["--seeds", "1", "--no-plots", "--out", str(out), "--resume"]
    proc = subprocess.Popen(
        [*infoflow_cmd(), *args, *more],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    deadline = time.monotonic() + 240
    while not list((out / "checkpoints").glob("*.pt")) and time.monotonic() < deadline:
        time.sleep(0.5)  # a checkpoint: training has started and kept something
    proc.send_signal(stop)
    _, stderr = proc.communicate(timeout=300)
    assert "holds no run to resume: starting a new one" in stderr
    assert proc.returncode == code, stderr
    assert "interrupted: what was trained is kept" in stderr
    assert "Traceback" not in stderr
    again = run_cli(*args)
    assert again.returncode == 0, again.stderr
    assert "holds no run to resume" not in again.stderr
    return stderr


def assert_same(a, b, path="") -> None:
    """Equal reports: numbers to a relative 1e-5 (float32 training is not bitwise
    reproducible from one process to another: another executor, a resumed run), the rest
    exactly."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for key in a:
            assert_same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, float):
        assert math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-9), (path, a, b)
    else:
        assert a == b, (path, a, b)


def park_only_calibration(folder: Path, **anchor) -> Path:
    """A calibration for tests that must not depend on the constants of the day: the Park et
    al. anchor alone (a = 0.7, transient_scale 1, capacity 1, no clocks), its final-time
    boundary also standing in as a K*_1 anchor (the shipped file does not use it so: a
    fixture for the predictor's scaling, not a claim), with ``anchor`` fields added."""
    from infoflow.icl_markov.calibration import SHIPPED

    data = json.loads(SHIPPED.read_text())
    data["anchors"] = [a for a in data["anchors"] if a["name"] == "park2025"]
    data["anchors"][0]["k1_star"] = data["anchors"][0]["final_boundary"]
    data["anchors"][0].update(anchor)
    data["exponents"]["memorization"] = {"value": 0.7, "provenance": "prior", "source": "-"}
    data["transient_scale"] = {"value": 1.0, "provenance": "default", "source": "-"}
    data["capacity"] = {"value": 1.0, "provenance": "default", "source": "-"}
    data["clocks"] = []
    path = folder / "park-only.json"
    path.write_text(json.dumps(data))
    return path


@contextmanager
def no_hang(seconds: int = 120) -> Iterator[None]:
    """Fail (TimeoutError) instead of hanging when the block runs longer than ``seconds``: a
    guard against reading forever, not a measure of speed."""

    def expire(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def refused(*args: str) -> str:
    """Run ``infoflow ARGS`` in-process; it must exit 2 with one line on stderr, no
    traceback. Returns that line."""
    from typer.testing import CliRunner

    from infoflow.cli import app

    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


TOY = '''
"""A toy family: it predicts twice a number; its validator "trains" by recording a number
(twice the spec's, or one more when the spec says so) and judges the prediction by it."""

from dataclasses import dataclass
from typing import ClassVar, Literal

import infoflow
from infoflow.core.results import Prediction, Result
from infoflow.core.spec_base import SpecBase
from infoflow.validators.claims import Claim, Section
from infoflow.validators.protocol import CannotValidate, Group, Job


class ToySpec(SpecBase):
    kind: Literal["toy"]
    n: int
    off_by_one: bool = False


def predict(spec, source=None):
    double = Prediction(2 * spec.n, "", "exact", "derived", "twice n")
    return Result("toy", spec, {"double": double}, source)


@dataclass(frozen=True)
class ToyScale:
    name: str
    steps: int


@dataclass(frozen=True)
class ToyGroup(Group):
    kind: ClassVar[str] = "toy"
    code: ClassVar[int] = 1
    prefix: str
    spec: ToySpec

    def trained(self):
        return {"n": self.spec.n, "off_by_one": self.spec.off_by_one}

    def describe(self):
        return {"n": self.spec.n}

    def member_rows(self):
        return [{"label": "the toy"}]


@dataclass(frozen=True)
class ToyExperiment:
    name: str
    spec: ToySpec

    @property
    def jobs(self):
        return [Job("toy", self.name, ToyGroup(self.name, self.spec), 1)]


class ToyValidator:
    kind = "toy"
    run_options = ()

    def scale(self, name, steps, seeds, device, budget=None, compile=False, pilot=False):
        return ToyScale(name, steps or 1)

    def plan(self, name, spec, scale, base_dir):
        if spec.n < 0:
            raise CannotValidate("n must not be negative here")
        return ToyExperiment(name, spec)

    def train(self, job, context):
        spec = job.group.spec
        context.store.record_metrics(job.name, 1, [{"double": 2 * spec.n + spec.off_by_one}])
        context.store.finish_group(job.name, 0.0)

    def judge(self, experiment, context):
        (job,) = experiment.jobs
        (measured,) = context.store.last_values(job.name, "double")
        predicted = infoflow.predict(experiment.spec)["double"].value
        holds = measured == predicted
        claim = Claim.judged("double", "the toy doubles n", predicted, measured, "equal", holds)
        claim = claim.of_kind("engineering")
        return Section("toy", experiment.name, {"n": experiment.spec.n}, (claim,))

    def describe(self, settings):
        return f"Toy: {settings['steps']} step."

    def markdown(self, section):
        return ["", "## " + section["name"], "", "n = " + str(section["n"])]

    def plot(self, out, sections):
        path = out / "toy.txt"
        path.write_text(str(len(sections)))
        return [path]

    def figures(self, sections):
        return {}


VALIDATOR = ToyValidator()
'''


@pytest.fixture
def toy(monkeypatch, tmp_path):
    """The toy family's module on the path and its one registry entry; spec files
    ``right.json`` (n = 3), ``wrong.json`` (off by one) and ``negative.json`` (refused by
    its validator) in the returned folder."""
    from infoflow.families import FAMILIES, Family

    (tmp_path / "toy_family.py").write_text(textwrap.dedent(TOY))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(
        FAMILIES,
        "toy",
        Family(
            kind="toy",
            spec="toy_family:ToySpec",
            predict="toy_family:predict",
            validator="toy_family:VALIDATOR",
        ),
    )
    for name, spec in (
        ("right", {"n": 3}),
        ("wrong", {"n": 4, "off_by_one": True}),
        ("negative", {"n": -1}),
    ):
        (tmp_path / f"{name}.json").write_text(json.dumps({"kind": "toy", **spec}))
    return tmp_path


#: The step-time model every test's retrieval design uses (written to the cache, so that no
#: test spends seconds measuring and every design is the same on every machine): 10 ms a
#: step and 1 GFLOP/s. tests/retrieval/test_retrieval_design.py measures a real one.
TEST_STEP_TIME = {"overhead": 0.01, "per_flop": 1e-9, "source": "fixed for the tests"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the tests marked slow first (in their order): with ``--dist
    loadfile --no-loadscope-reorder`` (one module to one worker, so that a module's shared
    run or Ray cluster is made once), the modules that hold them go out first, and the
    workers end together rather than with one long module left to run alone."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def _threads_per_worker() -> int | None:
    """Under pytest-xdist (``-n``), each worker's share of the cores (at least one): torch's
    default, every core in every worker, oversubscribes the machine (two workers ran the
    suite 1.6x slower than one test at a time on 2 cores, measured); None outside xdist."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    return max(1, (os.cpu_count() or 1) // int(workers)) if workers else None


@pytest.fixture(autouse=True, scope="session")
def step_time_cache(tmp_path_factory) -> Iterator[Path]:
    """``$INFOFLOW_CACHE`` for the whole session, holding :data:`TEST_STEP_TIME` for the CPU
    (at this process's thread count and at one thread, under any load)."""
    folder = tmp_path_factory.mktemp("cache")
    before = os.environ.get("INFOFLOW_CACHE")
    os.environ["INFOFLOW_CACHE"] = str(folder)
    try:
        from infoflow.validators import steptime
        from infoflow.validators.retrieval.timing import PROBES
    except ModuleNotFoundError:  # no torch: nothing designs experiments
        steptime = None
    if steptime is not None:  # for this process's thread count and for one thread (a
        import torch  # Ray worker, or a run under OMP_NUM_THREADS=1)

        model = {"device_type": "cpu", "name": "test", **TEST_STEP_TIME}
        threads = _threads_per_worker() or torch.get_num_threads()
        cores = steptime.machine()[0]
        for count in sorted({1, threads}):
            torch.set_num_threads(count)
            for probes, busy in itertools.product((steptime.GENERIC, PROBES), range(cores + 1)):
                steptime.cache_file("cpu", probes.name, busy).write_text(json.dumps(model))
        torch.set_num_threads(threads)
        # every subprocess trains on this process's thread count whatever the load, so that
        # two runs a test compares (whole and killed-then-resumed) sum floats alike
        os.environ["OMP_NUM_THREADS"] = str(threads)
    yield folder
    if before is None:
        os.environ.pop("INFOFLOW_CACHE", None)
    else:
        os.environ["INFOFLOW_CACHE"] = before
