"""A bare FastMCP server with one plain ``ReadFile(path)`` tool (the file's numbered lines),
served on filegate's stdio transport: bench/percall.py's floor, what fastmcp and the SDK cost
on that path without filegate's tools, middlewares and checks. Not a filegate server: it has
no workspace rules at all, and is only ever started by the benchmark.

    python bench/bare_server.py --workdir DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

from fastmcp import FastMCP

import filegate.server  # noqa: F401  fastmcp's environment defaults, as filegate sets them
from filegate.server.stdio import run_stdio

ROOT = Path(sys.argv[sys.argv.index("--workdir") + 1])
mcp = FastMCP("bare")


@mcp.tool(name="ReadFile", output_schema=None)  # text only, as filegate answers
def read_file(path: str) -> str:
    with open(ROOT / path, encoding="utf-8") as f:
        return "".join(f"{i:6d}\t{line}" for i, line in enumerate(f, 1))


if __name__ == "__main__":
    run_stdio(mcp)
