"""`filegate install` in-process: install.main with argv, a throw-away HOME and the exact bytes
each client's file gets, what is printed, and every refusal.

tests/test_install.py runs the installed `filegate install` in subprocesses and starts what it
wrote; mutation testing cannot see a subprocess (the child imports the unmutated package), so
these run the code where mutmut's mutants live (`--target install`, docs/TESTING.md).
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from filegate import install
from filegate.install import files, main
from filegate.install.uninstall import main as uninstall
from tests.conftest import FILEGATE

BUILTINS = ["Read", "Write", "Edit", "Grep", "Glob", "ReadMediaFile"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME under tmp_path, no client or filegate variables, the cwd a project, and argv[0]
    the installed `filegate` (as when the console script runs)."""
    for name in [n for n in os.environ if n.startswith("FILEGATE_")] + [
        "XDG_CONFIG_HOME", "CODEX_HOME", "APPDATA", "USERPROFILE", "KIMI_CODE_HOME",
    ]:  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    h = tmp_path / "home"
    monkeypatch.setenv("HOME", str(h))
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setattr(sys, "argv", [FILEGATE, "install"])
    monkeypatch.setattr(install, "detect_os", lambda: "linux")  # this machine's answer, pinned
    return h


@pytest.fixture
def project(home: Path) -> Path:
    return Path(os.path.realpath(home.parent / "project"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    """What install printed, less the note that this venv is a clone's (tests/test_install.py)."""
    assert main(list(argv)) == 0
    out = capsys.readouterr()
    assert out.err == ""
    return [line for line in out.out.splitlines() if not line.startswith(CLONE_NOTE_START)]


CLONE_NOTE_START = "note: this entry runs the filegate inside the clone "


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as done:
        main(list(argv))
    assert done.value.code == 2
    out = capsys.readouterr()
    assert out.out == ""
    return out.err


def only_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.is_symlink())


# --- each client's file and entry, exactly ------------------------------------------------

STDIO_FILES = {
    "claude-desktop": (".config/Claude/claude_desktop_config.json", "mcpServers", False, True),
    "claude-code": (".claude.json", "mcpServers", True, False),
    "cursor": (".cursor/mcp.json", "mcpServers", False, True),
    "kimi": (".kimi/mcp.json", "mcpServers", False, False),
    "kimi-code": (".kimi-code/mcp.json", "mcpServers", False, False),
    "vscode": (".config/Code/User/mcp.json", "servers", True, True),
    "windsurf": (".codeium/windsurf/mcp_config.json", "mcpServers", False, True),
    "gemini-cli": (".gemini/settings.json", "mcpServers", False, False),
}


@pytest.mark.parametrize("client", list(STDIO_FILES))
def test_each_json_client_gets_its_file_with_exactly_this_entry(
    home: Path, project: Path, capsys: pytest.CaptureFixture[str], client: str
) -> None:
    file, key, typed, pinned = STDIO_FILES[client]
    said = run(capsys, client)
    path = home / file
    assert only_files(home) == [file]
    args = ["--workdir", str(project)] if pinned else []
    args += {"kimi": ["--client", "kimi"], "kimi-code": ["--client", "kimi-code"]}.get(client, [])
    entry: dict[str, Any] = {"type": "stdio"} if typed else {}
    entry |= {"command": FILEGATE, "args": args}
    if client == "claude-code":
        entry["alwaysLoad"] = True  # SPEC §9: in its first request, not behind its tool search
    assert path.read_text() == json.dumps({key: {"filegate": entry}}, indent=2) + "\n"
    assert path.stat().st_mode & 0o777 == 0o600  # may hold tokens: private
    title = install.CLIENTS[client].title
    assert said[0] == f"{title}: wrote 'filegate' into {path}"
    serves: list[str] = []
    if pinned:
        hint = (f"; for per-project entries, run `filegate install {client} --project` in each"
                if client in ("cursor", "vscode") else "")  # fmt: skip
        serves = [f"this entry serves {project} whatever {title} has open{hint}"]
    assert said[1:] == [*serves, f"next: {NEXT_STEPS[client]}", *KIMI_NOTE.get(client, [])]
    again = run(capsys, client)
    assert again[0] == f"{title}: {path} already has this 'filegate' entry; nothing changed"
    assert again[1:] == [*serves, *KIMI_NOTE.get(client, [])]  # nothing changed: nothing to reload


# The one thing left to do, per client (issue 42): restart, a new session, or trusting the folder.
NEXT_STEPS = {
    "claude-desktop": "quit Claude Desktop (not just its window) and open it again",
    # SPEC §8.5: its deny rules bind filegate's tools too, and the next step says so.
    "claude-code": "start a new Claude Code session (claude mcp list shows filegate); its "
    "permissions.deny/ask rules (Read, Edit, Write) now bind filegate's tools too: "
    "`filegate rules` lists them",
    "cursor": "restart Cursor to load it",
    "kimi": "start a new Kimi CLI session",
    "kimi-code": "start a new Kimi Code session",
    "vscode": "reload VS Code (Developer: Reload Window) to load it",
    "windsurf": "restart Windsurf to load it",
    "gemini-cli": "trust each project folder, or Gemini CLI lists filegate as Disabled there: run /permissions in "
    "Gemini CLI in that folder (or add it to ~/.gemini/trustedFolders.json), then start a new session",
    "codex": "start a new Codex session",
    "generic": "restart the client to load it",
    "generic-http": "restart the client to load it",
}
KIMI_NOTE = {
    "kimi": [
        "using Kimi Code (Kimi CLI's successor)? It reads another file: run `filegate install kimi-code`"
    ]
}


def test_codex_gets_its_toml_table_exactly(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    said = run(capsys, "codex", "--read-only", "--name", "files")
    path = home / ".codex/config.toml"
    assert path.read_text() == f'[mcp_servers.files]\ncommand = "{FILEGATE}"\nargs = ["--read-only"]\n'
    assert said == [f"Codex: wrote 'files' into {path}", "next: start a new Codex session"]


HTTP_ENTRIES: dict[str, dict[str, Any]] = {
    "claude-code": {"type": "http", "url": "U", "headers": "H", "alwaysLoad": True},
    "cursor": {"url": "U", "headers": "H"},
    "kimi": {"transport": "http", "url": "U", "headers": "H"},
    "kimi-code": {"transport": "http", "url": "U", "headers": "H"},
    "vscode": {"type": "http", "url": "U", "headers": "H"},
    "windsurf": {"serverUrl": "U", "headers": "H"},
    "gemini-cli": {"httpUrl": "U", "headers": "H"},
    "generic-http": {"type": "http", "url": "U", "headers": "H"},
}


@pytest.mark.parametrize("client", list(HTTP_ENTRIES))
def test_each_http_entry_has_the_clients_own_field_names(
    home: Path, project: Path, capsys: pytest.CaptureFixture[str], client: str
) -> None:
    url, headers = "http://127.0.0.1:8123/tools", {"Authorization": "Bearer tok-1"}
    expected = {k: {"U": url, "H": headers}.get(v, v) for k, v in HTTP_ENTRIES[client].items()}
    said = run(capsys, client, "--transport", "http", "--port", "8123", "--path", "/tools", "--token", "tok-1",
               "--print")  # fmt: skip
    key = "servers" if client == "vscode" else "mcpServers"
    assert "\n".join(said) + "\n" == json.dumps({key: {"filegate": expected}}, indent=2) + "\n"
    assert list(json.loads("\n".join(said))[key]["filegate"]) == list(expected)  # the field order too
    assert not home.exists()
    # Without a token: no headers at all.
    said = run(capsys, client, "--transport", "http", "--port", "8123", "--path", "/tools", "--print")
    del expected["headers"]
    assert json.loads("\n".join(said))[key]["filegate"] == expected


def test_codex_http_entry_is_a_toml_table_with_inline_headers(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = run(capsys, "codex", "--transport", "http", "--token", 'tok "2"\x7f', "--print")
    assert said == [
        "[mcp_servers.filegate]",
        'url = "http://127.0.0.1:8000/mcp"',
        'http_headers = { Authorization = "Bearer tok \\"2\\"\\u007f" }',
    ]
    table = tomllib.loads("\n".join(said))["mcp_servers"]["filegate"]
    assert table["http_headers"] == {"Authorization": 'Bearer tok "2"\x7f'}


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("0.0.0.0", "http://127.0.0.1:9000/mcp"),
        ("::", "http://127.0.0.1:9000/mcp"),
        ("[::]", "http://127.0.0.1:9000/mcp"),
        ("::1", "http://[::1]:9000/mcp"),
        ("[::1]", "http://[::1]:9000/mcp"),
        ("192.0.2.10", "http://192.0.2.10:9000/mcp"),
    ],
)
def test_the_endpoint_url_is_one_a_local_client_can_reach(
    home: Path, capsys: pytest.CaptureFixture[str], host: str, url: str
) -> None:
    said = run(capsys, "cursor", "--transport", "http", "--host", host, "--port", "9000", "--token", "t",
               "--print")  # fmt: skip
    assert json.loads("\n".join(said))["mcpServers"]["filegate"]["url"] == url


# --- what is recorded, and what never is ---------------------------------------------------


def test_flags_are_recorded_in_the_parsers_order_and_the_token_never(
    home: Path, project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    said = run(capsys, "claude-code", "--read-only", "--no-confine", "--add-dir",
               str(extra), "--secret-pattern", "*.key", "--secret-pattern", "*.pem", "--approval", "strict",
               "--log-level", "info", "--client", "kimi", "--transport", "stdio", "--print")  # fmt: skip
    entry = json.loads("\n".join(said))["mcpServers"]["filegate"]
    assert entry == {"type": "stdio", "command": FILEGATE, "args": [
        "--add-dir", str(extra), "--no-confine", "--secret-pattern", "*.key", "--secret-pattern", "*.pem",
        "--log-level", "INFO", "--approval", "strict", "--read-only", "--client", "kimi",
    ], "alwaysLoad": True}  # fmt: skip
    # A token over stdio would be sent nowhere: refused, not dropped (SPEC §5).
    assert refused(capsys, "claude-code", "--token", "tok-SECRET", "--print") == (
        "filegate: error: --token is for --transport http; over stdio it would do nothing. Add --transport "
        "http, or leave --token out\n"
    )
    # An agent's --workdir is recorded when given; --confine as given.
    said = run(capsys, "kimi", "--workdir", str(project), "--confine", "--client", "claude-code", "--print")
    assert json.loads("\n".join(said))["mcpServers"]["filegate"]["args"] == [
        "--workdir", str(project), "--confine", "--client", "claude-code",
    ]  # fmt: skip


def test_the_command_is_the_running_filegate_or_this_python(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert install.server_command() == [FILEGATE]
    exe = tmp_path / "bin" / "FileGate.EXE"
    exe.parent.mkdir()
    exe.write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["bin/FileGate.EXE"])
    assert install.server_command() == [str(exe)]  # absolute
    for not_it in ("bin/missing/filegate", "bin", str(tmp_path / "pytest")):
        monkeypatch.setattr(sys, "argv", [not_it])
        assert install.server_command() == [os.path.abspath(sys.executable), "-m", "filegate"], not_it


@pytest.mark.parametrize(
    ("script", "clone"),
    [
        ("src/.venv/bin/filegate", "src"),  # a clone's .venv beside its pyproject.toml
        ("src/venv/bin/filegate", "src"),
        ("src/.venv/lib/deeper/bin/filegate", "src"),  # any depth inside the venv
        ("elsewhere/.venv/bin/filegate", None),  # a .venv with no pyproject.toml beside it
        ("src/env/bin/filegate", None),  # a venv of another name inside a clone
        ("tools/venvs/filegate/bin/filegate", None),  # pipx's and uv's tool venvs
    ],
)
def test_the_clone_note_names_a_clone_the_entrys_filegate_lives_in_and_nothing_else(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    script: str, clone: str | None,
) -> None:  # fmt: skip
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "pyproject.toml").write_text("[project]\n")
    exe = tmp_path / script
    exe.parent.mkdir(parents=True)
    exe.write_text("")
    monkeypatch.setattr(sys, "argv", [str(exe), "install"])
    assert main(["claude-code", "--config", str(tmp_path / "c.json")]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith(CLONE_NOTE_START)]
    if clone is None:
        assert notes == []
    else:
        assert notes == [
            f"{CLONE_NOTE_START}{tmp_path / clone}: moving or deleting that folder breaks it; "
            "`pipx install filegate` or `uv tool install filegate` gives a path that stays"
        ]


# --- where each client keeps its file ------------------------------------------------------


def test_each_os_location_from_its_own_variables(tmp_path: Path) -> None:
    h = tmp_path / "h"
    env = {"HOME": str(h), "USERPROFILE": str(tmp_path / "w")}
    w = tmp_path / "w"
    got = {os_name: {c: install.config_path(c, os_name, env) for c in install.CLIENTS}
           for os_name in ("macos", "windows", "linux")}  # type: ignore[arg-type]  # fmt: skip
    assert (
        got["macos"]["claude-desktop"] == h / "Library/Application Support/Claude/claude_desktop_config.json"
    )
    assert got["macos"]["vscode"] == h / "Library/Application Support/Code/User/mcp.json"
    assert got["windows"]["claude-desktop"] == w / "AppData/Roaming/Claude/claude_desktop_config.json"
    assert got["windows"]["cursor"] == w / ".cursor/mcp.json"
    assert got["linux"]["vscode"] == h / ".config/Code/User/mcp.json"
    assert got["linux"]["kimi-code"] == h / ".kimi-code/mcp.json"
    assert got["linux"]["codex"] == h / ".codex/config.toml"
    assert got["linux"]["generic"] is None and got["linux"]["generic-http"] is None
    env |= {"APPDATA": str(tmp_path / "ad"), "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
            "CODEX_HOME": str(tmp_path / "cx"), "KIMI_CODE_HOME": str(tmp_path / "kc")}  # fmt: skip
    assert (
        install.config_path("claude-desktop", "windows", env)
        == tmp_path / "ad/Claude/claude_desktop_config.json"
    )
    assert install.config_path("vscode", "linux", env) == tmp_path / "xdg/Code/User/mcp.json"
    assert install.config_path("codex", "macos", env) == tmp_path / "cx/config.toml"
    assert install.config_path("kimi-code", "windows", env) == tmp_path / "kc/mcp.json"
    assert install.config_path("cursor", "linux", {}) == Path.home() / ".cursor/mcp.json"


@pytest.mark.parametrize(
    ("platform", "os_name"),
    [
        ("darwin", "macos"),
        ("win32", "windows"),
        ("cygwin", "windows"),
        ("msys", "windows"),
        ("linux", "linux"),
    ],
)
def test_this_machines_os(monkeypatch: pytest.MonkeyPatch, platform: str, os_name: str) -> None:
    monkeypatch.setattr(sys, "platform", platform)
    assert install.detect_os() == os_name


def test_each_location_is_written_as_that_systems_user_would() -> None:
    assert (
        install.config_location("claude-desktop", "windows")
        == "%APPDATA%\\Claude\\claude_desktop_config.json"
    )
    assert install.config_location("claude-code", "windows") == "%USERPROFILE%\\.claude.json"
    assert install.config_location("vscode", "macos") == "~/Library/Application Support/Code/User/mcp.json"
    assert install.config_location("vscode", "linux") == "~/.config/Code/User/mcp.json"
    expected = {
        "cursor": "~/.cursor/mcp.json", "kimi": "~/.kimi/mcp.json", "kimi-code": "~/.kimi-code/mcp.json",
        "windsurf": "~/.codeium/windsurf/mcp_config.json", "gemini-cli": "~/.gemini/settings.json",
        "codex": "~/.codex/config.toml", "claude-code": "~/.claude.json",
    }  # fmt: skip
    for client, where in expected.items():
        assert install.config_location(client, "linux") == where
    assert install.config_location("generic", "linux") is None


def test_another_os_prints_where_and_what_and_writes_nothing(
    home: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = run(capsys, "cursor", "--os", "windows")
    assert said[0] == ("Cursor on windows reads %USERPROFILE%\\.cursor\\mcp.json; this is linux, so nothing "
                       "was written. Put this entry there, with the path of filegate on that machine as "
                       "the command:")  # fmt: skip
    assert json.loads("\n".join(said[1:])) == {
        "mcpServers": {"filegate": {"command": FILEGATE, "args": ["--workdir", str(project)]}}
    }
    assert not home.exists()
    # This machine's own OS, --config and --project write as usual.
    run(capsys, "cursor", "--os", "linux")
    assert only_files(home) == [".cursor/mcp.json"]
    run(capsys, "cursor", "--os", "windows", "--config", str(home / "given.json"))
    run(capsys, "cursor", "--os", "macos", "--project")
    assert only_files(home) == [".cursor/mcp.json", "given.json"]
    assert (project / ".cursor/mcp.json").exists()


def test_project_writes_the_projects_file_and_config_the_given_one(
    home: Path, project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = run(capsys, "vscode", "--project")
    assert said == [
        f"VS Code: wrote 'filegate' into {project / '.vscode/mcp.json'}",
        f"next: {NEXT_STEPS['vscode']}",
    ]
    said = run(capsys, "generic", "--config", "~/mine.json")
    assert said == [f"an MCP client (stdio): wrote 'filegate' into {home / 'mine.json'}",
                    f"this entry serves {project} whatever an MCP client (stdio) has open",
                    "next: restart the client to load it"]  # fmt: skip
    assert only_files(home) == ["mine.json"]


# --- merging into what is there ------------------------------------------------------------


@pytest.fixture
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """2026-01-02 03:04:05 for every backup name (the real strftime, at a fixed time)."""
    import time

    at = time.strptime("2026-01-02 03:04:05", "%Y-%m-%d %H:%M:%S")
    real = time.strftime
    monkeypatch.setattr(files.time, "strftime", lambda fmt: real(fmt, at))


@pytest.mark.usefixtures("fixed_clock")
def test_a_merge_keeps_other_servers_settings_and_mode_and_backs_up_owner_only(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / ".cursor/mcp.json"
    path.parent.mkdir(parents=True)
    old = '{"theme": "dark", "mcpServers": {"other": {"command": "o"}, "filegate": {"command": "stale"}}}'
    path.write_text(old)
    path.chmod(0o640)
    said = run(capsys, "cursor", "--workdir", str(home.parent / "project"))
    backup = path.with_name("mcp.json.20260102-030405.bak")
    assert said[0] == f"Cursor: wrote 'filegate' into {path} (the old file is kept as {backup})"
    doc = json.loads(path.read_text())
    assert list(doc) == ["theme", "mcpServers"] and list(doc["mcpServers"]) == ["other", "filegate"]
    assert (
        doc["mcpServers"]["other"] == {"command": "o"}
        and doc["mcpServers"]["filegate"]["command"] == FILEGATE
    )
    assert backup.read_text() == old
    # The file keeps its mode; its backup is a copy only its owner needs (it may hold a token).
    assert (path.stat().st_mode & 0o777, backup.stat().st_mode & 0o777) == (0o640, 0o600)
    # Two more changes in the same second: numbered backups, none overwritten.
    run(capsys, "cursor", "--read-only")
    run(capsys, "cursor", "--no-read-only")
    names = sorted(p.name for p in path.parent.iterdir())
    assert names == ["mcp.json", "mcp.json.20260102-030405-2.bak", "mcp.json.20260102-030405-3.bak",
                     "mcp.json.20260102-030405.bak"]  # fmt: skip
    assert '"--read-only"' in (path.parent / "mcp.json.20260102-030405-3.bak").read_text()


@pytest.mark.usefixtures("fixed_clock")
def test_a_private_config_keeps_its_mode_in_the_backup_whatever_the_umask(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / ".claude.json"
    home.mkdir()
    path.write_text('{"apiKey": "sk-private"}')
    path.chmod(0o600)
    old = os.umask(0o022)
    try:
        run(capsys, "claude-code")
    finally:
        os.umask(old)
    backup = home / ".claude.json.20260102-030405.bak"
    assert backup.stat().st_mode & 0o777 == 0o600 and path.stat().st_mode & 0o777 == 0o600
    assert json.loads(path.read_text())["apiKey"] == "sk-private"
    assert only_files(home) == [".claude.json", ".claude.json.20260102-030405.bak"]  # no temp left


def test_a_symlinked_config_is_written_where_it_points(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = tmp_path / "dotfiles/settings.json"
    real.parent.mkdir()
    real.write_text('{"theme": "Dracula"}')
    link = home / ".gemini/settings.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    said = run(capsys, "gemini-cli")
    assert link.is_symlink() and json.loads(real.read_text())["theme"] == "Dracula"
    assert said[0].startswith(f"Gemini CLI: wrote 'filegate' into {real} (the old file is kept as ")


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ('{\n  // a comment\n  "mcpServers": {}\n}\n',
         "{path} is not plain JSON (line 2: Expecting property name enclosed in double quotes); nothing was "
         "changed. Add the entry by hand: filegate install cursor --print"),
        ("[1, 2]", "{path}: 'mcpServers' is not an object; nothing was changed"),
        ('{"mcpServers": []}', "{path}: 'mcpServers' is not an object; nothing was changed"),
        ('{"mcpServers": "x"}', "{path}: 'mcpServers' is not an object; nothing was changed"),
    ],
)  # fmt: skip
def test_a_json_file_this_command_cannot_merge_is_left_alone(
    home: Path, capsys: pytest.CaptureFixture[str], content: str, error: str
) -> None:
    path = home / ".cursor/mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text(content)
    assert refused(capsys, "cursor") == f"filegate install: error: {error.format(path=path)}\n"
    assert path.read_text() == content and only_files(home) == [".cursor/mcp.json"]


def test_an_empty_file_is_merged_as_an_empty_document(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = home / ".kimi/mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text(" \n")
    run(capsys, "kimi")
    assert json.loads(path.read_text()) == {"mcpServers": {"filegate": {"command": FILEGATE,
                                                                        "args": ["--client", "kimi"]}}}  # fmt: skip


def test_codex_merge_replaces_our_tables_only_and_keeps_comments(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / ".codex/config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(
        '# my settings\nmodel = "o3"\n\n[mcp_servers."filegate"] # old\ncommand = "old"\n\n'
        '[ mcp_servers . filegate . env ]\nX = "1"\n\n[mcp_servers.filegate2]\ncommand = "two"\n\n'
        '[mcp_servers.other]\ncommand = "other"\n\n\n'
    )
    run(capsys, "codex", "--approval", "auto")
    assert path.read_text() == (
        '# my settings\nmodel = "o3"\n\n[mcp_servers.filegate2]\ncommand = "two"\n\n'
        '[mcp_servers.other]\ncommand = "other"\n\n'
        f'[mcp_servers.filegate]\ncommand = "{FILEGATE}"\nargs = ["--approval", "auto"]\n'
    )


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ("model = \n", "{path} is not valid TOML (Invalid value (at line 1, column 9)); nothing was changed"),
        ('mcp_servers = { filegate = { command = "x" } }\n',
         "{path} defines 'mcp_servers.filegate' in a form this command does not edit; nothing was changed. "
         "Add the entry by hand: filegate install codex --print"),
        ('[mcp_servers]\nfilegate.command = "x"\n',
         "{path} defines 'mcp_servers.filegate' in a form this command does not edit; nothing was changed. "
         "Add the entry by hand: filegate install codex --print"),
    ],
)  # fmt: skip
def test_a_toml_file_this_command_cannot_merge_is_left_alone(
    home: Path, capsys: pytest.CaptureFixture[str], content: str, error: str
) -> None:
    path = home / ".codex/config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(content)
    assert refused(capsys, "codex") == f"filegate install: error: {error.format(path=path)}\n"
    assert path.read_text() == content and only_files(home) == [".codex/config.toml"]


def test_toml_values_and_keys_are_written_so_toml_reads_them_back() -> None:
    client = install.CLIENTS["codex"]
    entry = {"command": 'é\x7f"\n', "args": ["a", ["b"]], "env": {"k": "v", "a.b": "w"}, "Name_1-x": "bare"}
    text = install.toml_table(client, "my server", entry)
    assert text == (
        '[mcp_servers."my server"]\n'
        'command = "é\\u007f\\"\\n"\n'
        'args = ["a", ["b"]]\n'
        'env = { k = "v", "a.b" = "w" }\n'
        'Name_1-x = "bare"\n'
    )
    assert tomllib.loads(text)["mcp_servers"]["my server"] == entry
    with pytest.raises(TypeError, match="^no TOML form for int$"):
        install.toml_table(client, "x", {"port": 1})
    text = install.toml_table(client, "my.files", {"command": "c", "args": []})
    assert text == '[mcp_servers."my.files"]\ncommand = "c"\nargs = []\n'
    assert tomllib.loads(text)["mcp_servers"]["my.files"] == {"command": "c", "args": []}


# --- Kimi Code's builtins ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("", "[tools]\ndisabled = {all}\n"),
        ('model = "k2"\n\n', 'model = "k2"\n\n[tools]\ndisabled = {all}\n'),
        ('[tools] # mine\nx = 1\n[other]\ny = 2\n', '[tools] # mine\ndisabled = {all}\nx = 1\n[other]\ny = 2\n'),
        ('[tools]\nx = 1\n  disabled = ["Bash", "Read"]\n[other]\n',
         '[tools]\nx = 1\ndisabled = ["Bash", "Read", "Write", "Edit", "Grep", "Glob", "ReadMediaFile"]\n'
         '[other]\n'),
    ],
)  # fmt: skip
def test_disable_builtins_merges_tools_disabled(
    home: Path, capsys: pytest.CaptureFixture[str], before: str, after: str
) -> None:
    config = home / ".kimi-code/config.toml"
    config.parent.mkdir(parents=True)
    if before:
        config.write_text(before)
    said = run(capsys, "kimi-code", "--disable-builtins")
    assert config.read_text() == after.format(all=json.dumps(BUILTINS))
    kept = f" (the old file is kept as {next(config.parent.glob('config.toml.*.bak'))})" if before else ""
    assert said[1] == f"Kimi Code: wrote [tools] disabled = {', '.join(BUILTINS)} in {config}{kept}"
    again = run(capsys, "kimi-code", "--disable-builtins")
    assert again[1] == f"Kimi Code: already had [tools] disabled = {', '.join(BUILTINS)} in {config}"
    assert config.read_text() == after.format(all=json.dumps(BUILTINS))


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ("tools = 1\n", "{path}: 'tools' is not a table with a 'disabled' list; nothing was changed"),
        ('[tools]\ndisabled = "Read"\n',
         "{path}: 'tools' is not a table with a 'disabled' list; nothing was changed"),
        ("[tools\n", "{path} is not valid TOML (Expected ']' at the end of a table declaration (at line 1, "
                     "column 7)); nothing was changed"),
        ('tools.disabled = ["Bash"]\n',
         "{path} sets [tools] disabled in a form this command does not edit; nothing was changed. Add Read, "
         "Write, Edit, Grep, Glob, ReadMediaFile to it by hand"),
    ],
)  # fmt: skip
def test_a_kimi_code_config_this_command_cannot_merge_is_left_alone(
    home: Path, capsys: pytest.CaptureFixture[str], content: str, error: str
) -> None:
    config = home / ".kimi-code/config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(content)
    with pytest.raises(SystemExit) as done:
        main(["kimi-code", "--disable-builtins"])
    assert done.value.code == 2
    assert capsys.readouterr().err == f"filegate install: error: {error.format(path=config)}\n"
    assert config.read_text() == content
    assert not list(config.parent.glob("config.toml.*.bak"))


