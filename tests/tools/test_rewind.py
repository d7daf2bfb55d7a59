"""UndoWrite(since=…), the rewind (SPEC §10), through real fastmcp clients, both eras: every write
from one on undone as one write, with one question; refused whole, naming the files, when a file
changed outside filegate; what it cannot restore named before the question."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from fastmcp import Client
from mcp.types import Implementation

from filegate.fsio.history import WriteHistory, history_dir
from filegate.fsio.locks import PATH_LOCKS
from tests.conftest import call, connect, stdio_transport, text, write_id_of
from tests.fakes import Answers
from tests.old_history import record_old_write

pytestmark = pytest.mark.usefixtures("read_guard_off")


def tree(ws: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted(ws.rglob("*")) if p.is_file()}


def start(ws: Path) -> dict[str, bytes]:
    (ws / "a.txt").write_text("one\ntwo\nthree\n")
    (ws / "c.txt").write_text("keep\n")
    return tree(ws)


async def three_writes(c: object) -> list[str]:
    return [
        write_id_of(text(await call(c, "StrReplaceFile", path="a.txt", edit={"old": "two", "new": "TWO"}))),  # type: ignore[arg-type]
        write_id_of(text(await call(c, "WriteFile", path="b.txt", content="new file\n"))),  # type: ignore[arg-type]
        write_id_of(text(await call(c, "WriteFile", path="c.txt", content="changed\n"))),  # type: ignore[arg-type]
    ]


async def test_one_question_over_the_combined_diff_restores_every_file(ws: Path, mode: str) -> None:
    before = start(ws)
    answers = Answers("approve")
    async with connect(ws, mode, approval="auto") as c:
        ids = await three_writes(c)
        await call(c, "StrReplaceFile", path="a.txt", edit={"old": "three", "new": "THREE"})
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        r = await call(c, "UndoWrite", since=ids[0])
    assert not r.is_error, text(r)
    assert tree(ws) == before
    (question,) = answers.messages  # one question for the whole rewind
    assert question.startswith(f"Inside the workspace: UndoWrite wants to rewind 4 writes from {ids[0]} (")
    assert (
        "restoring 3 files as one write (2 restored, 1 removed).\n- restored `a.txt` (+2 -2 lines)\n"
        "- restored `c.txt` (+1 -1 lines)\n- removed `b.txt` (9 bytes)\n"
    ) in question
    assert "-TWO\n-THREE\n+two\n+three" in question and "-changed\n+keep" in question
    assert "deletes 9 bytes, 1 line" in question  # b.txt, which the rewind removes
    said = text(r)
    assert "- restored `a.txt`\n- restored `c.txt`\n- removed `b.txt`" in said  # newest first
    assert f"Rewound 4 writes from {ids[0]} (" in said and "3 files as they were before it" in said


async def test_the_rewind_is_one_write_and_can_be_undone(ws: Path, mode: str) -> None:
    start(ws)
    async with connect(ws, mode, approval="auto") as c:
        ids = await three_writes(c)
        after = tree(ws)
        r = await call(c, "UndoWrite", since=ids[0])
        rewind = write_id_of(text(r))
        back = await call(c, "UndoWrite", write_id=rewind)
    assert not back.is_error, text(back)
    assert tree(ws) == after


async def test_three_clients_sharing_the_state_directory_are_rewound_together(
    tmp_path: Path, ws: Path
) -> None:
    before = start(ws)
    ids = []
    for name, (tool, args) in zip(
        ("claude-code", "kimi-code", "codex"),
        [
            ("StrReplaceFile", {"path": "a.txt", "edit": {"old": "two", "new": "TWO"}}),
            ("WriteFile", {"path": "b.txt", "content": "new file\n"}),
            ("WriteFile", {"path": "c.txt", "content": "changed\n"}),
        ],
        strict=True,
    ):
        client = Implementation(name=name, version="1")
        async with connect(ws, approval="auto", client_client_info=client) as c:
            ids.append(write_id_of(text(await call(c, tool, **args))))
    other = tmp_path / "other"  # a fourth client's write in another workspace: not this rewind's
    other.mkdir()
    async with connect(other, approval="auto") as c:
        await call(c, "WriteFile", path="theirs.txt", content="theirs\n")
    async with connect(ws, approval="auto") as c:
        listed = await call(c, "Changes", since=ids[0])
        r = await call(c, "UndoWrite", since=ids[0])
    assert "3 writes, by claude-code, kimi-code, codex" in text(listed)
    assert not r.is_error, text(r)
    assert tree(ws) == before
    assert (other / "theirs.txt").read_text() == "theirs\n"


@pytest.mark.parametrize("when", ["after", "between"])
async def test_a_file_changed_by_hand_refuses_the_whole_rewind_naming_it(
    ws: Path, mode: str, when: str
) -> None:
    start(ws)
    answers = Answers("approve")
    async with connect(ws, mode, approval="auto") as c:
        ids = await three_writes(c)
        if when == "between":  # changed by hand between two writes through filegate
            (ws / "c.txt").write_text("by hand\n")
            last = write_id_of(text(await call(c, "WriteFile", path="c.txt", content="changed again\n")))
        else:
            (ws / "c.txt").write_text("by hand\n")
    touched = tree(ws)
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        r = await call(c, "UndoWrite", since=ids[0])
        assert r.is_error
        assert tree(ws) == touched and answers.messages == []  # nothing written, nothing asked
        forced = await call(c, "UndoWrite", since=ids[0], force=True)
    message = text(r)
    why = (
        f"it was changed outside filegate between {ids[2]} and {last}"
        if when == "between"
        else f"it changed after {ids[2]}"
    )
    assert f"is refused: 1 file changed outside filegate since: `c.txt` ({why})" in message
    assert "`a.txt`" not in message.split("Nothing was written")[0]
    assert "`force: true` to rewind anyway" in message
    assert "+keep" in message  # what force would do to it
    assert not forced.is_error, text(forced)
    assert (ws / "c.txt").read_text() == "keep\n" and not (ws / "b.txt").exists()


async def test_what_it_cannot_restore_is_named_before_the_question(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("one\n")
    answers = Answers("approve")
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        first = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="two\n")))
        await call(c, "WriteFile", path=".env", content="TOKEN=SECRET-VALUE\n")
        await call(c, "WriteFile", path="hidden.txt", content="HIDDEN-CONTENT\n")
    (ws / ".cursorignore").write_text("hidden.txt\n")
    answers = Answers("approve")
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        r = await call(c, "UndoWrite", since=first)
    assert not r.is_error, text(r)
    (question,) = answers.messages
    for said in (question, text(r)):
        assert "Left as it is: `.env` is sensitive, so the history kept nothing of it" in said
        assert "Left as it is: 1 file hidden from AI tools by client rules (counted, not named" in said
        assert "hidden.txt" not in said and "SECRET-VALUE" not in said and "HIDDEN-CONTENT" not in said
    assert (ws / "a.txt").read_text() == "one\n"
    assert (ws / ".env").read_text() == "TOKEN=SECRET-VALUE\n" and (ws / "hidden.txt").exists()


async def test_dry_run_shows_it_all_and_writes_nothing(ws: Path, mode: str) -> None:
    start(ws)
    answers = Answers("approve")
    async with connect(ws, mode, approval="auto") as c:
        ids = await three_writes(c)
    after = tree(ws)
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        r = await call(c, "UndoWrite", since=ids[0], dry_run=True)
    assert not r.is_error and answers.messages == []
    assert tree(ws) == after
    said = text(r)
    assert "Preview (dry_run): nothing was written and nothing was asked." in said
    assert "UndoWrite would rewind 3 writes from" in said
    assert "-TWO\n+two" in said and "-changed\n+keep" in said


async def test_a_rejected_rewind_writes_nothing(ws: Path, mode: str) -> None:
    start(ws)
    async with connect(ws, mode, approval="auto") as c:
        ids = await three_writes(c)
    after = tree(ws)
    async with connect(ws, mode, client_elicitation_handler=Answers("reject")) as c:
        r = await call(c, "UndoWrite", since=ids[0])
    assert r.is_error and tree(ws) == after


async def test_since_inside_a_set_takes_the_whole_set(ws: Path, mode: str) -> None:
    before = start(ws)
    async with connect(ws, mode, approval="auto") as c:
        r = await call(
            c,
            "ApplyPatch",
            changes=[{"path": "x.txt", "content": "x\n"}, {"path": "y.txt", "content": "y\n"}],
        )
        set_id = write_id_of(text(r))
        member = [e for e in WriteHistory().entries() if e.group == set_id][-1]
        assert member.id != set_id
        undone = await call(c, "UndoWrite", since=member.id)
    assert not undone.is_error, text(undone)
    assert tree(ws) == before


async def test_a_set_that_also_wrote_outside_the_workspace_refuses_the_rewind(
    ws: Path, outside: Path, mode: str
) -> None:
    start(ws)
    async with connect(ws, mode, approval="auto", client_elicitation_handler=Answers("approve")) as c:
        sets = []
        for n in (1, 2):
            r = await call(
                c,
                "ApplyPatch",
                changes=[
                    {"path": f"x{n}.txt", "content": "x\n"},
                    {"path": str(outside / f"o{n}.txt"), "content": "o\n"},
                ],
            )
            assert not r.is_error, text(r)
            sets.append(write_id_of(text(r)))
        refused = await call(c, "UndoWrite", since=sets[0])
    assert refused.is_error
    assert text(refused) == (
        f"The rewind from {sets[0]} would undo part of a set only: {sets[0]}, {sets[1]} also wrote "
        "files outside this workspace, and a set is undone whole. Nothing was written. Rewind "
        "from a write after it, or undo the set by its id from a workspace that holds all its files."
    )
    assert all((ws / f"x{n}.txt").exists() and (outside / f"o{n}.txt").exists() for n in (1, 2))


async def test_an_id_from_another_workspace_or_evicted_is_refused(
    tmp_path: Path, ws: Path, mode: str
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    async with connect(other, mode, approval="auto") as c:
        theirs = write_id_of(text(await call(c, "WriteFile", path="t.txt", content="t\n")))
    async with connect(ws, mode, approval="auto") as c:
        foreign = await call(c, "UndoWrite", since=theirs)
    (ws / "big.txt").write_text("x" * 600)
    async with connect(ws, mode, approval="auto", history_max_bytes=1000) as c:
        old = write_id_of(text(await call(c, "WriteFile", path="big.txt", content="y" * 600)))
        await call(c, "WriteFile", path="big.txt", content="z" * 600)  # evicts the first
        evicted = await call(c, "UndoWrite", since=old)
    assert foreign.is_error and f"No write {theirs} in this workspace's history:" in text(foreign)
    assert "t.txt" not in text(foreign)
    assert evicted.is_error and f"No write {old} in this workspace's history:" in text(evicted)
    assert "or it was evicted" in text(evicted)
    assert (ws / "big.txt").read_text() == "z" * 600


async def test_write_id_and_since_take_one_of_them(ws: Path, mode: str) -> None:
    async with connect(ws, mode, approval="auto") as c:
        w = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="a\n")))
        both = await call(c, "UndoWrite", write_id=w, since=w)
        neither = await call(c, "UndoWrite")
        not_an_id = await call(c, "UndoWrite", since="2h")
    for r in (both, neither):
        assert r.is_error and "give `write_id` (one write) or `since`" in text(r)
    assert not_an_id.is_error and "`since` takes a write id" in text(not_an_id)
    assert (ws / "a.txt").exists()


async def test_nothing_to_restore_says_so(ws: Path, mode: str) -> None:
    async with connect(ws, mode, approval="auto") as c:
        w = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="a\n")))
        (ws / "a.txt").unlink()  # gone as before the write
        r = await call(c, "UndoWrite", since=w)
    assert not r.is_error
    assert text(r).startswith(f"Nothing to rewind from {w} (")
    assert "Already as before" in text(r) and "`a.txt`" in text(r)


async def test_changes_shows_a_set_s_move_and_a_rewind_moves_it_back(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("alpha\nbeta\n")
    before = tree(ws)
    async with connect(ws, mode, approval="auto") as c:
        await call(c, "ReadFile", path="a.txt")
        r = await call(
            c,
            "ApplyPatch",
            changes=[{"path": "a.txt", "move_to": "m.txt", "edits": [{"old": "beta", "new": "BETA"}]}],
        )
        set_id = write_id_of(text(r))
        listed = await call(c, "Changes", since=set_id)
        undone = await call(c, "UndoWrite", since=set_id)
    body = text(listed)
    assert f"moved `a.txt` → `m.txt` (+1 -1 lines; 1 write: {set_id})" in body
    assert "--- a/a.txt\n+++ b/m.txt" in body and "-beta\n+BETA" in body
    assert "1 file inside this workspace" in body
    assert not undone.is_error, text(undone)
    assert tree(ws) == before


async def test_what_the_history_no_longer_holds_is_named_and_the_rest_restored(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("a before\n")
    (ws / "b.txt").write_text("b before\n")
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="a after\n")))
        await call(c, "WriteFile", path="b.txt", content="b after\n")
    entry = next(e for e in WriteHistory().entries() if e.id == first)
    WriteHistory().object_path(entry.before).unlink()  # the kept copy of a.txt, gone
    async with connect(ws, mode, approval="auto") as c:
        r = await call(c, "UndoWrite", since=first)
    assert not r.is_error, text(r)
    assert f"Left as it is: `a.txt`: the history no longer holds its content before {first}." in text(r)
    assert (ws / "a.txt").read_text() == "a after\n" and (ws / "b.txt").read_text() == "b before\n"


async def test_a_file_changed_while_the_user_looked_refuses_the_whole_rewind(ws: Path, mode: str) -> None:
    start(ws)
    async with connect(ws, mode, approval="auto") as c:
        ids = await three_writes(c)
    asked = Answers("approve")

    async def meanwhile(message: str, response_type: object, params: object, context: object) -> object:
        (ws / "b.txt").write_text("changed while asked\n")  # the user's editor, during the question
        return await asked(message, response_type, params, context)

    async with connect(ws, mode, client_elicitation_handler=meanwhile) as c:
        r = await call(c, "UndoWrite", since=ids[0])
    assert r.is_error, text(r)
    assert (ws / "a.txt").read_text() == "one\nTWO\nthree\n" and (ws / "c.txt").read_text() == "changed\n"
    assert (ws / "b.txt").read_text() == "changed while asked\n"


@pytest.mark.slow  # a server process of its own, over stdio
async def test_a_process_of_its_own_shares_the_history_and_is_rewound_with_the_others(ws: Path) -> None:
    """Replicas share the history through the state directory: a write made by a filegate
    process over stdio and two in this process are undone by one rewind."""
    before = start(ws)
    async with connect(ws, approval="auto") as c:
        ids = [
            write_id_of(
                text(await call(c, "StrReplaceFile", path="a.txt", edit={"old": "two", "new": "TWO"}))
            )
        ]
    async with Client(stdio_transport(ws, "--approval", "auto")) as c:
        r = await c.call_tool(
            "WriteFile", {"path": "b.txt", "content": "from another process\n"}, raise_on_error=False
        )
        ids.append(write_id_of(text(r)))
    async with connect(ws, approval="auto") as c:
        ids.append(write_id_of(text(await call(c, "WriteFile", path="c.txt", content="changed\n"))))
        r = await call(c, "UndoWrite", since=ids[0])
    assert not r.is_error, text(r)
    assert "Rewound 3 writes from" in text(r)
    assert tree(ws) == before


# --- a history written before BLAKE3: each record read in its own hash -----------------------


@pytest.mark.parametrize("later", ["none", "through filegate", "by hand, then through filegate"])
async def test_a_rewind_from_a_write_recorded_before_blake3_checks_it_in_its_own_hash(
    ws: Path, mode: str, later: str
) -> None:
    """An old SHA-256 record, then (maybe) a BLAKE3 one of the same file: the file as the old
    write left it, and the pair's meeting point (its after, the new one's before), are checked by
    hashing the content in the old record's algorithm, so they are neither changed by accident
    nor equal by accident."""
    path = ws / "a.txt"
    path.write_bytes(b"old write's result\n")
    record_old_write(path, b"before it all\n", b"old write's result\n", "w-0a0b0c")
    async with connect(ws, mode, approval="auto") as c:
        if later != "none":
            if later.startswith("by hand"):
                path.write_bytes(b"old write's result, by hand\n")
            new = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="new write\n")))
        r = await call(c, "UndoWrite", since="w-0a0b0c")
    if later.startswith("by hand"):
        assert r.is_error, text(r)
        assert f"`a.txt` (it was changed outside filegate between w-0a0b0c and {new})" in text(r)
        assert path.read_bytes() == b"new write\n"
    else:
        assert not r.is_error, text(r)
        assert path.read_bytes() == b"before it all\n"


async def test_a_pair_in_two_hashes_whose_content_between_is_gone_is_not_called_either(
    ws: Path, mode: str
) -> None:
    """Between an old SHA-256 write and a BLAKE3 one, with the newer write's pre-image (the
    content between them) no longer held: nothing can say whether the file was changed by hand
    between them, so the rewind says exactly that and waits for force."""
    path = ws / "a.txt"
    path.write_bytes(b"old write's result\n")
    record_old_write(path, b"before it all\n", b"old write's result\n", "w-0a0b0c")
    async with connect(ws, mode, approval="auto") as c:
        new = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="new write\n")))
    entry = WriteHistory().find(new)
    assert entry is not None and entry.hash == "blake3"
    WriteHistory().object_path(entry.before).unlink()
    async with connect(ws, mode, approval="auto") as c:
        r = await call(c, "UndoWrite", since="w-0a0b0c")
        assert r.is_error and path.read_bytes() == b"new write\n"
        forced = await call(c, "UndoWrite", since="w-0a0b0c", force=True)
    assert (
        f"`a.txt` (whether it was changed outside filegate between w-0a0b0c and {new} cannot be "
        "told: their records hash content differently and the history holds no copy of it)"
    ) in text(r)
    assert not forced.is_error, text(forced)
    assert path.read_bytes() == b"before it all\n"


# --- a file changed between the plan and the set's preparation -------------------------------


@pytest.mark.parametrize("force", [False, True])
async def test_a_file_changed_after_the_plan_while_another_write_held_it_refuses_the_rewind(
    ws: Path, mode: str, force: bool
) -> None:
    """The plan reads the files without their locks; the set then waits for each file's lock
    (another write holds it: here the test, as a write of this process in progress would) and
    loads it again. A file changed in between is refused by name, and so is one the rewind
    would remove that is gone already (with `force`, which lets a hand change through):
    nothing is written, nothing asked."""
    start(ws)
    async with connect(ws, mode, approval="auto") as c:
        ids = await three_writes(c)
    # The rewind locks its files in their paths' order (a.txt, b.txt, c.txt): once planned, it
    # holds a.txt's lock and waits for the one held here.
    held = "b.txt" if force else "c.txt"
    answers = Answers("approve")
    result = []
    async with connect(ws, mode, client_elicitation_handler=answers) as c:

        async def rewind() -> None:
            result.append(await call(c, "UndoWrite", since=ids[0], force=force))

        async with anyio.create_task_group() as tg, PATH_LOCKS.hold((ws / held).resolve()):
            alone = len(PATH_LOCKS)
            tg.start_soon(rewind)
            with anyio.fail_after(60):
                while len(PATH_LOCKS) == alone:  # planned, and taking its locks
                    await anyio.sleep(0.01)
            if force:
                (ws / "b.txt").unlink()  # the file the rewind would remove, gone meanwhile
            else:
                (ws / "c.txt").write_text("changed meanwhile\n")
            after = tree(ws)
            # the lock let go: the rewind loads its files and meets the change
    (r,) = result
    assert r.is_error and answers.messages == []
    assert tree(ws) == after
    if force:
        assert text(r) == "`b.txt` is gone already. Nothing was written."
    else:
        assert text(r) == (
            "`c.txt` changed while the rewind was prepared. Nothing was written.\n"
            "Call UndoWrite with `since` again to see what changed."
        )


async def test_a_file_removed_then_created_again_through_filegate_is_no_hand_change(
    ws: Path, mode: str
) -> None:
    """A write that removed the file, then one that created it again: the first left nothing
    and the second found nothing, so nothing changed by hand in between."""
    (ws / "x.txt").write_text("orig\n")
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="x.txt", content="one\n")))
        await call(c, "ApplyPatch", changes=[{"path": "x.txt", "delete": True}])
        await call(c, "WriteFile", path="x.txt", content="three\n")
        r = await call(c, "UndoWrite", since=first)
    assert not r.is_error, text(r)
    assert "Rewound 3 writes from" in text(r)
    assert (ws / "x.txt").read_text() == "orig\n"


def _outcome_lost(write_id: str) -> None:
    """The history as a crash right after ``write_id``'s record leaves it: the record durable,
    its outcome never appended ("unconfirmed", fsio/history.py)."""
    log = history_dir() / "history.jsonl"
    outcome = f'{{"id":"{write_id}","outcome":"done"}}\n'
    assert outcome in log.read_text()
    log.write_text(log.read_text().replace(outcome, ""))


@pytest.mark.parametrize("landed", [True, False])
async def test_a_write_whose_outcome_a_crash_lost_is_judged_by_the_content_the_next_found(
    ws: Path, mode: str, landed: bool
) -> None:
    """A write recorded but never confirmed, then another write of the file: the second
    found either what the first left (it landed) or what it found (the crash came before its
    rename). Neither is a change by hand; the rewind restores the file as before the first."""
    path = ws / "x.txt"
    path.write_text("zero\n")
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="x.txt", content="one\n")))
    _outcome_lost(first)
    if not landed:
        path.write_text("zero\n")  # as before the first write's rename
    async with connect(ws, mode, approval="auto") as c:
        second = write_id_of(text(await call(c, "WriteFile", path="x.txt", content="two\n")))
        r = await call(c, "UndoWrite", since=first)
    assert WriteHistory().find(first).state == "unconfirmed"  # type: ignore[union-attr]
    assert not r.is_error, text(r)
    assert f"Rewound 2 writes from {first}" in text(r) and second != first
    assert path.read_text() == "zero\n"


async def test_a_last_write_that_never_landed_is_no_hand_change(ws: Path, mode: str) -> None:
    """The last write's outcome lost before its rename: the file is as the write before it
    left it, which is no change by hand; the rewind restores the file as before them both."""
    path = ws / "x.txt"
    path.write_text("zero\n")
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="x.txt", content="one\n")))
        last = write_id_of(text(await call(c, "WriteFile", path="x.txt", content="two\n")))
    _outcome_lost(last)
    path.write_text("one\n")  # the crash came before its rename
    async with connect(ws, mode, approval="auto") as c:
        r = await call(c, "UndoWrite", since=first)
    assert not r.is_error, text(r)
    assert f"Rewound 2 writes from {first}" in text(r)
    assert path.read_text() == "zero\n"


async def test_a_hand_change_after_a_write_whose_outcome_a_crash_lost_is_named(ws: Path, mode: str) -> None:
    """The next write found neither what the unconfirmed one left nor what it found: the file
    was changed by hand between them, and the rewind says so and waits for `force`."""
    path = ws / "x.txt"
    path.write_text("zero\n")
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="x.txt", content="one\n")))
    _outcome_lost(first)
    path.write_text("by hand\n")
    async with connect(ws, mode, approval="auto") as c:
        second = write_id_of(text(await call(c, "WriteFile", path="x.txt", content="two\n")))
        r = await call(c, "UndoWrite", since=first)
    assert r.is_error
    assert f"`x.txt` (it was changed outside filegate between {first} and {second})" in text(r)
    assert path.read_text() == "two\n"


async def test_a_creation_whose_outcome_a_crash_lost_before_it_landed_is_no_hand_change(
    ws: Path, mode: str
) -> None:
    path = ws / "x.txt"
    async with connect(ws, mode, approval="auto") as c:
        first = write_id_of(text(await call(c, "WriteFile", path="x.txt", content="one\n")))
    _outcome_lost(first)
    path.unlink()  # the crash came before its rename: no file
    async with connect(ws, mode, approval="auto") as c:
        await call(c, "WriteFile", path="x.txt", content="two\n")
        r = await call(c, "UndoWrite", since=first)
    assert not r.is_error, text(r)
    assert "- removed `x.txt`" in text(r) and not path.exists()


@pytest.mark.parametrize("held", [True, False])
async def test_an_old_hash_write_whose_outcome_a_crash_lost_is_checked_in_its_own_hash(
    ws: Path, mode: str, held: bool
) -> None:
    """An old SHA-256 record without its outcome, its rename never done, then a BLAKE3 write:
    the content the new write found (its pre-image) hashed the old way is what the old write
    found, so no hand change; with that pre-image gone it cannot be told, and is said so."""
    path = ws / "a.txt"
    path.write_bytes(b"before it all\n")  # the old write never landed
    record_old_write(path, b"before it all\n", b"old write's result\n", "w-0a0b0c")
    _outcome_lost("w-0a0b0c")
    async with connect(ws, mode, approval="auto") as c:
        new = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="new write\n")))
    if not held:
        entry = WriteHistory().find(new)
        assert entry is not None
        WriteHistory().object_path(entry.before).unlink()
    async with connect(ws, mode, approval="auto") as c:
        r = await call(c, "UndoWrite", since="w-0a0b0c")
    if held:
        assert not r.is_error, text(r)
        assert path.read_bytes() == b"before it all\n"
    else:
        assert r.is_error
        assert (
            f"`a.txt` (whether it was changed outside filegate between w-0a0b0c and {new} cannot be "
            "told: their records hash content differently and the history holds no copy of it)"
        ) in text(r)
        assert path.read_bytes() == b"new write\n"
