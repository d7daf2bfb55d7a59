"""SPEC §9 through a real MCP client: the tools loaded up front (`_meta`), the instructions, the
whole tools/list as sent, and every tool's largest result measured against each client's budget
(the client told apart by the clientInfo.name it sends)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp.types import Implementation

from filegate.policy.budget import CLIENT_NAMES, ERROR_CHARS, budget_for
from filegate.settings import Settings
from tests.conftest import blocks, call, connect

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
