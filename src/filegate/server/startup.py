"""The one line a user sees on stderr when the server starts (SPEC §5): where and how it serves.

Never on stdout: on stdio that carries JSON-RPC only.
"""

from __future__ import annotations

import os
import sys

from filegate import __version__
from filegate.policy.escape import escape
from filegate.settings import HTTP_ONLY, Settings

# HTTP-only flags that an explicit `--transport stdio` left unused (cli.parse_settings).
_IGNORED_FLAGS: list[str] = []


def ignore_flags(flags: list[str]) -> None:
    """Name ``flags`` in the start-up line as ignored over stdio."""
    _IGNORED_FLAGS[:] = flags


def startup_line(settings: Settings, url: str | None = None, stdin_is_terminal: bool = False) -> str:
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
    if not url and stdin_is_terminal:
        line += (
            "; waiting for an MCP client on stdin (clients start filegate themselves: "
            "see `filegate install --help`; Ctrl+D ends)"
        )
    return line


def announce(settings: Settings, url: str | None = None) -> None:
    """Write :func:`startup_line` to stderr (never stdout: on stdio it carries JSON-RPC only).

    Shown at the default log level (WARNING) and below; ``--log-level ERROR`` silences it.
    """
    if settings.log_level in ("DEBUG", "INFO", "WARNING"):
        sys.stderr.write(startup_line(settings, url, stdin_is_terminal=_stdin_is_terminal()) + "\n")
        sys.stderr.flush()


def _stdin_is_terminal() -> bool:
    try:
        return os.isatty(0)
    except OSError:
        return False
