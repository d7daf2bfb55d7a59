"""Server CPU per small ReadFile through fastmcp's own path, and where it goes (issues 23, 28).

A raw JSON-RPC client on the server's stdio pipes keeps ``--concurrency`` calls in flight
(handshake era, no roots: the whole workspace) for ``--calls`` calls after a warm-up; the
server's CPU is read from ``/proc/<pid>/stat`` (all its threads) before and after, so the
client's own work is not counted. Three servers, runs alternated:

- ``filegate``: the installed script;
- ``bare fastmcp``: a FastMCP server with one plain ``ReadFile(path)`` function tool, served on
  filegate's own stdio transport (bench/bare_server.py): what fastmcp and the SDK cost alone,
  so filegate minus this is what filegate itself adds on that path;
- ``reference``: the Node filesystem server's ``read_text_file``.

``--profile`` then runs filegate once more under cProfile (the main thread's CPU time, switched
on for the timed calls only, by signal) and prints its top functions by own time, split into
fastmcp/mcp (the SDK and its models included), filegate, and the event loop: a library or
built-in function (pydantic, anyio, a pipe write) counts for whoever called it. cProfile's own
cost (a clock read per call and return) inflates call-heavy code; the split, not the absolute
figures, is the point.

    .venv/bin/python bench/percall.py [--runs 3] [--calls 2000] [--concurrency 10] [--profile]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pstats
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import data
from harness import FILEGATE, _server_env, reference_cmd, server_log

HERE = Path(__file__).resolve().parent
PYTHON = str(Path(FILEGATE).parent / "python")


def server_cpu_s(pid: int) -> float:
    """utime + stime of the process, all threads, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Pipelined:
    """A JSON-RPC client on a server's pipes that keeps several calls in flight."""

    def __init__(self, cmd: list[str], env: dict[str, str]) -> None:
        with server_log().open("ab") as log:
            pipe = subprocess.PIPE
            self.proc = subprocess.Popen(cmd, stdin=pipe, stdout=pipe, stderr=log, env=env)
        self._next, self._buf = 1, b""

    def send(self, method: str, params: dict[str, Any], notify: bool = False) -> int:
        assert self.proc.stdin is not None
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        rid = self._next
        if not notify:
            msg["id"] = rid
            self._next += 1
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()
        return rid

    def reply(self, deadline: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            while b"\n" not in self._buf:
                ready, _, _ = select.select([self.proc.stdout], [], [], max(deadline - time.monotonic(), 0))
                if not ready:
                    raise TimeoutError("the server stopped answering")
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    raise EOFError("the server closed its stdout")
                self._buf += chunk
            line, _, self._buf = self._buf.partition(b"\n")
            msg = json.loads(line)
            if "id" in msg and ("result" in msg or "error" in msg):
                return dict(msg)

    def start(self) -> None:
        self.send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "bench-percall", "version": "0"}})  # fmt: skip
        self.reply(time.monotonic() + 120)
        self.send("notifications/initialized", {}, notify=True)

    def load(self, tool: str, args: dict[str, Any], calls: int, concurrency: int) -> float:
        """Seconds for ``calls`` calls with ``concurrency`` in flight; every answer checked."""
        deadline = time.monotonic() + 600
        t0 = time.perf_counter()
        sent = 0
        for _ in range(min(concurrency, calls)):
            self.send("tools/call", {"name": tool, "arguments": args})
            sent += 1
        for _ in range(calls):
            answer = self.reply(deadline)
            if "error" in answer or answer["result"].get("isError"):
                raise RuntimeError(f"{tool} failed: {str(answer)[:300]}")
            if sent < calls:
                self.send("tools/call", {"name": tool, "arguments": args})
                sent += 1
        return time.perf_counter() - t0

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.proc.stdout.close()


Target = tuple[list[str], str, dict[str, Any]]


def targets(small: Path) -> dict[str, Target]:
    exe, ref_args = reference_cmd(small.parent)
    fg_args = ["--workdir", str(small.parent)]
    return {
        "filegate": ([FILEGATE, *fg_args], "ReadFile", {"path": small.name}),
        "bare fastmcp": ([PYTHON, str(HERE / "bare_server.py"), *fg_args], "ReadFile", {"path": small.name}),
        "reference": ([exe, *ref_args], "read_text_file", {"path": str(small)}),
    }


def measure(target: Target, calls: int, concurrency: int, warmup: int = 200) -> tuple[float, float]:
    """(server CPU per call in seconds, calls per second)."""
    cmd, tool, args = target
    client = Pipelined(cmd, _server_env())
    try:
        client.start()
        client.load(tool, args, warmup, concurrency)
        c0 = server_cpu_s(client.proc.pid)
        wall = client.load(tool, args, calls, concurrency)
        cpu = server_cpu_s(client.proc.pid) - c0
    finally:
        client.close()
    return cpu / calls, calls / wall


# --- the profile ---------------------------------------------------------------------------

OTHER = "other"
OWNERS = (("fastmcp/mcp", ("/fastmcp/", "/mcp/", "/mcp_types/")), ("filegate", ("/filegate/",)))


def owner(filename: str) -> str:
    for name, marks in OWNERS:
        if any(m in filename for m in marks):
            return name
    return OTHER


