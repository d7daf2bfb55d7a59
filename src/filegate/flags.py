"""The server's command-line flags, shared by ``filegate`` (cli) and ``filegate install``.

Each flag maps to one Settings field; allowed values come from the Settings types, so help,
validation and ``filegate install``'s written arguments cannot drift apart.
"""

from __future__ import annotations

import argparse
import os
import typing
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, get_args

from pydantic import ValidationError

from filegate.policy.escape import escape
from filegate.settings import ApprovalMode, ClientPreset, EditMatch, LogLevel, Transport


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> typing.NoReturn:
        """One line, not the whole usage block: the command may be buried in a client config."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _upper(value: str) -> str:
    return value.upper()


ON_OFF = ("on", "off")


@dataclass(frozen=True)
class Flag:
    """One server flag. ``value`` is its metavar (``"DIR"``), its allowed values (a tuple), or
    None for an on/off switch (``--confine`` / ``--no-confine``). ``many`` makes it repeatable,
    collected in that Settings field. Help is "what it does (default: X)": the README's flag
    table is made from it (scripts/flags_table.py)."""

    name: str
    value: str | tuple[str, ...] | None
    help: str
    many: str | None = None
    convert: Callable[[str], str] | None = None

    def add_to(self, p: argparse.ArgumentParser) -> None:
        kw: dict[str, Any] = {"help": self.help}
        if self.value is None:
            kw.update(action=argparse.BooleanOptionalAction, default=None)
        elif isinstance(self.value, tuple):
            kw["choices"] = self.value
        else:
            kw["metavar"] = self.value
        if self.many:
            kw.update(action="append", dest=self.many)
        if self.convert:
            kw["type"] = self.convert
        p.add_argument(self.name, **kw)


# fmt: off
SERVER_FLAGS: tuple[Flag, ...] = (
    Flag("--workdir", "DIR", "the directory served; relative paths start here (default: current directory)"),
    Flag("--add-dir", "DIR", "another directory in the workspace (repeatable)", many="add_dirs"),
    Flag("--confine", None, "never read or write outside the workspace "
         "(default: on for http, off for stdio)"),
    Flag("--secret-pattern", "GLOB", "extra sensitive-file pattern, gitignore syntax "
         "(repeatable; extends the defaults)", many="secret_patterns"),
    Flag("--transport", get_args(Transport), "how clients connect (default: stdio)"),
    Flag("--host", "HOST", "HTTP: the address the endpoint binds (default: 127.0.0.1)"),
    Flag("--port", "N", "HTTP: the port the endpoint listens on (default: 8000)"),
    Flag("--path", "PATH", "HTTP: the endpoint's path (default: /mcp)"),
    Flag("--token", "TOKEN", "HTTP: bearer token required on every request (needed off loopback)"),
    Flag("--state-key", "KEY", "replicas: shared key (16+ characters) sealing approval state, so any replica "
         "accepts another's 2026-07-28 answer; prefer FILEGATE_STATE_KEY, a flag shows in ps "
         "(default: one per process)"),
    Flag("--allowed-origin", "ORIGIN", "HTTP: a browser Origin allowed to call the endpoint (repeatable)",
         many="allowed_origins"),
    Flag("--allowed-host", "HOST", "HTTP: another Host header the endpoint answers to, such as a container's "
         "DNS name files.internal:8000 (repeatable; others get 421)", many="allowed_hosts"),
    Flag("--max-connections", "N", "HTTP: most connections open at once, also kept 64 under the descriptor "
         "limit (default: 256)"),
    Flag("--max-sessions", "N", "HTTP: most handshake-era sessions at once; more get 503 until one ends "
         "(default: 64)"),
    Flag("--session-idle-timeout", "SECONDS", "HTTP: end a handshake-era session idle this long, with its "
         "approvals and roots (default: 900)"),
    Flag("--log-level", get_args(LogLevel), "stderr log level; stdout carries only JSON-RPC "
         "(default: WARNING)", convert=_upper),
    Flag("--approval", get_args(ApprovalMode), "how writes are approved. ask: ask before each write where "
         "the client can answer, offering grants for a file, a folder or the session; strict: refuse what "
         "cannot be asked; auto: never ask; ask-always: ask, with no grants and no allow rules "
         "(default: ask)"),
    Flag("--grant-ttl", "AGE", "how long a grant given to a 2026-07-28 HTTP client holds (90s, 30m, 2h) "
         "(default: 30m)"),
    Flag("--read-only", None, "do not offer the tools that write at all (default: off)"),
    Flag("--read-guard", ON_OFF, "an edit or overwrite needs a ReadFile of the file since it last changed "
         "(default: on)"),
    Flag("--legacy-encoding", "NAME", "the codec of files that are not UTF-8 and declare none, e.g. cp1252, "
         "gb18030, shift_jis; auto: detect it (default: none, such bytes show as U+FFFD)"),
    Flag("--edit-match", get_args(EditMatch), "exact: an edit's old text must match the file exactly; "
         "tolerant: it may differ in whitespace and lookalikes, when the match is unique "
         "(default: tolerant)"),
    Flag("--client-rules", ON_OFF, "the rules users wrote for their agents (.cursorignore, .geminiignore, "
         ".aiexclude, .aiignore, .codeiumignore, Claude Code's permissions.deny/ask) bind these tools too; "
         "`filegate rules` lists them (default: on)"),
    Flag("--client", get_args(ClientPreset), "result-budget preset (default: from the client's name)"),
    Flag("--defer-tools", None, "let a client's tool search load these tools when needed, instead of every "
         "turn (Claude Code: no alwaysLoad) (default: off)"),
    Flag("--result-budget", "N", "most characters one tool result may have, base64 included: ReadFile, Grep "
         "and Glob return less and say where to continue, ReadMediaFile shrinks its media "
         "(default: from the client: docs/CLIENTS.md)"),
    Flag("--image-max-side", "N", "images with a longer side are downscaled to it (default: 2048)"),
    Flag("--history", ON_OFF, "keep every write's previous content so UndoWrite can restore it, in the state "
         "directory (README: Undo and history) (default: on)"),
    Flag("--history-max-bytes", "SIZE", "most bytes of kept contents (500M, 2G); the oldest writes go first "
         "(default: 1G)"),
    Flag("--history-max-age", "AGE", "writes older than this leave the history (36h, 30d) (default: 14d)"),
)
# fmt: on


def add_server_flags(p: argparse.ArgumentParser, only: Collection[str] | None = None) -> None:
    """The flags that configure a server (all of them, or those named in ``only``)."""
    for flag in SERVER_FLAGS:
        if only is None or flag.name in only:
            flag.add_to(p)


def flag_names(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Settings field → the flag that sets it (``add_dirs`` → ``--add-dir``)."""
    return {a.dest: long_flag(a) for a in parser._actions if a.option_strings}


