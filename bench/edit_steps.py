"""Where a 50 MB StrReplaceFile's time goes, step by step, in process (bench/README.md, "Where
the time goes"): the server built as `strreplace-50mb` runs it (--approval auto, read guard on,
the history on unless --history off), each step wrapped with a wall and a thread-CPU timer,
each fsync/fdatasync timed by the thread that calls it. A diagnostic: nothing here is a bench
item, and the wrapping is this script's alone.

    .venv/bin/python bench/edit_steps.py [--edits 15] [--history off]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import data

WALL: dict[str, list[float]] = defaultdict(list)
CPU: dict[str, list[float]] = defaultdict(list)
STEPS = [
    ("filegate.tools.edit.writing._prepare", "prepare (all of it)"),
    ("filegate.tools.edit.writing.load_current", "  read (load_current)"),
    ("filegate.tools.edit.writing.reader_of", "  sniff for the read guard (libmagic)"),
    ("filegate.tools.edit.writing.since_read", "  line-hash index (since_read)"),
    ("filegate.tools.str_replace._edit_bytes", "  transform (_edit_bytes)"),
    ("filegate.tools.str_replace._check_text", "    text check (libmagic)"),
    ("filegate.tools.outcome.ToolEnv/codec_of", "    codec decision"),
    ("filegate.tools.edit.replacing._occurrences", "    match (find, and a second)"),
    ("filegate.tools.edit.writing.unified_diff", "  diff"),
    ("filegate.tools.edit.writing._renamed", "write route (waits for the history)"),
    ("filegate.fsio.atomic._write_all", "  temp file's write"),
    ("filegate.fsio.atomic._check_unchanged", "  stale check"),
    ("filegate.fsio.history.WriteHistory/begin", "history begin (its own thread)"),
    ("filegate.fsio.history._hashes", "  hashes"),
    ("filegate.fsio.preimages._link", "  pre-image linked (proof, linkat, fdatasync)"),
    ("filegate.fsio.historylog.HistoryLog/append", "  log appends"),
    ("filegate.fsio.history.WriteHistory/finish", "history finish (after the rename)"),
]


def timed(label: str, f: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return f(*args, **kwargs)
        finally:
            WALL[label].append(time.perf_counter() - wall)
            CPU[label].append(time.thread_time() - cpu)

    return wrapper


def wrap_steps() -> None:
    for spec, label in STEPS:
        module, _, name = spec.rpartition(".")
        owner: Any = importlib.import_module(module)
        if "/" in name:
            cls, name = name.split("/")
            owner = getattr(owner, cls)
        if hasattr(owner, name):  # a step the code no longer has is left out, not an error
            setattr(owner, name, timed(label, getattr(owner, name)))
    for sync in ("fsync", "fdatasync"):
        real = getattr(os, sync)

        def spy(fd: int, real: Callable[[int], None] = real, sync: str = sync) -> None:
            started = time.perf_counter()
            real(fd)
            thread = threading.current_thread().name.split("_")[0]
            WALL[f"{sync} in {thread}"].append(time.perf_counter() - started)

        setattr(os, sync, spy)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--edits", type=int, default=15)
    ap.add_argument("--history", choices=("on", "off"), default="on")
    opts = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="filegate-edit-steps-"))
    os.environ["XDG_STATE_HOME"] = str(work / "state")
    from fastmcp import Client

    from filegate.server.app import build_server
    from filegate.settings import Settings

    wrap_steps()
    ws = work / "ws"
    ws.mkdir()
    shutil.copyfile(data.source_file(), ws / "f.c")
    settings = Settings(workdir=ws, approval="auto", history=opts.history)
    try:
        async with Client(build_server(settings)) as client:
            await client.call_tool("ReadFile", {"path": "f.c", "n_lines": 1})
            edits, old = [], data.MARKER_A
            for i in range(opts.edits + 1):  # the first warms up and is left out
                new = f"{data.MARKER_A} {time.time_ns()}"
                started = time.perf_counter()
                await client.call_tool("StrReplaceFile", {"path": "f.c", "edit": {"old": old, "new": new}})
                if i:
                    edits.append(time.perf_counter() - started)
                old = new
    finally:
        shutil.rmtree(work, ignore_errors=True)
    n = opts.edits
    print(f"edit: median {statistics.median(edits) * 1e3:.1f} ms (n={n}, history {opts.history}, "
          f"load {os.getloadavg()[0]:.1f})")  # fmt: skip
    for label, walls in WALL.items():
        cpu = f"  cpu median {statistics.median(CPU[label][-n:]) * 1e3:6.1f}" if label in CPU else ""
        print(f"  {label:46s} wall median {statistics.median(walls[-n:]) * 1e3:6.1f}{cpu}")


if __name__ == "__main__":
    asyncio.run(main())
