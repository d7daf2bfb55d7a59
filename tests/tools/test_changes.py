"""Changes (SPEC §10 Review) through real fastmcp clients, both eras: what was written through
filegate since a point, against the history and against git's HEAD, and what it never says."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from mcp.types import Implementation

from filegate.fsio.history import WriteHistory, history_dir
from tests.conftest import call, connect, text, texts, write_id_of
from tests.fakes import Answers
from tests.old_history import record_old_write

pytestmark = pytest.mark.usefixtures("read_guard_off")

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "core.hooksPath=/dev/null"]


async def _three_writes(ws: Path, mode: str) -> list[str]:
    (ws / "a.txt").write_text("one\ntwo\nthree\n")
    (ws / "c.txt").write_text("keep\n")
    async with connect(ws, mode, approval="auto") as c:
        ids = [
            write_id_of(
                text(await call(c, "StrReplaceFile", path="a.txt", edit={"old": "two", "new": "TWO"}))
            ),
            write_id_of(text(await call(c, "WriteFile", path="b.txt", content="new file\n"))),
            write_id_of(text(await call(c, "WriteFile", path="c.txt", content="changed\n"))),
        ]
    return ids


async def test_lists_each_file_written_since_an_id_with_one_combined_diff(ws: Path, mode: str) -> None:
    ids = await _three_writes(ws, mode)
    async with connect(ws, mode) as c:
        got = await call(c, "Changes", since=ids[0])
        later = await call(c, "Changes", since=ids[1])
    assert not got.is_error, text(got)
    body = text(got)
    assert f"modified `a.txt` (+1 -1 lines; 1 write: {ids[0]})" in body
    assert f"added `b.txt` (+1 -0 lines; 1 write: {ids[1]})" in body
    assert f"modified `c.txt` (+1 -1 lines; 1 write: {ids[2]})" in body
    assert "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three" in body
    assert "-keep\n+changed" in body and "+new file" in body
    assert f"3 files inside this workspace written through filegate since {ids[0]} (" in body
    assert "3 writes, by fastmcp" in body
    # From a later write on: the earlier file is not in it.
    assert "`a.txt`" not in text(later) and "`b.txt`" in text(later) and "`c.txt`" in text(later)


async def test_since_takes_an_age_and_an_iso_time(ws: Path, mode: str) -> None:
    await _three_writes(ws, mode)
    async with connect(ws, mode) as c:
        by_age = await call(c, "Changes", since="1h")
        future = await call(c, "Changes", since="2999-01-01T00:00")
        bad = await call(c, "Changes", since="yesterday-ish")
    assert "3 files inside this workspace" in text(by_age)
    assert not future.is_error
    assert text(
        future
    ) == "No file inside this workspace was written through filegate since 2999-01-01 00:00:00 UTC." or (
        text(future).startswith("No file inside this workspace was written through filegate since 2999-01-0")
    )
    assert bad.is_error and "`since` must be a write id" in text(bad) and "yesterday-ish" in text(bad)


async def test_an_id_from_another_workspace_is_answered_as_an_unknown_one(
    tmp_path: Path, ws: Path, mode: str
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    async with connect(other, mode, approval="auto") as c:  # the same state directory
        theirs = write_id_of(text(await call(c, "WriteFile", path="theirs.txt", content="x\n")))
    unknown = "w-" + ("0" if theirs[2] != "0" else "1") + theirs[3:]
    async with connect(ws, mode) as c:
        foreign = await call(c, "Changes", since=theirs)
        never = await call(c, "Changes", since=unknown)
    assert foreign.is_error and never.is_error
    assert text(foreign).replace(theirs, "ID") == text(never).replace(unknown, "ID")
    assert "theirs.txt" not in text(foreign)


async def test_an_evicted_id_is_answered_as_an_unknown_one(ws: Path, mode: str) -> None:
    (ws / "big.txt").write_text("x" * 600)
    async with connect(ws, mode, approval="auto", history_max_bytes=1000) as c:
        old = write_id_of(text(await call(c, "WriteFile", path="big.txt", content="y" * 600)))
        await call(c, "WriteFile", path="big.txt", content="z" * 600)  # evicts the first
        evicted = await call(c, "Changes", since=old)
        never = await call(c, "Changes", since="w-" + "0" * 16)
    assert evicted.is_error and never.is_error
    assert text(evicted).replace(old, "ID") == text(never).replace("w-" + "0" * 16, "ID")
    assert "no write had that id, or it was evicted" in text(evicted)


async def test_a_sensitive_file_is_named_never_diffed_and_a_hidden_one_only_counted(
    ws: Path, mode: str
) -> None:
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="notes.txt", content="plain\n")))
        await call(c, "WriteFile", path="hidden.txt", content="HIDDEN-CONTENT\n")
        await call(c, "WriteFile", path="config.txt", content="CONFIG-CONTENT\n")
    (ws / ".cursorignore").write_text("hidden.txt\n")  # hidden from AI tools from now on
    async with connect(ws, mode, approval="auto", secret_patterns=["config.txt"]) as c:
        got = await call(c, "Changes", since=first)
    body = text(got)
    assert "added `config.txt` (sensitive: not diffed; 1 write:" in body
    assert "CONFIG-CONTENT" not in body and "HIDDEN-CONTENT" not in body
    assert "hidden.txt" not in body
    assert "1 more file written since then is hidden by client rules: counted, not named." in body
    assert "+plain" in body


async def test_path_narrows_to_a_file_or_a_folder(ws: Path, mode: str) -> None:
    (ws / "src").mkdir()
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="src/x.py", content="x = 1\n")))
        await call(c, "WriteFile", path="top.txt", content="top\n")
        folder = await call(c, "Changes", since=first, path="src")
        none = await call(c, "Changes", since=first, path="elsewhere")
    assert "`src/x.py`" in text(folder) and "top.txt" not in text(folder)
    async with connect(ws, mode) as c:
        outside = await call(c, "Changes", since=first, path="../elsewhere")
    assert outside.is_error and text(outside).startswith(
        "`../elsewhere` is not an absolute path. You must provide an absolute path to read a file "
        "outside the working directory."
    )
    assert text(none).startswith("No file under `elsewhere` inside this workspace was written")


async def test_a_hand_change_after_the_last_write_is_said_and_a_deletion_listed(ws: Path, mode: str) -> None:
    (ws / "gone.txt").write_text("was here\n")
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="model\n")))
        gone = write_id_of(text(await call(c, "WriteFile", path="gone.txt", content="rewritten\n")))
        (ws / "a.txt").write_text("model\nby hand\n")
        (ws / "gone.txt").unlink()
        got = await call(c, "Changes", since=first)
    body = text(got)
    assert f"added `a.txt` (+2 -0 lines; changed outside filegate after {first}" in body
    assert f"deleted `gone.txt` (+0 -1 lines; changed outside filegate after {gone}" in body
    assert "-was here" in body


async def test_the_combined_diff_is_cut_to_the_budget_and_says_so(ws: Path, mode: str) -> None:
    big = "".join(f"line {i} " + "x" * 60 + "\n" for i in range(300))
    async with connect(ws, mode, approval="auto", result_budget=12_000) as c:
        first = write_id_of(text(await call(c, "WriteFile", path="f1.txt", content=big)))
        for name in ("f2.txt", "f3.txt", "f4.txt"):
            await call(c, "WriteFile", path=name, content=big)
        got = await call(c, "Changes", since=first)
    body = text(got)
    assert len(body) <= 12_000
    assert "added `f1.txt` (+300 -0 lines" in body
    for name in ("f2.txt", "f3.txt", "f4.txt"):  # listed by kind: past the budget, not even read
        assert f"added `{name}` (1 write: w-" in body
    assert (
        "Cut to fit this client's budget: `f1.txt`'s diff in part; no diff shown for `f2.txt`, "
        "`f3.txt`, `f4.txt`." in body
    )
    assert "more lines of this diff not shown" in body
    assert "`path` narrows the answer" in body


async def test_history_off_says_so(ws: Path, mode: str) -> None:
    async with connect(ws, mode, history="off") as c:
        got = await call(c, "Changes", since="1h")
    assert got.is_error and text(got) == (
        "The write history is off (`--history off`), so filegate kept no record of writes to show. "
        "Nothing to review."
    )


# --- against HEAD -------------------------------------------------------------------------


def _git(ws: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=ws, check=True, capture_output=True)


async def test_against_head_diffs_with_the_committed_blob(ws: Path, mode: str) -> None:
    _git(ws, "init", "-q")
    (ws / "a.txt").write_text("committed\n")
    _git(ws, "add", "a.txt")
    _git(ws, "commit", "-qm", "a")
    (ws / "a.txt").write_text("edited by hand before\n")  # HEAD and the pre-image differ
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="through filegate\n")))
        await call(c, "WriteFile", path="new.txt", content="new\n")
        head = await call(c, "Changes", since=first, against="HEAD")
        history = await call(c, "Changes", since=first)
    body = text(head)
    assert "-committed\n+through filegate" in body
    assert "added `new.txt` (+1 -0 lines" in body
    assert "diffed against git's HEAD (" in body
    assert "-edited by hand before\n+through filegate" in text(history)


async def test_against_head_without_a_repository_says_so(ws: Path, mode: str) -> None:
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="x\n")))
        got = await call(c, "Changes", since=first, against="HEAD")
    assert not got.is_error
    assert "added `a.txt` (no diff: not in a git repository; 1 write:" in text(got)
    assert "No git repository could be read for these files" in text(got)


def _hostile_repo(ws: Path) -> Path:
    """A repository whose config and hooks run a command at every chance: a core.fsmonitor,
    a clean/smudge filter on every file, and hooks; each leaves a canary file."""
    canaries = ws.parent / "canaries"
    canaries.mkdir()
    trap = ws.parent / "trap.sh"
    trap.write_text(f'#!/bin/sh\ntouch "{canaries}/$1"\ncat\n')
    trap.chmod(0o755)
    _git(ws, "init", "-q")
    (ws / "a.txt").write_text("committed\n")
    (ws / ".gitattributes").write_text("* filter=evil\n")
    _git(ws, "add", "a.txt", ".gitattributes")
    _git(ws, "commit", "-qm", "a")
    for key, value in (
        ("core.fsmonitor", f"{trap} fsmonitor"),
        ("filter.evil.clean", f"{trap} clean"),
        ("filter.evil.smudge", f"{trap} smudge"),
        ("filter.evil.required", "true"),
        ("core.pager", f"{trap} pager"),
    ):
        _git(ws, "config", key, value)
    for hook in ("post-checkout", "pre-commit", "reference-transaction", "post-index-change", "pre-auto-gc"):
        path = ws / ".git" / "hooks" / hook
        path.write_text(f'#!/bin/sh\ntouch "{canaries}/hook-{hook}"\n')
        path.chmod(0o755)
    return canaries


async def test_a_hostile_repository_runs_nothing_during_against_head(ws: Path, mode: str) -> None:
    canaries = _hostile_repo(ws)
    # The traps are live: git's porcelain springs them (a control, so the test can fail).
    subprocess.run(["git", "status"], cwd=ws, capture_output=True, check=False)
    subprocess.run(["git", "checkout", "--", "a.txt"], cwd=ws, capture_output=True, check=False)
    assert {"fsmonitor", "hook-post-index-change"} <= set(os.listdir(canaries)), os.listdir(canaries)
    for canary in canaries.iterdir():
        canary.unlink()
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="through filegate\n")))
        got = await call(c, "Changes", since=first, against="HEAD")
    assert not got.is_error, text(got)
    assert "-committed\n+through filegate" in text(got)  # HEAD's blob as committed, no filter
    assert os.listdir(canaries) == []


async def test_at_most_so_many_files_are_diffed_the_rest_listed(
    ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("filegate.tools.changes.MAX_FILES_DIFFED", 2)
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="f1.txt", content="one\n")))
        for name in ("f2.txt", "f3.txt", "f4.txt"):
            await call(c, "WriteFile", path=name, content="one\n")
        got = await call(c, "Changes", since=first)
    body = text(got)
    assert body.count("+one") == 2
    assert "added `f3.txt` (1 write: w-" in body
    assert "no diff shown for `f3.txt`, `f4.txt`. `path` narrows" in body


async def test_changes_is_offered_under_read_only_and_marked_read_only(ws: Path, mode: str) -> None:
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="a\n")))
    async with connect(ws, mode, read_only=True) as c:
        tools = {t.name: t for t in await c.list_tools()}
        got = await call(c, "Changes", since=first)
    assert tools["Changes"].annotations.read_only_hint is True
    assert not got.is_error and "added `a.txt`" in text(got)


async def test_a_write_recorded_before_blake3_is_reviewed_in_its_own_hash(ws: Path, mode: str) -> None:
    """An old SHA-256 record: the file as that write left it is not called changed outside
    filegate (its content hashed in SHA-256 to compare), and a hand change after it is."""
    path = ws / "a.txt"
    path.write_bytes(b"old write's result\n")
    record_old_write(path, b"before it all\n", b"old write's result\n", "w-0a0b0c")
    async with connect(ws, mode) as c:
        as_left = await call(c, "Changes", since="w-0a0b0c")
        path.write_bytes(b"old write's result\nby hand\n")
        by_hand = await call(c, "Changes", since="w-0a0b0c")
    assert not as_left.is_error, text(as_left)
    assert "modified `a.txt` (+1 -1 lines; 1 write: w-0a0b0c)" in text(as_left)
    assert "-before it all\n+old write's result" in text(as_left)
    assert "modified `a.txt` (+2 -1 lines; changed outside filegate after w-0a0b0c; 1 write" in text(by_hand)


async def test_what_head_holds_that_cannot_be_diffed_is_said_file_by_file(
    ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A symlink, a folder and a blob too large to read in HEAD: each row says which, and no
    diff stands for them; a file written and written back to HEAD's content is said so."""
    _git(ws, "init", "-q")
    (ws / "target.txt").write_text("t\n")
    os.symlink("target.txt", ws / "link")
    (ws / "dir").mkdir()
    (ws / "dir" / "x.txt").write_text("x\n")
    (ws / "big.txt").write_text("b" * 11)
    (ws / "same.txt").write_text("same\n")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "c")
    (ws / "link").unlink()
    (ws / "dir" / "x.txt").unlink()
    (ws / "dir").rmdir()
    async with connect(ws, mode, approval="auto") as c:
        ids = [
            write_id_of(text(await call(c, "WriteFile", path=path, content=content)))
            for path, content in (
                ("link", "a file now\n"),
                ("dir", "a file now\n"),
                ("big.txt", "small\n"),
                ("same.txt", "other\n"),
                ("same.txt", "same\n"),
            )
        ]
        monkeypatch.setattr("filegate.fsio.githead.BLOB_MAX_BYTES", 10)  # big.txt's 11 bytes: not read
        got = await call(c, "Changes", since=ids[0], against="HEAD")
    assert not got.is_error, text(got)
    output, summary = texts(got)
    assert (
        output
        == "\n".join(
            [
                f"modified `link` (no diff: HEAD holds a symlink there; 1 write: {ids[0]})",
                f"modified `dir` (no diff: HEAD holds a folder or a submodule there; 1 write: {ids[1]})",
                f"modified `big.txt` (no diff: HEAD's copy is 11 bytes, larger than this reads; 1 write: {ids[2]})",
                f"modified, then as in HEAD `same.txt` (no change in its content; 2 writes: {ids[3]}, {ids[4]})",
            ]
        )
        + "\n"
    )
    assert summary.startswith(f"4 files inside this workspace written through filegate since {ids[0]} (")
    assert "5 writes, by fastmcp; diffed against git's HEAD (" in summary


