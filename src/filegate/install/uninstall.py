"""``filegate uninstall CLIENT``: take filegate's entry out of a client's configuration.

The same file ``filegate install`` wrote (the client's own, ``--project``'s, or ``--config``),
through the same door (install/files.py): found without following an unexpected link, the old
file kept as ``<file>.<time>.bak`` (owner-only), the other servers and settings left as they
are; a file without the entry is not touched.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from collections.abc import Sequence
from pathlib import Path

from filegate.flags import ArgumentParser
from filegate.install import routing
from filegate.install.clients import CLIENTS, config_path, detect_os, unknown_client
from filegate.install.files import InstallError, Trust, load, locate, save
from filegate.install.merge import KIMI_CODE_BUILTINS, without_json, without_toml
from filegate.policy.escape import escape


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="filegate uninstall",
        description="Take filegate's entry out of an MCP client's configuration (with a backup).",
    )
    p.add_argument("target", metavar="CLIENT", help=", ".join(CLIENTS))
    p.add_argument("--name", default="filegate", help="the server's name in the client (default: filegate)")
    p.add_argument("--config", metavar="FILE", help="this file instead of the client's own")
    p.add_argument(
        "--project",
        action="store_true",
        help="cursor, vscode: the project's own file (in --workdir), not the user-wide one",
    )
    p.add_argument("--workdir", metavar="DIR", help="the project, for --project (default: current directory)")
    return p


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    ns = parser.parse_args(argv)
    if ns.target not in CLIENTS:
        parser.error(unknown_client(escape(ns.target)))
    client = CLIENTS[ns.target]
    if ns.project and client.project_file is None:
        parser.error(f"{client.title} reads no per-project file")
    if ns.project and ns.config:
        parser.error("give --project or --config, not both")
    if ns.workdir is not None and not ns.workdir.strip():
        parser.error("--workdir: the value is empty; give a folder")
    project = Path(os.path.realpath(os.path.expanduser(ns.workdir or os.getcwd())))
    trust: Trust = "user"
    if ns.config:
        path, trust = Path(ns.config).expanduser(), "given"
    elif ns.project:
        path, trust = project / str(client.project_file), "project"
    else:
        found = config_path(client.name, detect_os(), os.environ)
        if found is None:
            parser.error(f"{client.name} has no file of its own: give --config FILE")
        path = found
    remove = without_toml if client.format == "toml" else without_json
    try:
        unrouted = _unroute(client.name, ns.name) if trust == "user" else None
        real = locate(path, trust, project)
        loaded = load(real)
        new = remove(loaded.text, client, ns.name, real)
        if new == loaded.text:
            said = f"{client.title}: {escape(str(real))} has no '{escape(ns.name)}' entry"
            print(f"{said}\n{unrouted}" if unrouted else f"{said}; nothing changed")
            return 0
        # Nothing of filegate's stays: the file keeps its mode (an owner-only one stays so).
        backup = save(loaded, new, private=False)
        if client.name == "kimi-code":
            still_off = builtins_still_off(locate(path.with_name("config.toml"), trust, project))
    except (InstallError, OSError) as exc:
        parser.exit(2, f"filegate uninstall: error: {exc}\n")
    kept = f" (the old file is kept as {escape(str(backup))})" if backup else ""
    print(f"{client.title}: removed '{escape(ns.name)}' from {escape(str(real))}{kept}")
    if unrouted:
        print(unrouted)
    if client.name == "kimi-code" and still_off:
        print(
            f"Kimi Code: its own {', '.join(still_off)} are still off ([tools] disabled in "
            f"{escape(str(path.with_name('config.toml')))}): take them out of that list to have them back"
        )
    print(f"next: {client.next_step}")
    return 0


def _unroute(client: str, name: str) -> str:
    """``install --route-builtins`` undone (SPEC §9): the client's own file tools back on, in its
    user settings; what was done, or "" when they were not routed."""
    if client not in routing.ROUTABLE:
        return ""
    home = Path(os.environ.get("HOME") or Path.home())
    if client == "claude-code":
        path, unmerge = routing.claude_settings(os.environ, home), routing.unrouted_claude
    else:
        path = config_path(client, detect_os(), os.environ) or home / ".gemini" / "settings.json"
        unmerge = routing.unrouted_gemini
    real = locate(path, "user")
    loaded = load(real)
    off = routing.still_routed(loaded.text, client)
    new = unmerge(loaded.text, real, name)
    if not off or new == loaded.text:
        return ""
    backup = save(loaded, new, private=False)
    kept = f" (the old file is kept as {escape(str(backup))})" if backup else ""
    return f"{CLIENTS[client].title}: its own {', '.join(off)} are back on in {escape(str(real))}{kept}"


def builtins_still_off(config: Path) -> list[str]:
    """Which of Kimi Code's file tools its ``config.toml`` still switches off (install's
    ``--disable-builtins``): without filegate they leave its model with no file tools."""
    try:
        tools = tomllib.loads(load(config).text).get("tools", {})
    except tomllib.TOMLDecodeError:
        return []
    disabled = tools.get("disabled", []) if isinstance(tools, dict) else []
    return [t for t in KIMI_CODE_BUILTINS if isinstance(disabled, list) and t in disabled]
