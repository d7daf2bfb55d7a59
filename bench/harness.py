"""Clients, timers and memory probes for the benchmark suite (no filegate imports here).

Every filegate figure comes from a real MCP client talking to the installed `filegate`
console script over stdio: the fastmcp Client, or the MCP Inspector for the load test.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")
os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
FILEGATE = str(VENV_BIN / "filegate")
RG = shutil.which("rg", path=str(VENV_BIN)) or shutil.which("rg") or "rg"
TOOLS = ROOT.parent / "shared" / "tools"
INSPECTOR = str(TOOLS / "inspector")
REFERENCE = str(TOOLS / "reference-server")
CORPUS = str(TOOLS / "corpus")
# Generated inputs live outside the repository and are reused between runs.
CACHE = Path(os.environ.get("FILEGATE_BENCH_CACHE", Path.home() / ".cache" / "filegate-bench"))
# The MCP handshake every client here uses (the Inspector CLI's default era too).
MODE = "legacy"


# --- processes and memory ------------------------------------------------------------------


def proc_status_kib(pid: int, key: str) -> int | None:
    """A `/proc/<pid>/status` field in KiB (VmRSS, VmHWM), or None once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def reset_peak(pid: int) -> None:
    """VmHWM := current RSS (Linux ≥ 4.0), so the next peak belongs to what follows."""
    with contextlib.suppress(OSError), open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def find_descendant(root: int, needle: str) -> int | None:
    """The first process below ``root`` whose command line contains ``needle``."""
    kids = _children()
    todo = list(kids.get(root, []))
    while todo:
        pid = todo.pop(0)
        if needle in _cmdline(pid):
            return pid
        todo.extend(kids.get(pid, []))
    return None


class PeakWatcher:
    """Polls VmHWM of the first descendant matching ``needle`` until stopped (for servers that
    exit with their client, like the Inspector's)."""

    def __init__(self, root: int, needle: str, every_s: float = 0.05) -> None:
        self.root, self.needle, self.every_s = root, needle, every_s
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        pid = None
        while not self._stop.is_set():
            if pid is None:
                pid = find_descendant(self.root, self.needle)
            if pid is not None:
                hwm = proc_status_kib(pid, "VmHWM")
                if hwm is not None:
                    self.peak_kib = max(self.peak_kib, hwm)
            self._stop.wait(self.every_s)


@dataclass
class CmdRun:
    seconds: float
    maxrss_kib: int
    stdout_bytes: int
    returncode: int


