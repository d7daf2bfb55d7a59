"""The clients ``filegate install`` knows: where each keeps its MCP configuration, in which
shape, and the entry that starts filegate there.

Where each client keeps its configuration, and in which shape (checked against each client's
documentation, November 2026):

- claude-desktop: ``claude_desktop_config.json`` in ``~/Library/Application Support/Claude``
  (macOS), ``%APPDATA%\\Claude`` (Windows), ``~/.config/Claude`` (Linux); ``mcpServers``.
- claude-code: ``~/.claude.json`` (user scope, as ``claude mcp add -s user`` writes it);
  ``mcpServers`` entries with a ``type``.
- cursor: ``~/.cursor/mcp.json``; kimi: ``~/.kimi/mcp.json``; both ``mcpServers``.
- kimi-code: ``$KIMI_CODE_HOME/mcp.json``, default ``~/.kimi-code/mcp.json``; ``mcpServers``.
  ``--disable-builtins`` also sets ``[tools] disabled`` in the ``config.toml`` beside it.
- vscode: ``mcp.json`` in the user profile (``Code/User`` beside ``settings.json``);
  ``servers`` entries with a ``type``.
- windsurf: ``~/.codeium/windsurf/mcp_config.json``; ``mcpServers`` (HTTP: ``serverUrl``).
- gemini-cli: ``~/.gemini/settings.json``; ``mcpServers`` (HTTP: ``httpUrl``).
- codex: ``$CODEX_HOME/config.toml``, default ``~/.codex/config.toml``;
  ``[mcp_servers.NAME]`` tables (HTTP: ``http_headers``).
- generic, generic-http: ``--config FILE``, or printed; ``mcpServers``.

``~`` is ``%USERPROFILE%`` on Windows.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

OSName = Literal["macos", "windows", "linux"]
Format = Literal["json", "toml"]


@dataclass(frozen=True)
class Client:
    name: str
    title: str
    key: str = "mcpServers"
    format: Format = "json"
    # CLI agents start servers in the project they work on: no --workdir unless given.
    starts_in_project: bool = False
    stdio: bool = True
    http: bool = True
    # The entry's field names: a typed entry ("type": "stdio"), the URL's key, the headers' key.
    typed: bool = False
    url_key: str = "url"
    headers_key: str = "headers"
    # The client's per-project file, relative to the project (--project writes it).
    project_file: str | None = None
    # The one thing left for the user once the file is written (install prints it).
    next_step: str = "restart the client to load it"


CLIENTS: dict[str, Client] = {
    c.name: c
    for c in (
        Client(
            "claude-desktop",
            "Claude Desktop",
            http=False,
            next_step="quit Claude Desktop (not just its window) and open it again",
        ),
        Client(
            "claude-code",
            "Claude Code",
            starts_in_project=True,
            typed=True,
            # SPEC §8.5: its deny rules do not bind MCP tools (anthropics/claude-code#28595);
            # filegate applies them itself.
            next_step="start a new Claude Code session (claude mcp list shows filegate); its "
            "permissions.deny/ask rules (Read, Edit, Write) now bind filegate's tools too: "
            "`filegate rules` lists them",
        ),
        Client("cursor", "Cursor", project_file=".cursor/mcp.json", next_step="restart Cursor to load it"),
        Client("kimi", "Kimi CLI", starts_in_project=True, next_step="start a new Kimi CLI session"),
        Client("kimi-code", "Kimi Code", starts_in_project=True, next_step="start a new Kimi Code session"),
        Client(
            "vscode",
            "VS Code",
            key="servers",
            typed=True,
            project_file=".vscode/mcp.json",
            next_step="reload VS Code (Developer: Reload Window) to load it",
        ),
        Client("windsurf", "Windsurf", url_key="serverUrl", next_step="restart Windsurf to load it"),
        Client(
            "gemini-cli",
            "Gemini CLI",
            starts_in_project=True,
            url_key="httpUrl",
            # Gemini CLI lists a server of an untrusted folder as "Disabled" (0.61.0).
            next_step="trust each project folder, or Gemini CLI lists filegate as Disabled there: run "
            "/permissions in Gemini CLI in that folder (or add it to ~/.gemini/trustedFolders.json), "
            "then start a new session",
        ),
        Client(
            "codex",
            "Codex",
            key="mcp_servers",
            format="toml",
            starts_in_project=True,
            headers_key="http_headers",
            next_step="start a new Codex session",
        ),
        Client("generic", "an MCP client (stdio)", http=False),
        # typed: the MCP Inspector (2.12) reads an entry without "type" as stdio.
        Client("generic-http", "an MCP client (streamable HTTP)", stdio=False, typed=True),
    )
}


def detect_os() -> OSName:
    if sys.platform == "darwin":
        return "macos"
    if sys.platform.startswith(("win", "cygwin", "msys")):
        return "windows"
    return "linux"


def config_path(client: str, os_name: OSName, env: Mapping[str, str]) -> Path | None:
    """Where ``client`` reads its MCP servers on ``os_name``; None for the generic ones."""
    home = Path(env.get("USERPROFILE" if os_name == "windows" else "HOME") or Path.home())
    app_data = {  # each OS's per-user application-settings directory
        "macos": home / "Library" / "Application Support",
        "windows": Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming",
        "linux": Path(env.get("XDG_CONFIG_HOME") or home / ".config"),
    }[os_name]
    paths = {
        "claude-desktop": app_data / "Claude" / "claude_desktop_config.json",
        "claude-code": home / ".claude.json",
        "cursor": home / ".cursor" / "mcp.json",
        "kimi": home / ".kimi" / "mcp.json",
        "kimi-code": kimi_code_home(env, home) / "mcp.json",
        "vscode": app_data / "Code" / "User" / "mcp.json",
        "windsurf": home / ".codeium" / "windsurf" / "mcp_config.json",
        "gemini-cli": home / ".gemini" / "settings.json",
        "codex": Path(env["CODEX_HOME"]) / "config.toml" if env.get("CODEX_HOME")
        else home / ".codex" / "config.toml",
    }  # fmt: skip
    return paths.get(client)


def kimi_code_home(env: Mapping[str, str], home: Path) -> Path:
    return Path(env["KIMI_CODE_HOME"]) if env.get("KIMI_CODE_HOME") else home / ".kimi-code"


def config_location(client: str, os_name: OSName) -> str | None:
    """Where ``client`` keeps its file on ``os_name``, as that system's user would write it."""
    if os_name == "windows":
        app, home, sep = "%APPDATA%", "%USERPROFILE%", "\\"
    else:
        app = "~/Library/Application Support" if os_name == "macos" else "~/.config"
        home, sep = "~", "/"
    parts = {
        "claude-desktop": [app, "Claude", "claude_desktop_config.json"],
        "claude-code": [home, ".claude.json"],
        "cursor": [home, ".cursor", "mcp.json"],
        "kimi": [home, ".kimi", "mcp.json"],
        "kimi-code": [home, ".kimi-code", "mcp.json"],
        "vscode": [app, "Code", "User", "mcp.json"],
        "windsurf": [home, ".codeium", "windsurf", "mcp_config.json"],
        "gemini-cli": [home, ".gemini", "settings.json"],
        "codex": [home, ".codex", "config.toml"],
    }.get(client)
    return sep.join(parts) if parts else None


