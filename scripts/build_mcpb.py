"""Build dist/filegate.mcpb, the MCP Bundle Claude Desktop installs with one click.

    python scripts/build_mcpb.py [--out dist/filegate.mcpb] [--python 3.11 --python 3.12 ...]
    python scripts/build_mcpb.py --lock      # re-resolve scripts/mcpb.lock from pyproject.toml

The bundle is the MCPB `python` server type, self-contained: `server/main.py` (standard library
only) puts `server/lib/<X.Y>/` — every dependency at the version pinned in scripts/mcpb.lock,
installed from wheels for this platform and that Python — and `server/filegate/` first on
`sys.path` and runs filegate. The host starts `python3 -I server/main.py --workdir <folder>`
(`python` on Windows): no uv, no network, nothing resolved or downloaded at start. A Python
the bundle holds no libraries for gets one line saying which versions it does. The manifest's
`compatibility` (this platform, those Python versions) and its description say what to install
before anything runs, and `server/requirements.txt` is the lock the libraries came from.

The compiled wheels (pydantic-core, Pillow, the ripgrep binary) are per platform and per
Python minor version, so a bundle serves the platform it was built on (or `--platform`, a pip
platform tag such as macosx_11_0_arm64) and the `--python` versions given (default: the one
running this script). The folder to serve is asked of the user at install
(`user_config.workdir`, a directory picker) and becomes `--workdir`; "read-only" is a checkbox
that becomes FILEGATE_READ_ONLY.

`mcpb` itself (npm @anthropic-ai/mcpb, pinned below) is installed once into
~/.cache/filegate-tools (or $FILEGATE_TOOLS_CACHE) under a file lock; the manifest is checked
with `mcpb validate` before `mcpb pack` packs the staged directory. Needs node, npm and pip
(the wheels come from the package index pip is configured with).
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
LOCK = REPO / "scripts" / "mcpb.lock"
MCPB_PACKAGE = "@anthropic-ai/mcpb"
MCPB_VERSION = "2.1.2"
# MCPB platform names, from the start of a pip platform tag.
PLATFORM_OF_TAG = {
    "manylinux": "linux",
    "musllinux": "linux",
    "linux": "linux",
    "macosx": "darwin",
    "win": "win32",
}


def version() -> str:
    text = (REPO / "src" / "filegate" / "__init__.py").read_text()
    found = re.search(r'__version__ = "([^"]+)"', text)
    if not found:
        raise SystemExit("build_mcpb: no __version__ in src/filegate/__init__.py")
    return found[1]


def python_range(pythons: list[str]) -> str:
    """The manifest's runtime range: from the oldest Python built for to below the next after
    the newest (the libraries of 3.11 and 3.12 serve no 3.13)."""
    minors = sorted(int(v.split(".")[1]) for v in pythons)
    return f">=3.{minors[0]},<3.{minors[-1] + 1}"


def needs_sentence(pythons: list[str], host: str) -> str:
    command = "python" if host == "win32" else "python3"
    versions = " or ".join(sorted(pythons))
    return f"Needs Python {versions} installed as `{command}` (nothing else: no uv, no network)."


def manifest(pythons: list[str], host: str) -> dict[str, object]:
    needs = needs_sentence(pythons, host)
    command = "python" if host == "win32" else "python3"
    return {
        "manifest_version": "0.4",
        "name": "filegate",
        "display_name": "filegate",
        "version": version(),
        "description": f"Kimi CLI's six file tools over one folder, one set of path and size rules. {needs}",
        "long_description": (
            "ReadFile, ReadMediaFile, Glob, Grep, WriteFile and StrReplaceFile over the folder you "
            "choose. Symlink-safe paths, secrets (.env, keys, credentials) kept out of reads and "
            f"searches, size limits and file types decided by content, atomic writes. {needs} "
            "Every library filegate uses is inside this bundle, at the versions it was tested with."
        ),
        "author": {"name": "filegate contributors"},
        "license": "MIT",
        "keywords": ["files", "filesystem", "grep", "glob", "kimi"],
        "server": {
            "type": "python",
            "entry_point": "server/main.py",
            "mcp_config": {
                "command": command,
                "args": [
                    "-I",  # isolated: no PYTHONPATH, no user site-packages, only what the bundle holds
                    "${__dirname}/server/main.py",
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
        "compatibility": {"platforms": [host], "runtimes": {"python": python_range(pythons)}},
    }


# server/main.py of the bundle: standard library only, any Python 3.
LAUNCHER = """\
\"\"\"filegate in the Claude Desktop bundle: this Python's pinned libraries first, then filegate.\"\"\"

import os
import site
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    lib = HERE / "lib" / running
    if not lib.is_dir():
        built = " or ".join(sorted(p.name for p in (HERE / "lib").iterdir() if p.is_dir()))
        sys.stderr.write(
            f"filegate: error: this bundle holds filegate's libraries for Python {built}, and "
            f"{sys.executable} is Python {running}: install Python {built}, or install filegate "
            "with `pipx install filegate` and run `filegate install claude-desktop`\\n"
        )
        return 2
    sys.path[:0] = [str(lib), str(HERE)]
    site.addsitedir(str(lib))  # its .pth files (the path is already first)
    for scripts in (lib / "bin", lib / "Scripts"):  # the ripgrep wheel's rg
        if scripts.is_dir():
            os.environ["PATH"] = f"{scripts}{os.pathsep}{os.environ.get('PATH', '')}"
    from filegate.cli import main as filegate

    return filegate()


