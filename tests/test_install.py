"""`filegate install CLIENT`: each client's file, merged, and started the way the client would.

The per-OS locations below are written from each client's documentation, independently of
filegate.install's table. The configurations are started for real with this venv's
`filegate` (the wheel-built variant is tests/server/test_packaging.py, slow).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

from tests.conftest import FILEGATE, free_port, text
from tests.server.served import serve
from tests.tooling import INSTALL_TIMEOUT_S

CLIENTS = ["claude-desktop", "claude-code", "cursor", "kimi", "vscode", "windsurf", "gemini-cli", "codex"]
HTTP_CLIENTS = ["claude-code", "cursor", "kimi", "vscode", "windsurf", "gemini-cli", "codex", "generic-http"]
# CLI agents start their servers in the project they work on; the apps do not.
STARTS_IN_PROJECT = {"claude-code", "kimi", "gemini-cli", "codex"}


def expected_path(client: str, os_name: str, home: Path, appdata: Path) -> Path:
    app = {"macos": home / "Library/Application Support", "windows": appdata, "linux": home / ".config"}[
        os_name
    ]
    return {
        "claude-desktop": app / "Claude/claude_desktop_config.json",
        "claude-code": home / ".claude.json",
        "cursor": home / ".cursor/mcp.json",
        "kimi": home / ".kimi/mcp.json",
        "vscode": app / "Code/User/mcp.json",
        "windsurf": home / ".codeium/windsurf/mcp_config.json",
        "gemini-cli": home / ".gemini/settings.json",
        "codex": home / ".codex/config.toml",
    }[client]


def client_env(tmp: Path, os_name: str = "linux") -> dict[str, str]:
    """A throw-away HOME (and APPDATA/USERPROFILE for Windows paths); nothing of the real user's."""
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CONFIG_HOME", "CODEX_HOME", "APPDATA")}
    env["HOME"] = str(tmp / "home")
    if os_name == "windows":
        env["USERPROFILE"] = str(tmp / "home")
        env["APPDATA"] = str(tmp / "appdata")
    return env


