"""Every client configuration in the docs, run exactly as written (the README's clients section
points to docs/CONFIGURATION.md for entries by hand).

docs/CONFIGURATION.md's "## Client configuration" section holds ```json mcpServers (VS Code: servers)
snippets, ```toml mcp_servers tables (Codex), and ```sh lines such as
`claude mcp add ... -- filegate ...`, `filegate install ...` and `docker run ...`. For each stdio entry the test starts that
very command line — `filegate` mapped to this venv's script, the `/path/to/project`
placeholder to a temp workspace, the client's working directory to that workspace too (Kimi
CLI starts servers in its work dir) — and lists and calls the tools. For each HTTP entry it
starts the README's HTTP command line (its port swapped for a free one) and connects with the
snippet's URL and headers. The Claude Desktop line and the HTTP line also serve the MCP
Inspector. A missing section fails, it does not skip.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

from tests.conftest import FILEGATE, free_port, text
from tests.server.served import inspector_missing, run_inspector, serve
from tests.tooling import INSTALL_TIMEOUT_S, tool_missing

# The Inspector may be installed from npm by the first test that needs it.
pytestmark = pytest.mark.timeout(INSTALL_TIMEOUT_S)

README = Path(__file__).resolve().parents[2] / "docs" / "CONFIGURATION.md"
SECTION = "## Client configuration"
PLACEHOLDER_DIR = "/path/to/project"
SNIPPET_PORT = "8000"


@dataclass(frozen=True)
class Entry:
    """One server entry of one snippet."""

    where: str  # e.g. "json block 1: filegate"
    command: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    url: str = ""
    headers: tuple[tuple[str, str], ...] = field(default=())

    @property
    def is_http(self) -> bool:
        return bool(self.url)


def section(readme: str) -> str:
    start = readme.find(f"\n{SECTION}\n")
    assert start >= 0, f"{README.name} has no '{SECTION}' heading"
    rest = readme[start + len(SECTION) + 2 :]
    end = re.search(r"^## ", rest, flags=re.M)
    return rest[: end.start()] if end else rest


def blocks(text_: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text_, flags=re.M | re.S)


def json_entries(sec: str) -> list[Entry]:
    entries = []
    for n, raw in enumerate(blocks(sec, "json"), 1):
        config = json.loads(raw)  # every snippet must be valid JSON
        servers = config.get("mcpServers", config.get("servers"))  # VS Code says "servers"
        assert isinstance(servers, dict) and servers, f"json block {n}: no mcpServers"
        entries += server_entries(f"json block {n}", servers)
    for n, raw in enumerate(blocks(sec, "toml"), 1):
        servers = tomllib.loads(raw)["mcp_servers"]  # Codex
        assert isinstance(servers, dict) and servers, f"toml block {n}: no mcp_servers"
        entries += server_entries(f"toml block {n}", servers)
    return entries


def server_entries(block: str, servers: dict[str, Any]) -> list[Entry]:
    entries = []
    for name, spec in servers.items():
        where = f"{block}: {name}"
        if "url" in spec:
            assert set(spec) <= {"url", "headers", "transport", "type"}, where
            entries.append(Entry(where, url=spec["url"], headers=tuple(spec.get("headers", {}).items())))
        else:
            assert set(spec) <= {"command", "args", "env", "cwd", "type"}, where
            assert spec.get("type", "stdio") == "stdio", where
            assert all(isinstance(a, str) for a in spec.get("args", [])), where
            command = (spec["command"], *spec.get("args", []))
            entries.append(Entry(where, command=command, env=tuple(spec.get("env", {}).items())))
    return entries


def sh_lines(sec: str) -> list[list[str]]:
    """Each command line of the section's sh blocks, as the shell splits it (comments dropped)."""
    lines = [shlex.split(line, comments=True) for b in blocks(sec, "sh") for line in b.splitlines()]
    return [words for words in lines if words]


def cli_entries(sec: str) -> list[Entry]:
    """`claude mcp add` / `kimi mcp add` lines in sh blocks, and inline `kimi mcp add`."""
    lines = sh_lines(sec)
    lines += [shlex.split(m) for m in re.findall(r"`((?:kimi|claude) mcp add [^`]+)`", sec)]
    entries = []
    for words in lines:
        if words[1:3] != ["mcp", "add"]:
            continue
        where = " ".join(words)
        if "--" in words:
            entries.append(Entry(where, command=tuple(words[words.index("--") + 1 :])))
        elif "http" in words:
            url = next(w for w in words if w.startswith("http://"))
            headers = [words[i + 1] for i, w in enumerate(words) if w in ("--header", "-H")]
            pairs = tuple(tuple(h.split(": ", 1)) for h in headers)
            entries.append(Entry(where, url=url, headers=pairs))  # type: ignore[arg-type]
    return entries


