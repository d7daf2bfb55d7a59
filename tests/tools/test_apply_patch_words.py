"""ApplyPatch's words (SPEC §10), whole, as the model and the user read them: the question's
list and diff for every kind of file, the preview, the answer and its cut to the client's
budget, the refusals of a set as a whole, and what a set leaves in the read guard and the
audit log. Through real fastmcp clients on real files; each test asserts what is on disk too.

Issue 55's mutation target ``patchtool`` (tools/apply_patch.py, tools/patch/run.py) runs these
with test_apply_patch.py, test_patch_sets.py and test_undo_write.py."""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult as WireElicitResult
from mcp.types import Implementation, InputRequiredResult

from filegate.tools.readguard import ledger
from tests.conftest import blocks, call, connect, text, write_id_of
from tests.fakes import Answers


def tree(ws: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted(ws.rglob("*")) if p.is_file()}


async def read_all(c: Any, *paths: str) -> None:
    for path in paths:
        r = await call(c, "ReadFile", path=path)
        assert not r.is_error, text(r)


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"])


# --- every kind of file, worded --------------------------------------------------------------


def every_kind(ws: Path, outside: Path) -> list[dict[str, Any]]:
    (ws / "a.txt").write_text("one\ntwo\n")
    (ws / "same.txt").write_text("same\n")
    (ws / "crlf.txt").write_bytes(b"x = 1\r\ny = 2\r\n")
    (outside / "far.txt").write_text("far\n")
    (ws / "long.txt").write_text("".join(f"l{i}\n" for i in range(15)))
    (ws / "nonl.txt").write_text("a\nb")
    return [
        {"path": "a.txt", "content": "uno\ntwo\n"},
        {"path": "same.txt", "content": "same\n"},
        {"path": "./crlf.txt", "move_to": "sub/moved.txt", "edits": [{"old": "y = 2", "new": "y = 3"}]},
        {"path": str(outside / "far.txt"), "move_to": "near.txt"},
        {"path": "long.txt", "delete": True},
        {"path": "nonl.txt", "delete": True},
        {"path": "new.txt", "content": "n\n"},
    ]


def listed(far: Path) -> list[str]:
    return [
        "- overwritten `a.txt` (+1 -1 lines)",
        "- unchanged `same.txt` (it already holds this content)",
        "- moved `crlf.txt` → `sub/moved.txt`, edited (+1 -1 lines)",
        f"- moved `{far}` → `near.txt`",
        "- deleted `long.txt` (50 bytes)",
        "- deleted `nonl.txt` (3 bytes)",
        "- added `new.txt` (2 bytes, +1 lines)",
    ]


def diff(far: Path) -> list[str]:
    return [
        "--- a/a.txt",
        "+++ b/a.txt",
        "@@ -1,2 +1,2 @@",
        "-one",
        "+uno",
        " two",
        "`same.txt` already holds this content: it is not written.",
        "moves `./crlf.txt` → `sub/moved.txt`",  # as the model named it (the list says the file)
        "--- a/crlf.txt",
        "+++ b/crlf.txt",
        "@@ -1,2 +1,2 @@",
        " x = 1",
        "-y = 2",
        "+y = 3",
        f"moves `{far}` → `near.txt`",
        "--- a/long.txt",
        "+++ /dev/null",
        "deletes 50 bytes, 15 lines; its first lines:",
        *(f"-l{i}" for i in range(10)),
        "… 5 more lines",
        "--- a/nonl.txt",
        "+++ /dev/null",
        "deletes 3 bytes, 2 lines; its first lines:",
        "-a",
        "-b",
        "--- a/new.txt",
        "+++ b/new.txt",
        "@@ -0,0 +1 @@",
        "+n",
    ]


TITLE = "ApplyPatch wants to change 7 files as one write (2 overwritten, 2 moved, 2 deleted, 1 added)."


async def test_every_kind_of_file_is_worded_in_the_question_and_the_answer(
    ws: Path, outside: Path, mode: str
) -> None:
    changes = every_kind(ws, outside)
    far = outside / "far.txt"
    answers = Answers("approve")
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        await read_all(c, "a.txt", "same.txt", "crlf.txt", str(far), "long.txt", "nonl.txt")
        r = await call(c, "ApplyPatch", changes=changes)
    assert not r.is_error, text(r)
    (question,) = answers.messages
    # A set reaching outside the workspace says so first, as a single write's question does.
    assert question == "\n".join([f"OUTSIDE the workspace: {TITLE}", *listed(far), "", *diff(far)])
    (sent,) = blocks(r)
    assert sent == "\n".join(
        [
            "- overwritten `a.txt`: 8 bytes, lines +1 -1.",
            "- `same.txt` already held this content: not written.",
            "- moved `crlf.txt` → `sub/moved.txt`: 1 edit, 1 replacement, lines +1 -1.",
            f"- moved `{far}` → `near.txt`.",
            "- deleted `long.txt`.",
            "- deleted `nonl.txt`.",
            "- added `new.txt`: 2 bytes, lines +1 -0.",
            "Applied 6 file changes as one write.",
            f"Write id: {write_id_of(sent)}.",
        ]
    )
    assert tree(ws) == {
        "a.txt": b"uno\ntwo\n",
        "same.txt": b"same\n",
        "sub/moved.txt": b"x = 1\r\ny = 3\r\n",
        "near.txt": b"far\n",
        "new.txt": b"n\n",
    }
    assert not far.exists()


async def test_the_preview_is_the_questions_diff_then_what_would_be_done(ws: Path, outside: Path) -> None:
    changes = every_kind(ws, outside)
    far = outside / "far.txt"
    before = tree(ws)
    async with connect(ws, "legacy", read_guard=False) as c:  # no elicitation: nothing is asked
        r = await call(c, "ApplyPatch", changes=changes, dry_run=True)
    assert not r.is_error, text(r)
    (sent,) = blocks(r)
    assert sent == "\n".join(
        [
            *diff(far),
            "Preview (dry_run): nothing was written and nothing was asked. "
            + TITLE.replace(" wants to ", " would "),
            *listed(far),
        ]
    )
    assert tree(ws) == before and far.exists()


async def test_a_set_of_contents_the_files_already_hold_writes_nothing_and_says_so(ws: Path) -> None:
    (ws / "a.txt").write_text("a\n")
    (ws / "b.txt").write_text("b\n")
    async with connect(ws, approval="auto") as c:
        await read_all(c, "a.txt", "b.txt")
        r = await call(
            c,
            "ApplyPatch",
            changes=[{"path": "a.txt", "content": "a\n"}, {"path": "b.txt", "content": "b\n"}],
        )
    assert not r.is_error, text(r)
    assert blocks(r) == [
        "- `a.txt` already held this content: not written.\n"
        "- `b.txt` already held this content: not written.\n"
        "Applied 0 file changes as one write. Every file already held its content: nothing was written."
    ]


async def test_a_binary_file_overwritten_is_described_by_its_sizes(ws: Path) -> None:
    (ws / "a.bin").write_bytes(b"\x00\x01\x02bin")
    async with connect(ws, approval="auto") as c:
        r = await call(c, "ApplyPatch", changes=[{"path": "a.bin", "content": "text now\n"}])
    assert not r.is_error, text(r)
    assert blocks(r)[0].startswith("- overwritten `a.bin`: binary file, 6 → 9 bytes.\nApplied 1 file change")
    assert (ws / "a.bin").read_bytes() == b"text now\n"


