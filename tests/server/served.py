"""Real `filegate` processes for the transport, interop and shutdown tests.

Every wait here is a hang guard (a generous deadline after which the test fails), never a
measurement.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import FILEGATE, START_S, free_port, wait_ready
from tests.tooling import cache_root, cached_install, npm_install

# Hang guards (START_S: tests/conftest.py).
STOP_S = 30.0

__all__ = ["START_S", "wait_ready"]

INSPECTOR = Path(__file__).resolve().parents[3] / "shared" / "tools" / "inspector"


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    port: int
    stderr: Path
    path: str = "/mcp"
    workdir: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def log(self) -> str:
        return self.stderr.read_text(errors="replace")

    def stop(self, *signals: signal.Signals) -> int:
        """Send each signal (default SIGTERM) and wait for the process to end."""
        for sig in signals or (signal.SIGTERM,):
            if self.proc.poll() is None:
                self.proc.send_signal(sig)
        try:
            return self.proc.wait(STOP_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"filegate did not stop; stderr:\n{self.log()[-3000:]}") from None


def request(
    port: int,
    method: str,
    path: str,
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    timeout: float = STOP_S,
) -> tuple[int, dict[str, str], bytes]:
    """One raw HTTP exchange (headers exactly as given, Host included), first 64 KiB of body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=dict(headers or {}))
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read(65536)
    finally:
        conn.close()


@contextlib.contextmanager
def serve(
    cmd: list[str],
    tmp: Path,
    port: int,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    path: str = "/mcp",
) -> Iterator[Served]:
    """Start ``cmd`` (an HTTP filegate on ``port``), wait for /healthz, stop it at the end."""
    stderr = tmp / f"filegate-{port}.stderr"
    with stderr.open("wb") as err:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, **(env or {})},
            cwd=cwd,
        )
    served = Served(proc, port, stderr, path)
    try:
        wait_ready(proc, port, stderr)
        yield served
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(STOP_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@contextlib.contextmanager
def http_filegate(
    workdir: Path, tmp: Path, *flags: str, env: Mapping[str, str] | None = None
) -> Iterator[Served]:
    """`filegate --transport http` on a free loopback port."""
    port = free_port()
    cmd = [FILEGATE, "--transport", "http", "--port", str(port), "--workdir", str(workdir)]
    with serve([*cmd, *flags], tmp, port, env=env) as served:
        served.workdir = workdir
        yield served


def children(pid: int) -> dict[int, str]:
    """Live child processes of ``pid`` (from /proc): pid → command name."""
    found: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        name, rest = stat.split("(", 1)[1].rsplit(")", 1)
        fields = rest.split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found[int(entry)] = name
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_for_child(pid: int, name: str) -> int:
    """The pid of ``pid``'s child called ``name``, once it exists."""
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        for child, cname in children(pid).items():
            if cname == name:
                return child
        time.sleep(0.02)
    raise AssertionError(f"no {name} child of {pid} appeared")


def filegate_children_of_me(workdir: Path) -> list[int]:
    """`filegate` processes this test started (stdio transports) serving ``workdir``."""
    pids = []
    for child in children(os.getpid()):
        with contextlib.suppress(OSError):
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            if any(b"filegate" in part for part in cmdline) and str(workdir).encode() in cmdline:
                pids.append(child)
    return pids


# The version ../shared/tools/inspector pins; fetched from the npm registry when that wrapper is
# absent (a plain clone), into the same cache the wrapper uses.
INSPECTOR_PACKAGE = "@modelcontextprotocol/inspector@2.12.0"


def inspector_missing() -> str | None:
    """Why the MCP Inspector cannot run here, or None (it is fetched on first use)."""
    if INSPECTOR.exists():
        return None
    if shutil.which("npm") is None or shutil.which("node") is None:
        return "npm/node are not installed: the MCP Inspector is an npm package"
    return None


@functools.cache
def inspector_command() -> str:
    """../shared/tools/inspector, else the pinned package installed once from the npm registry.

    An install is checked by running it (npm has been seen to leave a tree with files missing
    while another npm shares its cache) and made by tests.tooling.cached_install: under a file
    lock, so the tests that need it at once (threads of one run, or two runs) install it once
    (two threads once raced each other into one temporary name). A failed install fails the
    calling test; it is not a skip.
    """
    if INSPECTOR.exists():
        return str(INSPECTOR)
    cache = cache_root("filegate-tools", "FILEGATE_TOOLS_CACHE")
    dest = cache / "npm" / INSPECTOR_PACKAGE.replace("/", "_").replace("@", "_")
    with _INSPECTOR_LOCK:  # functools.cache does not stop two threads computing it at once
        return str(_inspector_exe(cached_install(dest, _install_inspector, _inspector_runs)))


_INSPECTOR_LOCK = threading.Lock()


def _install_inspector(into: Path) -> None:
    npm_install(INSPECTOR_PACKAGE, into)


def _inspector_exe(prefix: Path) -> Path:
    return prefix / "node_modules" / ".bin" / "mcp-inspector"


def _inspector_runs(prefix: Path) -> bool:
    exe = _inspector_exe(prefix)
    if not exe.exists():
        return False
    done = subprocess.run([str(exe), "--cli", "--help"], capture_output=True, timeout=120)
    return done.returncode == 0


def run_inspector(
    *args: str, cwd: Path | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """The Inspector CLI, ended within ``timeout`` whatever happens.

    It runs in a session of its own, with the servers it starts: at the hang guard the whole
    group is killed, so no server it started can keep the output pipes open (subprocess.run's
    own timeout kills only the Inspector, then waits for those pipes to close, which a live
    grandchild can put off indefinitely), and the test fails with what was printed so far.
    """
    proc = subprocess.Popen(
        # The Inspector gives a server 15 s to answer by default; a loaded CI machine starting
        # several servers at once can need more (a hang guard, not a measurement).
        [inspector_command(), "--cli", "--connect-timeout", "120000", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1"},
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(
            f"the Inspector had not ended after {timeout:.0f} s (killed with the servers it started); "
            f"stdout: {out[-1500:]!r}; stderr: {err[-1500:]!r}"
        ) from None
    finally:
        # Servers it started and left behind (it ended, they did not) go with their group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


PYTHON = sys.executable
