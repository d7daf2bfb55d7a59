"""``--route-builtins`` (SPEC §9, opt-in): a client's own file tools switched off so its model
uses filegate's, and ``filegate uninstall`` switching them back on.

- Claude Code: its user settings (``~/.claude/settings.json``) get tool-only ``permissions.deny``
  rules for its built-in file tools and ``permissions.allow`` rules for filegate's readers. A
  rule that names only a tool switches that tool off; SPEC §8.5 reads it so (never as a rule that
  hides paths from filegate: policy/clientrules.py).
- Gemini CLI: its settings (``~/.gemini/settings.json``, the file its MCP entry is in) get its
  file tools in ``tools.exclude``.

Each merge keeps the file's other content, adds only what is missing, and is undone by taking
out exactly these names. Shell commands cannot be routed (a model can still `cat` a file), nor
Codex's apply_patch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from filegate.install.files import InstallError
from filegate.policy.escape import escape

CLAUDE_BUILTINS = ("Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "Glob", "Grep")
# filegate's tools that only read: allowed, so a routed Claude Code does not ask before each one.
READERS = ("ReadFile", "ReadMediaFile", "Glob", "Grep")
GEMINI_BUILTINS = ("read_file", "read_many_files", "write_file", "replace", "glob", "grep_search")
ROUTABLE = ("claude-code", "gemini-cli")
NOT_ROUTED = {
    "claude-code": "its Bash tool (a model can still read or write files with shell commands)",
    "gemini-cli": "run_shell_command and list_directory (shell commands, listing a folder)",
}


def claude_settings(env: Mapping[str, str], home: Path) -> Path:
    """Claude Code's user settings (where its permission rules live; its MCP servers are in
    ``~/.claude.json``). ``CLAUDE_CONFIG_DIR`` moves them, as it moves Claude Code's own."""
    folder = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
    return folder / "settings.json"


def readers(name: str) -> list[str]:
    return [f"mcp__{name}__{tool}" for tool in READERS]


def routed_claude(old: str, where: Path, name: str) -> str:
    doc = _document(old, where)
    perms = _table(doc, "permissions", where)
    _add(perms, "deny", CLAUDE_BUILTINS, where)
    _add(perms, "allow", readers(name), where)
    return _dumped(doc, old)


def unrouted_claude(old: str, where: Path, name: str) -> str:
    doc = _document(old, where)
    perms = doc.get("permissions")
    if not isinstance(perms, dict):
        return old
    _remove(perms, "deny", CLAUDE_BUILTINS)
    _remove(perms, "allow", readers(name))
    return _dumped(doc, old)


def routed_gemini(old: str, where: Path, name: str) -> str:
    doc = _document(old, where)
    _add(_table(doc, "tools", where), "exclude", GEMINI_BUILTINS, where)
    return _dumped(doc, old)


def unrouted_gemini(old: str, where: Path, name: str) -> str:
    doc = _document(old, where)
    tools = doc.get("tools")
    if not isinstance(tools, dict):
        return old
    _remove(tools, "exclude", GEMINI_BUILTINS)
    return _dumped(doc, old)


def still_routed(text: str, client: str) -> list[str]:
    """Which of the client's own tools ``text`` (its settings) still switches off."""
    try:
        doc = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return []
    if not isinstance(doc, dict):
        return []
    table, key, names = ("permissions", "deny", list(CLAUDE_BUILTINS))
    if client == "gemini-cli":
        table, key, names = ("tools", "exclude", list(GEMINI_BUILTINS))
    found = doc.get(table, {})
    have = found.get(key, []) if isinstance(found, dict) else []
    return [n for n in names if isinstance(have, list) and n in have]


def _document(old: str, where: Path) -> dict[str, Any]:
    try:
        doc = json.loads(old) if old.strip() else {}
    except json.JSONDecodeError as exc:
        raise InstallError(
            f"{escape(str(where))} is not plain JSON (line {exc.lineno}: {exc.msg}); nothing was changed"
        ) from None
    if not isinstance(doc, dict):
        raise InstallError(f"{escape(str(where))} is not a JSON object; nothing was changed")
    return doc


def _table(doc: dict[str, Any], key: str, where: Path) -> dict[str, Any]:
    table = doc.setdefault(key, {})
    if not isinstance(table, dict):
        raise InstallError(f"{escape(str(where))}: '{key}' is not an object; nothing was changed")
    return table


def _add(table: dict[str, Any], key: str, names: tuple[str, ...] | list[str], where: Path) -> None:
    have = table.setdefault(key, [])
    if not isinstance(have, list):
        raise InstallError(f"{escape(str(where))}: '{key}' is not a list; nothing was changed")
    have += [n for n in names if n not in have]


def _remove(table: dict[str, Any], key: str, names: tuple[str, ...] | list[str]) -> None:
    have = table.get(key)
    if isinstance(have, list):
        table[key] = [n for n in have if n not in names]


def _dumped(doc: dict[str, Any], old: str) -> str:
    new = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    try:  # unchanged content keeps the file as it was (no rewrite, no backup)
        return old if old.strip() and json.loads(old) == doc else new
    except json.JSONDecodeError:
        return new
