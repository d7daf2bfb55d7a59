"""A client's file with filegate's entry merged in (or taken out), its other content kept:
JSON re-serialized, TOML edited as text so comments and layout stay; each result is parsed
back and checked before anything is written."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from filegate.install.clients import Client
from filegate.install.files import InstallError
from filegate.policy.escape import escape


def merged_json(old: str, client: Client, name: str, entry: dict[str, Any], where: Path) -> str:
    """``old`` (a client's JSON file, maybe empty) with ``entry`` set as server ``name``."""
    doc = _json_document(old, client, where, f"Add the entry by hand: filegate install {client.name} --print")
    servers = doc.setdefault(client.key, {})
    servers[name] = entry
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def without_json(old: str, client: Client, name: str, where: Path) -> str:
    """``old`` without server ``name`` (unchanged when it has none)."""
    doc = _json_document(old, client, where, f"Remove '{name}' from '{client.key}' by hand")
    if name not in doc.get(client.key, {}):
        return old
    del doc[client.key][name]
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _json_document(old: str, client: Client, where: Path, by_hand: str) -> dict[str, Any]:
    try:
        doc = json.loads(old) if old.strip() else {}
    except json.JSONDecodeError as exc:
        raise InstallError(
            f"{escape(str(where))} is not plain JSON (line {exc.lineno}: {exc.msg}); nothing was "
            f"changed. {by_hand}"
        ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get(client.key, {}), dict):
        raise InstallError(f"{escape(str(where))}: '{client.key}' is not an object; nothing was changed")
    return doc


def toml_value(value: Any) -> str:
    if isinstance(value, str):
        # A JSON string is a TOML basic string, but for DEL, which TOML wants escaped.
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else toml_value(key)


def toml_table(client: Client, name: str, entry: dict[str, Any]) -> str:
    lines = [f"[{client.key}.{toml_key(name)}]"]
    lines += [f"{toml_key(k)} = {toml_value(v)}" for k, v in entry.items()]
    return "\n".join(lines) + "\n"


def merged_toml(old: str, client: Client, name: str, entry: dict[str, Any], where: Path) -> str:
    """``old`` with the table ``[mcp_servers.NAME]`` (and its sub-tables) replaced or added.

    Text surgery keeps the user's comments and layout; the result is parsed back and must hold
    exactly ``entry``, else nothing is written.
    """
    _toml_document(old, where)
    text = _without_tables(old, client, name).rstrip("\n")
    text = (text + "\n\n" if text else "") + toml_table(client, name, entry)
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        parsed = {}
    if parsed.get(client.key, {}).get(name) != entry:
        raise InstallError(
            f"{escape(str(where))} defines '{client.key}.{name}' in a form this command does not edit; "
            f"nothing was changed. Add the entry by hand: filegate install {client.name} --print"
        )
    return text


def without_toml(old: str, client: Client, name: str, where: Path) -> str:
    """``old`` without the table ``[mcp_servers.NAME]`` and its sub-tables; everything else
    must parse back as it was, else nothing is written."""
    doc = _toml_document(old, where)
    if name not in doc.get(client.key, {}):
        return old
    text = _without_tables(old, client, name)
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        parsed = None
    del doc[client.key][name]
    # The tables named [mcp_servers.X] made the key; without any, it may be gone from the text.
    bare = {k: v for k, v in doc.items() if k != client.key or v}
    if parsed not in (doc, bare):
        raise InstallError(
            f"{escape(str(where))} defines '{client.key}.{name}' in a form this command does not edit; "
            f"nothing was changed. Remove it by hand"
        )
    return text


def _toml_document(old: str, where: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(old)
    except tomllib.TOMLDecodeError as exc:
        raise InstallError(f"{escape(str(where))} is not valid TOML ({exc}); nothing was changed") from None


def _without_tables(old: str, client: Client, name: str) -> str:
    """``old``'s lines but those of ``[KEY.NAME]`` and ``[KEY.NAME.…]`` (text surgery keeps the
    user's comments and layout)."""
    ours = re.compile(
        rf"^\s*\[\s*{re.escape(client.key)}\s*\.\s*\"?{re.escape(name)}\"?\s*(\.[^\]]*)?\]\s*(#.*)?$"
    )
    header = re.compile(r"^\s*\[")
    kept: list[str] = []
    skipping = False
    for line in old.splitlines(keepends=True):
        if header.match(line):
            skipping = bool(ours.match(line))
        if not skipping:
            kept.append(line)
    return "".join(kept)


# Kimi Code's own file tools, which --disable-builtins switches off so its model uses filegate's.
KIMI_CODE_BUILTINS = ["Read", "Write", "Edit", "Grep", "Glob", "ReadMediaFile"]


def merged_disabled_tools(old: str, where: Path) -> str:
    """Kimi Code's ``config.toml`` with ``KIMI_CODE_BUILTINS`` added to ``[tools] disabled``."""
    try:
        doc = tomllib.loads(old)
    except tomllib.TOMLDecodeError as exc:
        raise InstallError(f"{escape(str(where))} is not valid TOML ({exc}); nothing was changed") from None
    tools = doc.get("tools", {})
    have = tools.get("disabled", []) if isinstance(tools, dict) else None
    if not isinstance(have, list):
        raise InstallError(
            f"{escape(str(where))}: 'tools' is not a table with a 'disabled' list; nothing was changed"
        )
    want = have + [t for t in KIMI_CODE_BUILTINS if t not in have]
    if want == have:
        return old
    line = f"disabled = {toml_value(want)}\n"
    lines = old.splitlines(keepends=True)
    header = re.compile(r"^\s*\[\s*tools\s*\]\s*(#.*)?$")
    at = next((i for i, ln in enumerate(lines) if header.match(ln)), None)
    if at is None:
        text = old.rstrip("\n")
        text = (text + "\n\n" if text else "") + "[tools]\n" + line
    else:
        end = next((i for i in range(at + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
        body = [i for i in range(at + 1, end) if re.match(r"\s*disabled\s*=", lines[i])]
        if body:
            lines[body[0]] = line
        else:
            lines.insert(at + 1, line)
        text = "".join(lines)
    try:
        ok = tomllib.loads(text).get("tools", {}).get("disabled") == want
    except tomllib.TOMLDecodeError:
        ok = False
    if not ok:
        raise InstallError(
            f"{escape(str(where))} sets [tools] disabled in a form this command does not edit; nothing was "
            f"changed. Add {', '.join(KIMI_CODE_BUILTINS)} to it by hand"
        )
    return text


def snippet(client: Client, name: str, entry: dict[str, Any]) -> str:
    if client.format == "toml":
        return toml_table(client, name, entry)
    return json.dumps({client.key: {name: entry}}, indent=2, ensure_ascii=False) + "\n"
