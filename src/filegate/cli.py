"""``filegate``: flags and environment → Settings → a running server.

A first word that is not a flag is a command instead (COMMANDS): ``install`` and ``uninstall``
(filegate.install) edit a client's configuration, ``check`` (filegate.server.check) tries the server
as a client would, ``history`` and ``undo`` (filegate.history_cli) use the write history,
``changes`` (filegate.review_cli) shows what was written since a point, ``rules`` lists the
agents' rule files that bind the tools.
Importing this module stays cheap: fastmcp is imported only once a server is built.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from filegate import __version__
from filegate.flags import ArgumentParser, add_server_flags, ignored_http_flags, settings_from
from filegate.policy.escape import escape

EXAMPLES = """\
examples:
  filegate --workdir ~/src/project                  serve a project over stdio (what clients start)
  filegate --read-only --add-dir ~/notes            two directories, no write tools
  FILEGATE_TOKEN=secret filegate --transport http --port 8000
                                                    streamable HTTP at http://127.0.0.1:8000/mcp
  filegate install claude-desktop --workdir ~/src/project
                                                    write Claude Desktop's configuration for you
  filegate install --help                           every client install knows
  filegate check --workdir ~/src/project            start it as a client would and read one file
  filegate uninstall claude-desktop                 take the entry out again (with a backup)
  filegate history --since 2h                       the writes of the last two hours, with their ids
  filegate undo w-3f9a2c1d8e07b654                  put a file back as it was before that write
  filegate changes --since 2h --against HEAD        what was written since, diffed against git's HEAD
  filegate rules --workdir ~/src/project            the .cursorignore & co. and Claude Code rules
                                                    that bind the tools there, with sources

