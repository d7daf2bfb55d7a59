"""The answers server/early.py gives before fastmcp is imported, made by fastmcp itself.

Each answer is what the real server writes on stdio for a scripted opening: a fresh server
built from the settings, served over the SDK's stdio framing (as server/stdio.py serves it),
fed raw JSON-RPC lines. ``python -m filegate.server.early_data`` writes them to
``early_answers.json`` (shipped in the package); tests/server/test_early_answers.py checks
that the file is exactly what this module makes for every settings profile and every client
opening the early path accepts, so a changed description or a fastmcp upgrade fails that test
until the file is made again.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio

from filegate import __version__
from filegate.server import early, upstream
from filegate.settings import Settings

Opening = list[dict[str, Any]]


class _Lines:
    """Raw lines for the SDK's stdio framing, as server/stdio.py's reader yields them; input
    ends only once every request has its reply (at end of input the SDK cancels the rest)."""

    def __init__(self, messages: Sequence[dict[str, Any]], out: _Collected) -> None:
        self._lines = [json.dumps(m) + "\n" for m in messages]
        self._out = out
        self._ids = {m["id"] for m in messages if "id" in m}

    def __aiter__(self) -> AsyncIterator[str]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[str]:
        for line in self._lines:
            yield line
        while not self._ids <= self._out.replies.keys():
            await self._out.changed.wait()
            self._out.changed = anyio.Event()


class _Collected:
    def __init__(self) -> None:
        self.replies: dict[Any, Any] = {}
        self.changed = anyio.Event()

    async def write(self, text: str) -> None:
        message = json.loads(text)
        if "id" in message:
            self.replies[message["id"]] = message.get("result", {"error": message.get("error")})
            self.changed.set()

    async def flush(self) -> None:
        pass


async def answers_to(settings: Settings, opening: Sequence[dict[str, Any]]) -> dict[Any, Any]:
    """What a fresh stdio server answers to ``opening``: result (or error) by request id."""
    from fastmcp.server.context import reset_transport, set_transport
    from mcp.server.stdio import stdio_server

    from filegate.server.app import build_server

    server = build_server(settings)
    out = _Collected()
    token = set_transport("stdio")
    try:
        async with upstream.lifespan(server):
            lines = _Lines(opening, out)
            streams = stdio_server(stdin=lines, stdout=out)  # type: ignore[arg-type]
            async with streams as (read_stream, write_stream):
                low = upstream.low_level(server)
                await low.run(read_stream, write_stream, low.create_initialization_options())
    finally:
        reset_transport(token)
    return out.replies


def handshake_opening(protocol: str, capabilities: dict[str, Any] | None = None) -> Opening:
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": protocol, "capabilities": capabilities or {},
            "clientInfo": {"name": "early-data", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]  # fmt: skip


def stateless_opening(capabilities: dict[str, Any] | None = None) -> Opening:
    meta = {
        early.META_PROTOCOL: early.STATELESS_PROTOCOL,
        early.META_CLIENT_INFO: {"name": "early-data", "version": "1"},
        early.META_CAPABILITIES: capabilities or {},
    }
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}},
    ]


async def profile_answers(settings: Settings, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every early answer for ``settings``: by method, then by protocol version."""
    answers: dict[str, Any] = {"initialize": {}, "tools/list": {}}
    for protocol in early.HANDSHAKE_PROTOCOLS:
        replies = await answers_to(settings, handshake_opening(protocol, capabilities))
        answers["initialize"][protocol] = replies[1]
        answers["tools/list"][protocol] = replies[2]
    replies = await answers_to(settings, stateless_opening(capabilities))
    answers["server/discover"] = {early.STATELESS_PROTOCOL: replies[1]}
    answers["tools/list"][early.STATELESS_PROTOCOL] = replies[2]
    return answers


def settings_for(profile: str, workdir: Path) -> Settings:
    """A representative of a profile (the test proves every member answers alike)."""
    return Settings(workdir=workdir, read_only=profile == "read-only")


def installed_versions() -> dict[str, str]:
    return {"filegate": __version__, **{name: version(name) for name in early.PINNED}}


async def build_data(workdir: Path) -> dict[str, Any]:
    profiles = {p: await profile_answers(settings_for(p, workdir)) for p in early.PROFILES}
    return {"versions": installed_versions(), "profiles": profiles}


def main(argv: Sequence[str] | None = None) -> int:
    """Write early_answers.json (``--check``: exit 1 if it is not what fastmcp answers now)."""
    args = list(sys.argv[1:] if argv is None else argv)
    data = anyio.run(build_data, Path.cwd())
    text = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    if "--check" in args:
        current = early.DATA.read_text(encoding="utf-8") if early.DATA.exists() else ""
        return 0 if json.loads(current or "null") == data else 1
    early.DATA.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