if __name__ == "__main__":
    sys.exit(main())
"""


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


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(path: Path = LOCK) -> dict[str, str]:
    """scripts/mcpb.lock as {canonical name: version}."""
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, pinned = line.partition("==")
            pins[canonical(name)] = pinned.strip()
    return pins


def write_lock() -> None:
    """Resolve pyproject.toml's dependencies afresh (wheels only) and pin every one."""
    with tempfile.TemporaryDirectory(prefix="filegate-lock-") as tmp:
        report = Path(tmp) / "report.json"
        run([sys.executable, "-m", "pip", "install", "-q", "--dry-run", "--ignore-installed",
             "--only-binary=:all:", "--report", str(report), str(REPO)])  # fmt: skip
        resolved = json.loads(report.read_text())["install"]
    pins = sorted(
        (m["name"], m["version"])
        for m in (i["metadata"] for i in resolved)
        if canonical(m["name"]) != "filegate"
    )
    header = (
        "# The exact versions scripts/build_mcpb.py puts into the Claude Desktop bundle (every\n"
        "# dependency of pyproject.toml, resolved to wheels).\n"
        "# Re-resolve: python scripts/build_mcpb.py --lock\n"
    )
    LOCK.write_text(header + "".join(f"{n}=={v}\n" for n, v in sorted(pins, key=lambda p: canonical(p[0]))))


def install_lib(into: Path, python: str, pip_platform: str | None) -> None:
    """Every locked dependency that this Python on this platform needs, from wheels, into ``into``;
    refused if the resolution wants a package or a version the lock does not pin."""
    target = ["--python-version", python, "--implementation", "cp"] + (
        ["--platform", pip_platform] if pip_platform else []
    )
    with tempfile.TemporaryDirectory(prefix="filegate-lib-") as tmp:
        report = Path(tmp) / "report.json"
        run([sys.executable, "-m", "pip", "install", "-q", "--target", str(into), "--only-binary=:all:",
             *target, "--constraint", str(LOCK), "--report", str(report), str(REPO)])  # fmt: skip
        installed = {canonical(i["metadata"]["name"]): i["metadata"]["version"]
                     for i in json.loads(report.read_text())["install"]}  # fmt: skip
    installed.pop("filegate")
    pins = read_lock()
    unpinned = sorted(f"{n}=={v}" for n, v in installed.items() if pins.get(n) != v)
    if unpinned:
        raise SystemExit(
            f"build_mcpb: not in scripts/mcpb.lock: {', '.join(unpinned)} (python {python}); re-lock"
        )
    # filegate itself lives once in server/filegate, for every Python; its console script
    # would name this machine's interpreter.
    shutil.rmtree(into / "filegate")
    for leftover in [
        *into.glob("filegate-*.dist-info"),
        *into.glob("*/filegate"),
        *into.glob("*/filegate.exe"),
    ]:
        shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()


def host_platform(pip_platform: str | None) -> str:
    if pip_platform is None:
        return {"linux": "linux", "darwin": "darwin", "win32": "win32"}[sys.platform]
    for prefix, name in PLATFORM_OF_TAG.items():
        if pip_platform.startswith(prefix):
            return name
    raise SystemExit(f"build_mcpb: --platform {pip_platform}: not a linux, macOS or Windows tag")


def stage(into: Path, pythons: list[str], pip_platform: str | None) -> None:
    server = into / "server"
    shutil.copytree(REPO / "src" / "filegate", server / "filegate",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))  # fmt: skip
    (server / "main.py").write_text(LAUNCHER)
    shutil.copy2(LOCK, server / "requirements.txt")
    for python in pythons:
        install_lib(server / "lib" / python, python, pip_platform)
    shutil.copy2(REPO / "README.md", into / "README.md")
    shutil.copy2(REPO / "LICENSE", into / "LICENSE")
    (into / "manifest.json").write_text(
        json.dumps(manifest(pythons, host_platform(pip_platform)), indent=2) + "\n"
    )
    (into / ".mcpbignore").write_text("__pycache__/\n*.pyc\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build filegate.mcpb (Claude Desktop's MCP Bundle).")
    parser.add_argument("--out", type=Path, default=REPO / "dist" / "filegate.mcpb")
    parser.add_argument("--python", action="append", metavar="X.Y",
                        help="a Python the bundle serves (repeatable; default: this one)")  # fmt: skip
    parser.add_argument(
        "--platform", metavar="TAG", help="pip platform tag to build for (default: this machine)"
    )
    parser.add_argument("--lock", action="store_true", help="re-resolve scripts/mcpb.lock and stop")
    args = parser.parse_args(argv)
    if args.lock:
        write_lock()
        print(LOCK)
        return 0
    pythons = args.python or [f"{sys.version_info[0]}.{sys.version_info[1]}"]
    if any(not re.fullmatch(r"3\.\d+", v) or int(v.split(".")[1]) < 11 for v in pythons):
        raise SystemExit(f"build_mcpb: --python takes 3.11 or later, as X.Y: {pythons}")
    out: Path = args.out.resolve()
    mcpb = mcpb_command()
    with tempfile.TemporaryDirectory(prefix="filegate-mcpb-") as tmp:
        staged = Path(tmp) / "filegate"
        staged.mkdir()
        stage(staged, pythons, args.platform)
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
