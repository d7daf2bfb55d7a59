"""Every private fastmcp / mcp / sse-starlette / uvicorn / anyio name filegate relies on still exists
(server/upstream.py lists them): an upgrade that renames one fails here, by name."""

from __future__ import annotations

from filegate.server import upstream


def test_every_private_upstream_touch_still_exists() -> None:
    assert upstream.missing() == []