async def test_against_head_outside_a_repository_lists_each_file_by_its_history(ws: Path, mode: str) -> None:
    (ws / "old.txt").write_text("old\n")
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="old.txt", content="new\n")))
        added = write_id_of(text(await call(c, "WriteFile", path="added.txt", content="x\n")))
        got = await call(c, "Changes", since=first, against="HEAD")
    output, summary = texts(got)
    assert output == (
        f"modified `old.txt` (no diff: not in a git repository; 1 write: {first})\n"
        f"added `added.txt` (no diff: not in a git repository; 1 write: {added})\n"
    )
    assert "diffed against git's HEAD. No git repository could be read for these files" in summary


async def test_against_head_says_why_each_repository_gives_no_head(
    tmp_path: Path, ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repository with no commit yet (every file added to it), one git refuses (its .git names
    no repository), and git missing from PATH: each row says which, the summary names HEAD's
    commits, or says no repository could be read at all."""
    for name in ("fresh", "broken"):
        (ws / name).mkdir()
    _git(ws / "fresh", "init", "-q")
    (ws / "broken" / ".git").write_text("gitdir: /nonexistent/filegate-test\n")
    async with connect(ws, mode, approval="auto") as c:
        ids = [
            write_id_of(text(await call(c, "WriteFile", path=path, content="x\n")))
            for path in ("fresh/a.txt", "broken/b.txt")
        ]
        got = await call(c, "Changes", since=ids[0], against="HEAD")
        fresh = await call(c, "Changes", since=ids[0], against="HEAD", path="fresh")
        monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
        without_git = await call(c, "Changes", since=ids[0], against="HEAD")
    output, summary = texts(got)
    assert output.startswith("added `fresh/a.txt` (+1 -0 lines; 1 write:")
    assert (
        f"\nadded `broken/b.txt` (no diff: git could not be read there (not a git repository: "
        f"/nonexistent/filegate-test); 1 write: {ids[1]})\n"
    ) in output
    assert "diffed against git's HEAD (no commit yet)." in summary and "No git repository" not in summary
    assert "diffed against git's HEAD (no commit yet)." in texts(fresh)[1]
    output, summary = texts(without_git)
    assert output == (
        f"added `fresh/a.txt` (no diff: git is not installed; 1 write: {ids[0]})\n"
        f"added `broken/b.txt` (no diff: git is not installed; 1 write: {ids[1]})\n"
    )
    assert summary.endswith(
        "diffed against git's HEAD. No git repository could be read for these files, so there is no "
        'HEAD to diff against (each row says why); `against: "history"` diffs them against what '
        "filegate kept."
    )


async def test_against_head_names_each_repository_s_commit(ws: Path, mode: str) -> None:
    commits = []
    for name in ("one", "two"):
        (ws / name).mkdir()
        _git(ws / name, "init", "-q")
        (ws / name / "f.txt").write_text(f"{name}\n")
        _git(ws / name, "add", "f.txt")
        _git(ws / name, "commit", "-qm", name)
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ws / name, capture_output=True, check=True)
        commits.append(done.stdout.decode().strip()[:12])
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="one/f.txt", content="1\n")))
        await call(c, "WriteFile", path="two/f.txt", content="2\n")
        got = await call(c, "Changes", since=first, against="HEAD")
    assert "-one\n+1" in text(got) and "-two\n+2" in text(got)
    assert f"diffed against git's HEAD ({', '.join(sorted(commits))})." in texts(got)[1]


async def test_against_head_with_only_a_sensitive_file_reads_no_git(ws: Path, mode: str) -> None:
    (ws / ".env").write_text("K=OLD\n")
    async with connect(ws, mode, client_elicitation_handler=Answers("approve")) as c:
        first = write_id_of(text(await call(c, "WriteFile", path=".env", content="K=SECRET\n")))
        got = await call(c, "Changes", since=first, against="HEAD")
    output, summary = texts(got)
    assert output == f"modified `.env` (sensitive: not diffed; 1 write: {first})\n"
    assert summary.endswith("1 write, by fastmcp; diffed against git's HEAD.")


async def test_each_file_s_kind_and_why_it_has_no_diff_against_the_history(ws: Path, mode: str) -> None:
    """Put back as it was, added then deleted, a pre-image never kept or no longer held, a FIFO
    where the file was; a file's writes named whole up to three, past them the first and last."""
    (ws / "a.txt").write_text("a\n")
    (ws / "big.txt").write_text("B" * 1500)
    (ws / "held.txt").write_text("held\n")
    async with connect(ws, mode, approval="auto", history_max_bytes=1000) as c:

        async def write(path: str, content: str) -> str:
            return write_id_of(text(await call(c, "WriteFile", path=path, content=content)))

        a = [await write("a.txt", content) for content in ("b\n", "c\n", "d\n", "a\n")]
        three = [await write("c.txt", content) for content in ("1\n", "2\n", "3\n")]
        gone = await write("gone.txt", "x\n")
        big = await write("big.txt", "small\n")
        held = await write("held.txt", "new\n")
        fifo = await write("fifo", "x\n")
    (ws / "gone.txt").unlink()
    entry = WriteHistory().find(held)
    assert entry is not None
    WriteHistory().object_path(entry.before).unlink()
    (ws / "fifo").unlink()
    os.mkfifo(ws / "fifo")
    async with connect(ws, mode) as c:
        got = await call(c, "Changes", since=a[0])
    assert not got.is_error, text(got)
    output, summary = texts(got)
    assert output == "\n".join(
        [
            f"modified, then put back `a.txt` (no change in its content; 4 writes: {a[0]} … {a[3]})",
            f"added `c.txt` (+1 -0 lines; 3 writes: {', '.join(three)})",
            f"added, then deleted `gone.txt` (no change in its content; changed outside filegate after "
            f"{gone}; 1 write: {gone})",
            f"modified `big.txt` (no diff: the history kept nothing of it before {big} (larger than "
            f"--history-max-bytes); 1 write: {big})",
            f"modified `held.txt` (no diff: the history no longer holds its content before {held}; "
            f"1 write: {held})",
            f"added `fifo` (no diff: it is not a regular file now, or cannot be opened; 1 write: {fifo})",
            "",
            "--- a/c.txt\n+++ b/c.txt\n@@ -0,0 +1 @@\n+3\n",
        ]
    )
    assert summary.startswith(f"6 files inside this workspace written through filegate since {a[0]} (")


async def test_the_list_takes_the_files_its_room_holds_and_counts_the_rest(ws: Path, mode: str) -> None:
    """Room for the list: half of the budget less the summary's (3,500 - 1,500: 1,000), each
    row its name's length and 80 more: ten 20-character names fill it exactly."""
    names = [f"file-number-{n:04d}.txt" for n in range(11)]
    assert {len(name) for name in names} == {20}
    async with connect(ws, mode, approval="auto", result_budget=3500) as c:
        ids = [write_id_of(text(await call(c, "WriteFile", path=name, content="x\n"))) for name in names]
        got = await call(c, "Changes", since=ids[0])
    assert not got.is_error, text(got)
    output, summary = texts(got)
    rows = output.split("\n\n")[0].split("\n")
    assert rows == [
        *(f"added `{name}` (+1 -0 lines; 1 write: {w})" for name, w in zip(names[:10], ids, strict=False)),
        "… and 1 more file",
    ]
    assert summary.startswith("11 files inside this workspace")
    assert "Cut to fit this client's budget: 1 more file not listed" in summary


async def test_moves_are_paired_within_their_set_and_nothing_else_is_taken_for_one(
    ws: Path, mode: str
) -> None:
    """Two sets of one move each (one edited on the way), and a set of three moves, one edited:
    a set's single pair is a move whatever its content; among several, the pairs whose content
    went along unchanged. The other files of a set, edited, deleted by hand or added and then
    deleted by hand, are never taken for a move's source or destination."""
    names = ("a", "b", "c", "d", "e", "m1", "m2", "del")
    for name in names:
        (ws / f"{name}.txt").write_text(f"{name}\n")
    async with connect(ws, mode, approval="auto") as c:
        for name in names:
            await call(c, "ReadFile", path=f"{name}.txt")

        async def apply(*changes: dict[str, object]) -> str:
            r = await call(c, "ApplyPatch", changes=list(changes))
            assert not r.is_error, text(r)
            return write_id_of(text(r))

        one = await apply(
            {"path": "a.txt", "move_to": "x.txt", "edits": [{"old": "a", "new": "A"}]},
            {"path": "m1.txt", "edits": [{"old": "m1", "new": "M1"}]},
            {"path": "m2.txt", "edits": [{"old": "m2", "new": "M2"}]},
            {"path": "n.txt", "content": "n\n"},
        )
        two = await apply({"path": "b.txt", "move_to": "y.txt"})
        three = await apply(
            {"path": "c.txt", "move_to": "z.txt"},
            {"path": "d.txt", "move_to": "w.txt", "edits": [{"old": "d", "new": "D"}]},
            {"path": "e.txt", "move_to": "v.txt"},
        )
        four = await apply({"path": "del.txt", "delete": True})  # a set with no file created
        (ws / "m2.txt").unlink()
        (ws / "n.txt").unlink()
        got = await call(c, "Changes", since=one)
    assert not got.is_error, text(got)
    rows = texts(got)[0].split("\n\n")[0].split("\n")
    assert rows == [
        f"moved `a.txt` → `x.txt` (+1 -1 lines; 1 write: {one})",
        f"modified `m1.txt` (+1 -1 lines; 1 write: {one})",
        f"deleted `m2.txt` (+0 -1 lines; changed outside filegate after {one}; 1 write: {one})",
        f"added, then deleted `n.txt` (no change in its content; changed outside filegate after {one}; "
        f"1 write: {one})",
        f"moved `b.txt` → `y.txt` (no change in its content; 1 write: {two})",
        f"moved `c.txt` → `z.txt` (no change in its content; 1 write: {three})",
        f"added `w.txt` (+1 -0 lines; 1 write: {three})",
        f"deleted `d.txt` (+0 -1 lines; 1 write: {three})",
        f"moved `e.txt` → `v.txt` (no change in its content; 1 write: {three})",
        f"deleted `del.txt` (+0 -1 lines; 1 write: {four})",
    ]


async def test_hidden_files_are_counted_and_the_clients_named_up_to_five(ws: Path, mode: str) -> None:
    """Seven clients (one without a name, said "-"), two files a rule written meanwhile hides."""
    ids = []
    for n in range(7):
        client = Implementation(name=f"client-{n}" if n else "", version="1")
        async with connect(ws, mode, approval="auto", client_client_info=client) as c:
            ids.append(write_id_of(text(await call(c, "WriteFile", path=f"f{n}.txt", content=f"{n}\n"))))
    async with connect(ws, mode) as c:
        (ws / ".cursorignore").write_text("f5.txt\nf6.txt\n")  # while the server runs
        got = await call(c, "Changes", since=ids[0])
        five = await call(c, "Changes", since=ids[2])
        hidden_only = await call(c, "Changes", since=ids[5])
    assert not got.is_error, text(got)
    assert "5 writes, by client-2, client-3, client-4, client-5, client-6; diffed against" in texts(five)[1]
    assert texts(got)[1].endswith(
        "7 writes, by -, client-1, client-2, client-3, client-4 and 2 more; diffed against what "
        "each file was before its first write since then. 2 more files written since then are hidden by "
        "client rules: counted, not named."
    )
    assert "f5.txt" not in text(got) and "f6.txt" not in text(got)
    assert text(hidden_only) == (
        f"No file inside this workspace was written through filegate since {ids[5]} ("
        + text(hidden_only).split(" (", 1)[1].split(")", 1)[0]
        + "). 2 more files written since then are hidden by client rules: counted, not named."
    )


async def test_a_client_rule_file_that_cannot_be_read_refuses_the_review(ws: Path, mode: str) -> None:
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="a\n")))
        (ws / ".claude").mkdir()
        (ws / ".claude" / "settings.json").write_text("{not json")
        got = await call(c, "Changes", since=first)
    assert got.is_error
    assert text(got).startswith(
        "A client rule file cannot be used: `.claude/settings.json` is not valid JSON"
    ) and "+a" not in text(got)


