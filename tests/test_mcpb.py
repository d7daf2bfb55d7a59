"""filegate.mcpb, Claude Desktop's one-click bundle (slow: npm, uv and a first `uv run`).

scripts/build_mcpb.py builds it (its manifest checked by `mcpb validate`); here it is unpacked
with `mcpb unpack`, its `mcp_config` resolved by mcpb's own getMcpConfigForManifest (the code
hosts use: `${__dirname}` and `${user_config.*}` substituted from the user's answers), and the
resulting command, arguments and environment are started as the host starts them, then asked
for a tool.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from tests.conftest import text
from tests.tooling import npm_missing, pip_tool, tool_missing

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
UV_VERSION = "0.13.8"

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


def test_the_bundle_asks_for_the_folder_and_serves_it(
    unpacked: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle, mcpb_package = unpacked
    manifest = json.loads((bundle / "manifest.json").read_text())
    from filegate import __version__

    assert manifest["version"] == __version__
    workdir = manifest["user_config"]["workdir"]
    assert workdir["type"] == "directory" and workdir["required"] is True
    assert sorted(p.name for p in bundle.iterdir()) == ["README.md", "manifest.json", "pyproject.toml", "src"]

    folder = tmp_path / "chosen folder"  # a space, as in "Application Support"
    folder.mkdir()
    (folder / "hello.txt").write_text("served from the bundle\n")
    script = tmp_path / "resolve.mjs"
    script.write_text(RESOLVE)
    answers = json.dumps({"workdir": str(folder), "read_only": True})
    config = json.loads(run("node", script, mcpb_package / "dist" / "index.js", bundle, answers))
    assert config["command"] == "uv"
    assert config["args"][config["args"].index("--workdir") + 1] == str(folder)
    assert config["env"] == {"FILEGATE_READ_ONLY": "true"}
    assert "${" not in json.dumps(config)

    uv = pip_tool("uv", UV_VERSION, "uv")
    monkeypatch.setenv("PATH", f"{uv.parent}{os.pathsep}{os.environ['PATH']}")
    # The manifest's environment, plus this machine's certificate settings (uv reaches PyPI
    # through them here; a desktop host passes its own session's): nothing filegate reads.
    certs = {k: os.environ[k] for k in ("SSL_CERT_FILE", "SSL_CERT_DIR") if k in os.environ}
    transport = StdioTransport(
        config["command"], config["args"], env={**certs, **config["env"]}, keep_alive=False
    )
    names, answer = _call(transport)
    assert names == ["ReadFile", "ReadMediaFile", "Glob", "Grep"]  # read-only, from the checkbox
    assert "served from the bundle" in answer


def _call(transport: StdioTransport) -> tuple[list[str], str]:
    import anyio

    async def go() -> tuple[list[str], str]:
        # The first start makes the environment from PyPI (uv): a generous hang guard.
        async with Client(transport, mode="legacy", init_timeout=600) as c:
            names = [t.name for t in await c.list_tools()]
            r = await c.call_tool("ReadFile", {"path": "hello.txt"}, raise_on_error=False)
        return names, text(r)

    return anyio.run(go)
