"""Build the MCP Bundles Claude Desktop installs with one click, one per platform.

    python scripts/build_mcpb.py --target macos-arm64 [--python 3.11 --python 3.12 ...] [--out F]
    python scripts/build_mcpb.py --lock      # re-resolve scripts/mcpb.lock from pyproject.toml

Targets (TARGETS): linux-x86_64, macos-arm64, macos-x86_64, windows-x64; default: this machine.
Each bundle is the MCPB `python` server type, self-contained: `server/main.py` (standard
library only, any Python 3) puts `server/lib/<X.Y>/` — every dependency and the `pdf` extra at
the versions pinned in scripts/mcpb.lock, installed from that platform's wheels for that Python
(pip downloads another platform's wheels with --platform/--only-binary) — and
`server/filegate/` first on `sys.path` and runs filegate. The host starts
`python3 -I server/main.py --workdir <folder>` (`python` on Windows): no uv, no network,
nothing resolved or downloaded at start. A Python the bundle holds no libraries for (macOS's
Xcode Python 3.9, which is what `python3` often is there) is refused in one line that says
which to install, after the launcher looked for one in the usual places.

Why not MCPB's `uv` server type: the host then downloads a Python and every dependency when
the bundle is installed (it needs the network, and uv's resolution at that moment); these
bundles start offline with the versions the tests ran, given a Python 3.11+.

The manifest lists every tool the server offers (asked of the server itself, so a new tool
cannot be left out), names the repository and homepage from pyproject.toml, and gives the
Python range as a space-separated range (`>=3.11 <3.14`: Claude Desktop's check reads it so,
not PEP 440's commas). The folder to serve is asked at install (`user_config.workdir`, a
directory picker) and becomes `--workdir`; "read-only" is a checkbox that becomes
FILEGATE_READ_ONLY.

`mcpb` itself (npm @anthropic-ai/mcpb, pinned below) is installed once into
~/.cache/filegate-tools (or $FILEGATE_TOOLS_CACHE) under a file lock; the manifest is checked
with `mcpb validate` before `mcpb pack` packs the staged directory. Needs node, npm, pip, and
filegate importable by the Python running this (its tools are listed from the server).
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
import tomllib
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "scripts" / "mcpb.lock"
MCPB_PACKAGE = "@anthropic-ai/mcpb"
MCPB_VERSION = "2.1.2"


class Target(NamedTuple):
    """A platform a bundle is built for: the MCPB platform, the pip platform tags whose wheels
    run there (pip takes several; a macOS tag also admits older macOS versions), and the lock's
    pins that platform needs otherwise (a package that stopped shipping its wheels)."""

    host: str
    pip_platforms: tuple[str, ...]
    pins: tuple[tuple[str, str], ...] = ()


TARGETS = {
    # glibc 2.28 and later (Pillow's wheels start at 2.27; Debian 10, Ubuntu 18.10, RHEL 8 on).
    "linux-x86_64": Target(
        "linux",
        (
            *(f"manylinux_2_{v}_x86_64" for v in range(28, 4, -1)),
            *("manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"),
        ),
    ),
    # macOS 13 and later (PDFium's wheels start there); universal2 wheels count for both.
    "macos-arm64": Target("darwin", ("macosx_13_0_arm64",)),
    # cryptography's last macOS x86_64 wheel is 48.0.1; filegate never calls it (it is authlib's,
    # for fastmcp's OAuth, which filegate does not use).
    "macos-x86_64": Target("darwin", ("macosx_13_0_x86_64",), (("cryptography", "48.0.1"),)),
    "windows-x64": Target("win32", ("win_amd64",)),
}
# The extras a bundle carries (the `video` extra's FFmpeg stays out: tens of MB per platform).
EXTRAS = "[pdf]"


def this_machine() -> str:
    import platform

    machine = platform.machine().lower()
    arch = "arm64" if machine in ("arm64", "aarch64") else "x86_64"
    name = {"linux": f"linux-{arch}", "darwin": f"macos-{arch}", "win32": "windows-x64"}.get(sys.platform)
    if name not in TARGETS:
        raise SystemExit(f"build_mcpb: no bundle target for this machine ({sys.platform} {machine})")
    return name


def version() -> str:
    text = (REPO / "src" / "filegate" / "__init__.py").read_text()
    found = re.search(r'__version__ = "([^"]+)"', text)
    if not found:
        raise SystemExit("build_mcpb: no __version__ in src/filegate/__init__.py")
    return found[1]


def python_range(pythons: list[str]) -> str:
    """The manifest's runtime range: from the oldest Python built for to below the next after
    the newest (the libraries of 3.11 and 3.12 serve no 3.13), space-separated as Claude
    Desktop reads it."""
    minors = sorted(int(v.split(".")[1]) for v in pythons)
    return f">=3.{minors[0]} <3.{minors[-1] + 1}"


def needs_sentence(pythons: list[str], host: str) -> str:
    command = "python" if host == "win32" else "python3"
    versions = " or ".join(sorted(pythons))
    return f"Needs Python {versions} installed as `{command}` (nothing else: no uv, no network)."


def server_tools() -> list[dict[str, str]]:
    """Every tool the server offers, as tools/list gives them: name and first sentence."""
    import anyio

    sys.path.insert(0, str(REPO / "src"))
    from filegate.server.app import build_server
    from filegate.settings import Settings

    async def listed() -> list[dict[str, str]]:
        tools = await build_server(Settings(workdir=REPO)).list_tools()
        return [{"name": t.name, "description": first_sentence(t.description or t.name)} for t in tools]

    return anyio.run(listed)


def first_sentence(text: str) -> str:
    line = text.strip().split("\n", 1)[0]
    found = re.match(r"(.+?[.!?])(\s|$)", line)
    return found[1] if found else line


def project_urls() -> dict[str, str]:
    urls: dict[str, str] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["urls"]
    return urls


def manifest(pythons: list[str], host: str, tools: list[dict[str, str]] | None = None) -> dict[str, object]:
    needs = needs_sentence(pythons, host)
    command = "python" if host == "win32" else "python3"
    tools = server_tools() if tools is None else tools
    names = [t["name"] for t in tools]
    urls = project_urls()
    return {
        "manifest_version": "0.4",
        "name": "filegate",
        "display_name": "filegate",
        "version": version(),
        "description": f"Kimi CLI's file tools over one folder, one set of path and size rules. {needs}",
        "long_description": (
            f"{', '.join(names[:-1])} and {names[-1]} over the folder you choose. Symlink-safe "
            "paths, secrets (.env, keys, credentials) kept out of reads and searches, size limits "
            "and file types decided by content, atomic writes that can be undone, PDF pages as "
            f"images. {needs} Every library filegate uses is inside this bundle, at the versions "
            "it was tested with."
        ),
        "author": {"name": "filegate contributors"},
        "repository": {"type": "git", "url": urls["Source"]},
        "homepage": urls["Homepage"],
        "documentation": urls["Documentation"],
        "support": urls["Issues"],
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
        "tools": tools,
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


# server/main.py of the bundle: standard library only, and syntax any Python 3.6+ reads (it
# must run far enough under macOS's Xcode Python 3.9 to say what to install instead).
LAUNCHER = r'''"""filegate in the Claude Desktop bundle: this Python's pinned libraries first, then filegate.