# --- HTTP: the start line ------------------------------------------------------------------


def test_http_prints_the_start_command_with_the_token_and_the_workdir(
    home: Path, project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    said = run(capsys, "kimi", "--transport", "http", "--token", "tok 'x'", "--port", "9001")
    path = home / ".kimi/mcp.json"
    assert said == [
        f"Kimi CLI: wrote 'filegate' into {path}",
        f"start the server with: FILEGATE_TOKEN='tok '\"'\"'x'\"'\"'' {FILEGATE} --transport http --workdir "
        f"{project} --port 9001 --client kimi",
        "next: start a new Kimi CLI session",
        *KIMI_NOTE["kimi"],
    ]
    monkeypatch.setenv("FILEGATE_TOKEN", "from-env")  # the environment's token is used the same way
    said = run(capsys, "cursor", "--transport", "http", "--read-only")
    assert (
        said[1]
        == f"start the server with: FILEGATE_TOKEN=from-env {FILEGATE} --transport http --workdir {project} --read-only"
    )
    assert json.loads((home / ".cursor/mcp.json").read_text())["mcpServers"]["filegate"]["headers"] == {
        "Authorization": "Bearer from-env"
    }


def test_http_without_a_token_says_any_local_process_can_connect(
    home: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = run(capsys, "generic-http", "--config", str(home / "m.json"))
    assert said[1:] == [
        f"start the server with: {FILEGATE} --transport http --workdir {project}",
        "no token: any local process can connect; to require one, give the same --token (or FILEGATE_TOKEN) "
        "to this command and to the server",
        "next: restart the client to load it",
    ]
    assert json.loads((home / "m.json").read_text())["mcpServers"]["filegate"] == {
        "type": "http", "url": "http://127.0.0.1:8000/mcp"
    }  # fmt: skip


# --- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["claude-desktop", "--transport", "http"], "Claude Desktop starts local servers only; use stdio"),
        (["generic", "--transport", "http"], "an MCP client (stdio) starts local servers only; use stdio"),
        (["generic-http", "--transport", "stdio"], "generic-http is for --transport http"),
        (["codex", "--disable-builtins"], "--disable-builtins is for kimi-code only"),
        (["windsurf", "--project"], "Windsurf reads no per-project file; --project is for cursor, vscode"),
        (["cursor", "--project", "--config", "x.json"], "give --project or --config, not both"),
        (["generic"], "generic has no file of its own: give --config FILE or --print"),
        (["generic-http"], "generic-http has no file of its own: give --config FILE or --print"),
    ],
)
def test_each_refusal_is_one_line_and_writes_nothing(
    home: Path, project: Path, capsys: pytest.CaptureFixture[str], argv: list[str], error: str
) -> None:
    assert refused(capsys, *argv) == f"filegate install: error: {error}\n"
    assert not home.exists() and only_files(project) == []


