"""``filegate install CLIENT``: write filegate into an MCP client's configuration.

The entry names the absolute path of the running ``filegate`` (so the client finds it without
``PATH``) and the server flags given here. The client's file is merged, not replaced: other
servers and settings stay, the old file is kept as ``<file>.<time>.bak``, and installing the
same thing twice changes nothing. ``--print`` writes nothing and prints the snippet.

The clients and their files: install/clients.py; the merges: install/merge.py; every file
read or written: install/files.py.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from filegate.flags import ArgumentParser, add_server_flags, long_flag, settings_from
from filegate.install import routing
from filegate.install.clients import (
    CLIENTS,
    Client,
    OSName,
    clone_of,
    config_location,
    config_path,
    detect_os,
    http_entry,
    server_command,
    stdio_entry,
    unknown_client,
)
from filegate.install.files import InstallError, Trust, load, locate, make_private, save
from filegate.install.merge import (
    KIMI_CODE_BUILTINS,
    merged_disabled_tools,
    merged_json,
    merged_toml,
    snippet,
    toml_table,
)
from filegate.policy.escape import escape

__all__ = ["CLIENTS", "InstallError", "config_location", "config_path", "detect_os", "main", "server_command",
           "toml_table"]  # fmt: skip


@dataclass(frozen=True)
class Written:
    path: Path
    backup: Path | None
    changed: bool
    made_private: bool = False  # unchanged, but its token was readable by others until now


def write_config(
    client: Client, name: str, entry: dict[str, Any], path: Path, trust: Trust, project: Path | None = None
) -> Written:
    """Merge ``entry`` into ``path``: backup first, then an atomic replace; no-op when equal.

    A file holding a token (an HTTP entry's header) is made owner-only, its backup too.
    """
    merge = merged_toml if client.format == "toml" else merged_json
    private = client.headers_key in entry
    return write_merged(
        locate(path, trust, project), lambda old, where: merge(old, client, name, entry, where), private
    )


def write_merged(real: Path, merge: Callable[[str, Path], str], private: bool = False) -> Written:
    """``real`` (from files.locate) rewritten as ``merge(old text, real)`` through files.save."""
    loaded = load(real)
    new = merge(loaded.text, real)
    if new == loaded.text:
        return Written(real, None, changed=False, made_private=private and make_private(loaded))
    backup = save(loaded, new, private=private)
    return Written(real, backup, changed=True)


# --- the command ---------------------------------------------------------------------------

EXAMPLES = """\
examples:
  filegate install claude-desktop --workdir ~/src/project
  filegate install claude-code                      # Claude Code starts it in each project
  filegate install kimi --read-only
  filegate install kimi-code --disable-builtins     # Kimi Code uses filegate's, not its own
  filegate install cursor --print                   # show the snippet, write nothing
  filegate install vscode --project                 # .vscode/mcp.json in this project only
  FILEGATE_TOKEN=secret filegate install vscode --transport http --port 8000
  filegate install generic-http --token secret --config ./mcp.json

Clients that start the server in the project they work on (claude-code, kimi, kimi-code,
gemini-cli, codex) get no --workdir unless you give one; the others get the current directory,
and their user-wide entry serves that one directory in every window: for Cursor and VS Code,
--project writes a per-project entry instead. --os names another system: the snippet and where
it goes are printed, nothing is written.
"""


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="filegate install",
        description="Write filegate into an MCP client's configuration (merged, with a backup).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # No argparse choices: a mistyped client gets a suggestion (unknown_client).
    p.add_argument("target", metavar="CLIENT", help=", ".join(CLIENTS))
    p.add_argument("--name", default="filegate", help="the server's name in the client (default: filegate)")
    p.add_argument("--print", action="store_true", dest="print_only", help="print the snippet, write nothing")
    p.add_argument("--os", choices=get_args(OSName), dest="os_name",
                   help="whose file locations to use (default: this machine's)")  # fmt: skip
    p.add_argument("--config", metavar="FILE", help="write this file instead of the client's own")
    p.add_argument("--disable-builtins", action="store_true",
                   help="kimi-code: switch Kimi Code's file tools off ([tools] disabled)")  # fmt: skip
    p.add_argument("--route-builtins", action="store_true",
                   help="claude-code, gemini-cli: switch the client's own file tools off so its model "
                   "uses filegate's (filegate uninstall switches them back on)")  # fmt: skip
    p.add_argument("--project", action="store_true",
                   help="cursor, vscode: write the project's own file (.cursor/mcp.json, .vscode/mcp.json "
                   "in --workdir) instead of the user-wide one")  # fmt: skip
    add_server_flags(p)
    return p


INSTALL_ONLY = (
    "target", "name", "print_only", "os_name", "config", "disable_builtins", "route_builtins", "project",
)  # fmt: skip


def server_args(
    parser: argparse.ArgumentParser,
    ns: argparse.Namespace,
    settings: Any,
    client: Client,
    started_in_project: bool | None = None,
) -> list[str]:
    """The flags to record, in the parser's order (a stable order keeps reinstalls no-ops).

    ``started_in_project`` (default: the client's habit) leaves ``--workdir`` out unless given:
    an HTTP server is started by the user, not in the client's project, so it always has one.
    """
    if started_in_project is None:
        started_in_project = client.starts_in_project
    args: list[str] = []
    for action in parser._actions:
        dest = action.dest
        value = getattr(ns, dest, None)
        if not action.option_strings or dest in INSTALL_ONLY or dest == "token":  # --help: None below
            continue
        flag = long_flag(action)
        if dest == "workdir":
            if value is not None or not started_in_project:
                args += [flag, str(settings.workdir)]
        elif dest == "add_dirs":
            for d in settings.add_dirs:
                args += [flag, str(d)]
        elif dest == "client" and value is None and client.name == "kimi":
            args += [flag, "kimi"]  # Kimi CLI does not say its name; its 100,000-char budget
        elif dest == "client" and value is None and client.name == "kimi-code":
            # Kimi Code says its name, but the preset holds whatever the client announces.
            if "kimi-code" in (action.choices or ()):
                args += [flag, "kimi-code"]
        elif value is None or dest == "transport":
            continue
        elif isinstance(action, argparse.BooleanOptionalAction):
            args.append(flag if value else "--no-" + flag.removeprefix("--"))
        elif isinstance(value, list):
            for v in value:
                args += [flag, str(v)]
        else:
            args += [flag, str(value)]
    return args


def refuse_relative_dirs(parser: argparse.ArgumentParser, ns: argparse.Namespace) -> None:
    """A relative --workdir/--add-dir is refused (SPEC §5): the client starts the server from a
    folder of its own, so which folder the user meant is not certain; an absolute one is."""
    given = [("--workdir", ns.workdir), *(("--add-dir", d) for d in ns.add_dirs or ())]
    if ns.workdir is None:
        given.append(("FILEGATE_WORKDIR", os.environ.get("FILEGATE_WORKDIR")))
    for name, value in given:
        if value and value.strip() and not os.path.isabs(os.path.expanduser(value)):
            parser.exit(
                2,
                f"filegate install: error: {name} {escape(value)} is a relative path; the client starts the "
                f'server from a folder of its own: give the full path (e.g. "$PWD/{escape(value)}")\n',
            )


def endpoint_url(settings: Any) -> str:
    host = settings.host
    if host in ("0.0.0.0", "::", "[::]"):
        host = "127.0.0.1"  # bound to every address: the client on this machine uses loopback
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{settings.port}{settings.path}"


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    ns = parser.parse_args(argv)
    if ns.target not in CLIENTS:
        parser.error(unknown_client(escape(ns.target)))
    client = CLIENTS[ns.target]
    refuse_relative_dirs(parser, ns)
    if ns.transport is None and not client.stdio:
        ns.transport = "http"
    settings = settings_from(parser, ns, skip=INSTALL_ONLY)
    if settings.transport == "http" and not client.http:
        parser.exit(2, f"filegate install: error: {client.title} starts local servers only; use stdio\n")
    if settings.transport == "stdio" and not client.stdio:
        parser.exit(2, f"filegate install: error: {client.name} is for --transport http\n")
    if ns.disable_builtins and client.name != "kimi-code":
        parser.exit(2, "filegate install: error: --disable-builtins is for kimi-code only\n")
    if ns.route_builtins and client.name not in routing.ROUTABLE:
        other = " (kimi-code: --disable-builtins)" if client.name == "kimi-code" else ""
        why = f"--route-builtins is for {' and '.join(routing.ROUTABLE)}{other}"
        parser.exit(2, f"filegate install: error: {why}\n")
    if ns.project and client.project_file is None:
        with_one = ", ".join(c.name for c in CLIENTS.values() if c.project_file)
        why = f"{client.title} reads no per-project file; --project is for {with_one}"
        parser.exit(2, f"filegate install: error: {why}\n")
    if ns.project and ns.config:
        parser.exit(2, "filegate install: error: give --project or --config, not both\n")
    args = server_args(parser, ns, settings, client)
    token = settings.token.get_secret_value() if settings.token else None
    if settings.transport == "http":
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        entry = http_entry(client, endpoint_url(settings), headers)
    else:
        entry = stdio_entry(client, [*server_command(), *args])
    if client.name == "claude-code" and not settings.defer_tools:
        # SPEC §9: the only way into Claude Code's first request (its tool search defers the rest).
        entry["alwaysLoad"] = True
    if ns.print_only:
        sys.stdout.write(snippet(client, ns.name, entry))
        return 0
    here = detect_os()
    if ns.os_name and ns.os_name != here and not ns.config and not ns.project:
        # The command names this machine's filegate and the file lives on the other machine:
        # writing it here would only leave a stray file under this HOME.
        where = config_location(client.name, ns.os_name)
        print(
            f"{client.title} on {ns.os_name} reads {where}; this is {here}, so nothing was written. "
            f"Put this entry there, with the path of filegate on that machine as the command:"
        )
        sys.stdout.write(snippet(client, ns.name, entry))
        return 0
    trust: Trust = "user"
    if ns.config:
        path: Path | None = Path(ns.config).expanduser()
        trust = "given"
    elif ns.project:
        path = settings.workdir / str(client.project_file)
        trust = "project"
    else:
        path = config_path(client.name, here, os.environ)
    if path is None:
        parser.exit(
            2,
            f"filegate install: error: {client.name} has no file of its own: give --config FILE or --print\n",
        )
    try:
        # Beside the file Kimi Code reads (the link, if it is one), not the link's target;
        # located before anything is written, so a refusal leaves both files as they were.
        sibling = (
            locate(path.with_name("config.toml"), trust, settings.workdir) if ns.disable_builtins else None
        )
        written = write_config(client, ns.name, entry, path, trust, settings.workdir)
    except (InstallError, OSError) as exc:
        parser.exit(2, f"filegate install: error: {exc}\n")
    shown = escape(str(written.path))
    if not written.changed:
        outcome = "made it owner-only (it holds a token)" if written.made_private else "nothing changed"
        print(f"{client.title}: {shown} already has this '{ns.name}' entry; {outcome}")
    else:
        kept = f" (the old file is kept as {escape(str(written.backup))})" if written.backup else ""
        print(f"{client.title}: wrote '{ns.name}' into {shown}{kept}")
        clone = clone_of(server_command())
        if clone is not None:
            print(CLONE_NOTE.format(clone=escape(str(clone))))
    if sibling is not None:
        try:
            done = write_merged(sibling, merged_disabled_tools)
        except (InstallError, OSError) as exc:
            parser.exit(2, f"filegate install: error: {exc}\n")
        kept = f" (the old file is kept as {escape(str(done.backup))})" if done.backup else ""
        state = "wrote" if done.changed else "already had"
        tools = ", ".join(KIMI_CODE_BUILTINS)
        print(f"Kimi Code: {state} [tools] disabled = {tools} in {escape(str(done.path))}{kept}")
    routed = _route(parser, ns, client) if ns.route_builtins else None
    if settings.transport == "http":
        _print_http_start(parser, ns, settings, client, token)
    elif "--workdir" in args and not ns.project:
        served = escape(str(settings.workdir))
        also = ""
        if client.project_file:
            also = f"; for per-project entries, run `filegate install {client.name} --project` in each"
        print(f"this entry serves {served} whatever {client.title} has open{also}")
    if written.changed or (sibling is not None and done.changed) or (routed is not None and routed.changed):
        print(f"next: {client.next_step}")
    if client.name == "kimi":
        print(KIMI_CODE_NOTE)
    return 0


def _route(parser: argparse.ArgumentParser, ns: argparse.Namespace, client: Client) -> Written:
    """``--route-builtins``: the client's own file tools off (install/routing.py), said with how
    to undo it and what cannot be routed."""
    home = Path(os.environ.get("HOME") or Path.home())
    if client.name == "claude-code":
        path, merge = routing.claude_settings(os.environ, home), routing.routed_claude
        allowed = ", ".join(routing.readers(ns.name))
        what = f"permissions.deny {', '.join(routing.CLAUDE_BUILTINS)}; allow {allowed}"
    else:
        path = config_path(client.name, detect_os(), os.environ) or home / ".gemini" / "settings.json"
        merge, what = routing.routed_gemini, f"tools.exclude {', '.join(routing.GEMINI_BUILTINS)}"
    try:
        done = write_merged(locate(path, "user"), lambda old, where: merge(old, where, ns.name))
    except (InstallError, OSError) as exc:
        parser.exit(2, f"filegate install: error: {exc}\n")
    kept = f" (the old file is kept as {escape(str(done.backup))})" if done.backup else ""
    state = "wrote" if done.changed else "already had"
    print(f"{client.title}: {state} {what} in {escape(str(done.path))}{kept}")
    print(
        f"its own file tools are off: `filegate uninstall {client.name}` switches them back on; not routed: "
        f"{routing.NOT_ROUTED[client.name]}"
    )
    return done


# An entry names the filegate it was written by: one inside a clone's virtual environment
# stops working when the clone moves (the README's first screen offers the tool installs).
CLONE_NOTE = (
    "note: this entry runs the filegate inside the clone {clone}: moving or deleting that folder "
    "breaks it; `pipx install filegate` or `uv tool install filegate` gives a path that stays"
)


# Kimi CLI is archived; its successor reads another file, which `install kimi` does not write.
KIMI_CODE_NOTE = (
    "using Kimi Code (Kimi CLI's successor)? It reads another file: run `filegate install kimi-code`"
)


def _print_http_start(
    parser: argparse.ArgumentParser, ns: argparse.Namespace, settings: Any, client: Client, token: str | None
) -> None:
    """The command that starts the server this entry points at: with the workdir (the user
    starts it, not the client in its project) and the token the entry sends, when there is one."""
    args = server_args(parser, ns, settings, client, started_in_project=False)
    start = " ".join(_shell_quote(a) for a in [*server_command(), "--transport", "http", *args])
    if token:
        print(f"start the server with: FILEGATE_TOKEN={_shell_quote(token)} {start}")
    else:
        print(f"start the server with: {start}")
        print(
            "no token: any local process can connect; to require one, give the same --token "
            "(or FILEGATE_TOKEN) to this command and to the server"
        )


def _shell_quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)
