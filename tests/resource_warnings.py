"""A leaked file, socket, subprocess or event loop fails the run (a pytest plugin, loaded by
tests/conftest.py).

A ResourceWarning is mostly issued by a finaliser, when the garbage collector reaches the leaked
object: during whichever test happens to run then, between two tests, or at exit. Turned into
an error where it fires, it would fail an innocent test at random (or be lost as an
"unraisable" exception in ``__del__``). So each one is collected instead, wherever it fires —
inside a test (pytest records it), between tests (``warnings.showwarning``) and in a last
``gc.collect()`` at the end of the session — and the session fails at its end, naming every one
with the test that was running when it was seen. The leak is usually in that test or the one
before it; run with ``PYTHONTRACEMALLOC=20`` to have each warning name the line that opened
the object.

Under pytest-xdist each worker is a process of its own: a warning inside a test reaches the
controller with the test's report (xdist forwards ``pytest_warning_recorded``), and the ones a
worker saw outside any test travel in its ``workeroutput`` when it finishes, so the controller's
session fails the same way.
"""

from __future__ import annotations

import gc
import warnings
from dataclasses import dataclass
from typing import Any

import pytest


@dataclass(frozen=True)
class Leak:
    message: str
    where: str  # the test running when it was seen, or when outside any test
    # Seen by pytest inside a test: under xdist the controller hears of it from pytest itself.
    in_test: bool = False


_leaks: list[Leak] = []
# The key of a worker's leaks outside any test in its xdist workeroutput.
WORKER_LEAKS = "filegate_resource_warnings"
_forward: Any = None


def _showwarning(message: Any, category: type[Warning], filename: str, lineno: int, *args: Any) -> None:
    if issubclass(category, ResourceWarning):
        _leaks.append(Leak(str(message), "between tests"))
    _forward(message, category, filename, lineno, *args)


def pytest_configure(config: pytest.Config) -> None:
    global _forward
    # Python ignores ResourceWarning by default; pytest's filters (pyproject.toml) apply only
    # inside a test, so outside one they are let through here.
    warnings.filterwarnings("always", category=ResourceWarning)
    _forward = warnings.showwarning
    warnings.showwarning = _showwarning


def pytest_unconfigure(config: pytest.Config) -> None:
    if _forward is not None:
        warnings.showwarning = _forward


def pytest_warning_recorded(
    warning_message: warnings.WarningMessage, when: str, nodeid: str, location: tuple[str, int, str] | None
) -> None:
    if issubclass(warning_message.category, ResourceWarning):
        _leaks.append(Leak(str(warning_message.message), nodeid or f"during {when}", in_test=True))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object | None) -> None:
    """The controller of an xdist run: a worker's leaks outside any test, sent as it finished."""
    for message, where in getattr(node, "workeroutput", {}).get(WORKER_LEAKS, []):
        _leaks.append(Leak(message, f"{where} (xdist worker {node.gateway.id})"))


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    with warnings.catch_warnings(record=True) as late:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    _leaks.extend(
        Leak(str(w.message), "at the end of the session")
        for w in late
        if issubclass(w.category, ResourceWarning)
    )
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller fails the run
        workeroutput[WORKER_LEAKS] = [(leak.message, leak.where) for leak in _leaks if not leak.in_test]
    if _leaks and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if not _leaks:
        return
    terminalreporter.write_sep("=", f"{len(_leaks)} ResourceWarning(s): a leak fails the run", red=True)
    for leak in _leaks:
        terminalreporter.write_line(f"{leak.where}: {leak.message}")