def install(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([FILEGATE, "install", *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=60)  # fmt: skip


def entry_as_client_reads_it(client: str, path: Path, name: str = "filegate") -> dict[str, Any]:
    if client == "codex":
        servers = tomllib.loads(path.read_text())["mcp_servers"]
    else:
        servers = json.loads(path.read_text())["servers" if client == "vscode" else "mcpServers"]
    entry: dict[str, Any] = servers[name]
    return entry


@pytest.fixture
def project(tmp_path: Path) -> Path:
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "marker.txt").write_text("served through the installed configuration\n")
    return ws


async def start_as_client(entry: dict[str, Any], cwd: Path) -> list[str]:
    """command + args + env + cwd from the entry, as the client spawns it; tools/list and a read."""
    assert entry.get("type", "stdio") == "stdio", entry
    transport = StdioTransport(entry["command"], entry.get("args", []), env=entry.get("env") or None,
                               cwd=entry.get("cwd") or str(cwd), keep_alive=False)  # fmt: skip
    async with Client(transport, mode="legacy") as c:
        names = [t.name for t in await c.list_tools()]
        r = await c.call_tool("ReadFile", {"path": "marker.txt"})
        assert "served through the installed configuration" in text(r)
    return names


@pytest.mark.slow
async def test_every_client_configuration_starts_as_written(tmp_path: Path, project: Path) -> None:
    env = client_env(tmp_path)
    elsewhere = tmp_path / "client-cwd"  # where an app such as Claude Desktop starts servers
    elsewhere.mkdir()
    started: dict[tuple[Any, ...], list[str]] = {}
    for client in CLIENTS:
        done = install(client, env=env, cwd=project)
        assert done.returncode == 0, done.stderr
        path = expected_path(client, "linux", tmp_path / "home", tmp_path / "appdata")
        assert str(path) in done.stdout
        entry = entry_as_client_reads_it(client, path)
        assert entry["command"] == FILEGATE  # absolute: no PATH needed
        cwd = project if client in STARTS_IN_PROJECT else elsewhere
        assert ("--workdir" in entry["args"]) == (client not in STARTS_IN_PROJECT), entry
        assert ("kimi" in entry["args"]) == (client == "kimi"), entry  # --client kimi: its budget
        # Several clients share one command line; one start proves each such line.
        key = (entry["command"], tuple(entry["args"]), json.dumps(entry.get("env")), str(cwd))
        if key not in started:
            started[key] = await start_as_client(entry, cwd)
        assert started[key] == [
            "ReadFile",
            "ReadMediaFile",
            "Glob",
            "Grep",
            "WriteFile",
            "StrReplaceFile",
            "UndoWrite",
            "ApplyPatch",
            "Changes",
        ]
    assert len(started) == 3, started  # apps with --workdir, agents without, Kimi with its preset


@pytest.mark.slow
async def test_flags_given_to_install_reach_the_server(tmp_path: Path, project: Path) -> None:
    env = client_env(tmp_path)
    done = install("cursor", "--read-only", "--workdir", str(project), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    entry = entry_as_client_reads_it("cursor", tmp_path / "home/.cursor/mcp.json")
    assert entry["args"] == ["--workdir", str(project), "--read-only"]
    # read-only: the read tools and Changes (SPEC §10: read-only), no write tool
    assert await start_as_client(entry, tmp_path) == ["ReadFile", "ReadMediaFile", "Glob", "Grep", "Changes"]


@pytest.mark.parametrize("os_name", ["macos", "windows", "linux"])
def test_each_os_gets_each_clients_own_file(
    tmp_path: Path, project: Path, os_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In-process (the paths are the point here; the subprocess tests above start the entries).
    Each OS's locations are computed from its own variables; only this machine's are written."""
    from filegate.install import config_path, detect_os, main

    for name in ("XDG_CONFIG_HOME", "CODEX_HOME", "APPDATA", "USERPROFILE"):
        monkeypatch.delenv(name, raising=False)
    env = client_env(tmp_path, os_name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(project)
    for client in CLIENTS:
        path = expected_path(client, os_name, tmp_path / "home", tmp_path / "appdata")
        assert config_path(client, os_name, env) == path  # type: ignore[arg-type]
        if os_name == detect_os():
            assert main([client, "--os", os_name]) == 0
            entry = entry_as_client_reads_it(client, path)
            assert Path(entry["command"]).is_absolute() and Path(entry["command"]).exists(), entry
    written = sorted(p for p in tmp_path.rglob("*") if p.is_file() and p.parent != project)
    expected = len(CLIENTS) if os_name == detect_os() else 0
    assert len(written) == expected, written  # nothing else, no backups of new files


@pytest.mark.parametrize(
    ("client", "os_name", "where"),
    [
        ("claude-desktop", "windows", "%APPDATA%\\Claude\\claude_desktop_config.json"),
        ("cursor", "windows", "%USERPROFILE%\\.cursor\\mcp.json"),
        ("vscode", "macos", "~/Library/Application Support/Code/User/mcp.json"),
    ],
)
def test_another_systems_file_is_printed_with_its_location_not_written_here(
    tmp_path: Path, project: Path, client: str, os_name: str, where: str
) -> None:
    env = client_env(tmp_path)
    done = install(client, "--os", os_name, env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    first, rest = done.stdout.split("\n", 1)
    assert f" on {os_name} reads {where};" in first, first
    assert "nothing was written" in first and "path of filegate on that machine" in first
    key = "servers" if client == "vscode" else "mcpServers"
    assert json.loads(rest)[key]["filegate"]["args"] == ["--workdir", str(project)]
    assert not (tmp_path / "home").exists() and not (tmp_path / "appdata").exists()


def test_codex_home_is_honoured(tmp_path: Path, project: Path) -> None:
    env = {**client_env(tmp_path), "CODEX_HOME": str(tmp_path / "codex-home")}
    assert install("codex", env=env, cwd=project).returncode == 0
    assert entry_as_client_reads_it("codex", tmp_path / "codex-home/config.toml")["command"] == FILEGATE


def test_merge_keeps_everything_else_backs_up_and_is_idempotent(tmp_path: Path, project: Path) -> None:
    env = client_env(tmp_path)
    path = tmp_path / "home/.claude.json"
    path.parent.mkdir(parents=True)
    old = {
        "numStartups": 7,
        "mcpServers": {"other": {"command": "other-server"}, "filegate": {"command": "stale"}},
    }
    path.write_text(json.dumps(old))
    first = install("claude-code", env=env, cwd=project)
    assert first.returncode == 0 and "kept as" in first.stdout, first
    doc = json.loads(path.read_text())
    assert doc["numStartups"] == 7 and doc["mcpServers"]["other"] == {"command": "other-server"}
    assert doc["mcpServers"]["filegate"]["command"] == FILEGATE
    (backup,) = path.parent.glob(".claude.json.*.bak")
    assert json.loads(backup.read_text()) == old
    after_first = path.read_bytes()
    second = install("claude-code", env=env, cwd=project)
    assert second.returncode == 0 and "nothing changed" in second.stdout
    assert path.read_bytes() == after_first
    assert len(list(path.parent.glob(".claude.json.*.bak"))) == 1


def test_a_symlinked_config_is_written_through_its_link(tmp_path: Path, project: Path) -> None:
    env = client_env(tmp_path)
    dotfiles = tmp_path / "dotfiles" / "gemini.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"theme": "Dracula"}')
    link = tmp_path / "home/.gemini/settings.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(dotfiles)
    assert install("gemini-cli", env=env, cwd=project).returncode == 0
    assert link.is_symlink()
    doc = json.loads(dotfiles.read_text())
    assert doc["theme"] == "Dracula" and doc["mcpServers"]["filegate"]["command"] == FILEGATE


def test_codex_toml_merge_keeps_comments_and_other_tables(tmp_path: Path, project: Path) -> None:
    env = client_env(tmp_path)
    path = tmp_path / "home/.codex/config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(
        '# my settings\nmodel = "o3"\n\n[mcp_servers.filegate]\ncommand = "old"\n\n'
        '[mcp_servers.filegate.env]\nX = "1"\n\n[mcp_servers.other]\ncommand = "other"\n'
    )
    assert install("codex", "--approval", "strict", env=env, cwd=project).returncode == 0
    body = path.read_text()
    doc = tomllib.loads(body)
    assert body.startswith("# my settings\n") and doc["model"] == "o3"
    assert doc["mcp_servers"]["other"] == {"command": "other"}
    assert doc["mcp_servers"]["filegate"] == {"command": FILEGATE, "args": ["--approval", "strict"]}


def test_unreadable_config_is_left_alone(tmp_path: Path, project: Path) -> None:
    env = client_env(tmp_path)
    path = tmp_path / "home/.cursor/mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text('{\n  // a comment\n  "mcpServers": {}\n}\n')
    done = install("cursor", env=env, cwd=project)
    assert done.returncode == 2 and "not plain JSON" in done.stderr and "--print" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert path.read_text() == '{\n  // a comment\n  "mcpServers": {}\n}\n'
    assert not list(path.parent.glob("*.bak"))


def test_print_writes_nothing(tmp_path: Path, project: Path) -> None:
    env = client_env(tmp_path)
    done = install("vscode", "--print", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    entry = json.loads(done.stdout)["servers"]["filegate"]
    assert entry == {"type": "stdio", "command": FILEGATE, "args": ["--workdir", str(project)]}
    codex = tomllib.loads(install("codex", "--print", env=env, cwd=project).stdout)
    assert codex["mcp_servers"]["filegate"] == {"command": FILEGATE, "args": []}
    assert not (tmp_path / "home").exists()


@pytest.mark.slow
def test_bad_choices_fail_at_install_with_one_line(tmp_path: Path, project: Path) -> None:
    env = client_env(tmp_path)
    for args, expect in [
        (["cursor", "--approval", "maybe"], "--approval"),
        (["cursor", "--workdir", str(tmp_path / "missing")], "--workdir"),
        (["claude-desktop", "--transport", "http"], "local servers only"),
        (["generic"], "--config"),
        (["notepad"], "invalid choice"),
    ]:
        done = install(*args, env=env, cwd=project)
        assert done.returncode == 2, (args, done)
        assert expect in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "home").exists()


@pytest.mark.slow
async def test_http_configurations_reach_the_endpoint(tmp_path: Path, project: Path) -> None:
    """The start command printed (with the token given and the workdir, for the agents too: the
    user starts an HTTP server, not the agent in its project) is pasted as is, from elsewhere."""
    env = client_env(tmp_path)
    port = free_port()
    start_lines = {}
    for n, client in enumerate(HTTP_CLIENTS):
        extra = ["--config", str(tmp_path / "generic.json")] if client == "generic-http" else []
        # The token by flag (issue 26) and from the environment: both reach the headers only.
        by = ["--token", "tok-123"] if n % 2 else []
        done = install(client, "--transport", "http", "--port", str(port), *by, *extra,
                       env={**env, "FILEGATE_TOKEN": "tok-123"} if not by else env, cwd=project)  # fmt: skip
        assert done.returncode == 0, done.stderr
        start_lines[client] = done.stdout.split("start the server with: ", 1)[1].splitlines()[0].strip()
    kimi = start_lines.pop("kimi")  # with its result-budget preset
    assert len(set(start_lines.values())) == 1, start_lines  # the same server for every other client
    assert kimi == start_lines["codex"] + " --client kimi"
    words = shlex.split(start_lines["codex"])
    assert words[:2] == ["FILEGATE_TOKEN=tok-123", FILEGATE], words
    assert words[2:] == ["--transport", "http", "--workdir", str(project), "--port", str(port)], words
    elsewhere = tmp_path / "a-shell-elsewhere"
    elsewhere.mkdir()
    with serve(words[1:], tmp_path, port, env=dict([words[0].split("=", 1)]), cwd=elsewhere) as served:
        for client in HTTP_CLIENTS:
            path = (tmp_path / "generic.json" if client == "generic-http"
                    else expected_path(client, "linux", tmp_path / "home", tmp_path / "appdata"))  # fmt: skip
            entry = entry_as_client_reads_it(client, path)
            url = entry.get({"windsurf": "serverUrl", "gemini-cli": "httpUrl"}.get(client, "url"))
            headers = entry.get("http_headers" if client == "codex" else "headers")
            assert url == f"http://127.0.0.1:{served.port}/mcp", (client, entry)
            async with Client(StreamableHttpTransport(url, headers=headers)) as c:
                r = await c.call_tool("ReadFile", {"path": "marker.txt"})
                assert "served through the installed configuration" in text(r), client


@pytest.mark.slow
def test_kimi_code_gets_its_own_file_and_can_switch_its_builtins_off(tmp_path: Path, project: Path) -> None:
    """Kimi Code reads $KIMI_CODE_HOME/mcp.json (default ~/.kimi-code); --disable-builtins merges
    [tools] disabled into the config.toml beside it (tests/agents/test_agents.py runs Kimi
    Code on it and sees filegate's tools in place of its own)."""
    env = client_env(tmp_path)
    done = install("kimi-code", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    entry = json.loads((tmp_path / "home/.kimi-code/mcp.json").read_text())["mcpServers"]["filegate"]
    assert entry["command"] == FILEGATE and "--workdir" not in entry["args"]
    assert not (tmp_path / "home/.kimi-code/config.toml").exists()  # only when asked

    kimi_home = tmp_path / "kimi-home"
    kimi_home.mkdir()
    (kimi_home / "config.toml").write_text('# mine\ndefault_model = "k2"\n\n[tools]\ndisabled = ["Bash"]\n')
    env["KIMI_CODE_HOME"] = str(kimi_home)
    done = install("kimi-code", "--disable-builtins", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert json.loads((kimi_home / "mcp.json").read_text())["mcpServers"]["filegate"] == entry
    body = (kimi_home / "config.toml").read_text()
    doc = tomllib.loads(body)
    assert body.startswith("# mine\n") and doc["default_model"] == "k2"
    assert doc["tools"]["disabled"] == ["Bash", "Read", "Write", "Edit", "Grep", "Glob", "ReadMediaFile"]
    assert len(list(kimi_home.glob("config.toml.*.bak"))) == 1
    again = install("kimi-code", "--disable-builtins", env=env, cwd=project)
    assert again.returncode == 0 and "already had" in again.stdout, again
    assert (kimi_home / "config.toml").read_text() == body

    wrong = install("codex", "--disable-builtins", env=env, cwd=project)
    assert wrong.returncode == 2 and "kimi-code only" in wrong.stderr


@pytest.mark.slow
@pytest.mark.timeout(INSTALL_TIMEOUT_S)  # the Inspector may be installed from npm first
def test_the_inspector_reads_the_generic_http_entry_as_http(tmp_path: Path, project: Path) -> None:
    """The MCP Inspector 2.12 reads an entry without "type" as stdio ("The "file" argument must
    be of type string"): install generic-http writes "type": "http", which it reads as HTTP."""
    from tests.server.served import inspector_missing, run_inspector
    from tests.tooling import tool_missing

    missing = inspector_missing()
    if missing:
        tool_missing(missing)
    env = {**client_env(tmp_path), "FILEGATE_TOKEN": "tok-123"}
    config = tmp_path / "inspector.json"
    port = free_port()
    done = install("generic-http", "--port", str(port), "--config", str(config), env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert json.loads(config.read_text())["mcpServers"]["filegate"]["type"] == "http"
    words = shlex.split(done.stdout.split("start the server with: ", 1)[1].splitlines()[0].strip())
    with serve(words[1:], tmp_path, port, env={"FILEGATE_TOKEN": "tok-123"}, cwd=project):
        listed = run_inspector("--config", str(config), "--server", "filegate", "--method", "tools/list")
    assert listed.returncode == 0, listed.stderr
    answer = json.loads(listed.stdout[listed.stdout.index("{") :])  # after any note on its secret store
    assert "ReadFile" in [t["name"] for t in answer["tools"]]


def test_a_token_given_by_flag_is_never_recorded_in_args(tmp_path: Path, project: Path) -> None:
    """`--token X` is a secret: a stdio entry's args are shown by `ps` and synced with dotfiles.
    It is refused over stdio, and goes into an HTTP entry's headers only, and into the one line the user runs to start that
    server (issue 25: a placeholder there gave a 401 when pasted), never into a snippet."""
    env = client_env(tmp_path)
    # Over stdio a token would be sent nowhere: refused (SPEC §5), nothing written, not echoed.
    for extra in ((), ("--print",)):
        stdio = install("claude-code", "--token", "tok-SECRET-9", "--read-only", *extra, env=env, cwd=project)
        assert stdio.returncode == 2 and "--token is for --transport http" in stdio.stderr, stdio.stderr
        assert "tok-SECRET-9" not in stdio.stdout + stdio.stderr
    assert not (tmp_path / "home/.claude.json").exists()
    config = tmp_path / "mcp.json"
    http = install("generic-http", "--token", "tok-SECRET-9", "--config", str(config), env=env, cwd=project)
    assert http.returncode == 0, http.stderr
    start, _, rest = http.stdout.partition("start the server with: ")
    assert "tok-SECRET-9" not in start + http.stderr and "YOUR_TOKEN" not in http.stdout
    assert rest.splitlines()[0].startswith("FILEGATE_TOKEN=tok-SECRET-9 "), rest
    assert entry_as_client_reads_it("generic-http", config)["headers"] == {
        "Authorization": "Bearer tok-SECRET-9"
    }


def test_the_backup_of_a_private_config_stays_private(tmp_path: Path, project: Path) -> None:
    """A config may hold API keys: its backup is owner-only, not the umask's 0644."""
    env = client_env(tmp_path)
    path = tmp_path / "home/.claude.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"mcpServers": {}, "apiKey": "sk-private"}))
    path.chmod(0o600)
    old_umask = os.umask(0o022)
    try:
        done = install("claude-code", env=env, cwd=project)
    finally:
        os.umask(old_umask)
    assert done.returncode == 0, done.stderr
    (backup,) = path.parent.glob(".claude.json.*.bak")
    assert json.loads(backup.read_text())["apiKey"] == "sk-private"
    assert (backup.stat().st_mode & 0o777, path.stat().st_mode & 0o777) == (0o600, 0o600)
    path.chmod(0o640)  # a mode the user chose is kept for the file; its backup stays owner-only
    path.write_text(json.dumps({"mcpServers": {}, "apiKey": "sk-other"}))
    assert install("claude-code", env=env, cwd=project).returncode == 0
    newest = max(path.parent.glob(".claude.json.*.bak"), key=lambda b: b.stat().st_mtime_ns)
    assert json.loads(newest.read_text())["apiKey"] == "sk-other"
    assert (newest.stat().st_mode & 0o777, path.stat().st_mode & 0o777) == (0o600, 0o640)


def test_http_without_a_token_says_so_and_how_to_require_one(tmp_path: Path, project: Path) -> None:
    env = client_env(tmp_path)
    done = install("cursor", "--transport", "http", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    start = done.stdout.split("start the server with: ", 1)[1].splitlines()
    assert shlex.split(start[0]) == [FILEGATE, "--transport", "http", "--workdir", str(project)]
    assert start[1] == ("no token: any local process can connect; to require one, give the same --token "
                        "(or FILEGATE_TOKEN) to this command and to the server")  # fmt: skip
    assert "headers" not in entry_as_client_reads_it("cursor", tmp_path / "home/.cursor/mcp.json")


@pytest.mark.parametrize(("client", "file"), [("cursor", ".cursor/mcp.json"), ("vscode", ".vscode/mcp.json")])
def test_project_writes_the_projects_own_file(tmp_path: Path, project: Path, client: str, file: str) -> None:
    env = client_env(tmp_path)
    done = install(client, "--project", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert str(project / file) in done.stdout and "whatever" not in done.stdout
    entry = entry_as_client_reads_it(client, project / file)
    assert entry["args"] == ["--workdir", str(project)]
    assert not (tmp_path / "home").exists()  # the user-wide file is not touched
    # The same command line as the user-wide entry's, which the tests above start.


def test_the_user_wide_entry_says_which_folder_it_serves(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In-process (what is printed is the point; the subprocess tests start the entries)."""
    from filegate.install import main

    for name, value in client_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(project)
    title = {
        "cursor": "Cursor",
        "vscode": "VS Code",
        "windsurf": "Windsurf",
        "claude-desktop": "Claude Desktop",
    }
    for client, hint in [("cursor", True), ("vscode", True), ("windsurf", False), ("claude-desktop", False)]:
        assert main([client]) == 0
        said = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("note: ")][1]
        assert said.startswith(f"this entry serves {project} whatever {title[client]} has open"), said
        assert (f"run `filegate install {client} --project` in each" in said) == hint, said
    for client in ("claude-code", "codex"):  # started in the agent's project: nothing pinned
        assert main([client]) == 0
        said = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("note: ")]
        assert len(said) == 2 and said[1].startswith("next: "), said  # the written line, the next step


def test_project_is_refused_where_the_client_has_no_project_file(tmp_path: Path, project: Path) -> None:
    env = client_env(tmp_path)
    done = install("windsurf", "--project", env=env, cwd=project)
    assert done.returncode == 2
    assert done.stderr == ("filegate install: error: Windsurf reads no per-project file; --project is for "
                           "cursor, vscode\n")  # fmt: skip
    assert not (tmp_path / "home").exists() and not (project / ".windsurf").exists()


def console_script_at(where: Path) -> Path:
    """This installation's `filegate` console script (editable or from a wheel: its shebang
    names the interpreter that has filegate) copied to ``where``/bin: the product as if its
    virtual environment were there, wherever the test runner's own venv sits."""
    script = where / "bin" / "filegate"
    script.parent.mkdir(parents=True)
    shutil.copy2(FILEGATE, script)
    return script


@pytest.mark.parametrize(
    ("venv", "clone"),
    [
        ("project-src/.venv", "project-src"),  # the README's clone route (and CI's checkout)
        ("tools/venvs/filegate", None),  # a venv elsewhere (pipx, uv tool): nothing to move
    ],
)
def test_an_entry_that_runs_a_clones_filegate_says_moving_the_clone_breaks_it(
    tmp_path: Path, project: Path, venv: str, clone: str | None
) -> None:
    """Issue 42: the entry names the running `filegate`; where its venv sits in a source checkout
    (a `.venv` beside a `pyproject.toml`), install says what moving it does, and only there.
    The layouts are made here (tests/test_install_inprocess.py has the rest of them in process)."""
    (tmp_path / "project-src").mkdir()
    (tmp_path / "project-src" / "pyproject.toml").write_text('[project]\nname = "filegate"\n')
    script = console_script_at(tmp_path / venv)
    config = tmp_path / "c.json"
    done = subprocess.run([str(script), "install", "claude-code", "--config", str(config)], capture_output=True,
                          text=True, env=client_env(tmp_path), cwd=project, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert entry_as_client_reads_it("claude-code", config)["command"] == str(script)
    notes = [line for line in done.stdout.splitlines() if "inside the clone" in line]
    if clone is None:
        assert notes == [], done.stdout
    else:
        assert notes == [
            f"note: this entry runs the filegate inside the clone {tmp_path / clone}: moving or deleting that "
            "folder breaks it; `pipx install filegate` or `uv tool install filegate` gives a path that stays"
        ]
