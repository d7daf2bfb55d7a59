"""Real server processes for the stress tests, and what /proc says about them."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastmcp.client.transports import StdioTransport

from tests.conftest import FILEGATE, free_port, wait_ready
from tests.rawstdio import RawStdio

# A filegate whose Grep timeout is lowered, so a "past its timeout" case runs in seconds. The
# constant is the one tools/grep_rg.py documents (Kimi's 20 s); only this launcher changes it.
LOW_TIMEOUT_LAUNCHER = (
    "import sys, filegate.tools.grep.rg as g; g.RG_TIMEOUT_S = float(sys.argv.pop(1)); "
    "from filegate.cli import main; sys.exit(main())"
)


# A filegate under an address-space cap (RLIMIT_AS, set before filegate is imported; prlimit(1)
# is not always at hand): what would take the machine's memory fails inside the server instead.
CAPPED_LAUNCHER = (
    "import resource, sys; cap = int(sys.argv.pop(1)); "
    "resource.setrlimit(resource.RLIMIT_AS, (cap, cap)); "
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


def rg_processes(marker: str) -> list[int]:
    """Live rg processes whose command line mentions ``marker`` (e.g. a unique pattern)."""
    return [p for p in processes_running(marker) if cmdline(p)[:1] and cmdline(p)[0].endswith("/rg")]


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


def _guard_flags() -> list[str]:
    """The read_guard_off fixture's FILEGATE_READ_GUARD as a flag: the SDK's stdio transport
    and the zygote (started once, before the fixture) do not pass the variable on."""
    value = os.environ.get("FILEGATE_READ_GUARD")
    return ["--read-guard", value] if value else []


def stdio_server(workdir: Path, *flags: str, grep_timeout: float | None = None, **kw: Any) -> StdioTransport:
    """A stdio transport for the installed filegate (or the low-timeout launcher)."""
    args = ["--workdir", str(workdir), *_guard_flags(), *flags]
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
def http_server(
    workdir: Path, *flags: str, grep_timeout: float | None = None, address_space: int | None = None
) -> Iterator[HttpServer]:
    """A real `filegate --transport http` on a free port, with its process at hand (under an
    ``address_space`` cap in bytes, or with a lowered Grep timeout, when asked)."""
    port = free_port()
    args = ["--transport", "http", "--port", str(port), "--workdir", str(workdir), *flags]
    if address_space is not None:
        cmd = [sys.executable, "-c", CAPPED_LAUNCHER, str(address_space), *args]
    elif grep_timeout is None:
        cmd = [FILEGATE, *args]
    else:
        cmd = [sys.executable, "-c", LOW_TIMEOUT_LAUNCHER, str(grep_timeout), *args]
    # stderr to a file, not a pipe: a pipe nobody reads would block a server that logs a lot.
    fd, name = tempfile.mkstemp(prefix="filegate-stderr-")
    log = Path(name)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=fd)
    os.close(fd)
    try:
        wait_ready(proc, port, log)  # its start-up line, then /healthz; a hang guard that fails loudly
        yield HttpServer(f"http://127.0.0.1:{port}/mcp", proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.unlink(missing_ok=True)


# --- many short-lived stdio servers, fast: fork them from a warm parent ------------------------

# A process that has imported filegate (about 1–2 s) and forks a fresh stdio server on request:
# each child is a real filegate process serving MCP on its own pipes (named FIFOs), started in
# milliseconds, so a crash loop can kill hundreds of them. The child runs filegate's own
# ``cli.main`` exactly as the console script does.
ZYGOTE = r"""
import asyncio, io, json, os, signal, sys, tempfile
import filegate.cli, filegate.server.app, filegate.server.shutdown, filegate.settings
from fastmcp import Client
async def warm():  # one in-memory session pulls in every lazily imported module
    with tempfile.TemporaryDirectory() as d:
        open(os.path.join(d, "a.txt"), "w").write("warm\n")
        server = filegate.server.app.build_server(filegate.settings.Settings(workdir=d, approval="auto"))
        async with Client(server, mode="legacy") as c:
            for tool, args in (("ReadFile", {"path": "a.txt"}), ("Grep", {"pattern": "w"}),
                               ("StrReplaceFile", {"path": "a.txt", "edit": {"old": "w", "new": "W"}})):
                await c.call_tool(tool, args, raise_on_error=False)
asyncio.run(warm())
control_in = io.TextIOWrapper(io.FileIO(0, closefd=False))
print("ready", flush=True)
for line in control_in:
    req = json.loads(line)
    while True:  # reap the children killed so far, before the next one starts (and looks for them)
        try:
            done, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if done == 0:
            break
    pid = os.fork()
    if pid == 0:
        os.setsid()
        fin = os.open(req["stdin"], os.O_RDONLY)
        fout = os.open(req["stdout"], os.O_WRONLY)
        err = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        for fd, target in ((fin, 0), (fout, 1), (err, 2)):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, closefd=False)), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding="utf-8")
        sys.stderr = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)), encoding="utf-8")
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.chdir(req["cwd"])
        os.environ.update(req.get("env") or {})  # e.g. the test's own XDG_STATE_HOME
        if req.get("no_tmpfile"):  # the named-temp path, as on a file system without O_TMPFILE
            import filegate.fsio.atomic
            filegate.fsio.atomic._TMPFILE = 0
        code = 1
        try:
            code = filegate.cli.main(req["args"])
        finally:
            os._exit(code)
    print(pid, flush=True)
"""


def _state_home() -> dict[str, str]:
    """The test's own XDG_STATE_HOME (set per test, after the session's zygote started): a
    server forked without it would keep its history, locks and temp records in the real
    user's state folder."""
    home = os.environ.get("XDG_STATE_HOME")
    return {} if home is None else {"XDG_STATE_HOME": home}


class Zygote:
    """Forks stdio filegate servers on demand (see ZYGOTE)."""

    def __init__(self, fifo_dir: Path) -> None:
        self.dir = fifo_dir
        self.count = 0
        # Its own state folder: its warm-up edit would else land in the real user's history
        # (a session's zygote starts before any test's own XDG_STATE_HOME is set).
        env = {**os.environ, "XDG_STATE_HOME": str(fifo_dir / "zygote-state")}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", ZYGOTE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline() == b"ready\n"

    def spawn(
        self,
        workdir: Path,
        *flags: str,
        no_tmpfile: bool = False,
        capabilities: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
    ) -> RawStdio:
        self.count += 1
        fin, fout = self.dir / f"in{self.count}", self.dir / f"out{self.count}"
        os.mkfifo(fin)
        os.mkfifo(fout)
        req = {"stdin": str(fin), "stdout": str(fout), "stderr": str(self.dir / "stderr.log"),
               "cwd": str(workdir), "args": ["--workdir", str(workdir), *_guard_flags(), *flags],
               "no_tmpfile": no_tmpfile, "env": {**_state_home(), **(env or {})}}  # fmt: skip
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        self.proc.stdin.flush()
        pid = int(self.proc.stdout.readline())
        stdin = open(fin, "wb")  # noqa: SIM115 - owned by the RawStdio
        stdout = open(fout, "rb", buffering=0)  # noqa: SIM115
        os.unlink(fin)
        os.unlink(fout)
        client = RawStdio(pid, stdin, stdout)
        client.initialize(capabilities)
        return client

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):  # else left to the collector (ResourceWarning)
            if pipe is not None:
                pipe.close()
