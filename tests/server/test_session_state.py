"""fastmcp's session state still works with its store made on first write (server/state.py).

filegate writes no session state itself; these tools exist only in the test, on a real
filegate server, to show that reads before any write and everything after one behave as
fastmcp's own store does. Real in-memory client, both eras.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastmcp import Context

from filegate.server.state import EmptyUntilWritten
from tests.conftest import call, make_server, text


def with_state_tools(ws: Path) -> Any:
    server = make_server(ws)

    @server.tool(output_schema=None)
    async def remember(value: str, ctx: Context) -> str:
        before = await ctx.get_state("note")
        await ctx.set_state("note", value)
        return f"{before}->{await ctx.get_state('note')}"

    @server.tool(output_schema=None)
    async def hide_read_file(ctx: Context) -> str:
        await ctx.disable_components(names={"ReadFile"})
        return "hidden"

    return server


async def session(server: Any, mode: str) -> list[str]:
    from fastmcp import Client

    async with Client(server, mode=mode) as c:
        seen = [",".join(sorted(t.name for t in await c.list_tools()))]  # reads: nothing written yet
        seen += [text(await call(c, "remember", value=v)) for v in "ab"]
        seen.append(text(await call(c, "hide_read_file")))
        seen.append(",".join(sorted(t.name for t in await c.list_tools())))
        return seen


async def test_session_state_behaves_as_with_fastmcps_own_store(ws: Path, mode: str) -> None:
    deferred = with_state_tools(ws)
    assert isinstance(deferred._FastMCP__state_store, EmptyUntilWritten)
    plain = with_state_tools(ws)
    plain._FastMCP__state_store = None  # fastmcp builds its store on first use, as usual
    got, want = await session(deferred, mode), await session(plain, mode)
    assert got == want
    assert "ReadFile" in want[0] and "ReadFile" not in want[-1]  # the rules were stored and applied
    if mode == "legacy":
        assert want[1:3] == ["None->a", "a->b"]  # handshake era: state lasts the session
