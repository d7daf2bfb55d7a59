"""``filegate``: flags and environment → Settings → a running server.

Importing this module stays cheap: fastmcp is imported only once a server is built.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from filegate import __version__


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> typing.NoReturn:
        """One line, not the whole usage block: the command may be buried in a client config."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="filegate",
        description="MCP server with Kimi CLI's file tools. Every flag also reads FILEGATE_<NAME>.",
    )
    a = p.add_argument
    a("--version", action="version", version=f"filegate {__version__}")
    a("--workdir", help="directory to serve (default: current directory)")
    a(
        "--add-dir",
        action="append",
        dest="add_dirs",
        metavar="DIR",
        help="another directory in the workspace (repeatable)",
    )
    a(
        "--confine",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="never touch anything outside the workspace (default: on for http, off for stdio)",
    )
    a(
        "--secret-pattern",
        action="append",
        dest="secret_patterns",
        metavar="GLOB",
        help="extra sensitive-file pattern, gitignore syntax (repeatable; extends the defaults)",
    )
    a("--transport", help="stdio (default) or http")
    a("--host", help="HTTP bind address (default 127.0.0.1)")
    a("--port", help="HTTP port (default 8000)")
    a("--path", help="HTTP endpoint path (default /mcp)")
    a("--token", help="bearer token required on every HTTP request (needed off loopback)")
    a(
        "--allowed-origin",
        action="append",
        dest="allowed_origins",
        metavar="ORIGIN",
        help="browser Origin allowed to call the HTTP endpoint (repeatable)",
    )
    a(
        "--allowed-host",
        action="append",
        dest="allowed_hosts",
        metavar="HOST",
        help="another Host header the HTTP endpoint answers to, e.g. files.internal:8000 (repeatable)",
    )
    a("--log-level", help="DEBUG, INFO, WARNING (default), ERROR; logs go to stderr")
    a(
        "--approval",
        help="ask (default): elicit each write; strict: refuse what cannot be asked; auto: never ask",
    )
    a(
        "--read-only",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="do not offer WriteFile and StrReplaceFile",
    )
    a("--client", help="result-budget preset: kimi, claude-desktop, claude-code, generic")
    a(
        "--result-budget",
        help="max characters of one media result, base64 included (default 1 MiB; 100000 for Kimi CLI)",
    )
    a("--image-max-side", help="downscale images whose longer side exceeds this (default 2048)")
    return p


def parse_settings(argv: Sequence[str] | None = None) -> Any:
    """Parse flags over the environment; exit 2 with one line on any bad value."""
    from filegate.settings import Settings

    parser = build_parser()
    args = parser.parse_args(argv)
    given = {k: v for k, v in vars(args).items() if v is not None}
    try:
        return Settings(**given)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "settings"
        flag = "--" + where.split(".")[0].replace("_", "-") if err["loc"] else where
        msg = err["msg"].removeprefix("Value error, ")
        parser.exit(2, f"filegate: error: {flag}: {msg}\n")


def main(argv: Sequence[str] | None = None) -> int:
    settings = parse_settings(argv)
    from filegate.server.app import serve

    with contextlib.suppress(KeyboardInterrupt):
        serve(settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
