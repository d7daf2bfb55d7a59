"""What a rewind (SPEC §10, UndoWrite(since=…)) says, word for word, through real clients in both
eras: a file it must leave to UndoWrite by id, a sensitive file written often, files changed
by hand (each named, and what `force` would do to each, cut to fit an error); and what Changes
says of a file moved and then written, and of files past those it diffs against HEAD."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from filegate.fsio.history import WriteHistory
from filegate.tools import changes as changes_tool
from filegate.tools.review import rewind as rewind_plan
from tests.conftest import call, connect, text, texts, write_id_of
from tests.fakes import Answers

pytestmark = pytest.mark.usefixtures("read_guard_off")

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "core.hooksPath=/dev/null"]


async def writes(ws: Path, mode: str, *steps: tuple[str, str]) -> list[str]:
    async with connect(ws, mode, client_elicitation_handler=Answers("approve")) as c:
        return [
            write_id_of(text(await call(c, "WriteFile", path=path, content=content, create_dirs=True)))
            for path, content in steps
        ]


async def test_a_file_a_rule_now_denies_is_left_saying_how_to_undo_it_alone(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("one\n")
    (ws / "c.txt").write_text("keep\n")
    steps = [("a.txt", f"{n}\n") for n in range(6)]
    ids = await writes(ws, mode, *steps, ("c.txt", "changed\n"))
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Edit(a.txt)"]}}))
    async with connect(ws, mode, client_elicitation_handler=Answers("approve")) as c:
        r = await call(c, "UndoWrite", since=ids[0])
    assert not r.is_error, text(r)
    assert (
        "Left as it is: `a.txt` cannot be restored with the others (denied by client rule); UndoWrite "
        f"with `write_id` undoes its writes one at a time, newest first ({', '.join(ids[5:0:-1])})."
    ) in text(r)  # the five newest of its six
    assert (ws / "a.txt").read_text() == "5\n" and (ws / "c.txt").read_text() == "keep\n"


@pytest.mark.parametrize("times", [3, 4])
async def test_a_sensitive_file_is_named_with_its_writes(ws: Path, mode: str, times: int) -> None:
    (ws / "a.txt").write_text("one\n")
    ids = await writes(ws, mode, ("a.txt", "two\n"), *[(".env", f"K={n}\n") for n in range(times)])
    async with connect(ws, mode, client_elicitation_handler=Answers("approve")) as c:
        r = await call(c, "UndoWrite", since=ids[0])
    env = ids[1:]
    named = ", ".join(env) if times == 3 else f"{env[0]} … {env[-1]}, 4 writes"
    assert f"Left as it is: `.env` is sensitive, so the history kept nothing of it ({named})." in text(r)


async def test_files_changed_by_hand_are_each_named_with_what_force_would_do(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("one\n")
    (ws / "c.txt").write_text("keep\n")
    ids = await writes(ws, mode, ("a.txt", "two\n"), ("c.txt", "changed\n"), (".env", "K=1\n"))
    (ws / "a.txt").write_text("hand a\n")
    (ws / "c.txt").write_text("hand c\n")
    async with connect(ws, mode) as c:
        r = await call(c, "UndoWrite", since=ids[0])
    assert r.is_error
    head, rest = text(r).split("\n", 1)
    assert head.endswith(
        f"is refused: 2 files changed outside filegate since: `c.txt` (it changed after {ids[1]}); "
        f"`a.txt` (it changed after {ids[0]}). Nothing was written. Below is what `force: true` would "
        f"change in them. Left as it is: `.env` is sensitive, so the history kept nothing of it ({ids[2]})."
    )
    assert rest == (
        "--- a/c.txt\n+++ b/c.txt\n@@ -1 +1 @@\n-hand c\n+keep\n\n"
        "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-hand a\n+one\n"
        "Call UndoWrite again with `force: true` to rewind anyway (those changes are lost)."
    )
    assert (ws / "a.txt").read_text() == "hand a\n"


async def test_what_force_would_do_is_cut_to_fit_an_error_and_says_so(ws: Path, mode: str) -> None:
    """SPEC §9: an error stays under 10,000 characters; the diffs leave room for its words.
    Newest first: the large file's diff is cut, the older file's left out, both named."""
    (ws / "x.txt").write_text("x\n")
    (ws / "a.txt").write_text("".join(f"old {n}\n" for n in range(2000)))
    ids = await writes(ws, mode, ("x.txt", "xx\n"), ("a.txt", "new\n"))
    (ws / "a.txt").write_text("".join(f"hand {n}\n" for n in range(2000)))
    (ws / "x.txt").write_text("hand x\n")
    async with connect(ws, mode) as c:
        r = await call(c, "UndoWrite", since=ids[0])
    said = text(r)
    assert r.is_error and len(said) < 10_000
    assert "would change in them.\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2000 +1,2000 @@\n-hand 0\n" in said
    assert "more lines of this diff not shown\n" in said and "-hand x" not in said
    assert said.endswith(
        "Cut to fit this client's budget: `a.txt`'s diff in part; no diff shown for `x.txt`. Changes "
        "with `path` shows one file's whole diff.\n"
        "Call UndoWrite again with `force: true` to rewind anyway (those changes are lost)."
    )


async def test_changes_shows_a_moved_file_written_since_as_a_diff_from_one_name_to_the_other(
    ws: Path, mode: str
) -> None:
    (ws / "a.txt").write_text("one\ntwo\n")
    async with connect(ws, mode, approval="auto") as c:
        moved = await call(c, "ApplyPatch", changes=[{"path": "a.txt", "move_to": "b.txt"}])
        first = write_id_of(text(moved))
        await call(c, "WriteFile", path="b.txt", content="one\nTWO\n")
        r = await call(c, "Changes", since=first)
    body = text(r)
    assert not r.is_error, body
    assert "moved `a.txt` → `b.txt` (+1 -1 lines; 2 writes:" in body
    assert "--- a/a.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO" in body


async def test_files_past_those_diffed_against_head_are_listed_by_what_head_holds(
    ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changes_tool, "MAX_FILES_DIFFED", 1)
    (ws / "a.txt").write_text("a\n")
    (ws / "b.txt").write_text("b\n")
    subprocess.run([*GIT, "init", "-q"], cwd=ws, check=True)
    subprocess.run([*GIT, "add", "a.txt", "b.txt"], cwd=ws, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "c"], cwd=ws, check=True)
    (ws / "c.txt").write_text("c\n")  # on disk, not in HEAD: "added" against HEAD
    ids = await writes(ws, mode, ("a.txt", "A\n"), ("b.txt", "B\n"), ("c.txt", "C\n"), ("d.txt", "D\n"))
    async with connect(ws, mode) as c:
        r = await call(c, "Changes", since=ids[0], against="HEAD")
    body = text(r)
    assert f"modified `a.txt` (+1 -1 lines; 1 write: {ids[0]})" in body  # diffed
    assert f"modified `b.txt` (1 write: {ids[1]})" in body  # listed by kind only
    assert f"added `c.txt` (1 write: {ids[2]})" in body and f"added `d.txt` (1 write: {ids[3]})" in body


async def test_an_unknown_write_id_is_answered_in_words_that_name_nothing(ws: Path, mode: str) -> None:
    async with connect(ws, mode) as c:
        r = await call(c, "Changes", since="w-0123456789abcdef")
    assert r.is_error and text(r).startswith(
        "No write w-0123456789abcdef in this workspace's history: no write had that id, or it was "
        "evicted (older than --history-max-age, or beyond --history-max-bytes). Use the whole id a "
        "write's message ended with."
    )


async def test_a_file_moved_into_an_added_folder_is_headed_by_its_whole_path(
    ws: Path, tmp_path: Path, mode: str
) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (ws / "a.txt").write_text("one\ntwo\n")
    async with connect(ws, mode, approval="auto", add_dirs=[extra]) as c:
        moved = await call(c, "ApplyPatch", changes=[{"path": "a.txt", "move_to": str(extra / "b.txt")}])
        first = write_id_of(text(moved))
        await call(c, "WriteFile", path=str(extra / "b.txt"), content="one\nTWO\n")
        r = await call(c, "Changes", since=first)
    assert not r.is_error, text(r)
    assert f"--- a/a.txt\n+++ {extra / 'b.txt'}\n@@ -1,2 +1,2 @@" in text(r)


async def test_a_file_deleted_or_back_again_by_hand_is_named_with_which(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("a\n")
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="A\n")))
        made = write_id_of(text(await call(c, "WriteFile", path="b.txt", content="b\n")))
        undone = write_id_of(text(await call(c, "UndoWrite", write_id=made)))  # removes b.txt
        (ws / "a.txt").unlink()
        (ws / "b.txt").write_text("b by hand\n")
        r = await call(c, "UndoWrite", since=first)
        assert r.is_error and not (ws / "a.txt").exists()
        forced = await call(c, "UndoWrite", since=first, force=True)
    assert (
        f"is refused: 2 files changed outside filegate since: `b.txt` (it exists again after {undone} "
        f"removed it); `a.txt` (it was deleted after {first}). Nothing was written."
    ) in text(r)
    assert not forced.is_error, text(forced)
    assert (ws / "a.txt").read_text() == "a\n" and not (ws / "b.txt").exists()


async def test_what_a_rewind_leaves_as_it_is_is_said_file_by_file(ws: Path, mode: str) -> None:
    """Files already as before (named up to five), two hidden ones (counted), one never kept
    (past --history-max-bytes) and a FIFO where a file was: each said, the one left restored."""
    (ws / "big.txt").write_text("B" * 1500)
    (ws / "r.txt").write_text("r\n")
    names = [f"f{n}.txt" for n in range(7)]
    async with connect(ws, mode, approval="auto", history_max_bytes=1000) as c:

        async def write(path: str, content: str) -> str:
            return write_id_of(text(await call(c, "WriteFile", path=path, content=content)))

        first = await write("r.txt", "R\n")
        big = await write("big.txt", "small\n")
        for name in [*names, "h1.txt", "h2.txt", "fifo"]:
            await write(name, "x\n")
        for name in names:
            (ws / name).unlink()
        (ws / "fifo").unlink()
        os.mkfifo(ws / "fifo")
        (ws / ".cursorignore").write_text("h1.txt\nh2.txt\n")
        r = await call(c, "UndoWrite", since=first)
    assert not r.is_error, text(r)
    output, message = texts(r)
    assert message.startswith(f"Rewound 12 writes from {first} (")
    assert "1 file as it was before it, as one write." in message
    assert output == "\n".join(
        [
            "- restored `r.txt`",
            f"Left as it is: `big.txt`: its content before {big} was not kept (larger than --history-max-bytes).",
            "Left as it is: `fifo` cannot be restored: it is not a regular file now, or cannot be opened.",
            "Left as they are: 2 files hidden from AI tools by client rules (counted, not named; the "
            "history kept nothing of it).",
            f"Already as before {first}: `f0.txt`, `f1.txt`, `f2.txt`, `f3.txt`, `f4.txt` and 2 more.",
            "",
        ]
    )
    assert (ws / "r.txt").read_text() == "r\n" and (ws / "big.txt").read_text() == "small\n"


async def test_a_rewind_puts_the_mode_back_without_setuid(ws: Path, mode: str) -> None:
    path = ws / "tool.sh"
    path.write_text("#!/bin/sh\n")
    path.chmod(0o4750)
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="tool.sh", content="#!/bin/sh\nexit 1\n")))
        path.chmod(0o600)
        await call(c, "WriteFile", path="tool.sh", content="#!/bin/sh\nexit 2\n")
        r = await call(c, "UndoWrite", since=first)
    assert not r.is_error, text(r)
    assert path.read_text() == "#!/bin/sh\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o750


async def test_a_pre_image_gone_between_two_writes_hashed_alike_is_not_a_doubt(ws: Path, mode: str) -> None:
    """Two BLAKE3 writes of one file compare their hashes: the second's pre-image (the content
    between them) no longer held leaves nothing in doubt, and the rewind restores the first's."""
    (ws / "a.txt").write_text("zero\n")
    ids = await writes(ws, mode, ("a.txt", "one\n"), ("a.txt", "two\n"))
    entry = WriteHistory().find(ids[1])
    assert entry is not None
    WriteHistory().object_path(entry.before).unlink()
    async with connect(ws, mode, approval="auto") as c:
        r = await call(c, "UndoWrite", since=ids[0])
    assert not r.is_error, text(r)
    assert (ws / "a.txt").read_text() == "zero\n"


