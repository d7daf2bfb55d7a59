"""What `filegate install` writes, read back by each client's own parser (slow: real agents).

Claude Code (`claude mcp get`), Codex (`codex mcp get --json`), Gemini CLI (`gemini mcp list`)
and the MCP Inspector (`--config`), pinned and installed once from npm into a cache
(tests/agents/installs.py, shared with the real-agent tests; the Inspector: tests/server/served.py). Each runs with a throw-away HOME holding only what `filegate install`
wrote; the first three also start the entry and report whether it connected.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.agents.installs import AGENTS, Unavailable
from tests.conftest import FILEGATE, free_port
from tests.server.served import inspector_command, inspector_missing, serve
from tests.tooling import INSTALL_TIMEOUT_S, tool_missing

# The agents and the Inspector may be installed from npm by the first test that needs them.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(INSTALL_TIMEOUT_S)]

AGENT_S = 180  # hang guard on one agent command (it starts the server to check it)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    (p / "marker.txt").write_text("read back\n")
    return Path(os.path.realpath(p))


def env_for(home: Path) -> dict[str, str]:
    drop = ("XDG_CONFIG_HOME", "CODEX_HOME", "APPDATA", "FILEGATE_TOKEN")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, "HOME": str(home), "NO_COLOR": "1"}


def install(*args: str, home: Path, cwd: Path) -> str:
    done = subprocess.run([FILEGATE, "install", *args], capture_output=True, text=True, env=env_for(home),
                          cwd=cwd, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def agent(name: str, *args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The pinned agent from the real-agent tests' cache (tests/agents/installs.py)."""
    try:
        argv = AGENTS[name]().argv
    except Unavailable as exc:
        tool_missing(str(exc))
    return subprocess.run([*argv, *args], capture_output=True, text=True, env=env_for(home),
                          cwd=cwd, timeout=AGENT_S, stdin=subprocess.DEVNULL)  # fmt: skip


def test_claude_code_reads_the_stdio_entry_and_connects(home: Path, project: Path) -> None:
    install("claude-code", home=home, cwd=project)
    done = agent("claude-code", "mcp", "get", "filegate", home=home, cwd=project)
    assert done.returncode == 0, done.stderr
    assert "Scope: User config" in done.stdout and "Type: stdio" in done.stdout, done.stdout
    assert f"Command: {FILEGATE}" in done.stdout and "Connected" in done.stdout, done.stdout


def test_claude_code_reads_the_http_entry_and_reaches_the_server_install_said_to_start(
    home: Path, project: Path, tmp_path: Path
) -> None:
    port = free_port()
    said = install("claude-code", "--transport", "http", "--port", str(port), "--token", "cc-tok-1",
                   home=home, cwd=project)  # fmt: skip
    words = shlex.split(said.split("start the server with: ", 1)[1].splitlines()[0])
    assert words[0] == "FILEGATE_TOKEN=cc-tok-1"
    with serve(words[1:], tmp_path, port, env={"FILEGATE_TOKEN": "cc-tok-1"}, cwd=tmp_path):
        done = agent("claude-code", "mcp", "get", "filegate", home=home, cwd=project)
    assert done.returncode == 0, done.stderr
    assert "Type: http" in done.stdout and f"URL: http://127.0.0.1:{port}/mcp" in done.stdout, done.stdout
    assert "Connected" in done.stdout, done.stdout


def test_codex_reads_both_entries(home: Path, project: Path) -> None:
    install("codex", "--read-only", home=home, cwd=project)
    done = agent("codex", "mcp", "get", "filegate", "--json", home=home, cwd=project)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["enabled"] is True
    assert got["transport"] == {"type": "stdio", "command": FILEGATE, "args": ["--read-only"], "env": None,
                                "env_vars": got["transport"].get("env_vars"), "cwd": None}  # fmt: skip
    install("codex", "--transport", "http", "--port", "8123", "--token", "cx-tok-1", home=home, cwd=project)
    got = json.loads(agent("codex", "mcp", "get", "filegate", "--json", home=home, cwd=project).stdout)
    assert got["transport"]["type"] == "streamable_http"
    assert got["transport"]["url"] == "http://127.0.0.1:8123/mcp"
    assert got["transport"]["http_headers"] == {"Authorization": "Bearer cx-tok-1"}


def test_gemini_cli_lists_the_entry_as_connected(home: Path, project: Path) -> None:
    install("gemini-cli", home=home, cwd=project)
    # Gemini CLI starts no server in a folder the user has not trusted (a real user answers its
    # prompt once); this is that answer, in its own file.
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(project): "TRUST_FOLDER"}))
    done = agent("gemini-cli", "mcp", "list", home=home, cwd=project)
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr  # it lists on stderr
    assert f"filegate: {FILEGATE}  (stdio) - Connected" in said, said


@pytest.mark.parametrize("client", ["claude-desktop", "cursor"])
def test_the_inspector_reads_the_entry_from_its_config(client: str, home: Path, project: Path) -> None:
    """The Inspector's --config takes a Claude Desktop-shaped file; the entry lists the tools."""
    if missing := inspector_missing():
        tool_missing(missing)
    config = project / "mcp.json"
    install(client, "--config", str(config), home=home, cwd=project)
    done = subprocess.run(
        [inspector_command(), "--cli", "--config", str(config), "--server", "filegate", "--method", "tools/list"],
        capture_output=True, text=True, timeout=AGENT_S, env=env_for(home), cwd=home, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    names = [t["name"] for t in json.loads(done.stdout)["tools"]]
    assert names == [
        *("ReadFile", "ReadMediaFile", "Glob", "Grep", "WriteFile", "StrReplaceFile", "UndoWrite"),
        *("ApplyPatch", "Changes"),
    ]
