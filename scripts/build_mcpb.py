"""Build dist/filegate.mcpb, the MCP Bundle Claude Desktop installs with one click.

    python scripts/build_mcpb.py [--out dist/filegate.mcpb]

The bundle is the `uv` server type of the MCPB manifest 0.4: this repository's pyproject.toml,
README.md and src/filegate/, and a manifest whose `mcp_config` runs
`uv run --directory <bundle> filegate --workdir <folder>`. uv (which the host supplies for uv
bundles, or the user installs) makes the environment from pyproject.toml on first start, so
the compiled dependencies (Pillow, pydantic-core, the ripgrep wheel) come for the user's own
platform. The folder to serve is asked of the user at install (`user_config.workdir`, a
directory picker) and becomes `--workdir`; "read-only" is a checkbox that becomes
FILEGATE_READ_ONLY.

`mcpb` itself (npm @anthropic-ai/mcpb, pinned below) is installed once into
~/.cache/filegate-tools (or $FILEGATE_TOOLS_CACHE) under a file lock; the manifest is checked
with `mcpb validate` before `mcpb pack` packs the staged directory. Needs node and npm.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MCPB_PACKAGE = "@anthropic-ai/mcpb"
MCPB_VERSION = "2.1.2"


def version() -> str:
    text = (REPO / "src" / "filegate" / "__init__.py").read_text()
    found = re.search(r'__version__ = "([^"]+)"', text)
    if not found:
        raise SystemExit("build_mcpb: no __version__ in src/filegate/__init__.py")
    return found[1]


def manifest() -> dict[str, object]:
    return {
        "manifest_version": "0.4",
        "name": "filegate",
        "display_name": "filegate",
        "version": version(),
        "description": "Kimi CLI's six file tools over one folder, with one set of path and size rules.",
        "long_description": (
            "ReadFile, ReadMediaFile, Glob, Grep, WriteFile and StrReplaceFile over the folder you "
            "choose. Symlink-safe paths, secrets (.env, keys, credentials) kept out of reads and "
            "searches, size limits and file types decided by content, atomic writes."
        ),
        "author": {"name": "filegate developers"},
        "license": "MIT",
        "keywords": ["files", "filesystem", "grep", "glob", "kimi"],
        "server": {
            "type": "uv",
            "entry_point": "src/filegate/__main__.py",
            "mcp_config": {
                "command": "uv",
                "args": [
                    "run",
                    "--quiet",
                    "--directory",
                    "${__dirname}",
                    "filegate",
                    "--workdir",
                    "${user_config.workdir}",
                    "--client",
                    "claude-desktop",
                ],
                "env": {"FILEGATE_READ_ONLY": "${user_config.read_only}"},
            },
        },
        "tools": [
            {"name": "ReadFile", "description": "Read a text file's lines."},
            {"name": "ReadMediaFile", "description": "Read an image or video, fitted to the result budget."},
            {"name": "Glob", "description": "Find files by pattern."},
            {"name": "Grep", "description": "Search file contents with ripgrep."},
            {"name": "WriteFile", "description": "Write a file atomically."},
            {"name": "StrReplaceFile", "description": "Edit a file by exact replacement."},
        ],
        "user_config": {
            "workdir": {
                "type": "directory",
                "title": "Folder to serve",
                "description": "The folder the tools read, search and write; relative paths start here.",
                "required": True,
            },
            "read_only": {
                "type": "boolean",
                "title": "Read-only",
                "description": "Offer no write tools.",
                "default": False,
            },
        },
        "compatibility": {
            "platforms": ["darwin", "linux", "win32"],
            "runtimes": {"python": ">=3.11"},
        },
    }


def tools_cache() -> Path:
    home_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return Path(os.environ.get("FILEGATE_TOOLS_CACHE") or home_cache / "filegate-tools")


def mcpb_command() -> Path:
    """The pinned mcpb, installed once (a temporary directory renamed into place, under a lock)."""
    final = tools_cache() / "npm" / f"{MCPB_PACKAGE}@{MCPB_VERSION}".replace("/", "_").replace("@", "_")
    exe = final / "node_modules" / ".bin" / "mcpb"
    if exe.exists():
        return exe
    if shutil.which("npm") is None:
        raise SystemExit("build_mcpb: npm is needed to install mcpb (npm @anthropic-ai/mcpb)")
    final.parent.mkdir(parents=True, exist_ok=True)
    with open(final.parent / f".{final.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if exe.exists():
            return exe
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
        try:
            (tmp / "package.json").write_text('{"private": true}\n')
            run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error",
                 f"{MCPB_PACKAGE}@{MCPB_VERSION}"], cwd=tmp)  # fmt: skip
            shutil.rmtree(final, ignore_errors=True)
            tmp.rename(final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return exe


def run(argv: list[str], cwd: Path | None = None) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=900)
    if done.returncode:
        raise SystemExit(f"build_mcpb: {' '.join(argv[:3])} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def stage(into: Path) -> None:
    shutil.copy2(REPO / "pyproject.toml", into / "pyproject.toml")
    shutil.copy2(REPO / "README.md", into / "README.md")
    shutil.copytree(REPO / "src" / "filegate", into / "src" / "filegate",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))  # fmt: skip
    (into / "manifest.json").write_text(json.dumps(manifest(), indent=2) + "\n")
    # uv makes .venv (and uv.lock) beside pyproject.toml at first start; never ship one.
    (into / ".mcpbignore").write_text(".venv/\nuv.lock\n__pycache__/\n*.pyc\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build filegate.mcpb (Claude Desktop's MCP Bundle).")
    parser.add_argument("--out", type=Path, default=REPO / "dist" / "filegate.mcpb")
    out: Path = parser.parse_args(argv).out.resolve()
    mcpb = mcpb_command()
    with tempfile.TemporaryDirectory(prefix="filegate-mcpb-") as tmp:
        staged = Path(tmp) / "filegate"
        staged.mkdir()
        stage(staged)
        run([str(mcpb), "validate", str(staged / "manifest.json")])
        out.parent.mkdir(parents=True, exist_ok=True)
        out.unlink(missing_ok=True)
        run([str(mcpb), "pack", str(staged), str(out)])
    if not out.exists():
        raise SystemExit(f"build_mcpb: mcpb pack left no {out}")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
