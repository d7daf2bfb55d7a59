"""One policy for every agent (SPEC §8.5), through real clients: the rules users wrote for
Cursor, Gemini, JetBrains, Windsurf and Claude Code bind filegate's tools.

The canary matrix: one workspace holds a hidden file per rule source (each ignore file, a nested
one, Claude Code's project, local and user settings in each path form); every tool is sent
every probe over it, in both protocol eras, and no byte of any hidden file, nor a fact derived
from it (a count, a line number, a size), nor a rule's text reaches a result, a question or a
log line. Then the write verdicts (deny, ask, the rule files themselves) under each approval
mode, reloading, and the red-team cases: unusable rule files fail closed.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import call, connect, stdio_transport, text, write_id_of
from tests.fakes import Answers

CANARY = "Qz7-RULE-CANARY"
NEEDLE = "NEEDLE_WORD"
HIDDEN_MATCHES = 41  # NEEDLE lines in each hidden file: a leaked count would show it
RULE_MARK = "zq9"  # in every rule's pattern text and in no file name shown: a rule's text never leaks


def hidden_body(tag: str, needles: int = HIDDEN_MATCHES) -> str:
    lines = [f"{NEEDLE} {CANARY}-{tag}-{i}" for i in range(needles)]
    return "\n".join(lines) + "\nend\n"


# (source, hidden file relative to the workspace). Each source's rule is written by `build`.
SOURCES: dict[str, str] = {
    ".cursorignore": "cur/a.zq9",
    ".geminiignore": "gem/a.zq9",
    ".aiexclude": "aix/a.zq9",
    ".aiignore": "aii/a.zq9",
    ".codeiumignore": "cod/a.zq9",
    "nested .cursorignore (dir rule)": "deep/x/inner/a.txt",
    ".claude/settings.json ./ form": "cl/proj.txt",
    ".claude/settings.local.json / form": "cl/local/a.txt",
    "~/.claude/settings.json // form": "user/abs.txt",
    "~/.claude/settings.json bare form": "bare/b.zq9x",
}


def build(ws: Path, home: Path) -> None:
    """The workspace: the hidden files, a visible one holding NEEDLE once, and every rule."""
    for tag, rel in SOURCES.items():
        p = ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(hidden_body(re.sub(r"\W", "_", tag)))
    (ws / "visible.txt").write_text(f"{NEEDLE} visible\n")
    (ws / "cur" / "b.txt").write_text(f"{NEEDLE} beside\n")
    for name, folder in ((".cursorignore", "cur"), (".geminiignore", "gem"), (".aiexclude", "aix"),
                         (".aiignore", "aii"), (".codeiumignore", "cod")):  # fmt: skip
        (ws / folder / name).write_text(f"# hide\n*.{RULE_MARK}\n")
    (ws / "deep" / "x" / ".cursorignore").write_text(f"inner{RULE_MARK[:0]}/\n")
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Read(./cl/proj.txt)", "Bash(rm -rf zq9)"]}})
    )
    (ws / ".claude" / "settings.local.json").write_text(
        json.dumps({"permissions": {"deny": ["Read(/cl/local/**)"]}})
    )
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": [f"Read(/{ws}/user/abs.txt)", f"Read(*.{RULE_MARK}x)"]}})
    )


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = Path(os.path.realpath(tmp_path)) / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    return h


def leaks(said: str, counts: bool = True) -> list[str]:
    found = []
    if CANARY in said:
        found.append("content")
    if RULE_MARK + "\n" in said or f"*.{RULE_MARK}" in said or "./cl/proj" in said or "/cl/local/**" in said:
        found.append("a rule's text")
    if counts and re.search(rf"\b({HIDDEN_MATCHES}|{HIDDEN_MATCHES + 1}|{HIDDEN_MATCHES + 2})\b", said):
        found.append("a count")
    return found


def probes(rel: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("ReadFile", {"path": rel}),
        ("ReadFile", {"path": rel, "line_offset": 5, "n_lines": 2}),
        ("ReadMediaFile", {"path": rel}),
        ("Grep", {"pattern": NEEDLE, "path": rel, "output_mode": "content"}),
        ("Grep", {"pattern": NEEDLE, "path": rel, "output_mode": "count_matches"}),
        ("WriteFile", {"path": rel, "content": "x", "dry_run": True}),
        ("StrReplaceFile", {"path": rel, "edit": {"old": NEEDLE, "new": "y"}, "dry_run": True}),
        ("StrReplaceFile", {"path": rel, "edit": {"old": "nothing-like-this", "new": "y"}}),
        ("WriteFile", {"path": rel, "content": "x", "mode": "append"}),
    ]


TREE_PROBES: list[tuple[str, dict[str, Any]]] = [
    ("Glob", {"pattern": "**/*"}),
    ("Glob", {"pattern": "**/*.zq?"}),
    ("Grep", {"pattern": NEEDLE}),
    ("Grep", {"pattern": NEEDLE, "output_mode": "content"}),
    ("Grep", {"pattern": NEEDLE, "output_mode": "count_matches"}),
    ("Grep", {"pattern": NEEDLE, "output_mode": "content", "include_ignored": True, "-C": 3}),
    ("Grep", {"pattern": NEEDLE, "glob": "*.zq?", "output_mode": "count_matches"}),
]


async def test_canary_matrix_every_source_every_tool(
    ws: Path, home: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    build(ws, home)
    before = {rel: (ws / rel).read_bytes() for rel in SOURCES.values()}
    answers = Answers("reject")
    caplog.set_level(logging.DEBUG, logger="filegate")
    said: list[str] = []
    async with connect(ws, mode, client_elicitation_handler=answers) as c:
        for tag, rel in SOURCES.items():
            for tool, args in probes(rel):
                r = await call(c, tool, **args)
                out = text(r) + json.dumps(r.structured_content or {})
                assert leaks(out) == [], (tag, tool, args, out)
                if tool.startswith("Read"):  # refused, naming the rule's source file
                    assert r.is_error and "hidden from AI tools by a rule in" in out, (tag, out)
                said.append(out)
        for tool, args in TREE_PROBES:
            r = await call(c, tool, **args)
            out = text(r)
            # A tree's counts are the visible files' (the count test below pins them down).
            assert leaks(out, counts=False) == [], (tool, args, out)
            for rel in SOURCES.values():
                assert rel not in out, (tool, args, out)
            said.append(out)
        counted = await call(c, "Grep", pattern=NEEDLE, output_mode="count_matches")
    assert "visible.txt:1" in text(counted) and "Found 2 total occurrences across 2 files" in text(counted)
    # Counted apart from secrets and never named (SPEC §8.5): one sentence names the rule files.
    named = text(counted).split("10 files hidden from AI tools by the rules in ")[1]
    assert "sensitive" not in text(counted) and "credential" not in text(counted), text(counted)
    for source in ("cur/.cursorignore", "gem/.geminiignore", "aix/.aiexclude", "aii/.aiignore",
                   "cod/.codeiumignore", "deep/x/.cursorignore", ".claude/settings.json",
                   ".claude/settings.local.json", "~/.claude/settings.json"):  # fmt: skip
        assert f"`{source}`" in named, named
    for question in answers.messages:
        assert leaks(question.split("\n\n")[0]) == [], question
    for record in caplog.records:
        assert leaks(record.getMessage()) == [], record.getMessage()
    assert {rel: (ws / rel).read_bytes() for rel in SOURCES.values()} == before  # nothing written


async def test_a_grep_count_never_moves_with_a_hidden_files_content(ws: Path, home: Path) -> None:
    build(ws, home)
    results = []
    async with connect(ws) as c:
        for needles in (HIDDEN_MATCHES, 0, 400):
            for rel in SOURCES.values():
                (ws / rel).write_text(hidden_body("x", needles))
            for output_mode in ("files_with_matches", "content", "count_matches"):
                r = await call(c, "Grep", pattern=NEEDLE, output_mode=output_mode)
                results.append((needles, output_mode, text(r)))
    by_mode: dict[str, set[str]] = {}
    for _, output_mode, said in results:
        by_mode.setdefault(output_mode, set()).add(said)
    assert all(len(said) == 1 for said in by_mode.values()), results


# --- writes: deny, ask, the rule files themselves -------------------------------------------


def write_rules(ws: Path) -> None:
    (ws / ".claude").mkdir(exist_ok=True)
    (ws / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Edit(./locked/**)"], "ask": ["Write(/asked.txt)"]}})
    )
    (ws / "locked").mkdir(exist_ok=True)
    (ws / "locked" / "f.txt").write_text("old\n")
    (ws / "asked.txt").write_text("old\n")
    (ws / "sub").mkdir(exist_ok=True)
    (ws / ".cursorignore").write_text("hidden.txt\n")


@pytest.mark.parametrize("approval", ["ask", "strict", "auto"])
async def test_deny_refuses_every_write_without_a_question(
    ws: Path, home: Path, mode: str, approval: str
) -> None:
    write_rules(ws)
    answers = Answers("approve")
    async with connect(
        ws, mode, approval=approval, read_guard=False, client_elicitation_handler=answers
    ) as c:
        for tool, args in (
            ("WriteFile", {"path": "locked/f.txt", "content": "new\n"}),
            ("WriteFile", {"path": "locked/new.txt", "content": "new\n"}),
            ("StrReplaceFile", {"path": "locked/f.txt", "edit": {"old": "old", "new": "new"}}),
            ("WriteFile", {"path": "locked/f.txt", "content": "new\n", "dry_run": True}),
        ):
            r = await call(c, tool, **args)
            assert r.is_error and "denied for writing by a rule in `.claude/settings.json`" in text(r), text(
                r
            )
            assert "locked/**" not in text(r)
    assert answers.messages == []
    assert (ws / "locked" / "f.txt").read_text() == "old\n" and not (ws / "locked" / "new.txt").exists()


@pytest.mark.parametrize("approval", ["ask", "auto"])
async def test_ask_rules_and_rule_files_are_always_asked(
    ws: Path, home: Path, mode: str, approval: str
) -> None:
    write_rules(ws)
    answers = Answers("approve")
    async with connect(
        ws, mode, approval=approval, read_guard=False, client_elicitation_handler=answers
    ) as c:
        for rel in ("asked.txt", ".cursorignore", ".claude/settings.json", "sub/.aiexclude"):
            r = await call(c, "WriteFile", path=rel, content="{}\n")
            assert not r.is_error, text(r)
    assert len(answers.messages) == 4  # one question each, auto included
    assert (ws / ".cursorignore").read_text() == "{}\n"


async def test_each_question_names_what_the_file_is(ws: Path, home: Path, mode: str) -> None:
    """A rule file is asked about as a client rule file, an ask rule's file as asked by that
    rule's source, a hidden file as hidden by its source; only a secret says it may hold
    secrets (SPEC §6: the first line holds the verdict, before the path)."""
    write_rules(ws)
    (ws / "hidden.txt").write_text(CANARY)
    (ws / ".env").write_text(CANARY)
    answers = Answers("reject")
    async with connect(ws, mode, read_guard=False, client_elicitation_handler=answers) as c:
        for rel in (".cursorignore", "sub/.aiexclude", ".claude/settings.local.json", "asked.txt",
                    "hidden.txt", ".env"):  # fmt: skip
            assert (await call(c, "WriteFile", path=rel, content="{}\n")).is_error
    firsts = [m.splitlines()[0] for m in answers.messages]
    rule_file = "Inside the workspace, CLIENT RULE file (it says what AI tools may read or change"
    assert all(f.startswith(rule_file) for f in firsts[:3]), firsts
    assert firsts[3].startswith(
        "Inside the workspace, ASKED about always, by a rule in `.claude/settings.json`:"
    )
    assert firsts[4].startswith(
        "Inside the workspace, SENSITIVE file (hidden from AI tools by a rule in `.cursorignore`):"
    )
    assert firsts[5].startswith("Inside the workspace, SENSITIVE file (it may hold secrets):")
    assert all("may hold secrets" not in m for m in answers.messages[:5]), answers.messages
    assert all(CANARY not in m and "hidden.txt\n" not in m for m in answers.messages)


@pytest.mark.parametrize("approval", ["ask", "strict", "auto"])
async def test_a_model_cannot_write_a_rule_file_without_the_user(
    ws: Path, home: Path, mode: str, approval: str
) -> None:
    write_rules(ws)
    (ws / "hidden.txt").write_text(CANARY)
    async with connect(ws, mode, approval=approval, read_guard=False) as c:  # no elicitation
        for rel in (
            ".cursorignore",
            ".claude/settings.json",
            ".claude/settings.local.json",
            "x/.geminiignore",
        ):
            r = await call(c, "WriteFile", path=rel, content="")
            assert r.is_error, (rel, text(r))
        r = await call(c, "StrReplaceFile", path=".cursorignore", edit={"old": "hidden.txt", "new": "h"})
        assert r.is_error
        r = await call(c, "ReadFile", path="hidden.txt")
    assert r.is_error and CANARY not in text(r)
    assert (ws / ".cursorignore").read_text() == "hidden.txt\n"
    assert not (ws / ".claude" / "settings.local.json").exists() and not (ws / "x").exists()


async def test_undo_write_meets_the_rules_made_after_the_write(ws: Path, home: Path, mode: str) -> None:
    """A write the rules allowed, then rules that hide or lock the file: UndoWrite is held to
    them like any write (no question for a deny; a hidden file's content never shown)."""
    (ws / "u.txt").write_text(f"{CANARY} before\n")
    (ws / "v.txt").write_text("before\n")
    async with connect(ws, mode, approval="auto", read_guard=False) as c:  # no elicitation
        hidden = write_id_of(text(await call(c, "WriteFile", path="u.txt", content=f"{CANARY} after\n")))
        locked = write_id_of(text(await call(c, "WriteFile", path="v.txt", content="after\n")))
        (ws / ".cursorignore").write_text("u.txt\n")  # the user, by hand
        (ws / ".claude").mkdir()
        (ws / ".claude" / "settings.json").write_text(
            json.dumps({"permissions": {"deny": ["Write(./v.txt)"]}})
        )
        r = await call(c, "UndoWrite", write_id=hidden)
        assert r.is_error and CANARY not in text(r) and "before" not in text(r), text(r)
        r = await call(c, "UndoWrite", write_id=locked)
        assert r.is_error and "denied for writing by a rule in `.claude/settings.json`" in text(r), text(r)
    assert (ws / "u.txt").read_text() == f"{CANARY} after\n" and (ws / "v.txt").read_text() == "after\n"


# --- reloading, off, fail closed --------------------------------------------------------------


async def test_an_edit_of_cursorignore_binds_the_next_call(ws: Path, home: Path) -> None:
    (ws / "a.txt").write_text(CANARY)
    (ws / "b.txt").write_text("plain\n")
    async with connect(ws) as c:
        assert CANARY in text(await call(c, "ReadFile", path="a.txt"))
        (ws / ".cursorignore").write_text("a.txt\n")
        r = await call(c, "ReadFile", path="a.txt")
        assert r.is_error and "`.cursorignore`" in text(r)
        assert "a.txt" not in text(await call(c, "Glob", pattern="*.txt")).split("Found")[0]
        (ws / ".cursorignore").write_text("b.txt\n")  # same size: the stat key still changes
        assert CANARY in text(await call(c, "ReadFile", path="a.txt"))
        r = await call(c, "Grep", pattern="plain", output_mode="count_matches")
        assert "b.txt" not in text(r).split("Skipped")[0]
        os.unlink(ws / ".cursorignore")
        assert not (await call(c, "ReadFile", path="b.txt")).is_error
        r = await call(c, "Grep", pattern="plain", output_mode="count_matches")  # a remembered walk
        assert "b.txt:1" in text(r) and "Skipped" not in text(r), text(r)


async def test_client_rules_off_reads_nothing_of_them(
    ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FILEGATE_CLIENT_RULES", "off")
    (ws / "a.txt").write_text(CANARY)
    (ws / ".cursorignore").write_text("a.txt\n")
    os.symlink("/nonexistent", ws / ".aiexclude")  # would fail closed if it were read
    async with connect(ws) as c:
        assert CANARY in text(await call(c, "ReadFile", path="a.txt"))


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _huge(p: Path) -> None:
    with p.open("wb") as f:
        f.truncate((1 << 20) + 1)


BROKEN: dict[str, tuple[str, Any, str]] = {
    "symlinked ignore file": (".cursorignore", lambda p: os.symlink("real-rules", p), "is a symlink"),
    "fifo ignore file": (".aiexclude", _fifo, "is not a regular file"),
    "huge ignore file": (".geminiignore", _huge, "is larger than 1024 KiB"),
    "bad JSON": (".claude/settings.json", lambda p: p.write_text("{deny: ["), "is not valid JSON"),
    "wrong shape": (
        ".claude/settings.local.json",
        lambda p: p.write_text('{"permissions": {"deny": "Read"}}'),
        "has a `permissions.deny` that is not a list of strings",
    ),
    "symlinked settings": (".claude/settings.json", lambda p: os.symlink("/etc/hostname", p), "is a symlink"),
}


@pytest.mark.parametrize("case", list(BROKEN))
async def test_an_unusable_rule_file_fails_every_call_closed(ws: Path, home: Path, case: str) -> None:
    rel, make, why = BROKEN[case]
    (ws / ".claude").mkdir()
    (ws / "real-rules").write_text("nothing\n")
    (ws / "a.txt").write_text(CANARY)
    make(ws / rel)
    async with connect(ws) as c:
        for tool, args in (
            ("ReadFile", {"path": "a.txt"}),
            ("Glob", {"pattern": "*"}),
            ("Grep", {"pattern": "Qz7"}),
            ("WriteFile", {"path": "new.txt", "content": "x"}),
        ):
            r = await call(c, tool, **args)
            assert r.is_error, (tool, text(r))
            assert f"`{rel}` {why}" in text(r) and CANARY not in text(r), text(r)
        os.unlink(ws / rel)  # fixed: the next call works
        assert CANARY in text(await call(c, "ReadFile", path="a.txt"))
    assert not (ws / "new.txt").exists()


async def test_a_rule_that_hides_everything(ws: Path, home: Path) -> None:
    (ws / "sub").mkdir()
    for i in range(5):
        (ws / "sub" / f"f{i}.txt").write_text(f"{CANARY} {NEEDLE}\n" * (i + 1))
    (ws / ".cursorignore").write_text("*\n")
    async with connect(ws) as c:
        r = await call(c, "Glob", pattern="**/*")
        assert "sub/f" not in text(r).split("Found")[0]
        for output_mode in ("content", "count_matches", "files_with_matches"):
            r = await call(c, "Grep", pattern=NEEDLE, output_mode=output_mode)
            assert CANARY not in text(r) and "15" not in text(r), text(r)
        r = await call(c, "ReadFile", path="sub/f0.txt")
        assert r.is_error and CANARY not in text(r)
        r = await call(c, "ReadFile", path=".cursorignore")  # the rule file itself is hidden by `*`
        assert r.is_error


@pytest.mark.slow
async def test_thousands_of_nested_ignore_files(ws: Path, home: Path) -> None:
    folder = ws
    for _ in range(60):  # deep, and wide: 60 levels x 40 siblings each with its own file
        for j in range(40):
            sib = folder / f"s{j}"
            sib.mkdir()
            (sib / ".cursorignore").write_text(f"h{j}.txt\n")
            (sib / f"h{j}.txt").write_text(f"{CANARY} {NEEDLE}\n")
            (sib / "v.txt").write_text(f"{NEEDLE}\n")
        folder = folder / "s0"
    async with connect(ws) as c:
        r = await call(c, "Grep", pattern=NEEDLE, output_mode="count_matches")
        assert CANARY not in text(r) and "Found 2400 total occurrences across 2400 files" in text(r), text(r)[
            -300:
        ]
        r = await call(c, "Glob", pattern="**/h*.txt")
        assert "Skipped 2400 sensitive file(s)" in text(r) or "No matches" in text(r).split("Skipped")[0], (
            text(r)[-300:]
        )


@pytest.mark.slow
async def test_stdio_server_honours_cursorignore(ws: Path, home: Path) -> None:
    from fastmcp import Client

    (ws / "a.txt").write_text(CANARY)
    (ws / ".cursorignore").write_text("a.txt\n")
    async with Client(stdio_transport(ws, env={"HOME": str(home)})) as c:
        r = await call(c, "ReadFile", path="a.txt")
    assert r.is_error and CANARY not in text(r) and "`.cursorignore`" in text(r)


async def test_a_rule_file_write_keeps_its_previous_content_and_can_be_undone(
    ws: Path, home: Path, mode: str
) -> None:
    """Rule files are guarded for writing, not secret: the history keeps what they held, so an
    approved change to .cursorignore can be undone (a secret's write keeps nothing)."""
    write_rules(ws)
    (ws / ".env").write_text("TOKEN=1\n")
    answers = Answers("approve")
    async with connect(ws, mode, read_guard=False, client_elicitation_handler=answers) as c:
        changed = await call(c, "WriteFile", path=".cursorignore", content="")
        secret = await call(c, "WriteFile", path=".env", content="TOKEN=2\n")
        undone = await call(c, "UndoWrite", write_id=write_id_of(text(changed)))
        not_kept = await call(c, "UndoWrite", write_id=write_id_of(text(secret)))
    assert not undone.is_error, text(undone)
    assert (ws / ".cursorignore").read_text() == "hidden.txt\n"
    assert not_kept.is_error and "its previous content was not kept (sensitive file)" in text(not_kept)
