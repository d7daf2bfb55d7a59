"""The one line a user sees on stderr when the server starts (SPEC §5): where and how it serves.

Never on stdout: on stdio that carries JSON-RPC only.
"""

from __future__ import annotations

import sys

from filegate import __version__
from filegate.policy.escape import escape
from filegate.settings import Settings


def startup_line(settings: Settings, url: str | None = None) -> str:
    """What a user sees first on stderr: version, workspace, transport (URL), approval, reach.

    Directory names are escaped: a workdir named with a newline cannot forge a second line.
    """
    dirs = ", ".join(escape(str(d)) for d in (settings.workdir, *settings.add_dirs))
    where = f"http at {url}" if url else "stdio"
    writes = "read-only" if settings.read_only else f"approval {settings.approval}"
    reach = "confined to the workspace" if settings.confined else "absolute paths outside readable"
    return f"filegate {__version__}: serving {dirs} over {where}; {writes}; {reach}"


def announce(settings: Settings, url: str | None = None) -> None:
    """Write :func:`startup_line` to stderr (never stdout: on stdio it carries JSON-RPC only).

    Shown at the default log level (WARNING) and below; ``--log-level ERROR`` silences it.
    """
    if settings.log_level in ("DEBUG", "INFO", "WARNING"):
        sys.stderr.write(startup_line(settings, url) + "\n")
        sys.stderr.flush()
