"""SPEC §9 through a real MCP client: the tools loaded up front (`_meta`), the instructions, the
whole tools/list as sent, and every tool's largest result measured against each client's budget
(the client told apart by the clientInfo.name it sends); what the server itself puts in a call's
answer (arguments refused, roots closed, a grant handle, a change notice, a notable event), and
the tools' schemas, titles and hints as listed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp.types import Implementation

from filegate import __version__
from filegate.policy.budget import CLIENT_NAMES, ERROR_CHARS, budget_for
from filegate.settings import Settings
from filegate.tools.readguard import ledger as readguard
from tests.conftest import blocks, call, connect, text
from tests.fakes import Answers

# The whole tools/list as sent (SPEC §9): 15,417 characters for seven tools before issue 49;
# seven tools must leave room for this round's two more (ApplyPatch, Changes) under 16,000.
TOOLS_LIST_NOW = 12_500
TOOLS_LIST_MAX = 16_000
SEVEN = {"ReadFile", "ReadMediaFile", "Glob", "Grep", "WriteFile", "StrReplaceFile", "UndoWrite"}


async def listed(ws: Path, **kw: Any) -> list[dict[str, Any]]:
    async with connect(ws, **kw) as c:
        result = await c.session.list_tools()
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in result.tools]


def compact(tools: list[dict[str, Any]]) -> int:
    return len(json.dumps(tools, separators=(",", ":"), ensure_ascii=False))


async def test_the_whole_tool_list_as_sent_leaves_room_for_two_more_tools(ws: Path) -> None:
    tools = await listed(ws)
    assert compact(tools) < TOOLS_LIST_MAX, compact(tools)  # with every tool this round adds
    seven = [t for t in tools if t["name"] in SEVEN]
    assert len(seven) == 7 and compact(seven) <= TOOLS_LIST_NOW, compact(seven)
    text = json.dumps(tools)
    assert '{"type": "null"}' not in text  # an optional field is its type alone
    assert "$ref" not in text and "$defs" not in text  # every schema whole (Kimi Code resolves none)
    assert '"fastmcp"' not in text  # no framework tags paid for on every turn


async def test_every_tool_is_loaded_up_front_with_a_hint_and_claude_codes_size(ws: Path) -> None:
    for tool in await listed(ws):
        meta = tool["_meta"]
        assert meta["anthropic/alwaysLoad"] is True, tool["name"]
        assert 0 < len(meta["anthropic/searchHint"]) <= 40, meta
        assert meta["anthropic/maxResultSizeChars"] == 100_000 == budget_for(Settings(), "claude-code").text
        assert set(meta) == {"anthropic/alwaysLoad", "anthropic/searchHint", "anthropic/maxResultSizeChars"}


async def test_defer_tools_leaves_them_to_the_clients_tool_search(ws: Path) -> None:
    for tool in await listed(ws, defer_tools=True):
        assert tool["_meta"] == {"anthropic/maxResultSizeChars": 100_000}, tool["name"]


async def test_the_instructions_say_what_filegate_is_for_naming_its_tools(ws: Path) -> None:
    for read_only in (False, True):
        async with connect(ws, mode="legacy", read_only=read_only) as c:
            said = c.initialize_result.instructions or ""
            names = [t.name for t in await c.list_tools()]
        assert 2 <= len(said.splitlines()) <= 3 and len(said) < 500, said
        assert all(name in said for name in names), (names, said)
        assert ("WriteFile" in said) is (not read_only)
        assert "Prefer them" in said and "Kimi" not in said
        assert said == (
            f"filegate: file tools for this workspace ({', '.join(names)}): read, search, find and edit "
            "files with secrets kept out, every result sized to this client, writes asked about and "
            "undoable.\nPrefer them to built-in file tools and to shell commands (cat, grep, find, sed) "
            "for files here."
        )


# --- every tool's largest result against each client's budget ------------------------------

WIDE = "abcdefghij" * 200  # a 2,000-character line


@pytest.fixture
def big(ws: Path) -> Path:
    (ws / "big.txt").write_text("".join(f"line {i:05d} {'x' * 69}\n" for i in range(1, 20_001)))
    (ws / "wide.txt").write_text("".join(f"{i:04d} {WIDE}\n" for i in range(1, 301)))
    (ws / "corpus").mkdir()
    for k in range(30):
        (ws / "corpus" / f"{'n' * 150}{k:02d}.txt").write_text(
            "".join(f"mark-{k}-{i} {'p' * 300}\n" for i in range(200))
        )
    return ws


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("ReadFile", {"path": "big.txt", "n_lines": 1000}),
    ("ReadFile", {"path": "wide.txt"}),
    ("ReadFile", {"path": "big.txt", "line_offset": -1000}),
    ("Grep", {"pattern": "mark", "output_mode": "content", "head_limit": 0}),
    ("Glob", {"pattern": "**/*", "head_limit": 0}),
    ("ReadFile", {"path": "wide.txt", "n_lines": 1}),  # read, so the edit below is judged
    ("StrReplaceFile", {"path": "wide.txt", "edit": {"old": "".join(f"{i:04d} {WIDE}Z\n" for i in range(5, 60)), "new": "-"}}),
]  # fmt: skip
NAMES = [*sorted(CLIENT_NAMES), "some-client"]


@pytest.mark.parametrize("name", NAMES)
async def test_every_large_result_fits_the_clients_text_budget(big: Path, name: str) -> None:
    """SPEC §9: the text never exceeds what the client shows whole, the summary (where to
    continue) always inside it; an error stays under ERROR_CHARS with its next step last."""
    budget = budget_for(Settings(), name).text
    info = Implementation(name=name, version="1")
    async with connect(big, client_client_info=info, approval="auto") as c:
        for tool, args in CALLS:
            r = await call(c, tool, **args)
            [text] = blocks(r)  # one text block
            assert len(text) <= budget, (name, tool, args, len(text))
            last = text.rstrip("\n").rsplit("\n", 1)[-1]
            if r.is_error:
                assert len(text) < ERROR_CHARS, (tool, len(text))
                assert last.startswith("Copy `old` exactly"), last
            else:
                assert last.endswith("."), (tool, last[-200:])  # the summary, not a cut line
                assert any(
                    w in last for w in ("continue", "offset=", "Only the first", "Found", "Total lines")
                ), last


async def test_an_undo_refused_with_a_large_diff_stays_under_the_error_size(ws: Path) -> None:
    """UndoWrite's refusal shows what `force` would change: its diff is cut in whole lines to
    stay under ERROR_CHARS, the next step on the last line (SPEC §9)."""
    info = Implementation(name="claude-code", version="1")
    async with connect(ws, client_client_info=info, approval="auto") as c:
        wide = "".join(f"{i:04d} {WIDE}\n" for i in range(1, 80))
        written = await call(c, "WriteFile", path="u.txt", content=wide)
        write_id = blocks(written)[0].rsplit("Write id: ", 1)[1].rstrip(".")
        (ws / "u.txt").write_text(wide.replace("abc", "xyz"))
        r = await call(c, "UndoWrite", write_id=write_id)
    [text] = blocks(r)
    assert r.is_error and len(text) < ERROR_CHARS, len(text)
    lines = text.split("\n")
    assert "is no longer as" in lines[0] and lines[-1].startswith("Call UndoWrite again with `force: true`")
    assert lines[-2].startswith("[") and lines[-2].endswith("more lines not shown]")


# --- what the server adds to a call's answer, and the tools as listed ----------------------
# Arguments refused, roots closed, input required, a grant handle, a change notice, a notable
# event: what every call's answer looks like beyond a tool's own words.

ARGS = "Error validating JSON arguments"


async def test_bad_arguments_are_one_error_block_naming_each_problem(ws: Path, mode: str) -> None:
    async with connect(ws, mode) as c:
        two = await call(c, "WriteFile", content="x", bogus=1)
        one = await call(c, "ReadFile", path=3)
        both = await call(c, "UndoWrite", write_id="w-1", since="w-2")
    assert two.is_error and blocks(two) == [
        f"{ARGS}: 2 validation errors: path: Field required; bogus: Extra inputs are not permitted"
    ]
    assert one.is_error and blocks(one) == [
        f"{ARGS}: 1 validation error: path: Input should be a valid string"
    ]
    # A rule of the whole call has no field to name, and pydantic's "Value error, " is not said.
    assert both.is_error and blocks(both) == [
        f"{ARGS}: 1 validation error: give `write_id` (one write) or `since` (every write from that one on)"
    ]
    assert not (ws / "x").exists()


async def test_a_nested_problem_is_named_by_its_path(ws: Path) -> None:
    async with connect(ws, "legacy") as c:
        r = await call(c, "StrReplaceFile", path="a.txt", edit=[{"old": 1, "new": "x"}])
    assert r.is_error and blocks(r)[0].endswith("; edit.list[Edit].0.old: Input should be a valid string")


async def test_the_server_names_itself_and_the_operator_hears_of_each_connection_and_failure(
    ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="filegate")
    async with connect(ws, "legacy") as c:
        info = c.initialize_result.server_info
        await call(c, "ReadFile", path="missing.txt")
    assert (info.name, info.version) == ("filegate", __version__)
    said = [r.getMessage() for r in caplog.records if r.name == "filegate"]
    assert any(m.startswith("client fastmcp ") and "connected (protocol" in m for m in said), said
    assert any(m.startswith("ReadFile failed: ") for m in said), said


async def test_added_folders_and_client_rules_shape_the_workspace(ws: Path, tmp_path: Path) -> None:
    """--add-dir widens a confined workspace (its files readable), a client rule (.cursorignore)
    hides a file."""
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "e.txt").write_text("extra\n")
    (ws / "hidden.txt").write_text("HIDDEN\n")
    (ws / ".cursorignore").write_text("hidden.txt\n")
    async with connect(ws, "legacy", confine=True) as c:
        outside = await call(c, "ReadFile", path=str(extra / "e.txt"))
    async with connect(ws, "legacy", confine=True, add_dirs=[extra]) as c:
        added = await call(c, "ReadFile", path=str(extra / "e.txt"))
        hidden = await call(c, "ReadFile", path="hidden.txt")
    assert outside.is_error and not added.is_error and "extra" in text(added)
    assert hidden.is_error and "HIDDEN" not in text(hidden)


async def test_closed_roots_are_one_error_block_saying_how_to_fix_them(ws: Path) -> None:
    (ws / "a.txt").write_text("x\n")

    def broken(_ctx: object) -> list[str]:
        raise RuntimeError("gone")

    async with connect(ws, "legacy", client_roots=broken) as c:
        r = await call(c, "ReadFile", path="a.txt")
    assert r.is_error and len(blocks(r)) == 1
    assert text(r).startswith(
        "No file can be used: the client answered roots/list with an error (gone), so the workspace "
        "is empty (client roots fail closed). To fix it, configure the client"
    )


async def test_a_write_asked_about_over_2026_07_28_is_answered_by_input_required(ws: Path) -> None:
    """The approval question goes out as an input-required result; the client's answer comes
    back with the retried call, and the write lands."""
    answers = Answers()
    async with connect(ws, "auto", client_elicitation_handler=answers) as c:
        r = await call(c, "WriteFile", path="a.txt", content="hello\n")
    assert not r.is_error, text(r)
    assert len(answers.messages) == 1 and (ws / "a.txt").read_text() == "hello\n"


async def test_a_grant_handle_ends_the_result_and_is_taken_back_by_the_next_write(ws: Path) -> None:
    """No session (2026-07-28): the granted write's one block ends with its write id, then the
    grant line (SPEC §9's order); the handle passed back as `grant` lets the next write under
    the folder go unasked, and a write without it is asked."""
    answers = Answers("approve_folder")
    async with connect(ws, "auto", client_elicitation_handler=answers) as c:
        first = await call(c, "WriteFile", path="src/a.py", content="a\n", create_dirs=True)
        [block] = blocks(first)
        *_, write_line, grant_line = block.split("\n")
        assert write_line.startswith("Write id: w-"), block
        assert grant_line.startswith("Grant: g-") and grant_line.endswith(
            ": edits under `src/` for 30 minutes."
        )
        handle = grant_line.removeprefix("Grant: ").split(":")[0]
        granted = await call(c, "WriteFile", path="src/b.py", content="b\n", grant=handle)
        assert not granted.is_error and len(answers.messages) == 1, text(granted)
        unhanded = await call(c, "WriteFile", path="src/c.py", content="c\n")
        assert not unhanded.is_error and len(answers.messages) == 2
    assert (ws / "src" / "b.py").read_text() == "b\n"


async def test_a_change_notice_ends_a_handshake_era_result_only(
    ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SPEC §8.3: a file this session read that changed on disk since is named at the end of
    the next result, in the handshake era; a 2026-07-28 call has no session to say it to."""
    monkeypatch.setattr(readguard, "NOTICE_INTERVAL_S", 0.0)  # calls faster than a model's
    (ws / "a.txt").write_text("one\n")
    async with connect(ws, mode) as c:
        assert not (await call(c, "ReadFile", path="a.txt")).is_error
        (ws / "a.txt").write_text("two, longer\n")
        r = await call(c, "Glob", pattern="*.txt")
    notice = "Changed on disk since you read them: a.txt."
    assert (blocks(r)[-1].split("\n")[-1] == notice) is (mode == "legacy"), blocks(r)


class Logs:
    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    async def __call__(self, message: Any) -> None:
        self.seen.append((message.level, message.data))


async def test_a_notable_event_reaches_the_client_as_a_log_message(ws: Path, mode: str) -> None:
    (ws / ".env").write_text("KEY=1\n")
    logs = Logs()
    async with connect(ws, mode, client_log_handler=logs) as c:
        assert not (await call(c, "Glob", pattern="*")).is_error
    assert [level for level, _ in logs.seen] == ["notice"], logs.seen


def schema(tools: list[dict[str, Any]], name: str) -> dict[str, Any]:
    [tool] = [t for t in tools if t["name"] == name]
    return tool


async def test_the_tools_as_listed_say_their_titles_and_hints_and_no_output_schema(ws: Path) -> None:
    tools = await listed(ws)
    write, changes = schema(tools, "WriteFile"), schema(tools, "Changes")
    assert write["title"] == "Write file" and changes["title"] == "Changes since a point"
    assert write["annotations"] == {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": False}
    assert changes["annotations"] == {"readOnlyHint": True, "openWorldHint": False}
    assert all("outputSchema" not in t for t in tools)  # text only (SPEC §1)


async def test_a_schema_describes_each_field_once_and_an_optional_one_as_its_type(ws: Path) -> None:
    """StrReplaceFile's `edit`: one edit, or a list of them: the list's items are the same
    object, described once (in the first), never titled; an optional field (Changes' `path`) is
    its type and description, with no null default."""
    tools = await listed(ws)
    edit = schema(tools, "StrReplaceFile")["inputSchema"]["properties"]["edit"]
    one, many = edit["anyOf"]
    assert one["properties"]["old"] == {"description": "The old string to replace. Can be multi-line.",
                                        "type": "string"}  # fmt: skip
    assert many["type"] == "array" and many["items"]["properties"]["old"] == {"type": "string"}
    assert many["items"]["properties"]["replace_all"] == {"default": False, "type": "boolean"}
    assert edit["description"].startswith("The edit(s) to apply")
    path = schema(tools, "Changes")["inputSchema"]["properties"]["path"]
    assert path == {"type": "string", "description": "Only this file or folder."}
    assert all('"title"' not in str(t["inputSchema"]).replace("'", '"') for t in tools)