async def test_a_move_past_those_diffed_is_listed_as_a_move_and_a_hand_edit_after_it_unsaid(
    ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws / "a.txt").write_text("one\n")
    (ws / "c.txt").write_text("c\n")
    async with connect(ws, mode, approval="auto") as c:
        await call(c, "ReadFile", path="a.txt")
        await call(c, "ReadFile", path="c.txt")
        first = write_id_of(
            text(await call(c, "ApplyPatch", changes=[{"path": "a.txt", "move_to": "b.txt"}]))
        )
        second = write_id_of(
            text(await call(c, "ApplyPatch", changes=[{"path": "c.txt", "move_to": "d.txt"}]))
        )
        (ws / "b.txt").write_text("one\nby hand\n")
        diffed = await call(c, "Changes", since=first)
        monkeypatch.setattr("filegate.tools.changes.MAX_FILES_DIFFED", 1)
        listed = await call(c, "Changes", since=first)
    assert texts(diffed)[0].split("\n\n")[0].split("\n") == [
        f"moved `a.txt` → `b.txt` (+1 -0 lines; 1 write: {first})",
        f"moved `c.txt` → `d.txt` (no change in its content; 1 write: {second})",
    ]
    output, summary = texts(listed)
    assert output.split("\n\n")[0].split("\n") == [
        f"moved `a.txt` → `b.txt` (+1 -0 lines; 1 write: {first})",
        f"moved `c.txt` → `d.txt` (1 write: {second})",
    ]
    assert summary.endswith(
        "no diff shown for `c.txt` → `d.txt`. `path` narrows the answer to one file or folder."
    )