@pytest.mark.parametrize("answer", ["approve", "reject"])
async def test_a_file_under_an_ask_rule_makes_the_rewind_ask_even_under_auto(
    ws: Path, tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch, answer: str
) -> None:
    home = Path(os.path.realpath(tmp_path)) / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    (ws / "asked.txt").write_text("asked before\n")
    (ws / "free.txt").write_text("free before\n")
    ids = await writes(ws, mode, ("asked.txt", "asked after\n"), ("free.txt", "free after\n"))
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"ask": ["Edit(/asked.txt)"]}}))
    answers = Answers(answer)
    async with connect(ws, mode, approval="auto", client_elicitation_handler=answers) as c:
        r = await call(c, "UndoWrite", since=ids[0])
    (question,) = answers.messages  # --approval auto, yet asked: one question for the rewind
    assert question.startswith(
        "Inside the workspace, ASKED about always: `asked.txt` is under an `ask` rule: "
    )
    assert "UndoWrite wants to rewind 2 writes from" in question
    if answer == "approve":
        assert not r.is_error, text(r)
        assert (ws / "asked.txt").read_text() == "asked before\n"
        assert (ws / "free.txt").read_text() == "free before\n"
    else:
        assert r.is_error and "rejected by the user" in text(r)
        assert (ws / "asked.txt").read_text() == "asked after\n"
        assert (ws / "free.txt").read_text() == "free after\n"


