"""What a client waits for at the start: spawn → `initialize` answered → `tools/list` answered →
first ReadFile answered, then stdin closed → the process gone, over stdio, for filegate, a bare
FastMCP server on filegate's transport (bench/bare_server.py: the floor fastmcp and the SDK set
before filegate's own code) and the Node reference server (read_text_file) side by side.

A raw JSON-RPC client on the pipes (no client library imported in the timed span): each
milestone is the moment its answer's line arrives. The runs alternate between the servers, so
the machine's load falls on each alike.

    .venv/bin/python bench/opening.py [--runs 3] [--env NAME=VALUE ...]

``--env`` adds a variant of filegate with those variables set (e.g. a switch under test).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import data
from harness import FILEGATE, _server_env, reference_cmd, server_log

HERE = Path(__file__).resolve().parent
PYTHON = str(Path(FILEGATE).parent / "python")

PAUSED = (
    "import gc, runpy, sys; gc.disable(); sys.argv[:] = sys.argv[1:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)
MILESTONES = ("initialize", "tools/list", "first call", "exit after close")
Variant = tuple[list[str], str, dict[str, Any], dict[str, str]]


def _reply(out: Any, rid: int, deadline: float) -> dict[str, Any]:
    buf = b""
    while True:
        while b"\n" not in buf:
            ready, _, _ = select.select([out], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                raise TimeoutError(f"no answer to request {rid}")
            chunk = os.read(out.fileno(), 1 << 20)
            if not chunk:
                raise EOFError("the server closed its stdout")
            buf += chunk
        line, _, buf = buf.partition(b"\n")
        msg = json.loads(line)
        if msg.get("id") == rid and ("result" in msg or "error" in msg):
            return dict(msg)


def cpu_s(pid: int) -> float:
    """The process's CPU so far (user + system), in seconds, from /proc: the figure a loaded
    machine does not stretch, as it does the wall times."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def opening(cmd: list[str], tool: str, args: dict[str, Any], env: dict[str, str]) -> list[float]:
    """Seconds from spawn to each of :data:`MILESTONES`, then the server's CPU seconds when
    `tools/list` was answered."""
    deadline = time.monotonic() + 120
    with server_log().open("ab") as log:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env)
    assert p.stdin is not None and p.stdout is not None

    def send(msg: dict[str, Any]) -> None:
        assert p.stdin is not None
        p.stdin.write((json.dumps(msg) + "\n").encode())
        p.stdin.flush()

    marks = []
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench-opening", "version": "0"}}})  # fmt: skip
    _reply(p.stdout, 1, deadline)
    marks.append(time.perf_counter() - t0)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    assert _reply(p.stdout, 2, deadline)["result"]["tools"]
    marks.append(time.perf_counter() - t0)
    cpu = cpu_s(p.pid)
    send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": tool, "arguments": args}})
    answer = _reply(p.stdout, 3, deadline)
    assert not answer["result"].get("isError"), answer
    marks.append(time.perf_counter() - t0)
    p.stdin.close()
    p.wait(timeout=60)
    marks.append(time.perf_counter() - t0)
    p.stdout.close()
    return [*marks, cpu]


def variants(small: Path, envs: list[str]) -> dict[str, Variant]:
    """filegate, filegate with each of ``envs`` (NAME=VALUE) set, a bare FastMCP server (as it
    comes, and with the collector paused as filegate's start pauses it), and the reference."""
    base = _server_env()
    exe, ref_args = reference_cmd(small.parent)
    fg = [FILEGATE, "--workdir", str(small.parent)]
    out: dict[str, Variant] = {"filegate": (fg, "ReadFile", {"path": small.name}, base)}
    for extra in envs:
        name, _, value = extra.partition("=")
        out[f"filegate {extra}"] = (fg, "ReadFile", {"path": small.name}, {**base, name: value})
    bare = [PYTHON, str(HERE / "bare_server.py"), "--workdir", str(small.parent)]
    out["bare fastmcp"] = (bare, "ReadFile", {"path": small.name}, base)
    # The floor as filegate starts: the same bare server with the collector paused for its
    # whole life (cli.main pauses it for filegate's start), so the two differ by filegate's own
    # modules and work only.
    paused = [PYTHON, "-c", PAUSED, *bare[1:]]
    out["bare fastmcp, collector paused"] = (paused, "ReadFile", {"path": small.name}, base)
    out["reference"] = ([exe, *ref_args], "read_text_file", {"path": str(small)}, base)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE: a filegate variant")
    ns = ap.parse_args()
    chosen = variants(data.small_file(), ns.env)
    results: dict[str, list[list[float]]] = {k: [] for k in chosen}
    for _ in range(ns.runs):
        for name, variant in chosen.items():
            results[name].append(opening(*variant))
    load = os.getloadavg()
    print(f"{ns.runs} runs, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}; seconds from spawn")
    print("| server | " + " | ".join(MILESTONES) + " | CPU at tools/list |")
    print("|---" * (len(MILESTONES) + 2) + "|")
    for name, runs in results.items():
        cells = []
        for i in range(len(MILESTONES) + 1):
            xs = [r[i] for r in runs]
            cells.append(f"{statistics.median(xs):.2f} ({min(xs):.2f}–{max(xs):.2f})")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    os.chdir(Path(__file__).resolve().parent)
    main()