async def test_the_diffs_spend_the_room_together_and_a_sensitive_file_stops_nothing(
    ws: Path, mode: str
) -> None:
    """Room for the diffs: 12,000 - 1,500. Two diffs of ~6,000 characters spend it together, so
    the third file is listed by its kind, unread; a sensitive file listed first is only named."""
    (ws / ".env").write_text("K=OLD\n")
    body = "".join(f"line {i:03d} " + "y" * 60 + "\n" for i in range(85))
    async with connect(ws, mode, client_elicitation_handler=Answers("approve"), result_budget=12_000) as c:
        first = write_id_of(text(await call(c, "WriteFile", path=".env", content="K=NEW\n")))
        ids = [
            write_id_of(text(await call(c, "WriteFile", path=name, content=body)))
            for name in ("f1.txt", "f2.txt", "f3.txt")
        ]
        got = await call(c, "Changes", since=first)
    output, summary = texts(got)
    rows = output.split("\n\n")[0].split("\n")
    assert rows == [
        f"modified `.env` (sensitive: not diffed; 1 write: {first})",
        f"added `f1.txt` (+85 -0 lines; 1 write: {ids[0]})",
        f"added `f2.txt` (+85 -0 lines; 1 write: {ids[1]})",
        f"added `f3.txt` (1 write: {ids[2]})",
    ]
    assert "K=" not in output
    assert "no diff shown for `f3.txt`." in summary


