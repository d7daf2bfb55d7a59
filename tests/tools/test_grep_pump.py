"""rg's output is parsed while rg runs (tools/grep_rg.RgOutput.pump): each read as it comes,
so at rg's end only its last read is left to parse before the answer (with 64 KiB batches, up
to ~1,800 names of a files_with_matches search were checked and dated after rg had ended).

A unit test at the pump's seam: a real pipe stands in for rg's stdout (the writer is this
test), a real Parser over a real workspace, nothing else replaced."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from filegate.policy.workspace import Workspace
from filegate.tools.grep import params as grep_params
from filegate.tools.grep import parse as grep_parse
from filegate.tools.grep import rg as grep_rg
from filegate.tools.outcome import ToolEnv
from tests.fakes import FakeApprover


def test_each_read_is_parsed_while_rg_still_writes(ws: Path) -> None:
    for name in ("a.txt", "b.txt"):
        (ws / name).write_text("x\n")
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        target = grep_params.Target(".", ws, ".", False, fd, "")
        env = ToolEnv(workspace=Workspace(workdir=ws), approver=FakeApprover(ws))
        parser = grep_parse.Parser(grep_params.GrepParams(pattern="x"), target, env)
        output = grep_rg.RgOutput()
        r, w = os.pipe()
        output.start(r, parser)
        try:
            os.write(w, b"./a.txt\0")  # rg's first name; rg is still running (the pipe is open)
            deadline = time.monotonic() + 10
            while parser.fed_bytes < 8 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert parser.fed_bytes == 8 and not output.ended.is_set()
            os.write(w, b"./b.txt\0")
        finally:
            os.close(w)
        assert output.ended.wait(10)
        parsed = parser.finish(output.chunks, output.overflow)
    finally:
        os.close(fd)
    assert sorted(parsed.lines) == ["a.txt", "b.txt"]


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="no pidfd (Linux only): the wait runs its course")
def test_the_end_of_rg_is_seen_at_once_not_after_the_wait_between_reads(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a small read the pump waits for more output to pile up; rg's exit cuts that wait
    short (its pidfd), so the answer does not wait out the pause (up to COALESCE_MAX_S, 1 % of
    the search's age). A child stands in for rg: one name, then it exits; the pause is made 5 s
    long here so that it cannot pass unnoticed."""
    monkeypatch.setattr(grep_rg, "COALESCE_MIN_S", 5.0)
    monkeypatch.setattr(grep_rg, "COALESCE_MAX_S", 5.0)
    (ws / "a.txt").write_text("x\n")
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        target = grep_params.Target(".", ws, ".", False, fd, "")
        env = ToolEnv(workspace=Workspace(workdir=ws), approver=FakeApprover(ws))
        parser = grep_parse.Parser(grep_params.GrepParams(pattern="x"), target, env)
        output = grep_rg.RgOutput()
        r, w = os.pipe()
        child = subprocess.Popen(["sh", "-c", r"printf './a.txt\0'; sleep 0.3"], stdout=w)
        os.close(w)
        started = time.monotonic()
        output.start(r, parser, child.pid)
        assert output.ended.wait(10)
        took = time.monotonic() - started
        child.wait()
        parsed = parser.finish(output.chunks, output.overflow)
    finally:
        os.close(fd)
    assert parsed.lines == ["a.txt"]
    assert took < 3.0, f"the pump saw the end {took:.1f}s after the start"


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="no pidfd (Linux only): no descriptor to wait on")
def test_the_pump_waits_on_a_pidfd_numbered_past_select_s_limit(ws: Path) -> None:
    """A server with many files open (HTTP sessions, a busy process) gets descriptors past 1023,
    which select() cannot wait on (FD_SETSIZE): the pump waits on rg's pidfd with poll(), so a
    Grep started there still ends with its output parsed (with select() its thread died on
    "filedescriptor out of range in select()" and the search failed)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"RLIMIT_NOFILE's hard limit is {hard}: no descriptor past 1023 can be opened")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    for name in ("a.txt", "b.txt"):
        (ws / name).write_text("x\n")
    fillers: list[int] = []
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        while not fillers or fillers[-1] < 1100:  # the pidfd opened next is numbered past 1100
            fillers.append(os.open(os.devnull, os.O_RDONLY))
        target = grep_params.Target(".", ws, ".", False, fd, "")
        env = ToolEnv(workspace=Workspace(workdir=ws), approver=FakeApprover(ws))
        parser = grep_parse.Parser(grep_params.GrepParams(pattern="x"), target, env)
        output = grep_rg.RgOutput()
        r, w = os.pipe()
        child = subprocess.Popen(["sh", "-c", r"printf './a.txt\0'; sleep 0.3; printf './b.txt\0'"], stdout=w)
        os.close(w)
        errors: list[BaseException] = []
        previous = threading.excepthook
        threading.excepthook = lambda hook: errors.append(hook.exc_value) if hook.exc_value else None
        try:
            output.start(r, parser, child.pid)
            assert output.ended.wait(10)
        finally:
            threading.excepthook = previous
        child.wait()
        parsed = parser.finish(output.chunks, output.overflow)
    finally:
        for f in fillers:
            os.close(f)
        os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert errors == []
    assert output.size == 16  # both names read: the pump outlived its first wait
    assert sorted(parsed.lines) == ["a.txt", "b.txt"]
