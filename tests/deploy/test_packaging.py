"""A wheel built from this repository installs into a fresh venv and works there.

Slow (about a minute and a half: the fresh venv pulls every dependency from the package index,
then every client configuration `filegate install` writes is started), so it
runs with ``pytest -m slow``.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from filegate import __version__
from tests.conftest import text
from tests.tooling import INSTALL_TIMEOUT_S

REPO = Path(__file__).resolve().parents[2]
TOOLS = [
    *("ReadFile", "ReadMediaFile", "Glob", "Grep", "WriteFile", "StrReplaceFile", "UndoWrite"),
    *("ApplyPatch", "Changes"),  # SPEC §10
]

# Fresh virtual environments installed from the package index (each run has a 900 s guard).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(INSTALL_TIMEOUT_S)]


def run(*cmd: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=900, cwd=cwd)
    assert done.returncode == 0, f"{cmd}: {done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, a fresh venv with it installed)."""
    tmp = tmp_path_factory.mktemp("pkg")
    run(sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "-q", "-w", tmp / "dist", cwd=REPO)
    (wheel,) = (tmp / "dist").glob("filegate-*.whl")
    venv = tmp / "venv"
    run(sys.executable, "-m", "venv", venv)
    run(venv / "bin" / "python", "-m", "pip", "install", "-q", "-U", "pip")
    run(venv / "bin" / "python", "-m", "pip", "install", "-q", wheel)
    return wheel, venv


def test_wheel_carries_the_code_the_tool_descriptions_and_the_script(
    fresh: tuple[Path, Path],
) -> None:
    wheel, _ = fresh
    assert wheel.name == f"filegate-{__version__}-py3-none-any.whl"
    names = zipfile.ZipFile(wheel).namelist()
    for md in ("read_file", "read_media", "write_file", "str_replace", "glob", "grep"):
        assert f"filegate/tools/{md}.md" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "filegate = filegate.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
    assert not any(n.startswith("tests/") for n in names)


def test_filegate_version_prints_the_version_in_a_fresh_venv(fresh: tuple[Path, Path]) -> None:
    _, venv = fresh
    assert run(venv / "bin" / "filegate", "--version") == f"filegate {__version__}\n"
    assert run(venv / "bin" / "python", "-m", "filegate", "--version") == f"filegate {__version__}\n"
    assert (venv / "bin" / "rg").exists()  # ripgrep came as a wheel


async def test_the_installed_server_serves_every_tool(fresh: tuple[Path, Path], tmp_path: Path) -> None:
    _, venv = fresh
    (tmp_path / "a.txt").write_text("installed from a wheel\n")
    transport = StdioTransport(str(venv / "bin" / "filegate"), ["--workdir", str(tmp_path)], keep_alive=False)
    async with Client(transport) as c:
        assert [t.name for t in await c.list_tools()] == TOOLS
        r = await c.call_tool("Grep", {"pattern": "wheel", "output_mode": "content"})
        assert text(r).startswith("a.txt:1:installed from a wheel")


async def test_install_from_the_wheel_writes_every_client_and_each_entry_starts(
    fresh: tuple[Path, Path], tmp_path: Path
) -> None:
    """`filegate install` from the fresh venv, for every client (a throw-away HOME/APPDATA), and
    each written entry started exactly as its client would; another OS's entry is printed, not
    written here."""
    from tests.test_install import (
        CLIENTS,
        STARTS_IN_PROJECT,
        client_env,
        entry_as_client_reads_it,
        expected_path,
    )

    _, venv = fresh
    exe = str(venv / "bin" / "filegate")
    project = tmp_path / "project"
    project.mkdir()
    (project / "marker.txt").write_text("served through the installed configuration\n")
    elsewhere = tmp_path / "client-cwd"
    elsewhere.mkdir()
    for os_name in ("macos", "windows", "linux"):
        root = tmp_path / os_name
        env = client_env(root, os_name)
        for client in CLIENTS:
            done = subprocess.run([exe, "install", client, "--os", os_name], capture_output=True, text=True,
                                  env=env, cwd=project, timeout=60)  # fmt: skip
            assert done.returncode == 0, (client, os_name, done.stderr)
            if os_name != "linux":
                # JSON or TOML: either way the command is a quoted string.
                assert "nothing was written" in done.stdout and f'"{exe}"' in done.stdout, done.stdout
                assert not root.exists()
                continue
            entry = entry_as_client_reads_it(
                client, expected_path(client, os_name, root / "home", root / "appdata")
            )
            assert entry["command"] == exe, entry
            cwd = project if client in STARTS_IN_PROJECT else elsewhere
            transport = StdioTransport(entry["command"], entry["args"], env=entry.get("env") or None,
                                       cwd=str(cwd), keep_alive=False)  # fmt: skip
            async with Client(transport, mode="legacy") as c:
                assert [t.name for t in await c.list_tools()] == TOOLS, client
                r = await c.call_tool("ReadFile", {"path": "marker.txt"})
                assert "served through the installed configuration" in text(r), client


# What test and tool runs leave in a checkout: never in the sdist (tests/test_distribution.py
# checks pyproject.toml excludes them; the build below, that none is in the sdist).
LEFTOVERS = (".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv", "mutants", "htmlcov")


def test_the_wheel_and_the_sdist_build_and_pass_twine_check(tmp_path: Path) -> None:
    """What PyPI would be given (the release workflow builds the same way): both built by
    `python -m build`, both accepted by `twine check --strict` (metadata, README rendering)."""
    run(sys.executable, "-m", "build", "--outdir", tmp_path, cwd=REPO)
    built = sorted(p.name for p in tmp_path.iterdir())
    assert built == [f"filegate-{__version__}-py3-none-any.whl", f"filegate-{__version__}.tar.gz"]
    out = run(sys.executable, "-m", "twine", "check", "--strict", *sorted(tmp_path.iterdir()))
    assert out.count("PASSED") == 2, out
    # What PyPI shows: the README, every link absolute (PyPI has neither the repository's files
    # nor heading anchors), the registry's mcp-name line kept; and the licence file.
    with zipfile.ZipFile(tmp_path / built[0]) as wheel:
        metadata = wheel.read(f"filegate-{__version__}.dist-info/METADATA").decode()
        names = wheel.namelist()
    assert f"filegate-{__version__}.dist-info/licenses/LICENSE" in names
    description = metadata.split("\n\n", 1)[1]
    assert "Content-Type: text/markdown" in metadata and "<!-- mcp-name: " in description
    targets = re.findall(r"\]\(([^)\s]*)\)", description)
    assert targets and [t for t in targets if not t.startswith("https://")] == []
    assert "](https://github.com/filegate/filegate/blob/main/docs/CONFIGURATION.md#flags)" in description
    # The sdist holds the repository, not what test runs left in it (.hypothesis/ is made by the
    # default set, which runs before this one).
    with tarfile.open(tmp_path / built[1]) as sdist:
        members = [m.name.split("/", 1)[-1] for m in sdist.getmembers()]
    left = [m for m in members if m.split("/")[0] in LEFTOVERS or m.startswith(".coverage")]
    assert left == [] and "src/filegate/cli.py" in members
    assert "](https://github.com/filegate/filegate#undo)" in description