async def test_a_file_no_tool_shows_as_text_is_told_by_its_sizes(ws: Path, mode: str) -> None:
    (ws / "b.bin").write_bytes(b"\x00\x01\x02binary\x00" * 4)
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="b.bin", content="text now\n")))
        got = await call(c, "Changes", since=first)
    output, _ = texts(got)
    assert output == (
        f"modified `b.bin` (binary file, 40 → 9 bytes; 1 write: {first})\n\n"
        "--- a/b.bin\n+++ b/b.bin\nbinary file, 40 → 9 bytes\n"
    )


async def test_a_deleted_utf16_file_is_diffed_in_its_own_encoding(ws: Path, mode: str) -> None:
    (ws / "u.txt").write_bytes("one\ntwo\n".encode("utf-16"))
    async with connect(ws, mode, approval="auto") as c:
        await call(c, "ReadFile", path="u.txt")
        first = write_id_of(text(await call(c, "ApplyPatch", changes=[{"path": "u.txt", "delete": True}])))
        got = await call(c, "Changes", since=first)
    output, _ = texts(got)
    assert output.startswith(f"deleted `u.txt` (+0 -2 lines; 1 write: {first})\n\n--- a/u.txt\n+++ b/u.txt\n")
    assert output.endswith("one\n-two\n")  # decoded as UTF-16 (its BOM aside), not as bytes


