"""`infoflow validate --executor ray` on a real local Ray cluster: joining a running cluster
(and leaving it running), the same verdicts and metrics as the local executor with a worker
killed in the middle of a group (retried from the group's checkpoint); and a Ray of its own,
started and stopped by validate (interrupted, then resumed)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("ray")

from conftest import SMALLER_LOOPED, SPECS, assert_same, infoflow_cmd, interrupt_and_resume, run_cli

pytestmark = pytest.mark.slow

TINY_ICL = {
    "kind": "icl_markov",
    "states": 3,
    "chains": 1,
    "context_len": 16,
    "model": {"layers": 2, "d_model": 16, "heads": 2, "mlp_width": 32},
    "training": {"steps": 400, "batch_size": 16, "lr": 0.003},
    "sweep": {"chains": [1, 64]},
}


#: A Ray worker with one CPU trains on one thread: so do the runs compared with it (and their
#: drivers, which plan and measure), or float32 reductions split across threads round
#: differently and the models drift apart.
ONE_THREAD = {"OMP_NUM_THREADS": "1"}


def _report(folder):
    return json.loads((folder / "report.json").read_text())


@pytest.fixture(scope="module")
def cluster():
    """A running two-CPU Ray cluster the tests join with ``--address auto`` (one start for
    the module, at the first test that asks for it: the test before it runs a Ray of its
    own, the other path, which a plain ``ray.init()`` beside a running cluster would not)."""
    ray = [str(Path(infoflow_cmd()[0]).parent / "ray")]
    started = subprocess.run(
        [*ray, "start", "--head", "--num-cpus", "2", "--include-dashboard", "false"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **ONE_THREAD},  # its workers train as the runs compared with them
    )
    assert started.returncode == 0, started.stderr
    try:
        yield ["--executor", "ray", "--address", "auto"]
    finally:
        subprocess.run([*ray, "stop"], capture_output=True, timeout=300)


def test_an_interrupted_ray_run_says_how_to_continue(tmp_path) -> None:
    """SIGTERM during a Ray run (validate's own Ray: ray.init put sys.exit on SIGTERM, exit
    15 and no line, a review) exits 143 with the line that says how to go on; resumed (here,
    locally), the run finishes. In this module, not beside the local runs of
    test_run_folder.py: on another worker, its Ray joined this module's cluster, which the
    fixture stopped under it (LocalRayletDiedError, 2026-12-07)."""
    stderr = interrupt_and_resume(
        tmp_path / "run", signal.SIGTERM, 143, "--executor", "ray", "--device", "cpu"
    )
    assert "Started a local Ray instance" not in stderr  # Ray's INFO lines stay out


def test_ray_gives_the_local_verdicts_with_a_worker_killed_and_leaves_the_cluster_running(
    tmp_path, cluster
) -> None:
    """The same verdicts and metrics as the local executor, on a cluster validate joins,
    while the ICL group's Ray worker is killed in the middle of the group: another worker
    retries it from the group's checkpoint to the same result."""
    icl = tmp_path / "tiny-icl.json"
    icl.write_text(json.dumps({**TINY_ICL, "training": {**TINY_ICL["training"], "steps": 200}}))
    args = [str(icl), "--quiet", "--device", "cpu", "--no-plots"]
    local, ray_run = tmp_path / "local", tmp_path / "ray"
    assert run_cli("validate", *args, "--out", str(local), env=ONE_THREAD).returncode == 0
    process = subprocess.Popen(
        [*infoflow_cmd(), "validate", *args, "--out", str(ray_run), *cluster],
        start_new_session=True,
        env={**os.environ, **ONE_THREAD},
    )
    checkpoints = ray_run / "checkpoints"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (
        list(checkpoints.glob("tiny-icl*.pid")) and list(checkpoints.glob("tiny-icl*.pt"))
    ):
        time.sleep(0.05)
    (pid_file,) = checkpoints.glob("tiny-icl*.pid")
    victim = int(pid_file.read_text())
    os.kill(victim, signal.SIGKILL)  # the Ray worker, in the middle of the group
    assert process.wait(timeout=300) == 0
    assert int(pid_file.read_text()) != victim  # another worker finished the group
    a, b = _report(local), _report(ray_run)
    assert a["summary"] == b["summary"]
    assert_same(a["specs"], b["specs"])
    assert len(list(checkpoints.glob("*.pid"))) == 1  # a task per group
    probe = "import ray; ray.init(address='auto'); print(ray.cluster_resources()['CPU'])"
    alive = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300
    )
    assert alive.stdout.strip() == "2.0"  # a cluster validate joined is not its to stop


def test_a_looped_kv_job_trains_as_a_ray_task(tmp_path, cluster) -> None:
    tiny = SPECS / "looped_kv" / "tiny-looped.json"
    out = tmp_path / "ray"
    proc = run_cli(
        "validate",
        str(tiny),
        "--steps",
        "4",
        "--seeds",
        "1",
        "--quiet",
        "--device",
        "cpu",
        "--out",
        str(out),
        *SMALLER_LOOPED,
        *cluster,
    )
    assert proc.returncode == 0, proc.stderr
    assert list((out / "checkpoints").glob("tiny-looped-looped-*.pid"))  # a Ray worker trained it
    (section,) = _report(out)["specs"]
    assert section["kind"] == "looped_kv" and len(section["claims"]) == 20  # per rho: 8 + 2
    assert all(s["measured_bytes"] == s["predicted_bytes"] for s in section["measured"]["stores"])
    # the snapshots the Ray workers recorded came back: at every step of both widths
    assert set(section["structure"]["1"]) == set(section["structure"]["2"]) == {"1", "2", "4"}
    assert section["structure"]["2"]["4"]["margin:V:4"]["seeds"] == 1