def attribute(stats: dict[Any, Any]) -> dict[Any, dict[str, float]]:
    """For each function, the shares of fastmcp/mcp, filegate and the event loop in its own
    time: a library or built-in function (a ``write``, a lock's ``release``, pydantic) counts
    for whoever called it, found up the callers weighted by the time spent from each; what
    no owned frame called is the event loop's."""
    memo: dict[Any, dict[str, float]] = {}

    def share(func: Any, depth: int) -> dict[str, float]:
        if func in memo:
            return memo[func]
        who = owner(func[0])
        if who != OTHER:
            return {who: 1.0}
        callers = stats[func][4]
        weights = {c: v[3] for c, v in callers.items() if c in stats}
        total = sum(weights.values())
        if depth > 40 or not total:
            return {"event loop": 1.0}
        memo[func] = {"event loop": 1.0}  # a cycle counts as the loop's
        out: dict[str, float] = collections.Counter()
        for c, w in weights.items():
            for k, v in share(c, depth + 1).items():
                out[k] += v * w / total
        memo[func] = dict(out)
        return memo[func]

    return {func: share(func, 0) for func in stats}


def profile(small: Path, calls: int, concurrency: int, top: int = 12) -> str:
    """filegate under cProfile for the timed calls only: its top functions by own time, split."""
    out = Path(tempfile.mkdtemp(prefix="filegate-percall-")) / "server.prof"
    cmd = [PYTHON, str(HERE / "profiled_server.py"), str(out), "--workdir", str(small.parent)]
    client = Pipelined(cmd, _server_env())
    try:
        client.start()
        client.load("ReadFile", {"path": small.name}, 200, concurrency)
        client.proc.send_signal(signal.SIGUSR1)
        client.load("ReadFile", {"path": small.name}, 50, concurrency)  # the signal is seen
        client.load("ReadFile", {"path": small.name}, calls, concurrency)
        client.proc.send_signal(signal.SIGUSR2)
        deadline = time.monotonic() + 60
        while not out.exists() and time.monotonic() < deadline:
            client.load("ReadFile", {"path": small.name}, 1, 1)
            time.sleep(0.1)
    finally:
        client.close()
    return summary(pstats.Stats(str(out)).stats, calls + 50, concurrency, top)  # type: ignore[attr-defined]


def summary(stats: dict[Any, Any], n: int, concurrency: int, top: int = 12) -> str:
    """The profile's split and top functions per owner, per call."""
    shares = attribute(stats)
    by_owner: dict[str, float] = collections.Counter()
    rows: dict[str, list[tuple[float, str]]] = collections.defaultdict(list)
    for func, (_, _, tottime, _, _) in stats.items():
        filename, line, name = func
        short = filename.split("site-packages/")[-1].split("src/")[-1]
        where = f"{short}:{line}({name})" if line else name
        for who, part in shares[func].items():
            by_owner[who] += tottime * part
            rows[who].append((tottime * part, where))
    total = sum(by_owner.values())
    lines = [f"cProfile of filegate's main thread, {n} calls at concurrency {concurrency} (own "
             "time; a library or built-in function counts for its callers; the worker thread's "
             "file work is not in it):"]  # fmt: skip
    for who, t in sorted(by_owner.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {who}: {100 * t / total:.1f} % ({t / n * 1e6:.0f} µs per call under the profiler)")
    for who in (*(name for name, _ in OWNERS), "event loop"):
        lines.append(f"  top {who}:")
        for t, where in sorted(rows[who], reverse=True)[:top]:
            lines.append(f"    {t / n * 1e6:6.1f} µs  {where}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=10)
    ap.add_argument("--profile", action="store_true")
    ns = ap.parse_args()
    small = data.small_file()
    chosen = targets(small)
    results: dict[str, list[tuple[float, float]]] = {k: [] for k in chosen}
    load0 = os.getloadavg()[0]
    for _ in range(ns.runs):
        for name, target in chosen.items():
            results[name].append(measure(target, ns.calls, ns.concurrency))
    load1 = os.getloadavg()[0]
    print(f"{ns.runs} alternated runs of {ns.calls:,} small ReadFile calls at concurrency "
          f"{ns.concurrency}, stdio; load average {load0:.1f} → {load1:.1f}")  # fmt: skip
    print("| server | server CPU per call | calls/s |\n|---|---|---|")
    med = {}
    for name, runs in results.items():
        cpu = [r[0] * 1e3 for r in runs]
        tput = [r[1] for r in runs]
        med[name] = statistics.median(cpu)
        print(f"| {name} | {med[name]:.3f} ms ({min(cpu):.3f}–{max(cpu):.3f}) | "
              f"{statistics.median(tput):,.0f} ({min(tput):,.0f}–{max(tput):,.0f}) |")  # fmt: skip
    fg, ref = results["filegate"], results["reference"]
    ratio = statistics.median(a[1] / b[1] for a, b in zip(fg, ref, strict=True))
    added = med["filegate"] - med["bare fastmcp"]
    print(
        f"filegate adds {added:+.3f} ms of server CPU per call "
        f"over the bare fastmcp server (medians); throughput against the reference: {ratio:.2f}×"
    )
    if ns.profile:
        print(profile(small, ns.calls, ns.concurrency))


if __name__ == "__main__":
    os.chdir(HERE)
    sys.path.insert(0, str(HERE))
    main()