@pytest.mark.parametrize("over", [False, True])
async def test_a_rewind_holding_more_than_its_bound_is_refused_whole(
    ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch, over: bool
) -> None:
    """Everything a rewind holds at once (each file now and as it was) is bounded; the bound
    lowered to 1 MiB here: a.txt now and before are exactly that, so it is rewound; one byte
    more (a file the rewind removes) refuses the whole rewind, naming the bound."""
    monkeypatch.setattr(rewind_plan, "MAX_REWIND_BYTES", 1 << 20)
    half = 1 << 19
    (ws / "a.txt").write_text("a" * half)
    steps = [("a.txt", "b" * half), *([("n.txt", "n")] if over else [])]
    ids = await writes(ws, mode, *steps)
    async with connect(ws, mode, approval="auto") as c:
        r = await call(c, "UndoWrite", since=ids[0])
    if over:
        assert r.is_error
        assert text(r) == (
            f"The rewind from {ids[0]} would hold more than 1 MiB of files at once. Nothing was "
            "written. Rewind from a later write first."
        )
        assert (ws / "a.txt").read_text() == "b" * half and (ws / "n.txt").exists()
    else:
        assert not r.is_error, text(r)
        assert (ws / "a.txt").read_text() == "a" * half


@pytest.mark.parametrize("count", [1, 5, 6])
async def test_files_put_back_by_hand_are_already_as_before_and_named_up_to_five(
    ws: Path, mode: str, count: int
) -> None:
    names = [f"f{n}.txt" for n in range(count)]
    for name in names:
        (ws / name).write_text(f"{name} before\n")
    ids = await writes(ws, mode, *[(name, "written\n") for name in names])
    for name in names:
        (ws / name).write_text(f"{name} before\n")  # put back by hand
    async with connect(ws, mode, approval="auto") as c:
        r = await call(c, "UndoWrite", since=ids[0])
    assert not r.is_error, text(r)
    named = ", ".join(f"`{name}`" for name in names[:5]) + (" and 1 more" if count == 6 else "")
    said = text(r)
    assert said.startswith(f"Nothing to rewind from {ids[0]} (")
    assert said.endswith(f"): no file needs restoring. Already as before {ids[0]}: {named}.")


