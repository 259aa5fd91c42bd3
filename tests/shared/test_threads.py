"""The thread count validate and plan train with, and the step-time cache's load key."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from infoflow.validators import steptime, threads
from infoflow.validators.threads import choose


@pytest.mark.parametrize(
    ("cores", "load", "count", "loaded"),
    [(2, 0.1, 2, False), (2, 1.2, 1, True), (2, 3.7, 1, True), (16, 1.0, 15, False)],
)
def test_one_thread_per_free_core_never_more(cores, load, count, loaded) -> None:
    chosen = choose(cores, load)
    assert (chosen.count, chosen.loaded) == (count, loaded)
    assert chosen.line().startswith(f"torch threads: {count} ({cores} cores, load {load:.1f}")
    assert ("warning: the machine is loaded" in chosen.line()) == loaded


def test_an_explicit_thread_count_wins_over_the_load() -> None:
    chosen = choose(2, 1.9, 2, "--threads")
    assert chosen.count == 2 and chosen.loaded and "--threads" in chosen.line()


def test_omp_num_threads_is_an_explicit_choice_and_the_count_is_restored(monkeypatch) -> None:
    import torch

    before = torch.get_num_threads()
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setattr(threads, "machine", lambda: (2, 0.0))
    with threads.free_cores() as chosen:
        assert chosen.reason.startswith("OMP_NUM_THREADS") and torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_the_step_time_cache_is_kept_per_load(monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setenv("INFOFLOW_CACHE", str(tmp_path))
    load = {"now": 0.1}
    monkeypatch.setattr(steptime, "machine", lambda: (2, load["now"]))
    measured = []

    def measure(device, probes):
        measured.append(load["now"])
        return steptime.StepTime("cpu", "t", 0.01, 1e-9, "m", threads=1, load=load["now"])

    monkeypatch.setattr(steptime, "measure", measure)
    monkeypatch.setattr(steptime.torch, "get_num_threads", lambda: 1)
    idle = steptime.step_time("cpu")
    assert steptime.step_time("cpu") == idle and measured == [0.1]  # cached
    load["now"] = 1.3  # another core busy: another file, measured again
    assert steptime.cache_file("cpu") != steptime.cache_file("cpu", load=0.1)
    assert steptime.step_time("cpu").load == 1.3 and measured == [0.1, 1.3]
    # a record measured under other conditions than its file's is measured again, with a word
    steptime.cache_file("cpu").write_text(json.dumps({**idle.__dict__, "threads": 2}))
    assert steptime.step_time("cpu").threads == 1 and measured == [0.1, 1.3, 1.3]
    assert "measured with 2 threads under load 0.1, not as now" in capsys.readouterr().err


def test_a_resumed_run_trains_on_the_thread_count_it_started_with(tmp_path) -> None:
    import torch

    from infoflow.validators.store import Store, recorded_settings

    store = Store(tmp_path / "results.sqlite")
    store.start_run("2026-12-03T10:00:00", "smoke", "cpu", {"threads": 1})
    store.start_run("2026-12-03T11:00:00", "smoke", "cpu", {"threads": 2})  # an earlier resume
    store.close()
    recorded = recorded_settings(tmp_path / "results.sqlite")["threads"]
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert threads.keep_threads(recorded, "cuda") is None  # a GPU run: no CPU threads
        assert threads.keep_threads(None, "cpu") is None and torch.get_num_threads() == 2
        line = threads.keep_threads(recorded, "cpu")
        assert torch.get_num_threads() == 1
        assert line == "torch threads: 1, as when this run started"
    finally:
        torch.set_num_threads(before)


def test_a_resumed_run_designs_with_the_step_times_it_started_with() -> None:
    from infoflow.validators.retrieval.timing import PROBES

    then = {"device_type": "cpu", "name": "x", "overhead": 0.5, "per_flop": 2e-9, "source": "then"}
    wrong = {**then, "per_flop": -1.0}  # an implausible record is not used
    pins = {f"cpu:{steptime.GENERIC.name}": then, f"cpu:{PROBES.name}": wrong, "t": 0.25}
    with steptime.recorded(pins) as used:
        assert steptime.step_time("cpu").source == "then"
        assert steptime.step_time("cpu", PROBES).per_flop > 0  # the cache's, not the pin
        assert steptime.remembered("t", lambda: 9.0) == 0.25  # a target's recorded time
        assert steptime.remembered("u", lambda: 9.0) == 9.0 and used["u"] == 9.0
    assert used[f"cpu:{steptime.GENERIC.name}"] == {
        **then,
        "assumed": False,
        "threads": None,
        "load": None,
    }
    assert used[f"cpu:{PROBES.name}"]["per_flop"] > 0
    assert steptime.step_time("cpu").source != "then"  # pinned only inside the block


def test_the_load_read_when_planning_starts_is_held_while_it_runs(monkeypatch) -> None:
    """Planning's own work (timed steps, pilots) raises the load average: inside held_load
    (and so inside free_cores, where plan and validate run) machine() keeps the first."""
    loads = iter([0.2, 1.9, 3.0])
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (next(loads), 0.0, 0.0))
    with threads.held_load() as held:
        assert held == 0.2 and threads.machine()[1] == 0.2 == steptime.machine()[1]
        with threads.held_load() as inner:  # nested: the outer one holds
            assert inner == 0.2 and threads.machine()[1] == 0.2
        assert threads.machine()[1] == 0.2
    assert threads.machine()[1] == 1.9  # read afresh outside
    with threads.free_cores(1):
        assert threads.machine()[1] == 3.0 and steptime.machine()[1] == 3.0
