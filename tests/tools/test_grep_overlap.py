"""A repeated Grep starts rg at once with the ignore flags of the tree's last walk, while the walk
looks at the tree again (tools/grep.py ``_search_tree``, issue 28); that run counts only if the
fresh walk gives the same flags, else it is stopped and rg runs again with the walk's.

Through a real MCP client with the real rg. One seam is watched: ``grep.run_rg`` is wrapped to
count rg's runs (the real one still runs every time; a spy, not a stand-in)."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from filegate.policy.secrets import SecretMatcher
from filegate.policy.workspace import Workspace
from filegate.tools import grep, grep_ignores, grep_plan, grep_rg
from filegate.tools.grep_params import GrepParams
from filegate.tools.outcome import ToolEnv
from tests.conftest import call, connect, texts
from tests.fakes import FakeApprover


@pytest.fixture
def rg_runs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The argument list of each rg run a Grep made."""
    runs: list[list[str]] = []
    real = grep.run_rg

    async def counted(args: list[str], *rest: Any, **kw: Any) -> Any:
        runs.append(list(args))
        return await real(args, *rest, **kw)

    monkeypatch.setattr(grep, "run_rg", counted)
    return runs


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)


async def test_an_unchanged_tree_is_searched_once_with_the_remembered_flags(
    ws: Path, mode: str, rg_runs: list[list[str]]
) -> None:
    _tree(
        ws, {"a/x.txt": "needle\n", "b/y.txt": "needle\n", "b/.gitignore": "z.txt\n", "b/z.txt": "needle\n"}
    )
    _tree(ws, {".env": "needle\n"})
    async with connect(ws, mode) as c:
        first = texts(await call(c, "Grep", pattern="needle", output_mode="content"))
        second = texts(await call(c, "Grep", pattern="needle", output_mode="content"))
    assert first == second
    assert "a/x.txt:1:needle" in first[0] and "b/z.txt" not in first[0] and ".env" not in first[0]
    assert "Skipped 1 sensitive file(s) (.env)" in first[-1]
    assert len(rg_runs) == 2  # one rg run per search: the second did not run twice


async def test_a_secret_that_appeared_since_the_last_walk_stops_the_early_run(
    ws: Path, mode: str, rg_runs: list[list[str]]
) -> None:
    _tree(ws, {"a/x.txt": "needle\n"})
    async with connect(ws, mode) as c:
        await call(c, "Grep", pattern="needle")
        (ws / "a" / "id_rsa").write_text("needle\n")
        r = await call(c, "Grep", pattern="needle", output_mode="content")
    out = texts(r)
    assert out[0] == "a/x.txt:1:needle\n"  # another block follows (SPEC §1)
    assert "Skipped 1 sensitive file(s) (id_rsa)" in out[-1]
    # The second search ran rg twice: first with the last walk's flags (no secret then: no
    # rules file), stopped; then with the fresh walk's, which leave a/id_rsa out by name.
    assert len(rg_runs) == 3
    assert "--ignore-file" not in rg_runs[1] and "--ignore-file" in rg_runs[2]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
async def test_a_gitignore_turned_into_a_link_is_not_used_even_by_the_early_run(
    ws: Path, mode: str, rg_runs: list[list[str]]
) -> None:
    """The early run's rg reads the tree's `.gitignore` files itself (the last walk saw them
    regular); the link it would follow now ignores every .txt. Its output must not be the
    answer: the fresh walk says the link is not used, and rg runs again without it."""
    _tree(ws, {"b/.gitignore": "z.txt\n", "b/x.txt": "needle\n", "b/z.txt": "needle\n", "rules": "*.txt\n"})
    async with connect(ws, mode) as c:
        before = texts(await call(c, "Grep", pattern="needle"))
        (ws / "b" / ".gitignore").unlink()
        os.symlink(ws / "rules", ws / "b" / ".gitignore")
        after = texts(await call(c, "Grep", pattern="needle"))
    assert before == ["b/x.txt"]
    assert sorted(after[0].split()) == ["b/x.txt", "b/z.txt"]  # the link ignores nothing here
    assert "1 .gitignore file(s) were not used" in after[-1]
    assert len(rg_runs) == 3