def http_command(sec: str) -> tuple[dict[str, str], list[str]]:
    """The README's command that starts the HTTP endpoint: (environment, argv)."""
    for words in sh_lines(sec):
        env = {}
        while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
            key, value = words.pop(0).split("=", 1)
            env[key] = value
        if words[:1] == ["filegate"] and "http" in words and words[1:2] != ["install"]:
            return env, words
    raise AssertionError("the section has no `filegate --transport http ...` command line")


def all_entries() -> list[Any]:
    try:
        sec = section(README.read_text())
        entries = json_entries(sec) + cli_entries(sec)
    except (AssertionError, OSError, ValueError, KeyError) as exc:
        return [pytest.param(exc, id="README-client-configuration")]
    return [pytest.param(e, id=e.where) for e in entries]


ENTRIES = all_entries()


def test_the_section_has_snippets_for_each_client() -> None:
    sec = section(README.read_text())
    entries = json_entries(sec)
    stdio = [e for e in entries if not e.is_http]
    http = [e for e in entries if e.is_http]
    assert len(stdio) >= 3, "Claude Desktop, Kimi CLI and Cursor snippets"
    assert len(http) >= 1, "an HTTP snippet with a bearer header"
    for name in ("Claude Desktop", "Kimi CLI", "Claude Code", "Cursor"):
        assert name in sec
    assert any(k.lower() == "authorization" and v.startswith("Bearer ") for e in http for k, v in e.headers)


# --- running them --------------------------------------------------------------------------


def local(command: tuple[str, ...], workspace: Path) -> list[str]:
    assert command[0] == "filegate", f"{command}: README commands start with `filegate`"
    return [FILEGATE, *(str(workspace) if a == PLACEHOLDER_DIR else a for a in command[1:])]