def run_cmd(args: list[str], cwd: str | Path | None = None) -> CmdRun:
    """Run a command with its stdout on a pipe that we read to the end (as filegate reads rg)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(args, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)  # fmt: skip
    assert p.stdout is not None
    n = 0
    while chunk := p.stdout.read(1 << 16):
        n += len(chunk)
    _, status, usage = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    p.stdout.close()
    return CmdRun(dt, int(usage.ru_maxrss), n, p.returncode)


# --- MCP clients ---------------------------------------------------------------------------


@dataclass
class Server:
    """A connected client and the pid of the server process it spawned."""

    client: Any
    pid: int | None

    async def call(self, tool: str, args: dict[str, Any]) -> Any:
        result = await self.client.call_tool(tool, args, raise_on_error=False)
        if result.is_error:
            text = " ".join(getattr(b, "text", "") for b in result.content)
            raise RuntimeError(f"{tool} {args} failed: {text[:300]}")
        return result

    async def timed(self, tool: str, args: dict[str, Any]) -> float:
        t0 = time.perf_counter()
        await self.call(tool, args)
        return time.perf_counter() - t0

    def rss_kib(self) -> int | None:
        return proc_status_kib(self.pid, "VmRSS") if self.pid else None

    def peak_kib(self) -> int | None:
        return proc_status_kib(self.pid, "VmHWM") if self.pid else None

    def reset_peak(self) -> None:
        if self.pid:
            reset_peak(self.pid)


def filegate_cmd(workdir: str | Path, *flags: str) -> tuple[str, list[str]]:
    return FILEGATE, ["--workdir", str(workdir), *flags]


def reference_cmd(*dirs: str | Path) -> tuple[str, list[str]]:
    exe = subprocess.run([REFERENCE, "--path"], capture_output=True, text=True, check=True).stdout
    return exe.strip(), [str(d) for d in dirs]


@contextlib.asynccontextmanager
async def connect(
    command: tuple[str, list[str]], needle: str, state: Path | None = None
) -> AsyncIterator[Server]:
    """Spawn ``command`` as a stdio server and connect the fastmcp Client to it (``state``: its
    state directory, else the bench's)."""
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    exe, args = command
    transport = StdioTransport(exe, args, keep_alive=False, env=_server_env(state), log_file=server_log())
    async with Client(transport, mode=MODE) as client:
        yield Server(client, find_descendant(os.getpid(), needle))


def server_log() -> Path:
    """Servers' stderr goes here, not into the table."""
    CACHE.mkdir(parents=True, exist_ok=True)
    return CACHE / "servers.log"


def _server_env(state: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FILEGATE_")}
    env["PYTHONUNBUFFERED"] = "1"
    # The servers' state (write history, lock files) in the bench's cache, not the user's.
    env["XDG_STATE_HOME"] = str(state or CACHE / "state")
    return env


async def cold_start(command: tuple[str, list[str]]) -> float:
    """Spawn → initialize → tools/list over stdio, as one client sees it."""
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    exe, args = command
    t0 = time.perf_counter()
    transport = StdioTransport(exe, args, keep_alive=False, env=_server_env(), log_file=server_log())
    async with Client(transport, mode=MODE) as c:
        tools = await c.list_tools()
        dt = time.perf_counter() - t0
    assert tools, "the server listed no tools"
    return dt


def inspector_load(target: list[str], tool: str, args: dict[str, Any], requests: int,
                   concurrency: int, needle: str) -> tuple[dict[str, Any], int]:  # fmt: skip
    """MCP Inspector CLI `--load`: its JSON summary and the server's peak RSS (KiB). ``target``
    is a stdio command, or an HTTP URL followed by the Inspector's transport flags."""
    cmd = [INSPECTOR, "--cli", *target, "--method", "tools/call", "--tool-name", tool,
           "--tool-args-json", json.dumps(args), "--load", "--load-requests", str(requests),
           "--load-concurrency", str(concurrency), "--format", "json", "-q"]  # fmt: skip
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with PeakWatcher(p.pid, needle) as watch:
        out, err = p.communicate()
    line = next((ln for ln in reversed(out.splitlines()) if ln.startswith("{")), "")
    if not line:
        raise RuntimeError(f"inspector gave no summary: {out[-500:]} {err[-500:]}")
    summary = json.loads(line)["result"]
    if summary["ok"] != summary["requests"]:
        raise RuntimeError(f"inspector load had failures: {summary}")
    return summary, watch.peak_kib


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def http_filegate(workdir: str | Path, *flags: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A warm `filegate --transport http` on a free loopback port: (its /mcp URL, the process)."""
    port = free_port()
    exe, args = filegate_cmd(workdir, "--transport", "http", "--port", str(port), *flags)
    with server_log().open("ab") as log:
        proc = subprocess.Popen([exe, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=log, env=_server_env())  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"filegate over HTTP did not start (see {server_log()})")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                    break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --- measuring -----------------------------------------------------------------------------


@dataclass
class Pairs:
    """Interleaved A/B samples: A is filegate, B the reference (None where there is none)."""

    a: list[float] = field(default_factory=list)
    b: list[float] = field(default_factory=list)

    @property
    def a_med(self) -> float:
        return statistics.median(self.a)

    @property
    def b_med(self) -> float | None:
        return statistics.median(self.b) if self.b else None

    def ratio(self, higher_is_better: bool = False) -> float | None:
        """The median of per-pair ratios A/B (B/A for throughput: how many times the reference)."""
        if not self.b:
            return None
        pairs = zip(self.a, self.b, strict=True)
        return statistics.median((b / a) if higher_is_better else (a / b) for a, b in pairs)


async def interleave(runs: int, a: Callable[[], Awaitable[float]],
                     b: Callable[[], Awaitable[float]] | None, warmup: int = 1) -> Pairs:  # fmt: skip
    """Warm-up first, then ``runs`` pairs, alternating which side goes first (ABBA...)."""
    for _ in range(warmup):
        await a()
        if b is not None:
            await b()
    out = Pairs()
    for i in range(runs):
        if b is None:
            out.a.append(await a())
        elif i % 2 == 0:
            out.a.append(await a())
            out.b.append(await b())
        else:
            out.b.append(await b())
            out.a.append(await a())
    return out


def machine() -> str:
    """One line about where the numbers come from."""
    cpu = "unknown CPU"
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = (proc_meminfo_kib("MemTotal") or 0) / 2**20
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    rg = subprocess.run([RG, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    from importlib.metadata import version

    return (f"{os.cpu_count()} vCPU {cpu}, {mem:.0f} GiB RAM, Linux {platform.release()}, "
            f"Python {platform.python_version()}, fastmcp {version('fastmcp')}, mcp "
            f"{version('mcp')}, {rg}, Node {node}")  # fmt: skip


def proc_meminfo_kib(key: str) -> int | None:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None
