"""A pytest plugin that keeps the fast loop fast: a test not marked ``slow`` whose setup and
call take more than ``INFOFLOW_FAST_LIMIT`` CPU seconds (default 10; its own process and the
subprocesses it waits for) fails the run, named in the summary. CPU time, not wall time, so a
busy machine does not trip it; nothing is asserted inside a test.

The time travels on the test's report (``user_properties``), so the guard judges it where the
reports arrive: in the run's own process, also when pytest-xdist runs the tests in workers."""

from __future__ import annotations

import os
import resource

import pytest

SPENT = pytest.StashKey[dict]()
TOO_SLOW = pytest.StashKey[list]()
LIMIT = pytest.StashKey[float]()
PROPERTY = "cpu_seconds"
#: The configuration of the run in progress (pytest_runtest_logreport is not handed it).
_config: list[pytest.Config] = []


def cpu_seconds() -> float:
    """CPU time of this process and of the children it has waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def pytest_configure(config) -> None:
    """The limit is read once, at the start: a test that sets the variable for a run of its own
    does not change the limit it is itself held to."""
    config.stash[SPENT], config.stash[TOO_SLOW] = {}, []
    config.stash[LIMIT] = float(os.environ.get("INFOFLOW_FAST_LIMIT", "10"))
    _config.append(config)


def pytest_unconfigure(config) -> None:
    _config.remove(config)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    start = cpu_seconds()
    yield
    item.config.stash[SPENT][item.nodeid] = cpu_seconds() - start


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    start = cpu_seconds()
    yield
    item.config.stash[SPENT][item.nodeid] += cpu_seconds() - start


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when == "call":
        spent = item.config.stash[SPENT].pop(item.nodeid, 0.0)
        outcome.get_result().user_properties.append((PROPERTY, spent))


def pytest_runtest_logreport(report) -> None:
    """Judge a test's time where its report arrives (in a worker too: harmless, as only the
    run's own process prints the summary)."""
    spent = dict(report.user_properties).get(PROPERTY) if report.when == "call" else None
    config = _config[-1]
    if spent is not None and spent > config.stash[LIMIT] and "slow" not in report.keywords:
        config.stash[TOO_SLOW].append((report.nodeid, spent))


def pytest_terminal_summary(terminalreporter, config) -> None:
    for nodeid, spent in config.stash[TOO_SLOW]:
        terminalreporter.write_line(
            f"TOO SLOW for the fast loop: {nodeid} took {spent:.1f} CPU s"
            f" (limit {config.stash[LIMIT]:g}):"
            " mark it slow, or make it smaller",
            red=True,
        )


def pytest_sessionfinish(session, exitstatus) -> None:
    if session.config.stash[TOO_SLOW] and exitstatus == 0:
        session.exitstatus = 1