A Python the bundle holds no libraries for (macOS's `python3` is often Xcode's 3.9) hands over
to one it does, found in the usual places; failing that, one line on stderr says what to install.
"""

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Set on the hand-over, so a Python found in the usual places never hands over again.
HANDED_OVER = "FILEGATE_BUNDLE_HANDED_OVER"


def built():
    names = [p.name for p in (HERE / "lib").iterdir() if p.is_dir()]
    return sorted(names, key=lambda v: int(v.split(".")[1]))


def usual_places(versions, platform=sys.platform, env=os.environ):
    """Where Python installers put each version: python.org, Homebrew, the Windows installer."""
    home = Path(env.get("HOME") or env.get("USERPROFILE") or "~")
    for version in reversed(versions):
        short = version.replace(".", "")
        if platform == "darwin":
            framework = Path("/Library/Frameworks/Python.framework/Versions") / version
            yield framework / "bin" / ("python" + version)
            yield Path("/opt/homebrew/bin") / ("python" + version)
            yield Path("/usr/local/bin") / ("python" + version)
        elif platform == "win32":
            local = Path(env.get("LOCALAPPDATA") or home / "AppData" / "Local")
            yield local / "Programs" / "Python" / ("Python" + short) / "python.exe"
            yield Path(env.get("ProgramFiles") or "C:/Program Files") / ("Python" + short) / "python.exe"
        else:
            yield Path("/usr/bin") / ("python" + version)
            yield Path("/usr/local/bin") / ("python" + version)


def refusal(running, executable, versions):
    """The one line for a Python the bundle cannot use."""
    wanted = " or ".join(versions)
    if "CommandLineTools" in executable or "Xcode" in executable or executable == "/usr/bin/python3":
        what = "the Python %s that comes with Apple's Xcode command-line tools" % running
        fix = "install Python %s from https://www.python.org/downloads/macos/ (or brew install python@%s)" % (
            wanted, versions[-1])
    else:
        what = "Python %s" % running
        fix = "install Python %s (https://www.python.org/downloads/)" % wanted
    return (
        "filegate: error: `%s` is %s, and this bundle holds filegate's libraries for Python %s only: "
        "%s, then restart Claude Desktop; or install filegate with pip and run "
        "`filegate install claude-desktop`\n" % (executable, what, wanted, fix)
    )


def main():
    running = "%d.%d" % sys.version_info[:2]
    lib = HERE / "lib" / running
    if not lib.is_dir():
        versions = built()
        if not os.environ.get(HANDED_OVER):
            for python in usual_places(versions):
                if python.is_file():
                    os.environ[HANDED_OVER] = "1"
                    argv = [str(python), "-I", str(Path(__file__).resolve())] + sys.argv[1:]
                    if sys.platform == "win32":  # no exec there: the host would see this process end
                        return subprocess.call(argv)
                    os.execv(argv[0], argv)
        sys.stderr.write(refusal(running, sys.executable, versions))
        return 2
    sys.path[:0] = [str(lib), str(HERE)]
    import site

    site.addsitedir(str(lib))  # its .pth files (the path is already first)
    for scripts in (lib / "bin", lib / "Scripts"):  # the ripgrep wheel's rg
        if scripts.is_dir():
            os.environ["PATH"] = str(scripts) + os.pathsep + os.environ.get("PATH", "")
    from filegate.cli import main as filegate

    return filegate()


if __name__ == "__main__":
    sys.exit(main())
'''


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
    """Resolve pyproject.toml's dependencies and the bundle's extras afresh (wheels only, this
    machine) and pin every one. Packages only another platform needs (pywin32 on Windows) are
    kept from the old lock: add them by hand when one is missing."""
    old = read_lock() if LOCK.exists() else {}
    with tempfile.TemporaryDirectory(prefix="filegate-lock-") as tmp:
        report = Path(tmp) / "report.json"
        run([sys.executable, "-m", "pip", "install", "-q", "--dry-run", "--ignore-installed",
             "--only-binary=:all:", "--report", str(report), f"{REPO}{EXTRAS}"])  # fmt: skip
        resolved = json.loads(report.read_text())["install"]
    pins = {canonical(m["name"]): (m["name"], m["version"]) for m in (i["metadata"] for i in resolved)}
    pins.pop("filegate")
    for name in PLATFORM_ONLY:
        if name not in pins and name in old:
            pins[name] = (name, old[name])
    header = (
        "# The exact versions scripts/build_mcpb.py puts into the Claude Desktop bundles (every\n"
        "# dependency of pyproject.toml and of the bundle's extras, resolved to wheels; pywin32 is\n"
        "# Windows's only).\n"
        "# Re-resolve: python scripts/build_mcpb.py --lock\n"
    )
    lines = [f"{n}=={v}\n" for n, v in sorted(pins.values(), key=lambda p: canonical(p[0]))]
    LOCK.write_text(header + "".join(lines))


# Dependencies a platform other than the build machine's may need (their markers say so).
PLATFORM_ONLY = ("pywin32",)


def marker_environment(target: Target, python: str) -> dict[str, str]:
    """The environment a requirement's marker is judged in on ``target`` under ``python``
    (pip judges markers on the machine it runs on, whatever --platform says)."""
    system, os_name = {
        "linux": ("Linux", "posix"),
        "darwin": ("Darwin", "posix"),
        "win32": ("Windows", "nt"),
    }[target.host]
    machine = "arm64" if "arm64" in target.pip_platforms[0] else (
        "AMD64" if target.host == "win32" else "x86_64")  # fmt: skip
    return {
        "sys_platform": target.host, "platform_system": system, "os_name": os_name,
        "platform_machine": machine, "python_version": python, "python_full_version": f"{python}.0",
        "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": "",
    }  # fmt: skip


def missing_requirements(report: list[dict[str, object]], env: dict[str, str]) -> list[str]:
    """Requirements of what was installed that ``env``'s markers ask for and pip left out
    (a Windows-only one, when building on Linux)."""
    from packaging.requirements import Requirement

    installed = {canonical(str(i["metadata"]["name"])) for i in report}  # type: ignore[index]
    missing = []
    for item in report:
        meta: dict[str, object] = item["metadata"]  # type: ignore[assignment]
        extras = ["", *list(item.get("requested_extras") or [])]  # type: ignore[call-overload]
        for line in meta.get("requires_dist") or []:  # type: ignore[attr-defined]
            req = Requirement(str(line))
            wanted = any(
                req.marker is None or req.marker.evaluate({**env, "extra": extra}) for extra in extras
            )
            if wanted and canonical(req.name) not in installed and req.name not in missing:
                missing.append(req.name)
    return missing


def install_lib(into: Path, python: str, target: Target) -> None:
    """Every locked dependency that ``python`` on ``target`` needs, from that platform's wheels,
    into ``into``; refused if the resolution wants a package or a version the lock does not pin,
    or a wheel whose tags do not run there."""
    flags = ["--python-version", python, "--implementation", "cp", "--only-binary=:all:"]
    for tag in target.pip_platforms:
        flags += ["--platform", tag]
    installed: dict[str, str] = {}
    wanted = [f"{REPO}{EXTRAS}"]
    pins = read_lock() | {canonical(n): v for n, v in target.pins}
    with tempfile.TemporaryDirectory(prefix="filegate-lib-") as tmp:
        constraints = Path(tmp) / "constraints.txt"
        constraints.write_text("".join(f"{n}=={v}\n" for n, v in pins.items()))
        while wanted:
            report = Path(tmp) / f"report-{len(installed)}.json"
            run([sys.executable, "-m", "pip", "install", "-q", "--target", str(into), "--upgrade", *flags,
                 "--constraint", str(constraints), "--report", str(report), *wanted])  # fmt: skip
            done = json.loads(report.read_text())["install"]
            installed |= {canonical(i["metadata"]["name"]): i["metadata"]["version"] for i in done}
            wanted = [n for n in missing_requirements(done, marker_environment(target, python))
                      if canonical(n) not in installed]  # fmt: skip
    installed.pop("filegate")
    unpinned = sorted(f"{n}=={v}" for n, v in installed.items() if pins.get(n) != v)
    if unpinned:
        raise SystemExit(
            f"build_mcpb: not in scripts/mcpb.lock: {', '.join(unpinned)} (python {python}); re-lock"
        )
    wrong = wheel_tag_problems(into, target, python)
    if wrong:
        raise SystemExit(f"build_mcpb: wheels that do not run on {target.host} {python}: {'; '.join(wrong)}")
    # filegate itself lives once in server/filegate, for every Python; its console script
    # would name this machine's interpreter.
    shutil.rmtree(into / "filegate")
    for leftover in [
        *into.glob("filegate-*.dist-info"),
        *into.glob("*/filegate"),
        *into.glob("*/filegate.exe"),
    ]:
        shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()


def supported_tags(target: Target, python: str) -> set[str]:
    """Every wheel tag ``python`` accepts on ``target`` (as pip would there)."""
    from packaging import tags

    version = tuple(int(p) for p in python.split("."))
    platforms: list[str] = []
    for tag in target.pip_platforms:
        if tag.startswith("macosx_"):
            _, major, minor, arch = tag.split("_", 3)
            platforms += tags.mac_platforms((int(major), int(minor)), arch)
        else:
            platforms.append(tag)
    found = [
        *tags.cpython_tags(version, platforms=platforms),
        *tags.compatible_tags(version, platforms=platforms),
    ]
    return {str(t) for t in found}


def wheel_tag_problems(lib: Path, target: Target, python: str) -> list[str]:
    """Each installed wheel (its .dist-info/WHEEL) none of whose tags ``python`` accepts on
    ``target``."""
    from packaging.tags import parse_tag

    ok = supported_tags(target, python)
    problems = []
    for wheel in sorted(lib.glob("*.dist-info/WHEEL")):
        tags = [
            line.split(":", 1)[1].strip()
            for line in wheel.read_text().splitlines()
            if line.startswith("Tag:")
        ]
        # A tag may be a compressed set (py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64).
        if not any(str(one) in ok for tag in tags for one in parse_tag(tag)):
            problems.append(f"{wheel.parent.name} ({', '.join(tags)})")
    return problems


def stage(into: Path, pythons: list[str], target: Target) -> None:
    server = into / "server"
    shutil.copytree(REPO / "src" / "filegate", server / "filegate",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))  # fmt: skip
    (server / "main.py").write_text(LAUNCHER)
    shutil.copy2(LOCK, server / "requirements.txt")
    for python in pythons:
        install_lib(server / "lib" / python, python, target)
    shutil.copy2(REPO / "README.md", into / "README.md")
    shutil.copy2(REPO / "LICENSE", into / "LICENSE")
    (into / "manifest.json").write_text(json.dumps(manifest(pythons, target.host), indent=2) + "\n")
    (into / ".mcpbignore").write_text("__pycache__/\n*.pyc\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Build filegate-<version>-<target>.mcpb (Claude Desktop's MCP Bundle)."
    )
    parser.add_argument("--target", choices=sorted(TARGETS), help="the platform (default: this machine)")
    parser.add_argument(
        "--out", type=Path, help="the bundle (default: dist/filegate-<version>-<target>.mcpb)"
    )
    parser.add_argument("--python", action="append", metavar="X.Y",
                        help="a Python the bundle serves (repeatable; default: this one)")  # fmt: skip
    parser.add_argument("--lock", action="store_true", help="re-resolve scripts/mcpb.lock and stop")
    args = parser.parse_args(argv)
    if args.lock:
        write_lock()
        print(LOCK)
        return 0
    pythons = args.python or [f"{sys.version_info[0]}.{sys.version_info[1]}"]
    if any(not re.fullmatch(r"3\.\d+", v) or int(v.split(".")[1]) < 11 for v in pythons):
        raise SystemExit(f"build_mcpb: --python takes 3.11 or later, as X.Y: {pythons}")
    name = args.target or this_machine()
    out: Path = (args.out or REPO / "dist" / f"filegate-{version()}-{name}.mcpb").resolve()
    mcpb = mcpb_command()
    with tempfile.TemporaryDirectory(prefix="filegate-mcpb-") as tmp:
        staged = Path(tmp) / "filegate"
        staged.mkdir()
        stage(staged, pythons, TARGETS[name])
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