def test_a_file_that_cannot_be_written_is_one_line(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home.mkdir()
    (home / ".cursor").write_text("a file where the directory should be")
    err = refused(capsys, "cursor")
    assert (
        err
        == f"filegate install: error: {home / '.cursor'} is a file where a folder should be; nothing was changed\n"
    )
    (home / ".kimi-code").mkdir()
    (home / ".kimi-code" / "config.toml").mkdir()  # a directory where the file should be
    with pytest.raises(SystemExit) as done:
        main(["kimi-code", "--disable-builtins"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert (
        err
        == f"filegate install: error: {home / '.kimi-code/config.toml'} is not a regular file; nothing was changed\n"
    )


# --- issue 26, second round: what the first mutation run left --------------------------------


def test_help_names_the_clients_and_says_what_each_install_flag_does(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # one line per entry: the texts are compared whole
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    usage = " ".join(out.split("\n\n", 1)[0].split())
    assert usage.startswith(
        "usage: filegate install [-h] [--name NAME] [--print] [--os {macos,windows,linux}] "
        "[--config FILE] [--disable-builtins] [--route-builtins] [--project]"
    ), usage
    assert usage.endswith(" CLIENT"), usage
    assert "\nWrite filegate into an MCP client's configuration (merged, with a backup).\n" in out
    # The examples keep their own layout (one command a line, aligned comments).
    assert (
        "\nexamples:\n  filegate install claude-desktop --workdir ~/src/project\n  filegate install claude-code "
        in out
    )
    lines = [" ".join(line.split()) for line in out.splitlines()]
    said = " ".join(lines)
    for text in [
        "CLIENT " + ", ".join(install.CLIENTS),
        "--name NAME the server's name in the client (default: filegate)",
        "--print print the snippet, write nothing",
        "--os {macos,windows,linux} whose file locations to use (default: this machine's)",
        "--config FILE write this file instead of the client's own",
        "--disable-builtins kimi-code: switch Kimi Code's file tools off ([tools] disabled)",
        "--route-builtins claude-code, gemini-cli: switch the client's own file tools off so its model uses "
        "filegate's (filegate uninstall switches them back on)",
        "--project cursor, vscode: write the project's own file (.cursor/mcp.json, .vscode/mcp.json in "
        "--workdir) instead of the user-wide one",
        "examples: filegate install claude-desktop --workdir ~/src/project",
    ]:
        assert text in said, text


def test_unknown_clients_systems_and_values_are_refused_in_one_line(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = refused(capsys, "notepad")
    assert err.startswith("filegate install: error: argument CLIENT: invalid choice: 'notepad'"), err
    err = refused(capsys, "cursor", "--os", "beos")
    assert err.startswith("filegate install: error: argument --os: invalid choice: 'beos'"), err
    err = refused(capsys, "cursor", "--port", "99999")
    assert err.startswith("filegate: error: ") and "--port" in err and err.count("\n") == 1, err
    assert not home.exists()


def test_non_ascii_names_are_written_as_they_are(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    served = tmp_path / "projé"
    served.mkdir()
    said = run(capsys, "cursor", "--workdir", str(served), "--print")
    assert f'"--workdir",\n        "{served}"' in "\n".join(said)
    run(capsys, "cursor", "--workdir", str(served))
    assert f'"{served}"' in (home / ".cursor/mcp.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("ending", ["# the end X\n", "# the end \t \n"])
def test_toml_merges_keep_the_files_last_line_as_it_was(
    home: Path, capsys: pytest.CaptureFixture[str], ending: str
) -> None:
    codex = home / ".codex/config.toml"
    codex.parent.mkdir(parents=True)
    codex.write_text('model = "o3"\n' + ending + "\n\n")
    run(capsys, "codex")
    assert (
        codex.read_text()
        == f'model = "o3"\n{ending}\n[mcp_servers.filegate]\ncommand = "{FILEGATE}"\nargs = []\n'
    )
    kimi = home / ".kimi-code/config.toml"
    kimi.parent.mkdir(parents=True)
    kimi.write_text('model = "k2"\n' + ending + "\n")
    run(capsys, "kimi-code", "--disable-builtins")
    assert kimi.read_text() == f'model = "k2"\n{ending}\n[tools]\ndisabled = {json.dumps(BUILTINS)}\n'


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("[tools]\n", "[tools]\ndisabled = {all}\n"),
        ("[tools]\nx = 1\n", "[tools]\ndisabled = {all}\nx = 1\n"),
        ('[tools]\n[other]\ndisabled = ["x"]\n', '[tools]\ndisabled = {all}\n[other]\ndisabled = ["x"]\n'),
        ('disabled = 1\n[tools]\nx = 1\n', 'disabled = 1\n[tools]\ndisabled = {all}\nx = 1\n'),
        ('[tools]\ndisabled = ["Bash"]\n', '[tools]\ndisabled = ["Bash", {some}]\n'),
        ('[tools]\nx = 1\n  [other]\ndisabled = ["x"]\n',
         '[tools]\ndisabled = {all}\nx = 1\n  [other]\ndisabled = ["x"]\n'),
    ],
)  # fmt: skip
def test_tools_disabled_is_set_inside_the_tools_table_only(
    home: Path, capsys: pytest.CaptureFixture[str], before: str, after: str
) -> None:
    config = home / ".kimi-code/config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(before)
    run(capsys, "kimi-code", "--disable-builtins")
    some = ", ".join(json.dumps(b) for b in BUILTINS)
    assert config.read_text() == after.format(all=json.dumps(BUILTINS), some=some)


def test_a_stale_temp_file_of_a_killed_install_does_not_leak_into_the_config(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The temp of an earlier version's killed install (its fixed name) is neither read nor
    reused: each write makes its own temp, which leaves nothing behind."""
    path = home / ".cursor/mcp.json"
    path.parent.mkdir(parents=True)
    (path.parent / ".mcp.json.filegate-install.tmp").write_text("x" * 10_000)
    run(capsys, "cursor")
    assert json.loads(path.read_text())["mcpServers"]["filegate"]["command"] == FILEGATE
    assert only_files(home) == [".cursor/.mcp.json.filegate-install.tmp", ".cursor/mcp.json"]
    assert (path.parent / ".mcp.json.filegate-install.tmp").read_text() == "x" * 10_000


def test_every_recorded_directory_is_absolute_and_in_order(
    home: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("a", "b"):
        (project / name).mkdir()
    for client, preset in (("kimi-code", ["--client", "kimi-code"]), ("gemini-cli", [])):
        said = run(capsys, client, "--workdir", str(project), "--add-dir", str(project / "a"), "--add-dir",
                   str(project / "b"), "--print")  # fmt: skip
        args = json.loads("\n".join(said))["mcpServers"]["filegate"]["args"]
        assert args == ["--workdir", str(project), "--add-dir", str(project / "a"), "--add-dir",
                        str(project / "b"), *preset]  # fmt: skip


# --- SPEC §9: Claude Code's entry always loaded; --route-builtins and its undoing -----------

CLAUDE_OFF = ["Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "Glob", "Grep"]
READERS = [
    "mcp__filegate__ReadFile",
    "mcp__filegate__ReadMediaFile",
    "mcp__filegate__Glob",
    "mcp__filegate__Grep",
]
GEMINI_OFF = ["read_file", "read_many_files", "write_file", "replace", "glob", "grep_search"]


def claude_entry(home: Path) -> dict[str, object]:
    return json.loads((home / ".claude.json").read_text())["mcpServers"]["filegate"]  # type: ignore[no-any-return]


def test_claude_codes_entry_is_always_loaded_and_stays_so(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "claude-code")
    assert claude_entry(home)["alwaysLoad"] is True
    again = run(capsys, "claude-code")
    assert "nothing changed" in again[0] and claude_entry(home)["alwaysLoad"] is True
    run(capsys, "claude-code", "--transport", "http", "--port", "8123")
    assert claude_entry(home)["alwaysLoad"] is True and claude_entry(home)["type"] == "http"


def test_defer_tools_writes_no_always_load(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "claude-code", "--defer-tools")
    assert "alwaysLoad" not in claude_entry(home) and "--defer-tools" in claude_entry(home)["args"]  # type: ignore[operator]


def test_other_clients_get_no_always_load(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "gemini-cli")
    assert (
        "alwaysLoad" not in json.loads((home / ".gemini/settings.json").read_text())["mcpServers"]["filegate"]
    )


def test_route_builtins_denies_claude_codes_file_tools_and_uninstall_undoes_it(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    mine = {"permissions": {"deny": ["Bash(rm *)"], "allow": ["Bash(ls)"]}, "theme": "dark"}
    settings.write_text(json.dumps(mine))
    said = run(capsys, "claude-code", "--route-builtins")
    doc = json.loads(settings.read_text())
    assert doc["permissions"]["deny"] == ["Bash(rm *)", *CLAUDE_OFF]
    assert doc["permissions"]["allow"] == ["Bash(ls)", *READERS] and doc["theme"] == "dark"
    told = "\n".join(said)
    assert "permissions.deny Read, Edit, Write, MultiEdit, NotebookEdit, Glob, Grep" in told
    assert "`filegate uninstall claude-code` switches them back on" in told and "Bash" in told
    assert run(capsys, "claude-code", "--route-builtins")  # again: nothing added twice
    assert json.loads(settings.read_text()) == doc
    assert uninstall(["claude-code"]) == 0
    out = capsys.readouterr().out
    assert "its own Read, Edit, Write, MultiEdit, NotebookEdit, Glob, Grep are back on" in out
    assert json.loads(settings.read_text()) == mine
    assert "filegate" not in json.loads((home / ".claude.json").read_text())["mcpServers"]


def test_route_builtins_excludes_geminis_file_tools_and_uninstall_undoes_it(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = run(capsys, "gemini-cli", "--route-builtins")
    path = home / ".gemini" / "settings.json"
    doc = json.loads(path.read_text())
    assert doc["tools"]["exclude"] == GEMINI_OFF and "filegate" in doc["mcpServers"]
    assert any("run_shell_command" in line for line in said)
    assert uninstall(["gemini-cli"]) == 0
    doc = json.loads(path.read_text())
    assert doc["tools"]["exclude"] == [] and "filegate" not in doc["mcpServers"]


@pytest.mark.parametrize("client", ["codex", "cursor", "kimi-code"])
def test_route_builtins_is_refused_where_it_cannot_route(
    home: Path, capsys: pytest.CaptureFixture[str], client: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([client, "--route-builtins"])
    assert exited.value.code == 2
    assert "--route-builtins is for claude-code and gemini-cli" in capsys.readouterr().err


def test_nothing_is_routed_unless_asked(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "claude-code")
    assert not (home / ".claude" / "settings.json").exists()
