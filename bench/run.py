"""filegate's benchmark suite: every work item of issue 6 against its reference, in one run.

    .venv/bin/python bench/run.py                 # the full suite (about 15 minutes)
    .venv/bin/python bench/run.py --quick         # 3 pairs per item, 500-call load test
    .venv/bin/python bench/run.py --only grep-fwm --only cold-start
    .venv/bin/python bench/run.py --readme        # also write the table into bench/README.md

Prints one Markdown table; the full run also lands in <cache>/last-run.{md,json}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import CACHE, CORPUS, INSPECTOR, REFERENCE, machine
from items import ITEMS, Config, Row

# What each item needs beyond this repository: the scripts of ../shared/tools (the kernel
# corpus, the official filesystem server, the MCP Inspector). A plain clone has none of them.
SHARED = {"corpus": CORPUS, "reference-server": REFERENCE, "inspector": INSPECTOR}
NEEDS = {
    "grep-fwm": {"corpus"},
    "grep-content": {"corpus"},
    "grep-client-rules": {"corpus"},
    "glob-drivers": {"corpus", "reference-server"},
    "glob-kconfig": {"corpus", "reference-server"},
    "readfile-load": {"inspector", "reference-server"},
    "http-load": {"inspector", "reference-server"},
    "strreplace-50mb": {"corpus"},
    "cold-start": {"reference-server"},
    "percall": {"reference-server"},
}

README = Path(__file__).resolve().parent / "README.md"
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def table(rows: list[Row]) -> str:
    head = ["work", "filegate (median)", "reference (median)", "ratio (pairwise median)", "target",
            "met", "server peak RSS"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        met = {True: "yes", False: "**no**", None: "n/a"}[r.met]
        cells = [r.work, r.filegate, r.reference, r.ratio, r.target, met, r.rss]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def notes(rows: list[Row]) -> str:
    return "\n".join(f"- {r.work}: " + "; ".join(r.notes) for r in rows if r.notes)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="3 pairs per item and a 500-call load test")
    ap.add_argument("--only", action="append", choices=sorted(ITEMS), help="run just this item (repeatable)")
    ap.add_argument("--runs", type=int, help="pairs per item (default 5, --quick 3)")
    ap.add_argument("--readme", action="store_true", help="write the table into bench/README.md")
    opts = ap.parse_args()
    cfg = Config(runs=3, load_requests=500) if opts.quick else Config()
    if opts.runs:
        cfg.runs = opts.runs
    names = opts.only or list(ITEMS)
    absent = {tool for tool, path in SHARED.items() if not Path(path).exists()}
    blocked = [n for n in names if NEEDS.get(n, set()) & absent]
    if blocked:
        wanted = sorted(set().union(*(NEEDS[n] & absent for n in blocked)))
        where = Path(SHARED[wanted[0]]).parent
        line = (f"bench: not run: {', '.join(blocked)}: they need {', '.join(wanted)} from {where} "
                f"(the project's shared tools beside this clone), which is not there")  # fmt: skip
        if opts.only:
            print(line, file=sys.stderr)
            return 2
        print(line + "; running the rest", file=sys.stderr, flush=True)
        names = [n for n in names if n not in blocked]
    rows: list[Row] = []
    started = time.time()
    load_before = os.getloadavg()[0]
    for name in names:
        t0 = time.perf_counter()
        print(f"[{name}] ...", file=sys.stderr, flush=True)
        got = asyncio.run(ITEMS[name](cfg))
        for r in got:
            print(f"[{name}] {r.work}: filegate {r.filegate}, reference {r.reference}, {r.ratio}, "
                  f"target {r.target}, met {r.met}, RSS {r.rss}", file=sys.stderr, flush=True)  # fmt: skip
        print(f"[{name}] {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        rows.extend(got)
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(started))
    minutes = (time.time() - started) / 60
    load = f"load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    kind = "full run" if not opts.quick and not opts.only and cfg.runs >= 5 else "partial/quick run"
    report = (f"{kind}, {when} ({minutes:.0f} min, {load}), {cfg.runs} interleaved pairs per item "
              f"after a warm-up\n\n"
              f"Machine: {machine()}\n\n{table(rows)}\n\nNotes:\n\n{notes(rows)}\n")  # fmt: skip
    print(report)
    CACHE.mkdir(parents=True, exist_ok=True)
    stem = "last-run" if kind == "full run" else "last-partial-run"
    (CACHE / f"{stem}.md").write_text(report)
    (CACHE / f"{stem}.json").write_text(json.dumps([asdict(r) for r in rows], indent=1))
    if opts.readme:
        text = README.read_text()
        i, j = text.index(BEGIN) + len(BEGIN), text.index(END)
        README.write_text(text[:i] + "\n" + report + text[j:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