Every flag also reads FILEGATE_<NAME> (FILEGATE_ADD_DIRS, FILEGATE_SECRET_PATTERNS, ...);
flags win. Logs go to stderr; on stdio, stdout carries JSON-RPC only.
"""


# The commands beside serving: (usage, what it does). The usage line lists every one.
COMMANDS = {
    "install": ("install CLIENT [...]", "write filegate into a client's configuration"),
    "uninstall": ("uninstall CLIENT [...]", "take filegate's entry out of a client's configuration"),
    "check": ("check [--workdir DIR]", "start filegate as a client does: list its tools, read a file"),
    "history": ("history [--path P] [--since T]", "list the writes filegate kept"),
    "undo": (
        "undo ID|--since ID [--yes]",
        "put a file back as it was before a write; --since: every one since",
    ),
    "changes": ("changes [--since ID|T] [...]", "the files written since then, with one diff"),
    "rules": ("rules [--workdir DIR]", "the agents' rule files that bind the tools there"),
}


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="filegate",
        description="An MCP server with Kimi CLI's file tools over one workspace.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-V", "--version", action="version", version=f"filegate {__version__}")
    add_server_flags(p)
    # Every command beside serving, in the usage line too (not only in the examples).
    serve = p.format_usage().removeprefix("usage: ").rstrip("\n")
    width = max(len(u) for u, _ in COMMANDS.values())
    others = [f"       filegate {u:<{width}}  {what}" for u, what in COMMANDS.values()]
    p.usage = "\n".join([serve, *others])
    return p


def parse_settings(argv: Sequence[str] | None = None) -> Any:
    """Parse flags over the environment; exit 2 with one line on any bad value. HTTP-only flags
    that an explicit `--transport stdio` leaves unused are kept for the start-up line."""
    parser = build_parser()
    args = parser.parse_args(argv)
    settings = settings_from(parser, args)
    ignored = ignored_http_flags(parser, args, settings)
    if ignored:
        from filegate.server.startup import ignore_flags

        ignore_flags(ignored)
    return settings


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args and not args[0].startswith("-") else None
    if command is not None:
        return run_command(command, args)
    # Start-up builds a great many objects that live as long as the process (fastmcp, the
    # SDK's models, pydantic's validators) and little garbage, so the collector's passes over
    # them are wasted work (the bench's cold-start item measures it). serve() turns it back on
    # once the server is built, with those objects frozen out of its later passes; so does any
    # way out.
    gc.disable()
    try:
        settings = parse_settings(args)
        from filegate.server.app import serve
        from filegate.settings import StartError

        try:
            with contextlib.suppress(KeyboardInterrupt):
                serve(settings)
        except StartError as exc:
            sys.stderr.write(f"filegate: error: {exc}\n")
            return 2
    finally:
        gc.enable()
    return 0


def run_command(command: str, args: list[str]) -> int:
    """A command beside serving, with what every command owes a terminal: no traceback (a
    closed pipe, Ctrl+C, an unexpected failure: one line each) and a suggestion for a typo."""
    if command not in COMMANDS:
        import difflib

        close = difflib.get_close_matches(command, COMMANDS, n=1, cutoff=0.6)
        hint = f"did you mean `filegate {close[0]}`? " if close else ""
        sys.stderr.write(
            f"filegate: error: unknown command {escape(command)!r} ({hint}commands: "
            f"{', '.join(COMMANDS)}; server flags start with --, see filegate --help)\n"
        )
        return 2
    try:
        code = _dispatch(command, args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # The reader went away (`filegate history | head`): nothing more to say to it. Later
        # flushes of stdout go to /dev/null, so the interpreter's own exit stays quiet too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        return 130
    except Exception as exc:
        why = escape(f"{type(exc).__name__}: {exc}")
        sys.stderr.write(f"filegate {command}: error: {why} (this is a bug in filegate; please report it)\n")
        return 1


def _dispatch(command: str, args: list[str]) -> int:
    if command == "install":
        from filegate.install import main as install

        return install(args[1:])
    if command == "uninstall":
        from filegate.install.uninstall import main as uninstall

        return uninstall(args[1:])
    if command == "changes":
        from filegate.review_cli import main as changes

        return changes(args)
    if command in ("history", "undo"):
        from filegate.history_cli import main as history

        return history(args)
    if command == "check":
        return run_check(args[1:])
    return print_rules(args[1:])


def run_check(argv: Sequence[str]) -> int:
    """``filegate check``: this filegate started by a real client (server/check.py)."""
    from filegate.install.clients import server_command
    from filegate.server.check import check

    p = ArgumentParser(
        prog="filegate check",
        description="Start filegate as a client does (stdio), list its tools and read one file; "
        "print what it saw. Writes nothing.",
    )
    p.add_argument(
        "--workdir",
        metavar="DIR",
        help="serve this folder and read a file at its top (default: a scratch folder with one file)",
    )
    ns = p.parse_args(argv)
    folder = None
    if ns.workdir is not None:
        folder = Path(os.path.expanduser(ns.workdir)).resolve()
        if not folder.is_dir():
            p.error(f"--workdir: {escape(str(folder))} is not a folder")
    return check(server_command(), folder)


# The server flags `filegate rules` reads: the ones that decide which rule files apply.
RULES_FLAGS = ("--workdir", "--add-dir", "--client-rules")


def print_rules(argv: Sequence[str]) -> int:
    """``filegate rules``: the rules users wrote for their agents that this server would
    honour, with their sources and precedence. Exit 1 when a rule file cannot be used (every
    tool call fails until it is fixed)."""
    from filegate.policy.rulelisting import describe
    from filegate.tools.search.ignores import client_rules_of

    parser = ArgumentParser(
        prog="filegate rules",
        description="The rule files (.cursorignore & co., Claude Code's permissions) that bind "
        "filegate's tools in a workspace, with their sources and precedence.",
    )
    add_server_flags(parser, only=RULES_FLAGS)
    settings = settings_from(parser, parser.parse_args(argv))
    rules = client_rules_of(settings)
    if rules is None:
        print("Client rules are off (--client-rules off): no agent's rule file binds filegate.")
        print_grants(settings)
        return 0
    listing, unusable = describe(rules)
    print(listing)
    print_grants(settings)
    return 1 if unusable else 0


def print_grants(settings: Any) -> None:
    """SPEC §11: the grants in force for this workspace (each one's scope, holder, time left)."""
    from filegate.fsio.grantstore import listing

    off = " (--approval ask-always: none is honoured)" if settings.approval == "ask-always" else ""
    print(f"\nGrants in force here: writes they cover are not asked{off}.")
    print(listing(str(settings.workdir)))


if __name__ == "__main__":
    sys.exit(main())