@pytest.mark.parametrize("include_ignored", [False, True])
def test_the_remembered_plan_is_the_walk_s_plan_until_the_tree_changes(
    ws: Path, include_ignored: bool
) -> None:
    _tree(ws, {"a/.gitignore": "*.o\n", "a/.env": "x\n", "b/c/id_rsa": "x\n", "b/c/d.txt": "x\n"})
    os.symlink(ws / "a" / ".gitignore", ws / "b" / ".gitignore")  # unsafe: its rules come from us
    matcher = SecretMatcher()
    key = hash((str(ws), include_ignored))  # a walk remembered by no other test
    secrets = grep_ignores.Secrets(str(ws), matcher.is_sensitive, key, matcher.patterns)

    def plans() -> tuple[grep_plan.IgnorePlan | None, grep_plan.IgnorePlan]:
        guess = grep_plan.remembered_plan(os.open(ws, os.O_RDONLY), ws, [ws], secrets, include_ignored)
        walked = grep_plan.plan(os.open(ws, os.O_RDONLY), ws, [ws], secrets, include_ignored)
        walked.close()
        if guess is not None:
            guess.close()
        return guess, walked

    guess, walked = plans()
    assert guess is None  # no walk of this tree yet
    assert sorted(walked.sensitive) == ["a/.env", "b/c/id_rsa"]
    assert walked.unsafe == (0 if include_ignored else 1)
    guess, walked = plans()
    assert guess is not None and guess.basis == walked.basis
    (ws / "b" / "c" / "key.pem").write_text("x\n")
    guess, walked = plans()
    assert guess is not None and guess.basis != walked.basis
    assert "b/c/key.pem" in walked.sensitive and "b/c/key.pem" not in guess.sensitive


async def test_the_early_run_says_no_progress_before_the_walk_confirms_it(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Progress tells how many bytes rg wrote so far; an early run that searched a secret which
    appeared since the last walk would count its lines. Nothing is said until the walk confirms
    the run (then the run's own progress goes on)."""
    _tree(ws, {"a/x.txt": "needle\n" * 400_000})  # rg writes for a while: progress is due often
    monkeypatch.setattr(grep_rg, "PROGRESS_EVERY_S", 0.002)
    walked: list[float] = []
    real_plan = grep_plan.plan

    def slow_plan(*args: Any) -> Any:
        time.sleep(0.4)  # the walk is still running while rg writes
        try:
            return real_plan(*args)
        finally:
            walked.append(time.monotonic())

    said: list[float] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        said.append(time.monotonic())

    async with connect(ws, client_progress_handler=progress) as c:
        await call(c, "Grep", pattern="needle", output_mode="count_matches")
        (ws / "a" / ".env").write_text("needle\n" * 100)
        monkeypatch.setattr(grep_plan, "plan", slow_plan)
        said.clear()
        r = await call(c, "Grep", pattern="needle", output_mode="count_matches")
    assert "Found 400000 total occurrences across 1 files." in texts(r)[-1]
    assert walked and said, (walked, said)  # rg ran long enough to be reported on
    assert min(said) >= walked[0]


def _rules_files_open() -> int:
    """Rules files (memfds) this process holds open."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            n += "filegate-grep-ignore" in os.readlink(f"/proc/self/fd/{fd}")
    return n


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
@pytest.mark.parametrize("searched_before", [False, True])
async def test_a_search_cancelled_during_its_walk_leaves_no_rules_file_open(
    ws: Path, monkeypatch: pytest.MonkeyPatch, searched_before: bool
) -> None:
    """The walk's thread is abandoned when the call is cancelled; the plan it makes (with a
    rules file: .env is left out) is closed when it ends. Called in process, so that the
    cancellation is certain to reach the call."""
    _tree(ws, {"a/x.txt": "needle\n", "a/.env": "needle\n"})
    env = ToolEnv(workspace=Workspace(workdir=ws), approver=FakeApprover(ws))
    params = GrepParams(pattern="needle")
    if searched_before:  # then the call starts rg with the remembered plan while it walks
        await grep.grep(params, env)
    real_plan = grep_plan.plan
    finished = threading.Event()

    def slow_plan(*args: Any) -> Any:
        time.sleep(0.5)
        try:
            return real_plan(*args)
        finally:
            finished.set()

    before = _rules_files_open()
    monkeypatch.setattr(grep_plan, "plan", slow_plan)
    with anyio.move_on_after(0.2) as scope:
        await grep.grep(params, env)
    assert scope.cancelled_caught
    assert finished.wait(5)
    await anyio.sleep(0.2)
    assert _rules_files_open() == before
