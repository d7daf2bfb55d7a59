"""A set's commit (fsio/changeset.py, SPEC §10) killed with SIGKILL at each of its steps, then
the next start's recovery: every file is all old or all new, and the history agrees.

Per step: a forked child commits a five-file set (three edits, a creation in a new folder, a
delete) and kills itself at that step — a hook around the very call that step makes (the
child's own functions wrapped: a mock, but only of *when* the process dies). The parent then
runs what a start runs (``recover_sets``, as ``serve()`` does) and checks the files, the
history's last word on each and the marks. The slow variant kills a real server at random
moments mid-ApplyPatch and restarts it.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import filegate.fsio.atomic as atomic
import filegate.fsio.changeset as changeset
from filegate.fsio.changeset import SetWrite, commit_set, recover_sets, sets_dir
from filegate.fsio.history import WriteHistory, history_dir
from filegate.fsio.pending import TEMP_SUFFIX, sweep_pending_temps
from filegate.fsio.snapshot import Snapshot, read_all
from filegate.policy.workspace import ResolvedPath
from tests.stress.procs import Zygote
from tests.stress.test_crash_kills import _wait_gone

OLD = {
    "a.txt": b"alpha old\n" * 500,
    "b.txt": b"bravo old\r\n" * 700,
    "c.txt": b"charlie old\n",
    "gone.txt": b"to be deleted\n" * 30,
}
NEW = {
    "a.txt": b"alpha NEW\n" * 400,
    "b.txt": b"bravo NEW\r\n" * 900,
    "c.txt": b"charlie NEW, longer\n",
    "sub/new.txt": b"created by the set\n",
}
MODES = {"a.txt": 0o640, "b.txt": 0o755, "c.txt": 0o600, "gone.txt": 0o644}


def setup(ws: Path) -> None:
    for name, data in OLD.items():
        (ws / name).write_bytes(data)
        (ws / name).chmod(MODES[name])


def files(ws: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted(ws.rglob("*")) if p.is_file()}


def writes(ws: Path) -> list[SetWrite]:
    out = []
    for name in ("a.txt", "b.txt", "c.txt", "sub/new.txt", "gone.txt"):
        real = ws / name
        rp = ResolvedPath(name, real, True, False)
        if real.exists():
            fd = os.open(real, os.O_RDONLY)
            try:
                _, snap = read_all(fd, 1 << 30, name)
            finally:
                os.close(fd)
        else:
            snap = Snapshot.absent()
        mode = MODES.get(name)
        new = NEW.get(name)
        out.append(SetWrite(rp, snap, new, old_mode=mode, create_dirs=name.startswith("sub/")))
    return out


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def hook(monkeypatch: pytest.MonkeyPatch, step: str, at: int) -> None:
    """In the child: die at ``step`` (the ``at``-th time it comes)."""
    seen = [0]

    def count() -> bool:
        seen[0] += 1
        return seen[0] == at

    def around(
        owner: Any, name: str, *, before: bool, when: Callable[..., bool] = lambda *a, **k: True
    ) -> None:
        real = getattr(owner, name)

        def wrapped(*args: Any, **kw: Any) -> Any:
            if when(*args, **kw) and before and count():
                die()
            result = real(*args, **kw)
            if when(*args, **kw) and not before and count():
                die()
            return result

        monkeypatch.setattr(owner, name, wrapped)

    renaming = lambda *a, **k: "src_dir_fd" in k  # noqa: E731 - a file's rename, not the history's
    unlinking = lambda *a, **k: "dir_fd" in k  # noqa: E731
    if step == "marked":
        around(changeset, "_mark", before=False)
    elif step == "recorded":
        around(WriteHistory, "begin_set", before=False)
    elif step == "temp":
        around(atomic, "_write_all", before=True)
    elif step == "before rename":
        around(atomic.os, "replace", before=True, when=renaming)
    elif step == "after rename":
        around(atomic.os, "replace", before=False, when=renaming)
    elif step == "after unlink":
        around(atomic.os, "unlink", before=False, when=unlinking)
    elif step == "finishing":
        around(WriteHistory, "finish_set", before=True)
    else:
        raise AssertionError(step)


STEPS = [
    ("marked", 1),
    ("recorded", 1),
    *[("temp", k) for k in (1, 2, 4)],
    *[("before rename", k) for k in (1, 2, 4)],
    *[("after rename", k) for k in (1, 3, 4)],
    ("after unlink", 1),
    ("finishing", 1),
]


@pytest.mark.parametrize(("step", "at"), STEPS, ids=[f"{s}-{k}" for s, k in STEPS])
@pytest.mark.parametrize("temps", ["tmpfile", pytest.param("named", marks=pytest.mark.slow)])
def test_a_set_killed_at_each_step_is_all_old_or_all_new_after_the_next_start(
    ws: Path, monkeypatch: pytest.MonkeyPatch, step: str, at: int, temps: str
) -> None:
    setup(ws)
    pid = os.fork()
    if pid == 0:  # the child: commit, and die at the step
        try:
            if temps == "named":
                monkeypatch.setattr(atomic, "_TMPFILE", 0)
            hook(monkeypatch, step, at)
            commit_set(writes(ws), WriteHistory(history_dir()), "ApplyPatch", "kill test", "auto")
        finally:
            os._exit(3)  # it was meant to die before this
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (
        f"the child did not die at {step}"
    )
    landed = step in ("after unlink", "finishing")

    # Before the start: each file is whole, old or new, and the set is marked as in flight.
    for name, data in files(ws).items():
        if not name.endswith(TEMP_SUFFIX):
            assert data in (OLD.get(name), NEW.get(name)), f"torn {name}"
    assert list(sets_dir().iterdir())

    sweep_pending_temps()  # what serve() runs at a start, in its order
    said = asyncio.run(recover_sets(WriteHistory(history_dir())))
    assert files(ws) == (NEW if landed else OLD), said
    for name, mode in MODES.items():
        if (ws / name).exists():
            assert (ws / name).stat().st_mode & 0o7777 == mode, name
    assert not (ws / "sub").exists() or landed  # a folder the set made goes with it
    entries = WriteHistory(history_dir()).entries()
    # The records are kept while the temps are written: a kill at a temp may come before them.
    if step == "marked" or (step == "temp" and not entries):
        assert entries == [] and said == []
    else:
        assert len(entries) == 5
        assert {e.state for e in entries} == {"done" if landed else "failed"}, said
    assert list(sets_dir().iterdir()) == []  # settled: the next start has nothing to do
    assert asyncio.run(recover_sets(WriteHistory(history_dir()))) == []


# --- a real server, killed at random moments ------------------------------------------------

KILLS = 30


def _patch(old: dict[str, bytes], new: dict[str, bytes]) -> str:
    lines = ["*** Begin Patch"]
    for name in ("a.txt", "b.txt", "c.txt"):
        lines += [f"*** Update File: {name}", "@@"]
        lines += ["-" + x for x in old[name].decode().splitlines()[:1]]
        lines += ["+" + x for x in new[name].decode().splitlines()[:1]]
    return "\n".join([*lines, "*** End Patch"])


def _ok(reply: dict[str, Any]) -> bool:
    return "result" in reply and not reply["result"].get("isError")


@pytest.mark.slow
def test_a_server_killed_mid_set_is_all_old_or_all_new_after_a_restart(zygote: Zygote, ws: Path) -> None:
    """Two states of three files, the set flipping them; SIGKILL at random; the next server's
    start recovers: the files are one state or the other, never a mix, and the history agrees."""
    rng = random.Random(50)
    env = {"XDG_STATE_HOME": os.environ["XDG_STATE_HOME"]}
    one = {
        "a.txt": b"state one\n" + b"filler a\n" * 20_000,
        "b.txt": b"state one\n" + b"b\n" * 9_000,
        "c.txt": b"state one\n",
    }
    two = {k: v.replace(b"state one", b"state two!") for k, v in one.items()}
    for name, data in one.items():
        (ws / name).write_bytes(data)
    states = {"one": one, "two": two}
    seen = {"one": 0, "two": 0}
    for _ in range(KILLS):
        server = zygote.spawn(ws, "--approval", "auto", "--read-guard", "off", env=env)
        now = "one" if (ws / "c.txt").read_bytes() == one["c.txt"] else "two"
        for _ in range(rng.randint(0, 2)):  # a few sets that land, one at a time
            other = "two" if now == "one" else "one"
            reply = server.reply(server.call("ApplyPatch", {"patch": _patch(states[now], states[other])}))
            assert _ok(reply), reply
            now = other
        other = "two" if now == "one" else "one"
        server.call("ApplyPatch", {"patch": _patch(states[now], states[other])})  # killed in flight
        time.sleep(rng.uniform(0, 0.06))
        os.kill(server.pid, signal.SIGKILL)
        server.close_pipes()
        _wait_gone(server.pid)
        # The next start recovers whatever was in flight.
        server = zygote.spawn(ws, "--approval", "auto", "--read-guard", "off", env=env)
        got = {name: (ws / name).read_bytes() for name in one}
        assert got in (one, two), "a mix of the set's old and new files after a restart"
        seen["one" if got == one else "two"] += 1
        server.close_pipes()
        _wait_gone(server.pid)
    entries = WriteHistory(history_dir()).entries()
    assert all(e.state in ("done", "failed") for e in entries), [
        e for e in entries if e.state == "unconfirmed"
    ]
    rolled = {e.group for e in entries if e.state == "failed"}
    print(f"\nset kills: {seen}; sets rolled back at a restart: {len(rolled)}")
    assert rolled, "no kill landed mid-commit: the test did not test the recovery"
