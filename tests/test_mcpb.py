"""The Claude Desktop bundles (filegate-<version>-<target>.mcpb), one per platform.

The slow tests install each platform's wheels (pip's --platform) and check every wheel's tags
run there; and build the Linux bundle with scripts/build_mcpb.py (its manifest checked by `mcpb validate`),
unpacks it with `mcpb unpack`, resolves its `mcp_config` with mcpb's own
getMcpConfigForManifest (the code hosts use: `${__dirname}` and `${user_config.*}` substituted
from the user's answers), and starts the resulting command exactly so — with a bare Python
(a fresh venv: nothing installed) as the only thing on PATH, no uv, and no network (its own
network namespace) — then speaks MCP to it: initialize, tools/list, ReadFile.

The fast tests check what the build pins, what the manifest says, and what the bundle's
launcher does with a Python it holds no libraries for (macOS's Xcode Python 3.9 among them).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from packaging.requirements import Requirement

from tests.conftest import text
from tests.tooling import INSTALL_TIMEOUT_S, npm_missing, tool_missing

REPO = Path(__file__).resolve().parents[1]

# What a host does with the manifest: mcpb's own substitution, run by node.
RESOLVE = """
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [index, dir, answers] = process.argv.slice(2);
const { getMcpConfigForManifest } = await import(pathToFileURL(index).href);
const manifest = JSON.parse(readFileSync(`${dir}/manifest.json`, "utf8"));
const config = await getMcpConfigForManifest({
  manifest, extensionPath: dir, systemDirs: { HOME: process.env.HOME },
  userConfig: JSON.parse(answers), pathSeparator: "/",
});
process.stdout.write(JSON.stringify(config ?? null));
"""


def build_script() -> Any:
    spec = importlib.util.spec_from_file_location("build_mcpb", REPO / "scripts" / "build_mcpb.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(*argv: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=900, cwd=cwd)
    assert done.returncode == 0, f"{argv[:3]}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done.stdout


def test_the_lock_pins_every_dependency_within_pyproject_bounds() -> None:
    build = build_script()
    pins = build.read_lock()
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    for line in declared:
        req = Requirement(line)
        pinned = pins.get(build.canonical(req.name))
        assert pinned is not None, f"{req.name} is not in scripts/mcpb.lock"
        assert req.specifier.contains(pinned, prereleases=True), (
            f"{req.name}=={pinned} is outside {req.specifier}"
        )


def test_the_lock_pins_the_pdf_extra_and_what_only_windows_needs() -> None:
    build = build_script()
    pins = build.read_lock()
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert build.EXTRAS == "[pdf]"
    for line in extras["pdf"]:
        req = Requirement(line)
        assert req.specifier.contains(pins[build.canonical(req.name)], prereleases=True)
    assert "pywin32" in pins  # the MCP SDK's, on Windows only


def test_the_manifest_says_which_python_to_install_in_the_form_claude_desktop_reads() -> None:
    """A space-separated range: Claude Desktop's check does not read PEP 440's commas."""
    manifest = build_script().manifest(["3.11", "3.12"], "darwin", TOOLS)
    assert manifest["compatibility"] == {"platforms": ["darwin"], "runtimes": {"python": ">=3.11 <3.13"}}
    assert "Needs Python 3.11 or 3.12 installed as `python3`" in manifest["description"]
    assert manifest["server"]["type"] == "python"
    assert "uv" not in json.dumps(manifest["server"])
    assert build_script().manifest(["3.11"], "win32", TOOLS)["server"]["mcp_config"]["command"] == "python"


TOOLS = [{"name": "ReadFile", "description": "Read a text file."}, {"name": "Grep", "description": "Search."}]


def test_the_manifest_lists_every_tool_the_server_offers_and_where_it_lives() -> None:
    from filegate.server.app import build_server
    from filegate.settings import Settings

    async def offered() -> list[str]:
        return [t.name for t in await build_server(Settings(workdir=REPO)).list_tools()]

    import anyio

    manifest = build_script().manifest(["3.11"], "linux")
    assert [t["name"] for t in manifest["tools"]] == anyio.run(offered)
    assert all(t["description"].endswith(".") for t in manifest["tools"])
    urls = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["urls"]
    assert manifest["repository"] == {"type": "git", "url": urls["Source"]}
    assert manifest["homepage"] == urls["Homepage"]


@pytest.mark.parametrize("target", ["linux-x86_64", "macos-arm64", "macos-x86_64", "windows-x64"])
def test_a_wheel_for_another_platform_is_caught_by_its_tags(target: str, tmp_path: Path) -> None:
    """The check every build runs on each lib/ (install_lib), on made-up WHEEL files."""
    build = build_script()
    wheels = {
        "pure-1.0": "py3-none-any",
        "linux_only-1.0": "cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64",
        "mac_arm-1.0": "cp312-cp312-macosx_11_0_arm64",
        "mac_universal-1.0": "cp312-cp312-macosx_10_13_universal2",
        "windows-1.0": "cp312-cp312-win_amd64",
        "abi3_mac_intel-1.0": "cp310-abi3-macosx_10_12_x86_64",
        "old_python-1.0": "cp311-cp311-win_amd64",
    }
    for name, tag in wheels.items():
        (tmp_path / f"{name}.dist-info").mkdir()
        (tmp_path / f"{name}.dist-info" / "WHEEL").write_text(f"Wheel-Version: 1.0\nTag: {tag}\n")
    wrong = {
        p.split(".dist-info")[0] for p in build.wheel_tag_problems(tmp_path, build.TARGETS[target], "3.12")
    }
    runs_there = {
        "linux-x86_64": {"pure-1.0", "linux_only-1.0"},
        "macos-arm64": {"pure-1.0", "mac_arm-1.0", "mac_universal-1.0"},
        "macos-x86_64": {"pure-1.0", "mac_universal-1.0", "abi3_mac_intel-1.0"},
        "windows-x64": {"pure-1.0", "windows-1.0"},
    }[target]
    assert wrong == set(wheels) - runs_there


def launcher_in(tmp_path: Path, versions: list[str]) -> Path:
    server = tmp_path / "server"
    for version in versions:
        (server / "lib" / version).mkdir(parents=True)
    (server / "main.py").write_text(build_script().LAUNCHER)
    return server / "main.py"


def test_a_python_the_bundle_has_no_libraries_for_is_told_which_to_install(tmp_path: Path) -> None:
    main = launcher_in(tmp_path, ["3.98", "3.99"])
    done = subprocess.run([sys.executable, "-I", main], capture_output=True, text=True, timeout=30)
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert done.returncode == 2
    assert done.stderr == (
        f"filegate: error: `{sys.executable}` is Python {running}, and this bundle holds filegate's "
        "libraries for Python 3.98 or 3.99 only: install Python 3.98 or 3.99 "
        "(https://www.python.org/downloads/), then restart Claude Desktop; or install filegate with "
        "pip and run `filegate install claude-desktop`\n"
    )


def other_python(version: str) -> Path:
    """A real CPython ``version`` (pyenv's on the project's machines)."""
    found = next(iter(sorted(Path.home().glob(f".pyenv/versions/{version}.*/bin/python{version}"))), None)
    found = found or shutil.which(f"python{version}")
    if found is None or ".pyenv/shims" in str(found):
        tool_missing(f"Python {version} (pyenv install {version})")
    return Path(found)


def test_xcodes_python_3_9_is_refused_by_name_with_what_to_install(tmp_path: Path) -> None:
    """macOS's `python3` is often Xcode's 3.9 (awslabs/mcp#2038 failed so): the launcher runs
    far enough under it to say so (a real 3.9, started by the path Xcode's has)."""
    xcode = tmp_path / "Library" / "Developer" / "CommandLineTools" / "usr" / "bin" / "python3"
    xcode.parent.mkdir(parents=True)
    xcode.symlink_to(other_python("3.9"))
    main = launcher_in(tmp_path, ["3.98", "3.99"])
    done = subprocess.run([xcode, "-I", main], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr == (
        f"filegate: error: `{xcode}` is the Python 3.9 that comes with Apple's Xcode command-line "
        "tools, and this bundle holds filegate's libraries for Python 3.98 or 3.99 only: install "
        "Python 3.98 or 3.99 from https://www.python.org/downloads/macos/ (or brew install "
        "python@3.99), then restart Claude Desktop; or install filegate with pip and run "
        "`filegate install claude-desktop`\n"
    )


def test_a_python_it_cannot_use_hands_over_to_one_it_can_in_the_usual_place(tmp_path: Path) -> None:
    """Started by a Python 3.9, the launcher finds the system's python3.11 where Linux keeps it
    (/usr/bin; on macOS python.org's and Homebrew's places) and runs under it."""
    system = Path("/usr/bin/python3.11")
    if not system.is_file():
        tool_missing("/usr/bin/python3.11 (Debian's python3.11)")
    main = launcher_in(tmp_path, ["3.11"])
    stub = main.parent / "filegate"
    stub.mkdir()
    (stub / "__init__.py").write_text("")
    (stub / "cli.py").write_text(
        "import sys\ndef main():\n    print(sys.executable, sys.argv[1:])\n    return 0\n"
    )
    done = subprocess.run([other_python("3.9"), "-I", main, "--workdir", "x"], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{system} ['--workdir', 'x']\n"


def test_the_usual_places_on_each_system(tmp_path: Path) -> None:
    main = launcher_in(tmp_path, ["3.12"])
    spec = importlib.util.spec_from_file_location("bundle_main", main)
    assert spec and spec.loader
    launcher = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(launcher)
    places = launcher.usual_places
    assert [str(p) for p in places(["3.12"], "darwin", {})] == [
        "/Library/Frameworks/Python.framework/Versions/3.12/bin/python3.12",
        "/opt/homebrew/bin/python3.12",
        "/usr/local/bin/python3.12",
    ]
    win = [
        p.as_posix() for p in places(["3.11", "3.13"], "win32", {"LOCALAPPDATA": "C:/Users/me/AppData/Local"})
    ]
    assert win[:2] == [
        "C:/Users/me/AppData/Local/Programs/Python/Python313/python.exe",
        "C:/Program Files/Python313/python.exe",
    ]  # the newest first


@pytest.mark.slow
@pytest.mark.timeout(INSTALL_TIMEOUT_S * 2)  # four platforms' wheels from the index
@pytest.mark.parametrize("target", ["linux-x86_64", "macos-arm64", "macos-x86_64", "windows-x64"])
def test_each_platform_gets_its_own_wheels(target: str, tmp_path: Path) -> None:
    """What the release builds for each platform, from this machine: every wheel's tags run
    there (install_lib refuses otherwise), the compiled ones are that platform's, and what only
    that platform needs is there (pywin32 for the MCP SDK on Windows)."""
    build = build_script()
    lib = tmp_path / "lib"
    build.install_lib(lib, "3.12", build.TARGETS[target])
    assert build.wheel_tag_problems(lib, build.TARGETS[target], "3.12") == []
    core = next(lib.glob("pydantic_core-*.dist-info")) / "WHEEL"
    marker = {"linux-x86_64": "manylinux", "macos-arm64": "arm64", "macos-x86_64": "x86_64",
              "windows-x64": "win_amd64"}[target]  # fmt: skip
    assert marker in core.read_text() and "cp312" in core.read_text()
    assert any(lib.glob("pypdfium2-*.dist-info"))  # the pdf extra
    assert any(lib.glob("pywin32-*.dist-info")) is (target == "windows-x64")


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the unpacked bundle, mcpb's package directory)."""
    if missing := npm_missing():
        tool_missing(f"{missing}: mcpb is an npm package")
    tmp = tmp_path_factory.mktemp("mcpb")
    bundle = tmp / "filegate.mcpb"
    built = run(
        sys.executable, REPO / "scripts" / "build_mcpb.py", "--target", "linux-x86_64", "--out", bundle
    )
    assert built.strip() == str(bundle)
    mcpb = build_script().mcpb_command()
    run(mcpb, "unpack", bundle, tmp / "unpacked")
    run(mcpb, "validate", tmp / "unpacked" / "manifest.json")
    return tmp / "unpacked", mcpb.parent.parent / "@anthropic-ai" / "mcpb"


def bare_python(into: Path) -> Path:
    """A directory whose only command is `python3`: this Python with nothing installed (a venv
    without pip or site-packages), as a user who installed only Python has."""
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    run(base, "-m", "venv", "--without-pip", into / "venv")
    path = into / "path"
    path.mkdir()
    (path / "python3").symlink_to(into / "venv" / "bin" / "python3")
    done = subprocess.run([path / "python3", "-I", "-c", "import fastmcp"], capture_output=True, timeout=30)
    assert done.returncode != 0, "the bare Python can import fastmcp: the test would not prove the bundle"
    return path


@pytest.mark.slow
@pytest.mark.timeout(INSTALL_TIMEOUT_S)  # the mcpb packer may be installed from npm first
def test_the_bundle_starts_with_python_alone_offline_and_serves_the_folder(
    unpacked: tuple[Path, Path], tmp_path: Path
) -> None:
    bundle, mcpb_package = unpacked
    manifest = json.loads((bundle / "manifest.json").read_text())
    from filegate import __version__

    assert manifest["version"] == __version__
    workdir = manifest["user_config"]["workdir"]
    assert workdir["type"] == "directory" and workdir["required"] is True
    assert sorted(p.name for p in bundle.iterdir()) == ["LICENSE", "README.md", "manifest.json", "server"]
    shipped = build_script().read_lock(bundle / "server" / "requirements.txt")
    lib = bundle / "server" / "lib" / f"{sys.version_info[0]}.{sys.version_info[1]}"
    for info in lib.glob("*.dist-info"):
        name, _, version = info.name.removesuffix(".dist-info").rpartition("-")
        assert shipped.get(build_script().canonical(name)) == version, (
            f"{info.name} is not the locked version"
        )

    folder = tmp_path / "chosen folder"  # a space, as in "Application Support"
    folder.mkdir()
    (folder / "hello.txt").write_text("served from the bundle\n")
    script = tmp_path / "resolve.mjs"
    script.write_text(RESOLVE)
    answers = json.dumps({"workdir": str(folder), "read_only": True})
    config = json.loads(run("node", script, mcpb_package / "dist" / "index.js", bundle, answers))
    assert config["command"] == "python3"
    assert config["args"][config["args"].index("--workdir") + 1] == str(folder)
    assert config["env"] == {"FILEGATE_READ_ONLY": "true"}
    assert "${" not in json.dumps(config)

    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "-rn", "true"], capture_output=True).returncode:
        tool_missing("unshare -rn (a network namespace of its own) is not available")
    path = bare_python(tmp_path)
    assert shutil.which("uv", path=str(path)) is None
    # The manifest's command, arguments and environment; PATH holds the bare Python alone, and
    # unshare gives the server a network namespace with no interface but loopback.
    transport = StdioTransport(
        unshare, ["-rn", "--", config["command"], *config["args"]],
        env={"PATH": str(path), **config["env"]}, keep_alive=False,
    )  # fmt: skip
    names, answer = _call(transport)
    from filegate.server.app import build_server
    from filegate.settings import Settings

    async def readers() -> list[str]:
        return [t.name for t in await build_server(Settings(workdir=folder, read_only=True)).list_tools()]

    import anyio

    assert names == anyio.run(readers)  # read-only, from the checkbox
    assert "served from the bundle" in answer


def _call(transport: StdioTransport) -> tuple[list[str], str]:
    import anyio

    async def go() -> tuple[list[str], str]:
        async with Client(transport, mode="legacy", init_timeout=60) as c:
            names = [t.name for t in await c.list_tools()]
            r = await c.call_tool("ReadFile", {"path": "hello.txt"}, raise_on_error=False)
        return names, text(r)

    return anyio.run(go)
