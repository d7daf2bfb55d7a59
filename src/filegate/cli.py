"""``filegate``: flags and environment → Settings → a running server.

``filegate install CLIENT ...`` (filegate.install) writes a client's configuration instead;
``filegate uninstall CLIENT ...`` (filegate.install.uninstall) takes the entry out again.
Importing this module stays cheap: fastmcp is imported only once a server is built.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
from collections.abc import Sequence
from typing import Any

from filegate import __version__
from filegate.flags import ArgumentParser, add_server_flags, ignored_http_flags, settings_from

EXAMPLES = """\
examples:
  filegate --workdir ~/src/project                  serve a project over stdio (what clients start)
  filegate --read-only --add-dir ~/notes            two directories, no write tools
  FILEGATE_TOKEN=secret filegate --transport http --port 8000
                                                    streamable HTTP at http://127.0.0.1:8000/mcp
  filegate install claude-desktop --workdir ~/src/project
                                                    write Claude Desktop's configuration for you
  filegate install --help                           every client install knows
  filegate uninstall claude-desktop                 take the entry out again (with a backup)
  filegate history --since 2h                       the writes of the last two hours, with their ids
  filegate undo w-3f9a2c1d8e07b654                  put a file back as it was before that write
  filegate rules --workdir ~/src/project            the .cursorignore & co. and Claude Code rules
                                                    that bind the tools there, with sources

Every flag also reads FILEGATE_<NAME> (FILEGATE_ADD_DIRS, FILEGATE_SECRET_PATTERNS, ...);
flags win. Logs go to stderr; on stdio, stdout carries JSON-RPC only.
"""


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="filegate",
        description="MCP server with Kimi CLI's six file tools over one workspace.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-V", "--version", action="version", version=f"filegate {__version__}")
    add_server_flags(p)
    # The two commands beside serving, in the usage line too (not only in the examples).
    serve = p.format_usage().removeprefix("usage: ").rstrip("\n")
    p.usage = f"{serve}\n       filegate install CLIENT [...]     (filegate install --help)\n" + (
        "       filegate uninstall CLIENT [...]   (filegate uninstall --help)"
    )
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
    if args[:1] == ["install"]:
        from filegate.install import main as install

        return install(args[1:])
    if args[:1] == ["uninstall"]:
        from filegate.install.uninstall import main as uninstall

        return uninstall(args[1:])
    if args[:1] in (["history"], ["undo"]):
        from filegate.history_cli import main as history

        return history(args)
    if args[:1] == ["rules"]:
        return print_rules(args[1:])
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


def print_rules(argv: Sequence[str]) -> int:
    """``filegate rules``: the client rules (SPEC §8.5) this server would honour, with their
    sources and precedence. Takes the server's flags (--workdir, --add-dir, --client-rules)."""
    from filegate.policy.rulelisting import describe
    from filegate.tools.search.ignores import client_rules_of

    parser = ArgumentParser(prog="filegate rules", description=print_rules.__doc__)
    add_server_flags(parser)
    settings = settings_from(parser, parser.parse_args(argv))
    rules = client_rules_of(settings)
    if rules is None:
        print("Client rules are off (--client-rules off): no agent's rule file binds filegate.")
        return 0
    print(describe(rules))
    return 0


if __name__ == "__main__":
    sys.exit(main())