async def test_a_folder_whose_name_ends_in_a_space_narrows_to_its_own_files(ws: Path, mode: str) -> None:
    (ws / "d ").mkdir()
    (ws / "d").mkdir()
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="d /in.txt", content="in\n")))
        await call(c, "WriteFile", path="d/beside.txt", content="beside\n")
        r = await call(c, "Changes", since=first, path="d ")
    assert not r.is_error, text(r)
    assert "`d /in.txt`" in text(r) and "beside.txt" not in text(r)


async def test_since_that_starts_as_a_write_id_and_is_none_is_refused_showing_40_characters(
    ws: Path, mode: str
) -> None:
    since = "w-" + "0123456789abcdef" * 3
    async with connect(ws, mode) as c:
        r = await call(c, "Changes", since=since)
    assert r.is_error and text(r).startswith(
        f"`{since[:40]}` is not a write id: give the id a write's message ended with (w- and 16 hex "
        "digits), or a time (2026-11-28T14:00) or an age (2h)."
    )


async def test_the_point_is_said_with_the_time_of_its_write(ws: Path, mode: str) -> None:
    path = ws / "a.txt"
    path.write_bytes(b"old write's result\n")
    record_old_write(path, b"before it all\n", b"old write's result\n", "w-0a0b0c", age=3 * 3600)
    entry = WriteHistory().find("w-0a0b0c")
    assert entry is not None
    async with connect(ws, mode) as c:
        r = await call(c, "Changes", since="w-0a0b0c")
    assert not r.is_error, text(r)
    at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(entry.time))
    assert f"w-0a0b0c ({at})" in text(r)


async def test_a_since_that_is_no_time_is_refused_showing_80_characters(ws: Path, mode: str) -> None:
    since = "the afternoon before the release, when the build was green and everyone went home early"
    async with connect(ws, mode) as c:
        r = await call(c, "Changes", since=since)
    assert r.is_error and text(r).startswith(
        "`since` must be a write id (w-…), an ISO 8601 time (2026-11-28T14:00) or an age (90m, 2h, 3d); "
        f"`{since[:80]}` is none of these."
    )


async def test_a_write_that_failed_wrote_nothing_and_is_left_out(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("a\n")
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="b.txt", content="b\n")))
        failed = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="A\n")))
    # As a write whose rename failed leaves it: its outcome "failed", the file as it was.
    log = history_dir() / "history.jsonl"
    log.write_text(
        log.read_text().replace(
            f'{{"id":"{failed}","outcome":"done"}}', f'{{"id":"{failed}","outcome":"failed"}}'
        )
    )
    (ws / "a.txt").write_text("a\n")
    async with connect(ws, mode) as c:
        r = await call(c, "Changes", since=first)
    assert not r.is_error, text(r)
    assert "`b.txt`" in text(r) and "a.txt" not in text(r) and failed not in text(r)
