"""tests/tooling.py's cached install: several tests that need one outside tool at once install
it once (a fresh clone's first run used to race two threads into one temporary name)."""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.tooling import cached_install


def _build(into: Path) -> None:
    """A stand-in for npm (named as such): slow enough for every caller to arrive meanwhile."""
    time.sleep(0.3)
    (into / "tool").write_text("built\n")
    with (into.parent / "builds.log").open("a") as log:
        log.write(f"{into.name}\n")


def _works(prefix: Path) -> bool:
    return (prefix / "tool").exists()


def _install(final: str) -> str:
    return str(cached_install(Path(final), _build, _works))


def test_threads_and_processes_wanting_one_tool_at_once_install_it_once(tmp_path: Path) -> None:
    final = tmp_path / "cache" / "tool-1.0"
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as procs, ThreadPoolExecutor(4) as threads:
        waiting = [procs.apply_async(_install, (str(final),)) for _ in range(2)]
        got = list(threads.map(_install, [str(final)] * 4)) + [w.get(60) for w in waiting]
    assert got == [str(final)] * 6
    assert (final / "tool").read_text() == "built\n"
    assert len((tmp_path / "cache" / "builds.log").read_text().splitlines()) == 1
    # Nothing half-made is left beside it (the lock file stays, empty).
    assert sorted(p.name for p in final.parent.iterdir()) == [".tool-1.0.lock", "builds.log", "tool-1.0"]


def test_an_install_that_does_not_run_is_not_kept(tmp_path: Path) -> None:
    final = tmp_path / "cache" / "broken-1.0"
    try:
        cached_install(final, lambda into: None, _works)
    except AssertionError as exc:
        assert "does not run" in str(exc)
    else:
        raise AssertionError("a broken install was accepted")
    assert sorted(p.name for p in final.parent.iterdir()) == [".broken-1.0.lock"]


@pytest.mark.slow
def test_an_inspector_run_ends_at_its_hang_guard_even_when_a_child_holds_its_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stand-in for the Inspector (named as such) prints its answer, leaves a child holding the
    output pipes, and never ends: the run still ends at its guard, with what was printed.
    (subprocess.run's timeout killed only the Inspector and then waited on the pipes.)"""
    import tests.server.served as served

    fake = tmp_path / "stand-in-inspector"
    fake.write_text("#!/bin/bash\necho '{\"content\": []}'\nsleep 300 &\nsleep 300\n")
    fake.chmod(0o755)
    monkeypatch.setattr(served, "inspector_command", lambda: str(fake))
    started = time.monotonic()
    with pytest.raises(AssertionError, match=r"had not ended after 3 s .*content"):
        served.run_inspector("--method", "tools/list", timeout=3)
    assert time.monotonic() - started < 30
