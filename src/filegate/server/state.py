"""fastmcp's per-session state store, made only when something is first written to it.

On every tools/list and tools/call fastmcp reads the session's visibility rules from its
session-state store (``FastMCP._state_store``), and building that store imports py-key-value
and beartype: ~0.35 s on the cold-start path (bench/README.md), plus a beartype-wrapped
lookup per call. filegate writes no session state, so every such read finds an empty store.
Until the first write, reads answer exactly what an empty store answers (the default);
any other use builds fastmcp's own store, through its own code, and hands over to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from filegate.server.upstream import STATE_STORE_SLOT

if TYPE_CHECKING:
    from fastmcp import FastMCP

# Where FastMCP keeps the store it builds on first use (a name-mangled private attribute,
# named in server/upstream.py, whose test fails if a fastmcp release renames it).
_SLOT = STATE_STORE_SLOT


class EmptyUntilWritten:
    """Stands in for ``FastMCP._state_store`` while the store would still be empty."""

    def __init__(self, server: FastMCP) -> None:
        self._server = server
        self._real: Any = None

    async def get(self, key: str, *, collection: str | None = None, default: Any = None) -> Any:
        if self._real is None:
            return default  # nothing was ever written: an empty store's answer
        return await self._real.get(key=key, collection=collection, default=default)

    def __getattr__(self, name: str) -> Any:  # put, delete, ttl, ...: the real store
        return getattr(self._materialize(), name)

    def _materialize(self) -> Any:
        if self._real is None:
            setattr(self._server, _SLOT, None)
            self._real = self._server._state_store  # fastmcp builds it, as it always would
        return self._real


def defer_session_state(server: FastMCP) -> None:
    if hasattr(server, _SLOT) and getattr(server, _SLOT) is None:
        setattr(server, _SLOT, EmptyUntilWritten(server))