def server_command() -> list[str]:
    """The running filegate as an absolute command line a client can start."""
    script = sys.argv[0]
    if Path(script).name.lower().removesuffix(".exe") == "filegate" and Path(script).is_file():
        return [os.path.abspath(script)]  # not resolved: a venv's python must stay the venv's
    return [os.path.abspath(sys.executable), "-m", "filegate"]


def clone_of(command: Sequence[str]) -> Path | None:
    """The source checkout whose virtual environment ``command`` runs from (a `.venv`/`venv`
    folder beside a `pyproject.toml`), or None: an entry naming it breaks when the clone moves."""
    for folder in Path(command[0]).parents:
        if folder.name in (".venv", "venv") and (folder.parent / "pyproject.toml").is_file():
            return folder.parent
    return None


# --- entries -------------------------------------------------------------------------------


def stdio_entry(client: Client, command: Sequence[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "stdio"} if client.typed else {}
    entry |= {"command": command[0], "args": list(command[1:])}
    return entry


def http_entry(client: Client, url: str, headers: Mapping[str, str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "http"} if client.typed else {}
    if client.name in ("kimi", "kimi-code"):
        entry["transport"] = "http"  # Kimi CLI and Kimi Code read the transport from the entry
    entry[client.url_key] = url
    if headers:
        entry[client.headers_key] = dict(headers)
    return entry


def unknown_client(name: str) -> str:
    """The error for a client name install does not know, with the closest one if any."""
    import difflib

    # "gemini", "claude": each client whose name begins with what was typed; else the nearest.
    close = [c for c in CLIENTS if name and c.startswith(name.lower())]
    close = close or difflib.get_close_matches(name.lower(), CLIENTS, n=1, cutoff=0.6)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    return f"argument CLIENT: invalid choice: '{name}' ({hint}choose from {', '.join(CLIENTS)})"
