"""WriteFile through real clients: Kimi's messages, atomic writes, bad input that changes nothing."""

from __future__ import annotations

import codecs
import contextlib
import os
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from tests.conftest import FILEGATE, call, connect, text, texts, without_write_id
from tests.tooling import needs

# Their writes are about something else: see tests/tools/test_read_guard.py for the guard.
pytestmark = pytest.mark.usefixtures("read_guard_off")


def leftovers(d: Path) -> list[str]:
    """Temp files a write could have left behind in ``d``."""
    return [p.name for p in d.iterdir() if p.name.endswith(".filegate.tmp")]


async def test_overwrite_replaces_the_file_with_kimis_message(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("old\n")
    async with connect(ws, mode) as c:
        r = await call(c, "WriteFile", path="a.txt", content="new content\n")
    assert not r.is_error
    assert [without_write_id(t) for t in texts(r)] == [
        "File successfully overwritten. Current size: 12 bytes. Lines: +1 -1."
    ]
    assert r.structured_content is None  # text only (SPEC §1)
    assert (ws / "a.txt").read_text() == "new content\n"


async def test_append_adds_to_the_end_and_keeps_the_old_bytes_exactly(ws: Path, mode: str) -> None:
    old = codecs.BOM_UTF8 + b"one\r\ntwo\nbad \xff\xfe byte\r\n"
    (ws / "a.txt").write_bytes(old)
    async with connect(ws, mode) as c:
        r = await call(c, "WriteFile", path="a.txt", content="three\n", mode="append")
    assert text(r).startswith(f"File successfully appended to. Current size: {len(old) + 6} bytes.")
    assert (ws / "a.txt").read_bytes() == old + b"three\n"


async def test_append_to_a_missing_file_creates_it(ws: Path, mode: str) -> None:
    async with connect(ws, mode) as c:
        r = await call(c, "WriteFile", path="log.txt", content="first\n", mode="append")
    assert not r.is_error and text(r).startswith("Created `log.txt`. Current size: 6 bytes.")
    assert (ws / "log.txt").read_text() == "first\n"


async def test_append_to_a_utf16_file_appends_utf16(ws: Path) -> None:
    (ws / "w.txt").write_bytes("héllo\n".encode("utf-16"))
    async with connect(ws) as c:
        await call(c, "WriteFile", path="w.txt", content="wörld\n", mode="append")
    assert (ws / "w.txt").read_bytes().decode("utf-16") == "héllo\nwörld\n"


async def test_missing_parent_is_kimis_error_and_create_dirs_makes_it(ws: Path, mode: str) -> None:
    async with connect(ws, mode) as c:
        r = await call(c, "WriteFile", path="a/b/c.txt", content="x")
        assert r.is_error and text(r).startswith("`a/b/c.txt` parent directory does not exist.")
        assert not (ws / "a").exists()
        r = await call(c, "WriteFile", path="a/b/c.txt", content="x", create_dirs=True)
    assert not r.is_error, text(r)
    assert (ws / "a/b/c.txt").read_text() == "x"


async def test_rejected_write_with_create_dirs_creates_no_directory(ws: Path, mode: str) -> None:
    async def reject(*_: Any) -> Any:
        return {"decision": "reject"}

    async with connect(ws, mode, client_elicitation_handler=reject) as c:
        r = await call(c, "WriteFile", path="new/dir/f.txt", content="x", create_dirs=True)
    assert r.is_error
    assert not (ws / "new").exists()


async def test_directory_or_file_in_the_way_is_an_error(ws: Path, mode: str) -> None:
    (ws / "d").mkdir()
    (ws / "f").write_text("file\n")
    async with connect(ws, mode) as c:
        r1 = await call(c, "WriteFile", path="d", content="x")
        r2 = await call(c, "WriteFile", path="f/child.txt", content="x", create_dirs=True)
    assert r1.is_error and text(r1) == "`d` is not a file."
    assert r2.is_error and "not a directory" in text(r2)
    assert (ws / "f").read_text() == "file\n" and leftovers(ws) == []


async def test_relative_path_escaping_the_workdir_gets_kimis_message(ws: Path, mode: str) -> None:
    async with connect(ws, mode, approval="auto") as c:
        r = await call(c, "WriteFile", path="../escape.txt", content="x")
    assert r.is_error
    assert text(r) == (
        "`../escape.txt` is not an absolute path. You must provide an absolute path to write a "
        "file outside the working directory."
    )
    assert not (ws.parent / "escape.txt").exists()


async def test_mode_bits_are_kept(ws: Path) -> None:
    script = ws / "run.sh"
    script.write_text("echo old\n")
    script.chmod(0o750)
    async with connect(ws) as c:
        await call(c, "WriteFile", path="run.sh", content="echo new\n")
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert script.read_text() == "echo new\n"


async def test_new_file_gets_the_umask_mode(ws: Path) -> None:
    umask = os.umask(0o022)
    os.umask(umask)
    async with connect(ws) as c:
        await call(c, "WriteFile", path="n.txt", content="x")
    assert stat.S_IMODE((ws / "n.txt").stat().st_mode) == 0o666 & ~umask


async def test_symlink_target_is_written_and_the_link_stays_a_link(ws: Path, mode: str) -> None:
    (ws / "real.txt").write_text("old\n")
    (ws / "link.txt").symlink_to("real.txt")
    async with connect(ws, mode) as c:
        r = await call(c, "WriteFile", path="link.txt", content="new\n")
    assert not r.is_error, text(r)
    assert (ws / "link.txt").is_symlink() and os.readlink(ws / "link.txt") == "real.txt"
    assert (ws / "real.txt").read_text() == "new\n"


async def test_symlink_pointing_outside_is_an_outside_write(ws: Path, outside: Path, mode: str) -> None:
    link = ws / "escape"
    link.symlink_to(outside / "secret.txt")
    async with connect(ws, mode) as c:  # no elicitation: outside writes are refused
        relative = await call(c, "WriteFile", path="escape", content="pwned\n")
        r = await call(c, "WriteFile", path=str(link), content="pwned\n")
    assert relative.is_error and "is not an absolute path" in text(relative)
    assert r.is_error and "outside the workspace" in text(r)
    assert (outside / "secret.txt").read_text() == "OUTSIDE-CONTENT\n"
    async with connect(ws, mode, approval="auto") as c:
        r = await call(c, "WriteFile", path=str(link), content="approved\n")
    assert not r.is_error
    assert (outside / "secret.txt").read_text() == "approved\n" and (ws / "escape").is_symlink()


async def test_read_only_file_is_refused_and_untouched(ws: Path, mode: str) -> None:
    ro = ws / "ro.txt"
    ro.write_text("frozen\n")
    ro.chmod(0o444)
    async with connect(ws, mode) as c:
        r1 = await call(c, "WriteFile", path="ro.txt", content="thawed\n")
        r2 = await call(c, "StrReplaceFile", path="ro.txt", edit={"old": "frozen", "new": "x"})
    for r in (r1, r2):
        assert r.is_error and "read-only" in text(r)
    assert ro.read_text() == "frozen\n" and leftovers(ws) == []


async def test_same_content_is_not_asked_about_and_changes_nothing(ws: Path) -> None:
    (ws / "a.txt").write_text("same\n")
    asked: list[str] = []

    async def handler(message: str, *_: Any) -> Any:
        asked.append(message)
        return {"decision": "approve"}

    async with connect(ws, client_elicitation_handler=handler) as c:
        r = await call(c, "WriteFile", path="a.txt", content="same\n")
    assert not r.is_error and "nothing changed" in text(r)
    assert asked == []


async def test_ten_megabyte_content_is_written_and_the_approval_message_stays_small(
    ws: Path, mode: str
) -> None:
    content = "".join(f"line {i:07d} " + "x" * 40 + "\n" for i in range(200_000))  # ~10.6 MB
    sizes: list[int] = []

    async def approve(message: str, *_: Any) -> Any:
        sizes.append(len(message))
        return {"decision": "approve"}

    async with connect(ws, mode, client_elicitation_handler=approve) as c:
        r = await call(c, "WriteFile", path="big.txt", content=content)
    assert not r.is_error, text(r)
    assert (ws / "big.txt").read_text() == content
    assert sizes and max(sizes) < 30_000  # 80 diff lines and a note, not 10 MB


async def test_unknown_parameter_is_refused(ws: Path) -> None:
    async with connect(ws) as c:
        r = await call(c, "WriteFile", path="a.txt", content="x", overwrite=True)
    assert r.is_error and "Error validating JSON arguments" in text(r)
    assert not (ws / "a.txt").exists()


# --- a full disk --------------------------------------------------------------------------


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        needs("mount", f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


async def test_full_disk_gives_a_clear_error_and_keeps_the_old_file(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "small", "256k") as disk:
        (disk / "a.txt").write_text("original\n")
        async with connect(disk, approval="auto") as c:
            r = await call(c, "WriteFile", path="a.txt", content="y" * 600_000)
        assert r.is_error
        assert text(r) == "Failed to write `a.txt`: no space left on device. Nothing was written."
        assert (disk / "a.txt").read_text() == "original\n"
        assert sorted(p.name for p in disk.iterdir()) == ["a.txt"]


@pytest.mark.slow
async def test_file_size_limit_gives_a_clear_error_over_stdio(ws: Path) -> None:
    (ws / "a.txt").write_text("original\n")
    # `ulimit -f` (512-byte blocks in sh): the server may not write a file over 64 KiB. Its
    # state directory is the test's (a stdio server gets only a default environment).
    command = f"ulimit -f 128 && exec {FILEGATE} --workdir {ws} --approval auto"
    transport = StdioTransport("sh", ["-c", command], cwd=str(ws), keep_alive=False, env=_state_env())
    async with Client(transport) as c:
        await call(c, "ReadFile", path="a.txt")  # its own server: read before the overwrite
        r = await call(c, "WriteFile", path="a.txt", content="z" * 200_000)
        ok = await call(c, "WriteFile", path="small.txt", content="fits\n")
    assert r.is_error and "file size limit" in text(r) and "Nothing was written." in text(r)
    assert not ok.is_error
    assert (ws / "a.txt").read_text() == "original\n"
    assert leftovers(ws) == []


def _state_env() -> dict[str, str]:
    return {"XDG_STATE_HOME": os.environ["XDG_STATE_HOME"]}


@pytest.mark.slow
async def test_a_history_at_the_file_size_limit_stops_the_write_with_a_clear_error_and_leaves_all_alone(
    ws: Path,
) -> None:
    """The history's log is what meets `ulimit -f` first (it grows with every write): the
    write is refused naming the limit, the file, the log (no part of a line) and the store
    (no pre-image of a write never recorded) stay as they were."""
    (ws / "a.txt").write_text("original\n")
    log = Path(os.environ["XDG_STATE_HOME"]) / "filegate" / "history" / "history.jsonl"
    log.parent.mkdir(parents=True, mode=0o700)
    tombstone = b'{"id":"w-%06x","evicted":%d}\n'
    lines = [tombstone % (i, time.time()) for i in range(65_400 // len(tombstone % (0, time.time())))]
    log.write_bytes(b"".join(lines))  # a line of this write's record crosses 64 KiB
    before = log.read_bytes()
    assert 65_536 - 300 < len(before) < 65_536
    command = f"ulimit -f 128 && exec {FILEGATE} --workdir {ws} --approval auto"
    transport = StdioTransport("sh", ["-c", command], cwd=str(ws), keep_alive=False, env=_state_env())
    async with Client(transport) as c:
        await call(c, "ReadFile", path="a.txt")
        r = await call(c, "WriteFile", path="a.txt", content="new\n")
    assert r.is_error and text(r) == (
        f"Failed to keep the previous content of `a.txt` in the write history at {log.parent} (file "
        "too large for the file system or the process's file size limit). Nothing was written. `--history off` "
        "turns the history off."
    )
    assert (ws / "a.txt").read_text() == "original\n" and os.stat(ws / "a.txt").st_nlink == 1
    assert log.read_bytes() == before
    assert sorted(p.name for p in log.parent.rglob("*") if p.is_file()) == ["history.jsonl", "lock"]
    assert leftovers(ws) == []


async def test_a_name_with_control_characters_is_escaped_in_every_write_message(ws: Path, mode: str) -> None:
    """SPEC §2.9: results and errors of the write tools show a name escaped, on one line."""
    name = "x\n\x1b[2Kfake`.txt"
    async with connect(ws, mode) as c:
        missing_parent = await call(c, "WriteFile", path=f"no-dir\r/{name}", content="x")
        missing_file = await call(c, "StrReplaceFile", path=name, edit={"old": "a", "new": "b"})
        written = await call(c, "WriteFile", path=name, content="x")
    for r in (missing_parent, missing_file, written):
        shown = text(r) + str(r.structured_content or "")
        assert not any(ch in shown for ch in "\n\r\x1b"), shown
    assert text(missing_file) == "`x\\x0a\\x1b[2Kfake\\x60.txt` does not exist."
    assert not written.is_error and (ws / name).read_text() == "x"


async def test_the_question_names_a_folder_it_makes_as_the_caller_sees_it_never_the_workdir(
    ws: Path,
) -> None:
    """SPEC §2.9: the approval question about a write that makes folders names the first
    missing one relative to the workdir, as every message names paths (it showed the server's
    absolute workdir, which the caller never gave)."""
    from tests.fakes import Answers

    answers = Answers("reject")
    async with connect(ws, "legacy", client_elicitation_handler=answers) as c:
        await call(c, "WriteFile", path="docs/new/a.md", content="x\n", create_dirs=True)
    (question,) = answers.messages
    assert "Creates the missing directory `docs` (and any below it)." in question
    assert str(ws) not in question
    assert not (ws / "docs").exists()