async def test_a_moved_and_edited_crlf_file_says_its_line_endings_were_kept(ws: Path) -> None:
    (ws / "win.txt").write_bytes(b"x = 1\r\ny = 2\r\n")
    async with connect(ws, approval="auto") as c:
        await read_all(c, "win.txt")
        r = await call(
            c,
            "ApplyPatch",
            patch=patch("*** Update File: win.txt", "*** Move to: dos.txt", "@@", "-y = 2", "+y = 3"),
        )
    assert not r.is_error, text(r)
    (first, *_) = blocks(r)[0].split("\n")
    assert first.startswith("- moved `win.txt` → `dos.txt`: 1 edit, 1 replacement, lines +1 -1. ")
    assert "CRLF" in first
    assert (ws / "dos.txt").read_bytes() == b"x = 1\r\ny = 3\r\n"


# --- the read guard after a set --------------------------------------------------------------


async def test_files_a_set_deleted_or_moved_away_are_no_change_the_model_is_told_of(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The set itself removed them: the next call's notice of files changed since they were read
    does not name them (it named them once: the set counted only the files it wrote)."""
    monkeypatch.setattr(ledger, "NOTICE_INTERVAL_S", 0.0)  # calls faster than a model's: each checks
    for name in ("gone.txt", "from.txt", "kept.txt", "onto.txt", "mover.txt"):
        (ws / name).write_text(f"{name}\n")
    async with connect(ws, "legacy", approval="auto") as c:  # notices are the handshake era's
        await read_all(c, "gone.txt", "from.txt", "kept.txt", "onto.txt")
        r = await call(
            c,
            "ApplyPatch",
            changes=[
                {"path": "gone.txt", "delete": True},
                {"path": "from.txt", "move_to": "to.txt"},
                {"path": "mover.txt", "move_to": "onto.txt"},  # onto a file read: replaced, not changed
            ],
        )
        assert not r.is_error, text(r)
        assert blocks(r)[0].split("\n")[-1].startswith("Write id: "), blocks(r)  # no notice
        (ws / "kept.txt").write_text("changed by someone\n")
        after = await call(c, "ReadFile", path="to.txt")
    assert blocks(after)[0].split("\n")[-1] == "Changed on disk since you read them: kept.txt."


async def test_a_moved_file_counts_as_read_only_where_the_model_read_its_source(ws: Path) -> None:
    """A move needs no read of its source; the file at its new path is then one the model never
    saw, and an edit of it asks for a read as for any other (an edited move's source was read)."""
    (ws / "a.txt").write_text("alpha\n")
    (ws / "b.txt").write_text("beta\n")
    async with connect(ws, approval="auto") as c:
        await read_all(c, "b.txt")
        r = await call(
            c,
            "ApplyPatch",
            changes=[
                {"path": "a.txt", "move_to": "a2.txt"},
                {"path": "b.txt", "move_to": "b2.txt", "edits": [{"old": "beta", "new": "BETA"}]},
            ],
        )
        assert not r.is_error, text(r)
        unread = await call(c, "StrReplaceFile", path="a2.txt", edit={"old": "alpha", "new": "A"})
        known = await call(c, "StrReplaceFile", path="b2.txt", edit={"old": "BETA", "new": "B"})
    assert unread.is_error and "`a2.txt` has not been read" in text(unread), text(unread)
    assert not known.is_error, text(known)
    assert (ws / "a2.txt").read_text() == "alpha\n" and (ws / "b2.txt").read_text() == "B\n"


async def test_a_file_overwritten_unread_with_the_guard_off_is_not_counted_as_read(ws: Path) -> None:
    """With the guard off a set writes files the model never read; a later session with the
    guard on still asks for a read of them (this session's ledger counts what was known)."""
    (ws / "f.txt").write_text("old\n")
    (ws / "g.txt").write_text("g\n")
    async with connect(ws, approval="auto") as c:
        await read_all(c, "g.txt")
        r = await call(
            c,
            "ApplyPatch",
            changes=[{"path": "g.txt", "content": "G\n"}, {"path": "new.txt", "content": "fresh\n"}],
        )
        assert not r.is_error, text(r)
        edits = [
            await call(c, "StrReplaceFile", path=name, edit={"old": old, "new": "x"})
            for name, old in (("g.txt", "G"), ("new.txt", "fresh"))
        ]
    assert [e.is_error for e in edits] == [False, False], [text(e) for e in edits]
    assert (ws / "g.txt").read_text() == "x\n" and (ws / "new.txt").read_text() == "x\n"


# --- the answer within the client's budget ---------------------------------------------------

# Each file's answer line: "- added `fNN.txt`: 2 bytes, lines +1 -0." (40 characters).
LINE = len("- added `f00.txt`: 2 bytes, lines +1 -0.")


@pytest.mark.parametrize("fit", [20, 21])
async def test_the_answer_lists_files_within_its_share_of_the_budget_and_counts_the_rest(
    ws: Path, fit: int
) -> None:
    """The list takes at most 80 % of the client's result budget: ``fit`` lines exactly fill it
    (each with its line break, the last without one), the next is counted, not shown."""
    room = fit * (LINE + 1) - 1
    budget = next(b for b in range(room, 2 * room) if int(b * 0.8) == room)
    changes = [{"path": f"f{i:02d}.txt", "content": "x\n"} for i in range(30)]
    async with connect(ws, approval="auto", result_budget=budget) as c:
        r = await call(c, "ApplyPatch", changes=changes)
    assert not r.is_error, text(r)
    lines = blocks(r)[0].split("\n")
    assert lines[:fit] == [f"- added `f{i:02d}.txt`: 2 bytes, lines +1 -0." for i in range(fit)]
    assert lines[fit:-1] == [
        f"… and {30 - fit} more files, written too (`filegate history` lists them).",
        "Applied 30 file changes as one write.",
    ]
    assert len(tree(ws)) == 30


# --- a set refused whole ---------------------------------------------------------------------


async def test_a_set_without_the_history_is_refused_in_words(ws: Path) -> None:
    (ws / "a.txt").write_text("a\n")
    async with connect(ws, approval="auto", read_guard=False, history="off") as c:
        r = await call(c, "ApplyPatch", changes=[{"path": "a.txt", "content": "b\n"}])
    assert r.is_error
    assert text(r) == (
        "ApplyPatch needs the write history (`--history off` turns it off): a set is restored from it "
        "after a failure or a crash. Nothing was written."
    )
    assert (ws / "a.txt").read_text() == "a\n"


async def test_patch_and_changes_together_are_refused_in_words(ws: Path) -> None:
    async with connect(ws, approval="auto") as c:
        r = await call(
            c, "ApplyPatch", patch=patch("*** Add File: a.txt", "+a"), changes=[{"path": "b", "content": ""}]
        )
    assert r.is_error
    assert text(r) == (
        "Give either `patch` (the `*** Begin Patch` envelope) or `changes` (a list of file changes): "
        "one of them, not both. Nothing was written."
    )
    assert tree(ws) == {}


MIB = 1 << 20


@pytest.mark.parametrize("move", [False, True])
async def test_a_set_whose_files_hold_more_than_its_bound_is_refused_before_any_is_read(
    ws: Path, move: bool
) -> None:
    """128 MiB of files at most per set, a move's source counted too: sparse files stand in
    for large ones (no disk used); the set is refused on their sizes, nothing read."""
    for name, size in (("big.bin", 100 * MIB), ("more.bin", 28 * MIB + 1)):
        (ws / name).touch()
        os.truncate(ws / name, size)
    other = {"path": "more.bin", "move_to": "moved.bin"} if move else {"path": "more.bin", "delete": True}
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(c, "ApplyPatch", changes=[{"path": "big.bin", "delete": True}, other])
    assert r.is_error
    assert text(r) == (
        f"The set's files hold {128 * MIB + 1} bytes; one set changes at most {128 * MIB} bytes of "
        "files. Split it into several calls. Nothing was written."
    )
    assert sorted(tree(ws)) == ["big.bin", "more.bin"]


async def test_a_set_of_exactly_its_bound_is_previewed(ws: Path) -> None:
    """The bound itself is allowed (two sparse files, 128 MiB in all, and a new one, previewed:
    read, not written)."""
    for name, size in (("big.bin", 100 * MIB), ("more.bin", 28 * MIB)):
        (ws / name).touch()
        os.truncate(ws / name, size)
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(
            c,
            "ApplyPatch",
            changes=[
                {"path": "big.bin", "delete": True},
                {"path": "more.bin", "move_to": "moved.bin"},
                {"path": "n.txt", "content": "a new file adds nothing to the bound\n"},
            ],
            dry_run=True,
        )
    assert not r.is_error, text(r)
    assert f"deletes a binary file of {100 * MIB:,} bytes (not shown)".replace(",", "") in text(r)
    assert sorted(tree(ws)) == ["big.bin", "more.bin"]


NOTEBOOK = json.dumps(
    {
        "cells": [
            {
                "cell_type": "code",
                "source": ["x = 1\n"],
                "metadata": {},
                "outputs": [],
                "execution_count": None,
            }
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
)


@pytest.mark.parametrize(
    "hunk",
    [
        ["@@ x = 1", "-x = 1", "+x = 2"],  # an anchor
        ["@@", "-x = 1", "+x = 2", "*** End of File"],  # at the file's end
        ["@@", "+y = 0"],  # lines added with no old line to find
    ],
)
async def test_a_hunk_that_narrows_by_position_is_refused_on_a_notebook(ws: Path, hunk: list[str]) -> None:
    (ws / "n.ipynb").write_text(NOTEBOOK)
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(c, "ApplyPatch", patch=patch("*** Update File: n.ipynb", *hunk))
    assert r.is_error
    assert text(r) == (
        "`n.ipynb` is a notebook: its cells are edited with `changes` edits (old/new text from a "
        "cell), not with `@@` hunks. Nothing was written."
    )
    assert (ws / "n.ipynb").read_text() == NOTEBOOK


async def test_a_plain_hunk_on_a_notebook_is_an_edit_of_its_cell(ws: Path) -> None:
    (ws / "n.ipynb").write_text(NOTEBOOK)
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(c, "ApplyPatch", patch=patch("*** Update File: n.ipynb", "@@", "-x = 1", "+x = 2"))
    assert not r.is_error, text(r)
    assert json.loads((ws / "n.ipynb").read_text())["cells"][0]["source"] == ["x = 2\n"]


# --- asking ----------------------------------------------------------------------------------


async def test_a_move_onto_a_path_under_an_ask_rule_is_asked_even_under_auto(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Path(os.path.realpath(tmp_path)) / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"ask": ["Write(/asked.txt)"]}}))
    (ws / "free.txt").write_text("free\n")
    answers = Answers("reject")
    async with connect(ws, approval="auto", read_guard=False, client_elicitation_handler=answers) as c:
        r = await call(c, "ApplyPatch", changes=[{"path": "free.txt", "move_to": "asked.txt"}])
    assert r.is_error and "rejected by the user" in text(r)
    (question,) = answers.messages
    assert question.startswith(
        "Inside the workspace, ASKED about always: `asked.txt` is under an `ask` rule: "
    )
    assert (ws / "free.txt").read_text() == "free\n" and not (ws / "asked.txt").exists()


@pytest.mark.parametrize(
    ("change", "shown"),
    [
        ({"path": "u.txt", "content": "safe\u202e\n"}, "+safe\\u202e"),  # written
        ({"path": "bidi.txt", "delete": True}, "-evil\\u202e"),  # deleted: among its first lines
        ({"path": "u.txt", "move_to": "w.txt", "edits": [{"old": "safe", "new": "s\u202e"}]}, "+s\\u202e"),
        ({"path": "bidi.txt", "move_to": "u.txt"}, "-safe"),  # over an existing file: its diff
    ],
)
async def test_a_set_with_an_invisible_character_says_so_in_its_question(
    ws: Path, change: dict[str, Any], shown: str
) -> None:
    """SPEC §2.9: a question whose shown lines hold characters shown escaped says so on its
    second line, as a single write's does; a set of harmless files does not."""
    (ws / "u.txt").write_text("safe\n")
    (ws / "bidi.txt").write_text("evil\u202e\n")
    answers = Answers("approve")
    async with connect(ws, "legacy", read_guard=False, client_elicitation_handler=answers) as c:
        r = await call(c, "ApplyPatch", changes=[change, {"path": "v.txt", "content": "v\n"}])
        assert not r.is_error, text(r)
        r = await call(c, "ApplyPatch", changes=[{"path": "v.txt", "content": "plain\n"}])
    assert not r.is_error, text(r)
    lines = answers.messages[0].split("\n")
    assert lines[1].startswith("Note: this change contains control, bidirectional")
    assert shown in lines
    assert not answers.messages[1].split("\n")[1].startswith("Note:")


async def test_each_file_written_in_a_codec_other_than_utf8_is_named_in_the_first_line(ws: Path) -> None:
    (ws / ".editorconfig").write_text("root = true\n[*.txt]\ncharset = latin1\n")
    (ws / "a.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (ws / "b.txt").write_bytes("\xe9t\xe9\n".encode("latin-1"))
    answers = Answers("approve")
    async with connect(ws, "legacy", read_guard=False, client_elicitation_handler=answers) as c:
        r = await call(
            c,
            "ApplyPatch",
            changes=[
                {"path": "a.txt", "edits": [{"old": "café", "new": "thé"}]},
                {"path": "b.txt", "edits": [{"old": "été", "new": "hiver"}]},
                {"path": "c.md", "content": "plain\n"},
            ],
        )
    assert not r.is_error, text(r)
    first = answers.messages[0].split("\n")[0]
    assert first.endswith(
        "(2 modified, 1 added); `a.txt` encoded in latin1 (from .editorconfig), "
        "`b.txt` encoded in latin1 (from .editorconfig)."
    ), first
    assert (ws / "a.txt").read_bytes() == "th\xe9\n".encode("latin-1")


# --- the diff's share of the question --------------------------------------------------------


def changed(ws: Path, name: str, n: int, kept: int = 0) -> dict[str, Any]:
    """A file of ``n`` lines then ``kept`` more, and a change of its first ``n``: a diff of
    2n + 3 rows, plus one context row when a line is kept."""
    body = "".join(f"{name} {k}\n" for k in range(n))
    tail = "".join(f"kept {k}\n" for k in range(kept))
    (ws / name).write_text(body + tail)
    return {"path": name, "content": body.upper() + tail}


@pytest.mark.parametrize(("files", "share"), [(6, 40), (40, 8)])
async def test_each_files_diff_gets_its_share_of_the_question(ws: Path, files: int, share: int) -> None:
    """240 diff lines for a set, at least 8 a file: each file's diff (63 rows here) is cut
    after its share past its two header lines, and says how many lines it left out."""
    changes = [changed(ws, f"f{i:02d}.txt", 30) for i in range(files)]
    async with connect(ws, read_guard=False) as c:
        r = await call(c, "ApplyPatch", changes=changes, dry_run=True)
    shown = blocks(r)[0].split("\nPreview (dry_run)")[0]
    left = 63 - (share + 2)
    assert shown.count(f"… {left} more lines of this file's change not shown") == files
    block = shown.split("--- a/f01.txt\n")[1].split("\n")
    assert block[share + 1] == f"… {left} more lines of this file's change not shown"


@pytest.mark.parametrize(("n", "kept", "cut"), [(11, 1, False), (12, 0, True)])
async def test_a_diff_that_fits_its_share_is_shown_whole(ws: Path, n: int, kept: int, cut: bool) -> None:
    """Ten files: 24 rows each past their two headers. A diff of 26 rows is shown whole; one of
    27 is cut, 1 more line."""
    changes = [changed(ws, f"f{i}.txt", n, kept) for i in range(10)]
    async with connect(ws, read_guard=False) as c:
        r = await call(c, "ApplyPatch", changes=changes, dry_run=True)
    said = blocks(r)[0]
    assert said.count("of this file's change not shown") == (10 if cut else 0)
    assert said.count("… 1 more line of this file's change not shown") == (10 if cut else 0)
    assert said.count("+F0.TXT 10") == 1 and said.count(" kept 0") == (0 if cut else 10)


# --- the mode a set leaves -------------------------------------------------------------------


async def test_a_moved_setuid_file_keeps_its_permissions_but_not_setuid(ws: Path) -> None:
    (ws / "tool").write_text("#!/bin/sh\n")
    (ws / "tool").chmod(0o6755)
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(c, "ApplyPatch", changes=[{"path": "tool", "move_to": "bin/tool"}])
    assert not r.is_error, text(r)
    assert stat.S_IMODE((ws / "bin" / "tool").stat().st_mode) == 0o755


# --- the audit log ---------------------------------------------------------------------------


async def test_the_audit_log_has_a_line_for_each_file_a_set_wrote_or_removed(
    ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (ws / "a.txt").write_text("a\n")
    (ws / "b.txt").write_text("b\n")
    caplog.set_level(logging.INFO, logger="filegate.writes")
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(
            c,
            "ApplyPatch",
            changes=[
                {"path": "a.txt", "content": "A\n"},
                {"path": "b.txt", "move_to": "c.txt"},
                {"path": "d.txt", "content": "dd\n"},
            ],
        )
    set_id = write_id_of(text(r))
    tail = f"(set {set_id}; inside workspace, approval: auto); client: fastmcp"
    assert sorted(rec.getMessage() for rec in caplog.records if rec.name == "filegate.writes") == sorted(
        [
            f"ApplyPatch wrote 2 bytes to {ws / 'a.txt'} {tail}",
            f"ApplyPatch wrote 2 bytes to {ws / 'c.txt'} {tail}",
            f"ApplyPatch removed {ws / 'b.txt'} {tail}",
            f"ApplyPatch wrote 3 bytes to {ws / 'd.txt'} {tail}",
        ]
    )


async def test_the_audit_log_says_a_rejected_set_was_not_written(
    ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (ws / "a.txt").write_text("a\n")
    caplog.set_level(logging.INFO, logger="filegate.writes")
    async with connect(ws, "legacy", read_guard=False, client_elicitation_handler=Answers("reject")) as c:
        r = await call(
            c, "ApplyPatch", changes=[{"path": "a.txt", "delete": True}, {"path": "b", "content": "b"}]
        )
    assert r.is_error
    assert [rec.getMessage() for rec in caplog.records if rec.name == "filegate.writes"] == [
        "ApplyPatch did not write a set of 2 files (approval: elicited)"
    ]
    assert tree(ws) == {"a.txt": b"a\n"}


# --- an answer binds the set it was asked about (2026-07-28) ---------------------------------


def _approve() -> dict[str, Any]:
    return {"approval": WireElicitResult(action="accept", content={"decision": "approve"})}


ASKED = [{"path": "a.txt", "content": "A\n"}, {"path": "b.txt", "delete": True}]


async def test_an_answer_approves_only_the_set_it_was_asked_about(ws: Path) -> None:
    """A client's retry carries the sealed question back with its answer: a retry naming
    another set is refused (the SDK binds the state to the call's arguments; the set's own
    hashes bind it to the files as they were), nothing is written, and the set asked about
    lands with that answer."""
    for name in ("a.txt", "b.txt"):
        (ws / name).write_text("same\n")
    async with connect(ws, "auto", read_guard=False, client_elicitation_handler=Answers()) as c:
        asked = await c.session.call_tool(
            name="ApplyPatch", arguments={"changes": ASKED}, allow_input_required=True
        )
        assert isinstance(asked, InputRequiredResult) and asked.request_state
        with pytest.raises(MCPError, match="requestState"):
            await c.session.call_tool(
                name="ApplyPatch",
                arguments={"changes": [{"path": "a.txt", "content": "EVIL\n"}, ASKED[1]]},
                input_responses=_approve(),
                request_state=asked.request_state,
                allow_input_required=True,
            )
        assert tree(ws) == {"a.txt": b"same\n", "b.txt": b"same\n"}
        done = await c.session.call_tool(
            name="ApplyPatch",
            arguments={"changes": ASKED},
            input_responses=_approve(),
            request_state=asked.request_state,
            allow_input_required=True,
        )
    assert not isinstance(done, InputRequiredResult) and not done.is_error, done
    assert tree(ws) == {"a.txt": b"A\n"}


# --- the load budget -------------------------------------------------------------------------


async def test_every_set_gives_its_share_of_the_load_budget_back(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A set holds each file's old content (a move's source too) from the budget of whole-file
    loads while it is prepared: a budget of this test's own, room for the set's files and no
    more, is free again after each call however it ended (a refusal, a preview, a rejection, a
    set that landed), or every later load of the process would wait and be refused as busy."""
    from filegate.fsio import loads
    from filegate.media.bounds import MemoryGate

    gate = MemoryGate(None, 1 << 20, loads.LOADS.busy)
    monkeypatch.setattr(loads, "LOADS", gate)
    monkeypatch.setattr(loads, "LOAD_WAIT_S", 0.2)
    body = b"a line\n" * 40_000  # 280 kB
    for name in ("a.txt", "b.txt", "c.txt"):
        (ws / name).write_bytes(body)
    edit = {"path": "a.txt", "edits": [{"old": "a line\n" * 3, "new": "x\n"}]}  # ambiguous: refused
    move = {"path": "b.txt", "move_to": "d.txt", "edits": [{"old": "a line\n" * 39_999, "new": ""}]}
    overwrite = {"path": "c.txt", "content": "c\n"}
    calls = [
        ("legacy", "approve", {"changes": [edit, overwrite]}),
        ("legacy", "approve", {"changes": [move, overwrite], "dry_run": True}),
        ("legacy", "reject", {"changes": [move, overwrite]}),
        ("auto", "reject", {"changes": [move, overwrite]}),
        ("auto", "approve", {"changes": [move, overwrite]}),
    ]
    for mode, decision, args in calls:
        async with connect(ws, mode, read_guard=False, client_elicitation_handler=Answers(decision)) as c:
            r = await call(c, "ApplyPatch", **args)
        assert "busy" not in text(r), text(r)
        assert (gate.running, gate.held) == (0, 0), (mode, decision, args, "kept its share", text(r))
    assert not r.is_error, text(r)
    assert tree(ws) == {"a.txt": body, "c.txt": b"c\n", "d.txt": b"a line\n"}


async def test_a_deleted_files_first_lines_are_shown_in_its_own_encoding(ws: Path) -> None:
    """The codec its BOM names (else UTF-8), its line endings left out."""
    (ws / "latin.txt").write_bytes("café\r\nthé\r\n".encode())  # CRLF: the CR is no part of a line
    (ws / "wide.txt").write_bytes("\ufeffwide one\nwide two\n".encode("utf-16-le"))
    async with connect(ws, read_guard=False) as c:
        r = await call(
            c,
            "ApplyPatch",
            changes=[{"path": "latin.txt", "delete": True}, {"path": "wide.txt", "delete": True}],
            dry_run=True,
        )
    shown = blocks(r)[0].split("\nPreview (dry_run)")[0].split("\n")
    assert shown == [
        "--- a/latin.txt",
        "+++ /dev/null",
        "deletes 13 bytes, 2 lines; its first lines:",
        "-café",
        "-thé",
        "--- a/wide.txt",
        "+++ /dev/null",
        "deletes 38 bytes, 2 lines; its first lines:",
        "-wide one",
        "-wide two",
    ]


async def test_the_audit_log_says_a_set_failed_and_why(ws: Path, caplog: pytest.LogCaptureFixture) -> None:
    (ws / "big.txt").write_bytes(b"big line\n" * 300)
    caplog.set_level(logging.INFO, logger="filegate.writes")
    async with connect(ws, approval="auto", read_guard=False, history_max_bytes=1000) as c:
        r = await call(
            c,
            "ApplyPatch",
            changes=[{"path": "new.md", "content": "x\n"}, {"path": "big.txt", "delete": True}],
        )
    assert r.is_error
    assert [rec.getMessage() for rec in caplog.records if rec.name == "filegate.writes"] == [
        "ApplyPatch failed to write a set of 2 files: Failed to keep the previous content in the write "
        "history (the previous content of \\x60big.txt\\x60 is larger than --history-max-bytes). Nothing in the "
        "set was written."
    ]
    assert sorted(tree(ws)) == ["big.txt"]


# --- the read guard's words, and ask rules, for each kind of change ---------------------------


@pytest.mark.parametrize(
    ("change", "verb"),
    [
        ({"path": "f.txt", "edits": [{"old": "f", "new": "g"}]}, "edit"),
        ({"path": "f.txt", "delete": True}, "delete"),
        ({"path": "f.txt", "content": "g\n"}, "overwrite"),
        ({"path": "other.txt", "move_to": "f.txt"}, "overwrite"),  # a move onto it
    ],
)
async def test_a_change_of_a_file_not_read_names_the_read_and_the_change(
    ws: Path, change: dict[str, Any], verb: str
) -> None:
    (ws / "f.txt").write_text("f\n")
    (ws / "other.txt").write_text("other\n")
    async with connect(ws, approval="auto") as c:
        unread = await call(c, "ApplyPatch", changes=[change])
        await read_all(c, "f.txt")
        (ws / "f.txt").write_text("changed since\n")
        changed = await call(c, "ApplyPatch", changes=[change])
    assert text(unread) == (
        '`f.txt` has not been read in this session: read it first with ReadFile(path="f.txt") (any window '
        f"of it counts), then {verb} it. Nothing was written."
    )
    if verb == "edit":  # SPEC §8.3: an edit is refused only where it meets the change
        assert text(changed).startswith("`f.txt` changed on disk since it was read (now different: line 1)")
    else:
        assert text(changed) == (
            f'`f.txt` changed since it was read: read it again with ReadFile(path="f.txt") before you '
            f"{verb} it. Nothing was written."
        )
    assert tree(ws) == {"f.txt": b"changed since\n", "other.txt": b"other\n"}


@pytest.mark.parametrize(
    "change",
    [
        {"path": "asked.txt", "edits": [{"old": "old", "new": "new"}]},
        {"path": "asked.txt", "delete": True},
        {"path": "asked.txt", "move_to": "elsewhere.txt"},
        {"path": "free.txt", "move_to": "asked.txt"},
        {"path": "free.txt", "move_to": "asked.txt", "edits": [{"old": "free", "new": "freed"}]},
    ],
)
async def test_a_set_touching_a_file_under_an_ask_rule_is_asked_even_under_auto(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: dict[str, Any]
) -> None:
    home = Path(os.path.realpath(tmp_path)) / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    (ws / ".claude").mkdir()
    rules = {"permissions": {"ask": ["Edit(/asked.txt)", "Write(/asked.txt)"]}}
    (ws / ".claude" / "settings.json").write_text(json.dumps(rules))
    (ws / "asked.txt").write_text("old\n")
    (ws / "free.txt").write_text("free\n")
    before = tree(ws)
    answers = Answers("reject")
    async with connect(ws, approval="auto", read_guard=False, client_elicitation_handler=answers) as c:
        r = await call(c, "ApplyPatch", changes=[change, {"path": "new.txt", "content": "n\n"}])
    assert r.is_error and "rejected by the user" in text(r), text(r)
    (question,) = answers.messages
    # The file the rule covers is named, whichever end of a move it is.
    assert question.startswith(
        "Inside the workspace, ASKED about always: `asked.txt` is under an `ask` rule: "
    )
    assert tree(ws) == before


@pytest.mark.parametrize("move", [False, True])
async def test_a_client_that_cannot_be_asked_is_told_which_file_of_the_set_is_outside(
    ws: Path, outside: Path, mode: str, move: bool
) -> None:
    """The refusal names the file outside the workspace (a file written there, or a move's
    source), and the folder to add is that file's, not the workspace."""
    far = outside / "far.txt"
    if move:
        far.write_text("far\n")
    change = {"path": str(far), "move_to": "near.txt"} if move else {"path": str(far), "content": "y\n"}
    async with connect(ws, mode, read_guard=False) as c:  # no elicitation handler
        r = await call(c, "ApplyPatch", changes=[{"path": "x.txt", "content": "x\n"}, change])
    assert r.is_error
    assert text(r) == (
        f"`{far}` is outside the workspace; writing there needs the user's approval, and this client "
        "cannot be asked (it does not support MCP elicitation). Nothing was written. To allow it, the "
        f"user can start filegate with `--add-dir {outside}` (to add that directory to the workspace) "
        "or with `--approval auto`."
    )
    assert not (ws / "x.txt").exists() and far.exists() == move


# --- an edit's options in a set --------------------------------------------------------------


async def test_a_sets_edit_keeps_replace_all_and_exact_match(ws: Path) -> None:
    (ws / "a.txt").write_text("x = 1\nx = 1\n")
    (ws / "b.txt").write_text(
        "say(\u201chi\u201d)\n"
    )  # a tolerant match finds `say("hi")` here; an exact one does not
    async with connect(ws, approval="auto", read_guard=False) as c:
        exact = await call(
            c,
            "ApplyPatch",
            changes=[{"path": "b.txt", "edits": [{"old": 'say("hi")', "new": "y = 3", "match": "exact"}]}],
        )
        both = await call(
            c,
            "ApplyPatch",
            changes=[
                {"path": "a.txt", "edits": [{"old": "x = 1", "new": "x = 2", "replace_all": True}]},
                {"path": "b.txt", "edits": [{"old": 'say("hi")', "new": "y = 3"}]},
            ],
        )
    assert exact.is_error and "was not found in `b.txt`" in text(exact), text(exact)
    assert not both.is_error, text(both)
    assert blocks(both)[0].startswith("- modified `a.txt`: 1 edit, 2 replacements, lines +2 -2.\n"), blocks(
        both
    )
    assert tree(ws) == {"a.txt": b"x = 2\nx = 2\n", "b.txt": b"y = 3\n"}


async def test_a_move_onto_a_file_it_replaces_says_so_in_its_line(ws: Path) -> None:
    (ws / "a.txt").write_text("a\n")
    (ws / "b.txt").write_text("b\n")
    async with connect(ws, approval="auto") as c:
        await read_all(c, "b.txt")
        r = await call(c, "ApplyPatch", changes=[{"path": "a.txt", "move_to": "b.txt"}])
    assert not r.is_error, text(r)
    assert blocks(r)[0].split("\n")[0] == "- moved `a.txt` → `b.txt` (it replaced the existing `b.txt`)."
    assert tree(ws) == {"b.txt": b"a\n"}


async def test_after_a_set_its_files_count_as_read_with_their_lines(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every file the set wrote counts as read as it left it, whatever came before it in the set
    (a delete, a content the file already held), with its line index: an edit away from a line
    someone changed since still lands (SPEC §8.3). A file the set left as it was is still one
    the model read: a change to it since is told."""
    monkeypatch.setattr(ledger, "NOTICE_INTERVAL_S", 0.0)
    body = "".join(f"line {k}\n" for k in range(1, 31))
    (ws / "gone.txt").write_text("gone\n")
    (ws / "same.txt").write_text("same\n")
    (ws / "f.txt").write_text(body)
    async with connect(ws, "legacy", approval="auto") as c:
        await read_all(c, "gone.txt", "same.txt", "f.txt")
        r = await call(
            c,
            "ApplyPatch",
            changes=[
                {"path": "gone.txt", "delete": True},
                {"path": "same.txt", "content": "same\n"},
                {"path": "f.txt", "edits": [{"old": "line 3\n", "new": "line three\n"}]},
            ],
        )
        assert not r.is_error, text(r)
        (ws / "f.txt").write_text((ws / "f.txt").read_text().replace("line 28\n", "line 28 (reformatted)\n"))
        (ws / "same.txt").write_text("changed by someone\n")
        edit = await call(c, "StrReplaceFile", path="f.txt", edit={"old": "line 2\n", "new": "line two\n"})
    assert not edit.is_error, text(edit)
    said = blocks(edit)[0]
    assert "`f.txt` changed on disk since it was read (now different: line 28)" in said
    assert said.split("\n")[-1] == "Changed on disk since you read them: same.txt."
    assert (ws / "f.txt").read_text().startswith("line 1\nline two\nline three\n")


async def test_a_file_a_set_wrote_at_the_line_index_bound_keeps_its_lines(ws: Path) -> None:
    """2 MiB, the largest file whose lines the read guard keeps (INDEX_MAX_BYTES): after the set
    an edit away from a line someone changed since still lands."""
    from filegate.tools.readguard.ledger import INDEX_MAX_BYTES

    lines = [f"line {k:010d}\n" for k in range(INDEX_MAX_BYTES // 16)]
    (ws / "f.txt").write_text("".join(lines))
    assert (ws / "f.txt").stat().st_size == INDEX_MAX_BYTES
    async with connect(ws, "legacy", approval="auto") as c:
        await read_all(c, "f.txt")
        r = await call(
            c,
            "ApplyPatch",
            changes=[{"path": "f.txt", "edits": [{"old": lines[3], "new": lines[3].upper()}]}],
        )
        assert not r.is_error, text(r)
        with (ws / "f.txt").open("r+b") as f:  # someone changes a line far from the edit
            f.seek(16 * 100_000)
            f.write(b"LINE")
        edit = await call(c, "StrReplaceFile", path="f.txt", edit={"old": lines[2], "new": "two\n"})
    assert not edit.is_error, text(edit)
    assert "`f.txt` changed on disk since it was read (now different: line 100001)" in text(edit)


async def test_the_audit_log_says_which_files_of_a_set_are_outside_the_workspace(
    ws: Path, outside: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="filegate.writes")
    far = outside / "far.txt"
    async with connect(ws, "legacy", read_guard=False, client_elicitation_handler=Answers("approve")) as c:
        r = await call(
            c,
            "ApplyPatch",
            changes=[{"path": "in.txt", "content": "i\n"}, {"path": str(far), "content": "far\n"}],
        )
    set_id = write_id_of(text(r))
    assert sorted(rec.getMessage() for rec in caplog.records if rec.name == "filegate.writes") == [
        f"ApplyPatch wrote 2 bytes to {ws / 'in.txt'} (set {set_id}; inside workspace, approval: elicited); "
        "client: fastmcp",
        f"ApplyPatch wrote 4 bytes to {far} (set {set_id}; outside workspace, approval: elicited); "
        "client: fastmcp",
    ]


async def test_the_undo_of_a_set_lists_each_file_it_restores_or_removes(ws: Path) -> None:
    (ws / "kept.txt").write_text("kept\n")
    (ws / "gone.txt").write_text("gone one\ngone two\n")
    answers = Answers("approve")
    async with connect(ws, "legacy", read_guard=False, client_elicitation_handler=answers) as c:
        r = await call(
            c,
            "ApplyPatch",
            changes=[
                {"path": "kept.txt", "content": "KEPT\n"},
                {"path": "gone.txt", "delete": True},
                {"path": "new/made.txt", "content": "made\n"},
            ],
        )
        u = await call(c, "UndoWrite", write_id=write_id_of(text(r)))
    assert not u.is_error, text(u)
    listed = answers.messages[1].split("\n\n")[0].split("\n")[1:]
    assert sorted(listed) == [
        "- removed `new/made.txt` (5 bytes)",
        "- restored `gone.txt` (18 bytes, +2 lines)",
        "- restored `kept.txt` (+1 -1 lines)",
    ]
    assert tree(ws) == {"gone.txt": b"gone one\ngone two\n", "kept.txt": b"kept\n"}


async def test_an_edit_of_a_file_that_is_not_text_is_refused_naming_apply_patch(ws: Path) -> None:
    (ws / "a.bin").write_bytes(b"\x00\x01\x02binary")
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(c, "ApplyPatch", changes=[{"path": "a.bin", "edits": [{"old": "binary", "new": "x"}]}])
    assert r.is_error
    assert text(r).startswith(
        "`a.bin` is not a text file (application/octet-stream); ApplyPatch only edits text files."
    )
    assert (ws / "a.bin").read_bytes() == b"\x00\x01\x02binary"


async def test_an_anchor_picks_which_of_two_same_lines_a_hunk_changes(ws: Path) -> None:
    (ws / "f.py").write_text("def a():\n    x = 1\n\ndef b():\n    x = 1\n")
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(
            c, "ApplyPatch", patch=patch("*** Update File: f.py", "@@ def b():", "-    x = 1", "+    x = 2")
        )
    assert not r.is_error, text(r)
    assert (ws / "f.py").read_text() == "def a():\n    x = 1\n\ndef b():\n    x = 2\n"


async def test_a_notebook_cell_edit_in_a_set_keeps_replace_all_and_exact_match(ws: Path) -> None:
    cell = {"cell_type": "code", "source": ["x = 1\n", "x = 1\n", "say(\u201chi\u201d)\n"], "metadata": {}}
    nb = {
        "cells": [{**cell, "outputs": [], "execution_count": None}],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (ws / "n.ipynb").write_text(json.dumps(nb))
    async with connect(ws, approval="auto", read_guard=False) as c:
        exact = await call(
            c,
            "ApplyPatch",
            changes=[{"path": "n.ipynb", "edits": [{"old": 'say("hi")', "new": "y", "match": "exact"}]}],
        )
        r = await call(
            c,
            "ApplyPatch",
            changes=[{"path": "n.ipynb", "edits": [{"old": "x = 1", "new": "x = 2", "replace_all": True}]}],
        )
    assert exact.is_error, text(exact)
    assert not r.is_error, text(r)
    assert json.loads((ws / "n.ipynb").read_text())["cells"][0]["source"] == [
        "x = 2\n",
        "x = 2\n",
        "say(\u201chi\u201d)\n",
    ]


@pytest.mark.parametrize(("n", "more"), [(10, []), (11, ["… 1 more line"])])
async def test_a_deleted_file_shows_its_first_ten_lines_and_counts_the_rest(
    ws: Path, n: int, more: list[str]
) -> None:
    (ws / "f.txt").write_text("".join(f"l{k}\n" for k in range(n)))
    async with connect(ws, read_guard=False) as c:
        r = await call(c, "ApplyPatch", changes=[{"path": "f.txt", "delete": True}], dry_run=True)
    shown = blocks(r)[0].split("\nPreview (dry_run)")[0].split("\n")
    assert shown[3:] == [f"-l{k}" for k in range(10)] + more


async def test_the_questions_list_says_a_move_replaces_an_existing_file(ws: Path) -> None:
    (ws / "a.txt").write_text("a\n")
    (ws / "b.txt").write_text("b\n")
    answers = Answers("approve")
    async with connect(ws, "legacy", read_guard=False, client_elicitation_handler=answers) as c:
        r = await call(c, "ApplyPatch", changes=[{"path": "a.txt", "move_to": "b.txt"}])
    assert not r.is_error, text(r)
    assert answers.messages[0].split("\n")[:2] == [
        "Inside the workspace: ApplyPatch wants to change 1 file as one write (1 moved).",
        "- moved `a.txt` → `b.txt`, over the existing `b.txt`",
    ]


async def test_a_set_of_binary_files_has_no_warning_of_escaped_characters(ws: Path) -> None:
    """A binary file is described by its size, never shown: nothing in the question is escaped."""
    for name in ("a.bin", "b.bin", "c.bin", "d.bin"):
        (ws / name).write_bytes(b"\x00\x01\x02" + name.encode())
    answers = Answers("approve")
    async with connect(ws, "legacy", read_guard=False, client_elicitation_handler=answers) as c:
        r = await call(
            c,
            "ApplyPatch",
            changes=[
                {"path": "a.bin", "delete": True},
                {"path": "b.bin", "move_to": "c.bin"},
                {"path": "d.bin", "content": "text now\n"},
            ],
        )
    assert not r.is_error, text(r)
    lines = answers.messages[0].split("\n")
    assert lines[1] == "- deleted `a.bin` (8 bytes)", lines


# --- what the mutation run of issue 55 found untested ----------------------------------------


@pytest.mark.parametrize("move", [False, True])
async def test_each_of_a_files_notes_is_its_own_sentence_in_the_answer(
    ws: Path, mode: str, move: bool
) -> None:
    """A CRLF file in a codec that is not UTF-8, edited with LF text: two notes on its line
    (its line endings, its codec), one after the other; an edited move's notes are its source's."""
    (ws / ".editorconfig").write_text("root = true\n[*.txt]\ncharset = latin1\n")
    (ws / "a.txt").write_bytes("caf\xe9\r\nth\xe9\r\n".encode("latin-1"))
    change: dict[str, Any] = {"path": "a.txt", "edits": [{"old": "café\nthé", "new": "café\nchocolat"}]}
    if move:
        change["move_to"] = "b.txt"
    async with connect(ws, mode, approval="auto", read_guard=False) as c:
        r = await call(c, "ApplyPatch", changes=[change])
    assert not r.is_error, text(r)
    what = "moved `a.txt` → `b.txt`" if move else "modified `a.txt`"
    assert blocks(r)[0].split("\n")[0] == (
        f"- {what}: 1 edit, 1 replacement, lines +1 -1. Line endings: the file uses CRLF (\\r\\n); "
        "edit 1 matched and written with CRLF. Encoding: latin1 (from .editorconfig); written in it."
    )
    assert sorted(tree(ws)) == [".editorconfig", "b.txt" if move else "a.txt"]
    assert (ws / ("b.txt" if move else "a.txt")).read_bytes() == b"caf\xe9\r\nchocolat\r\n"


async def test_a_moved_and_edited_files_diff_is_cut_to_its_share_of_the_question(ws: Path, mode: str) -> None:
    """A file moved with every one of its 130 lines changed, and three files added: its block
    (the move's line, then its diff as a single write's question shows it, 83 rows) is cut after
    its share of a set of four (60 rows) and two more, and says how many rows it left out."""
    body = "".join(f"line {k}\n" for k in range(130))
    (ws / "a.txt").write_text(body)
    changes = [
        {"path": "a.txt", "move_to": "b.txt", "edits": [{"old": body, "new": body.upper()}]},
        *({"path": f"new{k}.txt", "content": "n\n"} for k in range(3)),
    ]
    async with connect(ws, mode, read_guard=False) as c:
        r = await call(c, "ApplyPatch", changes=changes, dry_run=True)
    assert not r.is_error, text(r)
    shown = blocks(r)[0].split("\nPreview (dry_run)")[0].split("\n")
    block = shown[: shown.index("--- a/new0.txt")]
    assert block[:5] == [
        "moves `a.txt` → `b.txt`",
        "--- a/a.txt",
        "+++ b/a.txt",
        "@@ -1,130 +1,130 @@",
        "-line 0",
    ]
    assert len(block) == 63
    assert block[-1] == "… 22 more lines of this file's change not shown"
    assert tree(ws) == {"a.txt": body.encode()}


async def test_a_client_that_gives_no_name_is_logged_as_a_dash_for_each_file_of_a_set(
    ws: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="filegate.writes")
    nameless = Implementation(name="", version="0")
    async with connect(ws, mode, approval="auto", client_client_info=nameless) as c:
        r = await call(c, "ApplyPatch", changes=[{"path": "a.txt", "content": "a\n"}])
    assert not r.is_error, text(r)
    assert [rec.getMessage() for rec in caplog.records if rec.name == "filegate.writes"] == [
        f"ApplyPatch wrote 2 bytes to {ws / 'a.txt'} (set {write_id_of(text(r))}; inside workspace, "
        "approval: auto); client: -"
    ]


async def test_a_file_a_set_wrote_is_named_by_no_change_notice_after(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SPEC §8.3: the notice names files this session read and did not write since. After a
    set wrote a.txt (read before), someone changes it and b.txt (read, not written): the next
    call's notice names b.txt only, as after a single write."""
    monkeypatch.setattr(ledger, "NOTICE_INTERVAL_S", 0.0)
    for name in ("a.txt", "b.txt", "c.txt"):
        (ws / name).write_text(f"{name}\n")
    async with connect(ws, "legacy", approval="auto") as c:  # notices are the handshake era's
        await read_all(c, "a.txt", "b.txt", "c.txt")
        r = await call(c, "ApplyPatch", changes=[{"path": "a.txt", "content": "A\n"}])
        assert not r.is_error, text(r)
        (ws / "a.txt").write_text("changed by someone\n")
        (ws / "b.txt").write_text("changed by someone\n")
        after = await call(c, "ReadFile", path="c.txt")
    assert blocks(after)[0].split("\n")[-1] == "Changed on disk since you read them: b.txt."


async def test_a_deleted_file_that_is_not_valid_utf8_shows_its_first_lines_as_read_file_does(
    ws: Path, mode: str
) -> None:
    """Its bytes that are not UTF-8 shown as U+FFFD (ReadFile's own words for them), not an
    error: the question and the preview still show what goes."""
    (ws / "a.txt").write_bytes(b"caf\xe9 au lait\nline two\n")
    async with connect(ws, mode, read_guard=False) as c:
        r = await call(c, "ApplyPatch", changes=[{"path": "a.txt", "delete": True}], dry_run=True)
    assert not r.is_error, text(r)
    assert blocks(r)[0].split("\nPreview (dry_run)")[0].split("\n") == [
        "--- a/a.txt",
        "+++ /dev/null",
        "deletes 22 bytes, 2 lines; its first lines:",
        "-caf\ufffd au lait",
        "-line two",
    ]
    assert tree(ws) == {"a.txt": b"caf\xe9 au lait\nline two\n"}


async def test_a_content_with_a_placeholder_is_refused_naming_its_file_and_a_way_that_works(
    ws: Path, mode: str
) -> None:
    """SPEC §8.4 in a set: the overwrite is refused naming its file, nothing in the set written;
    ApplyPatch has no `allow_placeholders`, so the refusal points to WriteFile's, which writes it."""
    app = "def a():\n    return 1\n\ndef b():\n    return 2\n"
    (ws / "app.py").write_text(app)
    content = "def a():\n    return 3\n\n# ... rest of the code unchanged\n"
    async with connect(ws, mode, approval="auto") as c:
        await read_all(c, "app.py")
        r = await call(
            c,
            "ApplyPatch",
            changes=[{"path": "new.txt", "content": "n\n"}, {"path": "app.py", "content": content}],
        )
        assert r.is_error
        assert text(r) == (
            "The content stands a placeholder in for left-out text (line 4: `# ... rest of the code "
            "unchanged`), which `app.py` does not hold: overwriting would replace that text with the "
            "placeholder. Nothing was written. Write the whole content, or change only a part with "
            "StrReplaceFile; if the line belongs in the file, write it with WriteFile and "
            "`allow_placeholders: true`."
        )
        assert tree(ws) == {"app.py": app.encode()}
        w = await call(c, "WriteFile", path="app.py", content=content, allow_placeholders=True)
    assert not w.is_error, text(w)
    assert tree(ws) == {"app.py": content.encode()}


async def test_an_overwrite_in_a_set_keeps_the_files_crlf_line_endings(ws: Path, mode: str) -> None:
    (ws / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    async with connect(ws, mode, approval="auto", read_guard=False) as c:
        r = await call(c, "ApplyPatch", changes=[{"path": "win.txt", "content": "uno\ndos\n"}])
    assert not r.is_error, text(r)
    assert blocks(r)[0].split("\n")[0] == (
        "- overwritten `win.txt`: 10 bytes, lines +2 -2. Kept the file's CRLF line endings (the "
        "content's line breaks were written as CRLF)."
    )
    assert tree(ws) == {"win.txt": b"uno\r\ndos\r\n"}


async def test_an_empty_file_moved_lands_empty(ws: Path, mode: str) -> None:
    (ws / "empty.txt").write_bytes(b"")
    async with connect(ws, mode, approval="auto", read_guard=False) as c:
        r = await call(c, "ApplyPatch", changes=[{"path": "empty.txt", "move_to": "sub/moved.txt"}])
    assert not r.is_error, text(r)
    assert blocks(r)[0].split("\n")[0] == "- moved `empty.txt` → `sub/moved.txt`."
    assert tree(ws) == {"sub/moved.txt": b""}


@pytest.mark.parametrize(
    "change",
    [
        {"path": "a.txt", "edits": [{"old": "a line\n", "new": "x\n"}]},
        {"path": "a.txt", "move_to": "b.txt", "edits": [{"old": "a line\n", "new": "x\n"}]},
        {"path": "a.txt", "move_to": "b.txt"},
    ],
    ids=["edit", "move-edited", "move"],
)
async def test_a_set_waits_for_the_load_budget_and_is_refused_busy_while_others_hold_it(
    ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch, change: dict[str, Any]
) -> None:
    """SPEC §4 memory: a set's files (a move's source too) are loads like any write's. While the
    process's whole budget is held by another call's file, the set waits, then is refused busy
    with nothing written (a budget of this test's own, a wait of 0.2 s)."""
    from filegate.fsio import loads
    from filegate.media.bounds import Deadline, MemoryGate

    gate = MemoryGate(None, 1 << 20, loads.LOADS.busy)
    monkeypatch.setattr(loads, "LOADS", gate)
    monkeypatch.setattr(loads, "LOAD_WAIT_S", 0.2)
    (ws / "a.txt").write_bytes(b"a line\n")
    async with connect(ws, mode, approval="auto", read_guard=False) as c:
        with gate.hold(1 << 20, Deadline(1.0)):  # another call's file, the whole budget
            r = await call(c, "ApplyPatch", changes=[change])
        assert r.is_error and text(r).startswith("The server was busy holding other calls' files"), text(r)
        assert tree(ws) == {"a.txt": b"a line\n"}
        again = await call(c, "ApplyPatch", changes=[change])
    assert not again.is_error, text(again)
    assert gate.held == 0
