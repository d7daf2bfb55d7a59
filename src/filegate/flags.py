"""The server's command-line flags, shared by ``filegate`` (cli) and ``filegate install``.

Each flag maps to one Settings field; allowed values come from the Settings types, so help,
validation and ``filegate install``'s written arguments cannot drift apart.
"""

from __future__ import annotations

import argparse
import os
import typing
from collections.abc import Sequence
from typing import Any, get_args

from pydantic import ValidationError

from filegate.settings import ApprovalMode, ClientPreset, LogLevel, Transport


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> typing.NoReturn:
        """One line, not the whole usage block: the command may be buried in a client config."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _upper(value: str) -> str:
    return value.upper()


def add_server_flags(p: argparse.ArgumentParser) -> None:
    """The flags that configure a server (shared by ``filegate`` and ``filegate install``).

    Allowed values come from the Settings types, so help and validation cannot drift apart.
    """
    a = p.add_argument
    a("--workdir", metavar="DIR", help="directory to serve (default: current directory)")
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
    a("--transport", choices=get_args(Transport), help="how clients connect (default: stdio)")
    a("--host", help="HTTP bind address (default: 127.0.0.1)")
    a("--port", metavar="N", help="HTTP port (default: 8000)")
    a("--path", help="HTTP endpoint path (default: /mcp)")
    a("--token", help="bearer token required on every HTTP request (needed off loopback)")
    a(
        "--state-key",
        metavar="KEY",
        help="replicas: shared key (16+ chars) sealing approval state, so any replica accepts "
        "another's 2026-07-28 answer; prefer FILEGATE_STATE_KEY (a flag shows in ps)",
    )
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
    a("--max-connections", help="HTTP: most connections open at once (default 256)")
    a("--max-sessions", help="HTTP: most handshake-era sessions open at once (default 64)")
    a(
        "--session-idle-timeout",
        metavar="SECONDS",
        help="HTTP: end a handshake-era session idle this long, with its approvals and roots (default 900)",
    )
    a("--log-level", type=_upper, choices=get_args(LogLevel), help="stderr log level (default: WARNING)")
    a(
        "--approval",
        choices=get_args(ApprovalMode),
        help="ask (default): elicit each write; strict: refuse what cannot be asked; auto: never ask",
    )
    a(
        "--read-only",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="do not offer WriteFile and StrReplaceFile",
    )
    a(
        "--read-guard",
        choices=("on", "off"),
        help="on (default): edits and overwrites need a ReadFile of the file since it last changed",
    )
    a(
        "--client",
        choices=get_args(ClientPreset),
        help="result-budget preset (default: from the client's name)",
    )
    a(
        "--result-budget",
        metavar="N",
        help="max characters of one media result, base64 included (default 1 MiB; 100000 for Kimi CLI)",
    )
    a("--image-max-side", metavar="N", help="downscale images whose longer side exceeds this (default: 2048)")


def flag_names(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Settings field → the flag that sets it (``add_dirs`` → ``--add-dir``)."""
    return {a.dest: long_flag(a) for a in parser._actions if a.option_strings}


def long_flag(action: argparse.Action) -> str:
    """``--read-only`` of ``--read-only/--no-read-only``, ``--version`` of ``-V/--version``."""
    return next(s for s in action.option_strings if s.startswith("--"))


def settings_from(parser: argparse.ArgumentParser, args: argparse.Namespace, skip: Sequence[str] = ()) -> Any:
    """Settings from parsed flags over the environment; exit 2 with one line on any bad value."""
    from filegate.settings import Settings

    given = {k: v for k, v in vars(args).items() if v is not None and k not in skip}
    try:
        return Settings(**given)
    except ValidationError as exc:
        parser.exit(2, f"filegate: error: {_one_line(exc, given, flag_names(parser))}\n")


def _one_line(exc: ValidationError, given: dict[str, Any], flags: dict[str, str]) -> str:
    """The first problem, named by its flag (and its FILEGATE_* variable when it came from there)."""
    err = exc.errors()[0]
    msg = err["msg"].removeprefix("Value error, ")
    if not err["loc"]:
        return msg
    field = str(err["loc"][0])
    name = flags.get(field, "--" + field.replace("_", "-"))
    variable = f"FILEGATE_{field.upper()}"
    if field not in given and variable in os.environ:
        name = f"{variable} ({name})"
    return f"{name}: {msg}"
