"""The one line a user sees on stderr when the server starts: where and how it serves, and
what would make its calls fail (a folder it cannot read or write, a broken rule file), each
with its fix. Never on stdout: on stdio that carries JSON-RPC only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from filegate import __version__
from filegate.fsio.pending import shown_home_relative
from filegate.policy.escape import escape
from filegate.settings import HTTP_ONLY, Settings

# HTTP-only flags that an explicit `--transport stdio` left unused (cli.parse_settings).
_IGNORED_FLAGS: list[str] = []


def ignore_flags(flags: list[str]) -> None:
    """Name ``flags`` in the start-up line as ignored over stdio."""
    _IGNORED_FLAGS[:] = flags


def startup_line(
    settings: Settings,
    url: str | None = None,
    stdin_is_terminal: bool = False,
    problems: Sequence[str] = (),
) -> str:
    """What a user sees first on stderr: version, workspace, transport (URL), approval, reach.

    Three cases add a clause: a FILEGATE_* variable only HTTP uses, set over stdio, is named;
    HTTP without a token (the bind is loopback, else the server refused to start) says that any
    local process can connect; stdio started by hand at a terminal says what it waits for,
    since nothing else happens until a client speaks. Directory names are
    escaped: a workdir named with a newline cannot forge a second line.
    """
    dirs = ", ".join(escape(str(d)) for d in (settings.workdir, *settings.add_dirs))
    where = f"http at {url}" if url else "stdio"
    writes = "read-only" if settings.read_only else f"approval {settings.approval}"
    reach = "confined to the workspace" if settings.confined else "absolute paths outside readable"
    line = f"filegate {__version__}: serving {dirs} over {where}; {writes}; {reach}"
    if url and settings.token is None:
        line += "; no token: any local process can connect (set --token or FILEGATE_TOKEN)"
    unused = [v for v in (f"FILEGATE_{f.upper()}" for f in HTTP_ONLY) if not url and v in os.environ]
    unused = [*_IGNORED_FLAGS, *unused] if not url else unused
    if unused:
        # A flag for HTTP is refused over stdio (flags.py); a variable may be set for other
        # servers in the same environment, so it is named here rather than refused.
        line += f"; ignored over stdio (for --transport http): {', '.join(unused)}"
    for problem in problems:
        line += f"; PROBLEM: {problem}"
    if not url and stdin_is_terminal:
        line += (
            "; waiting for an MCP client on stdin (clients start filegate themselves: "
            "see `filegate install --help`; Ctrl+D ends)"
        )
    return line


def startup_problems(settings: Settings) -> list[str]:
    """What would make calls fail, found before any call is made: a workspace folder or the
    home folder this user cannot read, a state folder it cannot write, a rule file that
    cannot be used. Each says what fails and what fixes it. Nothing is created or changed."""
    problems = []
    unreadable = [d for d in (settings.workdir, *settings.add_dirs) if not _can_list(d)]
    for folder in unreadable:
        problems.append(
            f"this user cannot read the workspace folder {shown_home_relative(folder)} (permission denied): "
            "every call fails; give this user read access to it (chmod, chown) or serve another folder"
        )
    home = Path.home()
    home_ok = _can_enter(home)
    if settings.client_rules and not home_ok:
        problems.append(
            f"this user cannot enter the home folder {escape(str(home))} (HOME; permission denied), "
            "where ~/.claude/settings.json may hold rules: every call fails; set HOME to this user's "
            "own folder, or add --client-rules off"
        )
    if settings.client_rules and home_ok and not unreadable:
        problems += _rule_file_problems(settings)
    if settings.history == "on":
        from filegate.fsio.pending import state_dir

        state = state_dir()
        blocked = _unwritable(state)
        if blocked is not None:
            problems.append(
                f"this user cannot write the state folder {shown_home_relative(state)} ({blocked}), "
                "where the write history is kept: every write fails; set XDG_STATE_HOME to a folder "
                "this user can write, or add --history off"
            )
    return problems


def _rule_file_problems(settings: Settings) -> list[str]:
    from filegate.errors import PathError
    from filegate.tools.search.ignores import client_rules_of

    rules = client_rules_of(settings)
    try:
        if rules is not None:
            rules.check()
    except PathError as exc:
        return [exc.message]
    return []


_EFFECTIVE = os.access in os.supports_effective_ids


def _can_enter(folder: Path) -> bool:
    return os.access(folder, os.X_OK, effective_ids=_EFFECTIVE)


def _can_list(folder: Path) -> bool:
    try:
        with os.scandir(folder):
            return True
    except PermissionError:
        return False
    except OSError:
        return True  # not a permission matter (a missing folder is refused before this)


def _unwritable(state: Path) -> str | None:
    """Why this process could not make files in ``state`` (created as needed), or None."""
    existing = state
    while not os.path.exists(existing):  # False on any error, as for a folder it cannot enter
        if os.path.islink(existing) or existing.parent == existing:
            return "it cannot be created"
        existing = existing.parent
    if not os.path.isdir(existing):
        return f"{shown_home_relative(existing)} is not a folder"
    if not os.access(existing, os.W_OK | os.X_OK, effective_ids=_EFFECTIVE):
        where = "" if existing == state else f" on {shown_home_relative(existing)}"
        return f"permission denied{where}"
    return None


def announce(settings: Settings, url: str | None = None) -> None:
    """Write :func:`startup_line` to stderr (never stdout: on stdio it carries JSON-RPC only).

    Shown at the default log level (WARNING) and below; ``--log-level ERROR`` silences it
    unless it names a problem.
    """
    problems = startup_problems(settings)
    if problems or settings.log_level in ("DEBUG", "INFO", "WARNING"):
        line = startup_line(settings, url, stdin_is_terminal=_stdin_is_terminal(), problems=problems)
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _stdin_is_terminal() -> bool:
    try:
        return os.isatty(0)
    except OSError:
        return False