def long_flag(action: argparse.Action) -> str:
    """``--read-only`` of ``--read-only/--no-read-only``, ``--version`` of ``-V/--version``."""
    return next(s for s in action.option_strings if s.startswith("--"))


def settings_from(parser: argparse.ArgumentParser, args: argparse.Namespace, skip: Sequence[str] = ()) -> Any:
    """Settings from parsed flags over the environment; exit 2 with one line on any bad value,
    or on a flag that does nothing over the chosen transport (SPEC §5: never silently ignored)."""
    from filegate.settings import HTTP_ONLY, Settings

    given = {k: v for k, v in vars(args).items() if v is not None and k not in skip}
    try:
        settings = Settings(**given)
    except ValidationError as exc:
        parser.exit(2, f"filegate: error: {escape(_one_line(exc, given, flag_names(parser)))}\n")
    unused = [field for field in HTTP_ONLY if field in given]
    # An explicit `--transport stdio` chose stdio over flags given for HTTP (a container's
    # entrypoint serves HTTP; `docker run … --transport stdio` switches): those are named in
    # the start-up line (ignored_http_flags). Without it, such a flag is a mistake: refused.
    if settings.transport != "http" and unused and given.get("transport") != "stdio":
        flag = flag_names(parser)[unused[0]]
        parser.exit(
            2,
            f"filegate: error: {flag} is for --transport http; over stdio it would do nothing. "
            f"Add --transport http, or leave {flag} out\n",
        )
    return settings


def ignored_http_flags(parser: argparse.ArgumentParser, args: argparse.Namespace, settings: Any) -> list[str]:
    """The HTTP-only flags an explicit `--transport stdio` leaves unused (see settings_from)."""
    from filegate.settings import HTTP_ONLY

    if settings.transport == "http":
        return []
    names = flag_names(parser)
    return [names[field] for field in HTTP_ONLY if getattr(args, field, None) is not None]


def _one_line(exc: ValidationError, given: dict[str, Any], flags: dict[str, str]) -> str:
    """The first problem in filegate's words, named by its flag (and its FILEGATE_* variable
    when it came from there)."""
    err = exc.errors()[0]
    msg = _in_our_words(err)
    if not err["loc"]:
        return msg
    field = str(err["loc"][0])
    name = flags.get(field, "--" + field.replace("_", "-"))
    variable = f"FILEGATE_{field.upper()}"
    if field not in given and variable in os.environ:
        name = f"{variable} ({name})"
    return f"{name}: {msg}"


def _in_our_words(err: Any) -> str:
    """pydantic's sentence ("Input should be greater than or equal to 1024", "at least 16 items
    after validation") as what the user must give instead. The value itself is not repeated:
    it may be a token."""
    kind = err["type"]
    ctx = {
        k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in (err.get("ctx") or {}).items()
    }
    if kind == "too_short":
        at_least = ctx.get("min_length")
        return f"must be at least {at_least} characters long (a random string, e.g. openssl rand -hex 16)"
    if kind == "greater_than_equal":
        return f"must be {ctx.get('ge')} or more"
    if kind == "less_than_equal":
        return f"must be {ctx.get('le')} or less"
    if kind == "greater_than":
        return f"must be more than {ctx.get('gt')}"
    if kind in ("int_parsing", "int_from_float"):
        return "must be a whole number"
    if kind == "float_parsing":
        return "must be a number"
    if kind == "bool_parsing":
        return "must be true or false (or 1 or 0)"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected', '')}".replace("'", "")
    return str(err["msg"]).removeprefix("Value error, ")
