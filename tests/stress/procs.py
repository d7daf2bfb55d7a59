"""Real server processes for the stress tests, and what /proc says about them."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastmcp.client.transports import StdioTransport

from tests.conftest import FILEGATE, free_port

# A filegate whose Grep timeout is lowered, so a "past its timeout" case runs in seconds. The
# constant is the one grep.py documents (Kimi's 20 s); only this launcher changes it.
LOW_TIMEOUT_LAUNCHER = (
    "import sys, filegate.tools.grep as g; g.RG_TIMEOUT_S = float(sys.argv.pop(1)); "
    "from filegate.cli import main; sys.exit(main())"
)


def status(pid: int) -> dict[str, int]:
    """VmRSS / VmHWM (bytes) of a process, from /proc/<pid>/status."""
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) * 1024
    return out


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (any session: rg runs in a session of its own)."""
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None and int(fields[1]) == pid and fields[0] != "Z":
                kids.append(int(entry))
    return kids


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def processes_running(marker: str) -> list[int]:
    """Live (not zombie) processes whose command line mentions ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            fields = _stat_fields(int(entry))
            if fields is not None and fields[0] != "Z" and any(marker in a for a in cmdline(int(entry))):
                found.append(int(entry))
    return found


def rg_children(pid: int) -> list[int]:
    return [k for k in children(pid) if cmdline(k)[:1] and cmdline(k)[0].endswith("rg")]


def server_pid(workdir: Path) -> int:
    """The filegate child of this process serving ``workdir``."""
    for kid in children(os.getpid()):
        args = cmdline(kid)
        if str(workdir) in args and any("filegate" in a for a in args):
            return kid
    raise LookupError(f"no filegate child serving {workdir}")


def wait_until(predicate: Any, timeout: float, step: float = 0.05) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` passes (a hang guard, not a timing)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return bool(predicate())


def stdio_server(workdir: Path, *flags: str, grep_timeout: float | None = None, **kw: Any) -> StdioTransport:
    """A stdio transport for the installed filegate (or the low-timeout launcher)."""
    args = ["--workdir", str(workdir), *flags]
    if grep_timeout is None:
        return StdioTransport(FILEGATE, args, cwd=str(workdir), keep_alive=False, **kw)
    launcher = ["-c", LOW_TIMEOUT_LAUNCHER, str(grep_timeout), *args]
    return StdioTransport(sys.executable, launcher, cwd=str(workdir), keep_alive=False, **kw)


@dataclass
class HttpServer:
    url: str
    proc: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        return self.proc.pid


@contextlib.contextmanager
def http_server(workdir: Path, *flags: str, grep_timeout: float | None = None) -> Iterator[HttpServer]:
    """A real `filegate --transport http` on a free port, with its process at hand."""
    port = free_port()
    args = ["--transport", "http", "--port", str(port), "--workdir", str(workdir), *flags]
    if grep_timeout is None:
        cmd = [FILEGATE, *args]
    else:
        cmd = [sys.executable, "-c", LOW_TIMEOUT_LAUNCHER, str(grep_timeout), *args]
    # stderr to a file, not a pipe: a pipe nobody reads would block a server that logs a lot.
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"server exited: {log.read().decode()[-2000:]}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield HttpServer(f"http://127.0.0.1:{port}/mcp", proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
