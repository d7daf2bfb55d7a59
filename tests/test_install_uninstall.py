"""`filegate uninstall CLIENT` and what install tells a newcomer (issue 42): the entry taken out
with a backup and every other server kept, through the same safe-write door as install; a
suggestion for a mistyped client; `install` and `uninstall` in the usage line. In-process,
with tests/test_install_inprocess.py's HOME and project."""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path

import pytest

from filegate import install
from filegate.cli import main as filegate_main
from filegate.install import uninstall
from tests import test_install_inprocess as inprocess
from tests.conftest import FILEGATE

home, project, run = inprocess.home, inprocess.project, inprocess.run


def uninstalled(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    assert uninstall.main(list(argv)) == 0
    out = capsys.readouterr()
    assert out.err == ""
    return out.out.splitlines()


def refused_by(capsys: pytest.CaptureFixture[str], command: object, *argv: str) -> str:
    with pytest.raises(SystemExit) as done:
        command(list(argv))  # type: ignore[operator]
    assert done.value.code == 2
    out = capsys.readouterr()
    assert out.out == ""
    return out.err


@pytest.mark.parametrize("client", [c for c in install.CLIENTS if install.config_path(c, "linux", {})])
def test_uninstall_takes_out_only_filegates_entry_and_keeps_a_backup(
    home: Path, capsys: pytest.CaptureFixture[str], client: str
) -> None:
    path = install.config_path(client, "linux", {"HOME": str(home)})
    assert path is not None
    path.parent.mkdir(parents=True)
    toml = install.CLIENTS[client].format == "toml"
    key = install.CLIENTS[client].key
    other = (
        "# mine\n[other]\nx = 1\n"
        if toml
        else json.dumps({"theme": "dark", key: {"other": {"command": "o"}}})
    )
    path.write_text(other)
    path.chmod(0o640)
    run(capsys, client)
    assert "filegate" in (tomllib.loads(path.read_text()) if toml else json.loads(path.read_text()))[key]
    installed = path.read_text()
    before = set(path.parent.glob(f"{path.name}.*.bak"))
    said = uninstalled(capsys, client)
    (backup,) = set(path.parent.glob(f"{path.name}.*.bak")) - before
    title = install.CLIENTS[client].title
    assert said == [f"{title}: removed 'filegate' from {path} (the old file is kept as {backup})",
                    f"next: {inprocess.NEXT_STEPS[client]}"]  # fmt: skip
    assert backup.read_text() == installed and stat.S_IMODE(backup.stat().st_mode) == 0o600
    if toml:
        assert path.read_text().startswith("# mine\n[other]\nx = 1\n")
        assert tomllib.loads(path.read_text()) == {"other": {"x": 1}}
    else:
        assert json.loads(path.read_text()) == {"theme": "dark", key: {"other": {"command": "o"}}}
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    again = uninstalled(capsys, client)
    assert again == [f"{title}: {path} has no 'filegate' entry; nothing changed"]
    assert set(path.parent.glob(f"{path.name}.*.bak")) == {*before, backup}


def test_uninstall_of_a_project_entry_and_of_a_missing_file(
    home: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "cursor", "--project")
    said = uninstalled(capsys, "cursor", "--project", "--workdir", str(project))
    assert said[0].startswith(f"Cursor: removed 'filegate' from {project / '.cursor/mcp.json'} (the old file")
    assert json.loads((project / ".cursor/mcp.json").read_text()) == {"mcpServers": {}}
    said = uninstalled(capsys, "vscode", "--project")
    assert said == [f"VS Code: {project / '.vscode/mcp.json'} has no 'filegate' entry; nothing changed"]
    assert not (project / ".vscode").exists()


def test_uninstall_does_not_follow_a_link_in_a_project(
    home: Path, project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "outside.json"
    victim.write_text('{"mcpServers": {"filegate": {"command": "mine"}}}')
    (project / ".cursor").mkdir()
    (project / ".cursor/mcp.json").symlink_to(victim)
    err = refused_by(capsys, uninstall.main, "cursor", "--project")
    assert err.startswith(
        f"filegate uninstall: error: {project / '.cursor/mcp.json'} is a symbolic link inside"
    )
    assert victim.read_text() == '{"mcpServers": {"filegate": {"command": "mine"}}}'


def test_uninstall_of_kimi_code_says_its_builtins_are_still_off(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "kimi-code", "--disable-builtins")
    said = uninstalled(capsys, "kimi-code")
    config = home / ".kimi-code/config.toml"
    assert said[1] == (
        f"Kimi Code: its own Read, Write, Edit, Grep, Glob, ReadMediaFile are still off ([tools] disabled in "
        f"{config}): take them out of that list to have them back"
    )
    run(capsys, "kimi-code")
    config.write_text('[tools]\ndisabled = ["Bash"]\n')
    assert len(uninstalled(capsys, "kimi-code")) == 2  # the removal and the next step only


# --- what install tells a newcomer ---------------------------------------------------------


def test_install_kimi_points_kimi_code_users_at_their_own_client(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = run(capsys, "kimi")
    assert said[-1] == (
        "using Kimi Code (Kimi CLI's successor)? It reads another file: run `filegate install kimi-code`"
    )
    assert not any("successor" in line for line in run(capsys, "kimi-code"))


def test_install_gemini_cli_says_how_to_trust_the_folder(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = run(capsys, "gemini-cli")
    assert said[-1].startswith(
        "next: trust each project folder, or Gemini CLI lists filegate as Disabled there"
    )
    assert "/permissions" in said[-1] and "~/.gemini/trustedFolders.json" in said[-1]


@pytest.mark.parametrize(
    ("typed", "hint"),
    [
        ("gemini", "did you mean 'gemini-cli'? "),
        ("claude", "did you mean 'claude-desktop' or 'claude-code'? "),
        ("kimicode", "did you mean 'kimi-code'? "),
        ("vs-code", "did you mean 'vscode'? "),
        ("notepad", ""),
    ],
)
def test_a_mistyped_client_gets_a_suggestion(
    home: Path, capsys: pytest.CaptureFixture[str], typed: str, hint: str
) -> None:
    clients = ", ".join(install.CLIENTS)
    for command, prog in ((install.main, "filegate install"), (uninstall.main, "filegate uninstall")):
        err = refused_by(capsys, command, typed)
        assert err == (
            f"{prog}: error: argument CLIENT: invalid choice: '{typed}' ({hint}choose from {clients}) "
            f"(see {prog} --help)\n"
        )
    assert not home.exists()


def test_the_usage_line_names_install_and_uninstall(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SystemExit):
        filegate_main(["--help"])
    usage = capsys.readouterr().out.split("\n\n", 1)[0]
    assert usage.startswith("usage: filegate [-h] [-V] [--workdir DIR]")
    commands = [line.split()[1] for line in usage.splitlines() if line.startswith("       filegate ")]
    assert commands[:2] == ["install", "uninstall"]  # tests/test_cli_commands.py: every one


def test_filegate_uninstall_is_reached_from_the_command(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.argv", [FILEGATE])
    assert filegate_main(["install", "cursor"]) == 0
    assert filegate_main(["uninstall", "cursor"]) == 0
    assert json.loads((home / ".cursor/mcp.json").read_text()) == {"mcpServers": {}}
    assert os.path.exists(home / ".cursor")