# Command lines already run in this session: several snippets share one (Claude Desktop, Cursor
# and `claude mcp add` do), and starting each costs seconds.
VERIFIED: set[tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = set()


async def check_stdio(entry: Entry, workspace: Path) -> None:
    if (entry.command, entry.env) in VERIFIED:
        return
    argv = local(entry.command, workspace)
    transport = StdioTransport(
        argv[0], argv[1:], env=dict(entry.env) or None, cwd=str(workspace), keep_alive=False
    )
    async with Client(transport, mode="legacy") as c:
        names = [t.name for t in await c.list_tools()]
        assert names[:4] == ["ReadFile", "ReadMediaFile", "Glob", "Grep"], names
        r = await c.call_tool("ReadFile", {"path": "readme-check.txt"})
        assert "configured from the README" in text(r)
    VERIFIED.add((entry.command, entry.env))


@pytest.fixture(scope="module")
def http_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The README's HTTP command line, running (its port swapped for a free one)."""
    sec = section(README.read_text())
    env, words = http_command(sec)
    tmp = tmp_path_factory.mktemp("readme-http")
    workspace = tmp / "ws"
    workspace.mkdir()
    (workspace / "readme-check.txt").write_text("configured from the README\n")
    assert words[words.index("--port") + 1] == SNIPPET_PORT
    port = free_port()
    argv = [str(port) if w == SNIPPET_PORT else w for w in local(tuple(words), workspace)]
    with serve(argv, tmp, port, env=env, cwd=workspace) as served:
        yield served


def here(url: str, port: int) -> str:
    assert f":{SNIPPET_PORT}/" in url, f"{url}: the README's HTTP snippets use port {SNIPPET_PORT}"
    return url.replace(f":{SNIPPET_PORT}/", f":{port}/")


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.slow
async def test_readme_entry_starts_and_serves_the_tools(
    entry: Entry | Exception, request: pytest.FixtureRequest, ws: Path
) -> None:
    if isinstance(entry, Exception):
        raise AssertionError(f"README client configuration unusable: {entry}")
    if not entry.is_http:
        (ws / "readme-check.txt").write_text("configured from the README\n")
        await check_stdio(entry, ws)
        return
    served = request.getfixturevalue("http_endpoint")
    url = here(entry.url, served.port)
    for mode in ("auto", "legacy"):
        transport = StreamableHttpTransport(url, headers=dict(entry.headers))
        async with Client(transport, mode=mode) as c:
            r = await c.call_tool("ReadFile", {"path": "readme-check.txt"})
            assert "configured from the README" in text(r)


@pytest.mark.slow
def test_claude_desktop_and_http_lines_serve_the_inspector(request: pytest.FixtureRequest, ws: Path) -> None:
    missing = inspector_missing()
    if missing:
        tool_missing(missing)
    sec = section(README.read_text())
    stdio = next(e for e in json_entries(sec) if not e.is_http and PLACEHOLDER_DIR in e.command)
    http = next(e for e in json_entries(sec) if e.is_http)
    served = request.getfixturevalue("http_endpoint")
    headers = [a for k, v in http.headers for a in ("--header", f"{k}: {v}")]
    for target in (local(stdio.command, ws), [here(http.url, served.port), *headers]):
        done = run_inspector(*target, "--method", "tools/list", "--strict")
        assert done.returncode == 0, done.stderr
        assert "ReadFile" in [t["name"] for t in json.loads(done.stdout)["tools"]]


# --- `filegate install` lines and the Docker stdio lines -----------------------------------


def install_lines(sec: str) -> list[list[str]]:
    return [w for w in sh_lines(sec) if w[:2] == ["filegate", "install"]]


@pytest.mark.slow
async def test_install_lines_write_configurations_that_start(tmp_path: Path, ws: Path) -> None:
    """Each `filegate install` line as written, into a throw-away HOME; then each written entry
    is started as its client would (the distinct command lines once each)."""
    lines = install_lines(section(README.read_text()))
    assert lines and lines[0][2] == "claude-desktop", "the section starts with `filegate install`"
    (ws / "readme-check.txt").write_text("configured from the README\n")
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    env.pop("XDG_CONFIG_HOME", None)
    for words in lines:
        argv = local(tuple(words), ws)
        done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ws, timeout=60)
        assert done.returncode == 0, (words, done.stderr)
        if "--print" in words:
            assert (
                not done.stderr and json.loads(done.stdout)["mcpServers"]["filegate"]["command"] == FILEGATE
            )
    written = [p for p in (tmp_path / "home").rglob("*") if p.is_file() and not p.name.endswith(".bak")]
    # `--disable-builtins` also writes Kimi Code's config.toml (its [tools] disabled list), which
    # holds no MCP entry: the entries are in the JSON files, one per line but --print.
    settings = [p for p in written if p.suffix == ".toml"]
    assert [p.name for p in settings] == ["config.toml"] * any("--disable-builtins" in w for w in lines)
    written = [p for p in written if p not in settings]
    assert len(written) == len(lines) - 1, written  # --print wrote nothing
    for path in written:
        for entry in json.loads(path.read_text())["mcpServers"].values():
            command = (entry["command"], *entry["args"])
            assert command[0] == FILEGATE, path
            await check_stdio(Entry(str(path), command=("filegate", *command[1:])), ws)


def docker_stdio_lines(sec: str) -> list[list[str]]:
    return [w for w in sh_lines(sec) if w[:2] == ["docker", "run"] and "stdio" in w]


@pytest.mark.slow
async def test_docker_stdio_lines_override_the_images_http_entrypoint(ws: Path) -> None:
    """No engine here: the image's ENTRYPOINT (from the Dockerfile) plus the README's words after
    the image name, run locally with /workspace mapped to a temp workspace, serve stdio."""
    dockerfile = (README.parents[1] / "Dockerfile").read_text()
    entrypoint = json.loads(re.search(r"^ENTRYPOINT (\[.*\])$", dockerfile, re.M).group(1))  # type: ignore[union-attr]
    lines = docker_stdio_lines(section(README.read_text()))
    assert len(lines) == 2, lines
    (ws / "readme-check.txt").write_text("configured from the README\n")
    for words in lines:
        assert "-i" in words and any(w.endswith(":/workspace") or w.endswith(":/workspace:ro") for w in words)
        after_image = words[words.index("filegate") + 1 :]
        argv = [FILEGATE, *(str(ws) if a == "/workspace" else a for a in [*entrypoint[1:], *after_image])]
        transport = StdioTransport(argv[0], argv[1:], cwd=str(ws), keep_alive=False)
        async with Client(transport, mode="legacy") as c:
            names = [t.name for t in await c.list_tools()]
            r = await c.call_tool("ReadFile", {"path": "readme-check.txt"})
            assert "configured from the README" in text(r)
        read_only = ":/workspace:ro" in " ".join(words)
        assert ("WriteFile" in names) == (not read_only), (words, names)
