"""filegate.mcpb, Claude Desktop's one-click bundle.

The slow test builds it with scripts/build_mcpb.py (its manifest checked by `mcpb validate`),
unpacks it with `mcpb unpack`, resolves its `mcp_config` with mcpb's own
getMcpConfigForManifest (the code hosts use: `${__dirname}` and `${user_config.*}` substituted
from the user's answers), and starts the resulting command exactly so — with a bare Python
(a fresh venv: nothing installed) as the only thing on PATH, no uv, and no network (its own
network namespace) — then speaks MCP to it: initialize, tools/list, ReadFile.

The fast tests check what the build pins and what the bundle's launcher says to a Python it
holds no libraries for.
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


def test_the_manifest_says_which_python_to_install() -> None:
    manifest = build_script().manifest(["3.11", "3.12"], "darwin")
    assert manifest["compatibility"] == {"platforms": ["darwin"], "runtimes": {"python": ">=3.11,<3.13"}}
    assert "Needs Python 3.11 or 3.12 installed as `python3`" in manifest["description"]
    assert manifest["server"]["type"] == "python"
    assert "uv" not in json.dumps(manifest["server"])
    assert build_script().manifest(["3.11"], "win32")["server"]["mcp_config"]["command"] == "python"


def test_a_python_the_bundle_has_no_libraries_for_is_told_which_to_install(tmp_path: Path) -> None:
    server = tmp_path / "server"
    (server / "lib" / "3.99").mkdir(parents=True)
    (server / "main.py").write_text(build_script().LAUNCHER)
    done = subprocess.run(
        [sys.executable, "-I", server / "main.py"], capture_output=True, text=True, timeout=30
    )
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert done.returncode == 2
    assert done.stderr.startswith(
        f"filegate: error: this bundle holds filegate's libraries for Python 3.99, and {sys.executable} "
        f"is Python {running}: install Python 3.99"
    )
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the unpacked bundle, mcpb's package directory)."""
    if missing := npm_missing():
        tool_missing(f"{missing}: mcpb is an npm package")
    tmp = tmp_path_factory.mktemp("mcpb")
    bundle = tmp / "filegate.mcpb"
    assert run(sys.executable, REPO / "scripts" / "build_mcpb.py", "--out", bundle).strip() == str(bundle)
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
    assert names == ["ReadFile", "ReadMediaFile", "Glob", "Grep"]  # read-only, from the checkbox
    assert "served from the bundle" in answer


def _call(transport: StdioTransport) -> tuple[list[str], str]:
    import anyio

    async def go() -> tuple[list[str], str]:
        async with Client(transport, mode="legacy", init_timeout=60) as c:
            names = [t.name for t in await c.list_tools()]
            r = await c.call_tool("ReadFile", {"path": "hello.txt"}, raise_on_error=False)
        return names, text(r)

    return anyio.run(go)