async def test_a_file_put_back_by_hand_to_what_the_last_write_found_changed_after_it(
    ws: Path, mode: str
) -> None:
    (ws / "a.txt").write_text("zero\n")
    ids = await writes(ws, mode, ("a.txt", "one\n"), ("a.txt", "two\n"))
    (ws / "a.txt").write_text("one\n")  # by hand: as the last write found it, not as it left it
    async with connect(ws, mode, approval="auto") as c:
        r = await call(c, "UndoWrite", since=ids[0])
    assert r.is_error
    assert f"1 file changed outside filegate since: `a.txt` (it changed after {ids[1]})." in text(r)
    assert (ws / "a.txt").read_text() == "one\n"


async def test_since_not_a_write_id_is_refused_showing_its_first_40_characters(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("one\n")
    ids = await writes(ws, mode, ("a.txt", "two\n"))
    given = "yesterday, about when the tests still passed, before lunch"
    async with connect(ws, mode, approval="auto") as c:
        refused = await call(c, "UndoWrite", since=given)
        padded = await call(c, "UndoWrite", since=f"  {ids[0]}\n")
    assert refused.is_error and text(refused) == (
        "`since` takes a write id (w- and 16 hex digits), the first write to undo; "
        f"`{given[:40]}` is not one. Changes lists the writes since a time, with their ids."
    )
    assert not padded.is_error, text(padded)
    assert f"- restored `a.txt`\n\nRewound 1 write from {ids[0]} (" in text(padded)
    assert (ws / "a.txt").read_text() == "one\n"


@pytest.mark.parametrize("extra", [0, 1])
async def test_a_file_now_larger_than_a_rewind_reads_is_left_saying_so(
    ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch, extra: int
) -> None:
    """A rewind reads each file whole, up to a bound (lowered to 1 MiB here): a file that is
    exactly that is restored; one byte more and it is left as it is, said why."""
    monkeypatch.setattr(rewind_plan, "MAX_FILE_BYTES", 1 << 20)
    (ws / "a.txt").write_text("before\n")
    (ws / "b.txt").write_text("b before\n")
    ids = await writes(ws, mode, ("a.txt", "x" * ((1 << 20) + extra)), ("b.txt", "b after\n"))
    async with connect(ws, mode, approval="auto") as c:
        r = await call(c, "UndoWrite", since=ids[0])
    assert not r.is_error, text(r)
    assert (ws / "b.txt").read_text() == "b before\n"
    if extra:
        assert "Left as it is: `a.txt` cannot be restored: it is larger than 1 MiB." in text(r)
        assert (ws / "a.txt").stat().st_size == (1 << 20) + 1
    else:
        assert "Left as it is" not in text(r)
        assert (ws / "a.txt").read_text() == "before\n"


async def test_a_file_sensitive_when_written_is_named_as_sensitive_when_no_longer_matched(
    ws: Path, mode: str
) -> None:
    """A --secret-pattern made the write keep nothing of notes.txt; the server that rewinds no
    longer has it: the file is still named as one the history kept nothing of, never read."""
    (ws / "a.txt").write_text("one\n")
    (ws / "notes.txt").write_text("private\n")
    approve = Answers("approve")
    async with connect(ws, mode, secret_patterns=["notes.txt"], client_elicitation_handler=approve) as c:
        first = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="two\n")))
        secret = write_id_of(text(await call(c, "WriteFile", path="notes.txt", content="PRIVATE\n")))
    async with connect(ws, mode, approval="auto") as c:
        r = await call(c, "UndoWrite", since=first)
    assert not r.is_error, text(r)
    assert f"Left as it is: `notes.txt` is sensitive, so the history kept nothing of it ({secret})." in text(
        r
    )
    assert (ws / "notes.txt").read_text() == "PRIVATE\n" and (ws / "a.txt").read_text() == "one\n"
