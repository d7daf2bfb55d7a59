"""`filegate install` in a checkout nobody vetted (issue 41, SPEC §5): every file it touches —
the client's file, its temp, its backup, Kimi Code's config.toml beside it — is found without
following a link it did not expect, created exclusively, and owner-only when it holds a token.

In-process, like tests/test_install_inprocess.py (whose fixtures these share): a throw-away
HOME, a project as the cwd, and a "victim" file outside both that a planted link points at.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from filegate import install
from filegate.fsio import atomic
from filegate.install import files
from tests import test_install_inprocess as inprocess

# The same HOME/project fixtures and runners as tests/test_install_inprocess.py.
home, project, run, refused = inprocess.home, inprocess.project, inprocess.run, inprocess.refused

# Every client, and how --config is given to it (the HTTP-only one needs no --transport).
CLIENTS = list(install.CLIENTS)
PROJECT_CLIENTS = [c.name for c in install.CLIENTS.values() if c.project_file]
# SPEC §5 names these four: the file, its temp, its backup, a sibling the command edits.


def victim_for(client: str, tmp_path: Path) -> tuple[Path, str]:
    """A file of the user's outside HOME and project, in a form the client's merge would
    accept (so a followed link would really be written)."""
    toml = install.CLIENTS[client].format == "toml"
    victim = tmp_path / "outside" / ("settings.toml" if toml else "settings.json")
    victim.parent.mkdir(exist_ok=True)
    text = "mine = 1\n" if toml else '{"mine": 1}\n'
    victim.write_text(text)
    return victim, text


def target_for(client: str, how: str, folder: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    """The file ``install client`` writes for ``how`` ("project": in ``folder``; "config"), and the argv."""
    if how == "project":
        return folder / str(install.CLIENTS[client].project_file), [client, "--project"]
    given = tmp_path / "checkout" / "sub" / "mcp.json"
    given.parent.mkdir(parents=True, exist_ok=True)
    return given, [client, "--config", str(given)]


CASES = [(c, "project") for c in PROJECT_CLIENTS] + [(c, "config") for c in CLIENTS]


@pytest.mark.parametrize(("client", "how"), CASES)
@pytest.mark.parametrize("named_temps", [False, True], ids=["tmpfile", "named-temps"])
def test_a_link_planted_at_a_temp_name_is_never_written_through(
    home: Path,
    project: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    client: str,
    how: str,
    named_temps: bool,
) -> None:
    """The old fixed temp name, and the very name the next temp will get, are links to the
    user's file: the install leaves that file alone (the temp is made exclusively, or is no
    name at all) and the config is a regular file holding the entry."""
    victim, text = victim_for(client, tmp_path)
    target, argv = target_for(client, how, project, tmp_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    (target.parent / f".{target.name}.filegate-install.tmp").symlink_to(victim)
    if named_temps:  # as on macOS and Windows: no O_TMPFILE, a named temp
        monkeypatch.setenv("FILEGATE_SIMULATE", "no-tmpfile")
        monkeypatch.setattr(atomic.secrets, "token_hex", lambda n: "0" * (2 * n))
        predicted = target.parent / f".{target.name}.{'0' * 16}.filegate.tmp"
        predicted.symlink_to(victim)
        err = refused(capsys, *argv)
        assert (
            err == f"filegate install: error: Failed to write {target}: File exists. Nothing was written.\n"
        )
        assert not os.path.lexists(target)
    else:
        run(capsys, *argv)
        assert stat.S_ISREG(os.lstat(target).st_mode) and "filegate" in target.read_text()
    assert victim.read_text() == text


@pytest.mark.parametrize(("client", "how"), CASES)
def test_a_config_that_is_a_link_in_a_project_or_given_folder_is_refused(
    home: Path,
    project: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    client: str,
    how: str,
) -> None:
    victim, text = victim_for(client, tmp_path)
    target, argv = target_for(client, how, project, tmp_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(victim)
    err = refused(capsys, *argv)
    if how == "project":
        assert err == (
            f"filegate install: error: {target} is a symbolic link inside the project; filegate install does "
            "not follow links in a checkout (one could point at any file of yours). Nothing was changed; "
            "remove the link or use --config FILE\n"
        )
    else:
        assert err == (
            f"filegate install: error: {target} is a symbolic link; filegate install does not write through a "
            "link it did not make. Give the file it points to as --config if that is the one you mean\n"
        )
    assert victim.read_text() == text and sorted(os.listdir(victim.parent)) == [victim.name]
    assert sorted(os.listdir(target.parent)) == [target.name]


@pytest.mark.parametrize("client", PROJECT_CLIENTS)
def test_a_project_folder_that_is_a_link_is_not_followed(
    home: Path,
    project: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    client: str,
) -> None:
    """`.vscode` shipped as a link to a folder of the user's: nothing is written there."""
    victim, text = victim_for(client, tmp_path)
    folder = project / str(install.CLIENTS[client].project_file)
    os.rename(victim, victim.with_name(folder.name))
    folder.parent.symlink_to(victim.parent)
    err = refused(capsys, client, "--project")
    assert err.startswith(f"filegate install: error: {folder.parent} is a symbolic link inside the project;")
    assert sorted(os.listdir(victim.parent)) == [folder.name]
    assert victim.with_name(folder.name).read_text() == text


@pytest.mark.parametrize(("client", "how"), CASES)
def test_a_link_planted_at_the_backups_name_is_passed_over(
    home: Path,
    project: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    client: str,
    how: str,
) -> None:
    """A dangling link at the name the backup will get (a file of the user's that does not
    exist yet): the backup takes the next name, owner-only, and no file appears at the link's
    target."""
    at = time.strptime("2026-01-02 03:04:05", "%Y-%m-%d %H:%M:%S")
    real_strftime = time.strftime
    monkeypatch.setattr(time, "strftime", lambda fmt: real_strftime(fmt, at))
    target, argv = target_for(client, how, project, tmp_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    old = "" if install.CLIENTS[client].format == "toml" else "{}\n"
    target.write_text(old)
    not_yet = tmp_path / "outside" / "authorized_keys"
    not_yet.parent.mkdir()
    (target.parent / f"{target.name}.20260102-030405.bak").symlink_to(not_yet)
    said = run(capsys, *argv)
    backup = target.parent / f"{target.name}.20260102-030405-2.bak"
    assert f"(the old file is kept as {backup})" in said[0]
    assert backup.read_text() == old and stat.S_IMODE(os.lstat(backup).st_mode) == 0o600
    assert not os.path.lexists(not_yet)


def test_kimi_codes_config_toml_that_is_a_link_beside_a_given_file_is_refused(
    home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    victim = tmp_path / "outside" / "config.toml"
    victim.parent.mkdir()
    victim.write_text("mine = 1\n")
    given = tmp_path / "checkout" / "mcp.json"
    given.parent.mkdir()
    (given.parent / "config.toml").symlink_to(victim)
    err = refused(capsys, "kimi-code", "--config", str(given), "--disable-builtins")
    assert err.startswith(f"filegate install: error: {given.parent / 'config.toml'} is a symbolic link;")
    assert victim.read_text() == "mine = 1\n"
    # Checked before anything is written: mcp.json is not written either.
    assert sorted(os.listdir(given.parent)) == ["config.toml"]


def test_kimi_codes_config_toml_goes_beside_a_linked_mcp_json_where_kimi_code_reads_it(
    home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """~/.kimi-code/mcp.json kept in a dotfiles repository: the entry is written through the
    user's own link, and [tools] disabled into ~/.kimi-code/config.toml (which Kimi Code
    reads), not into the dotfiles folder (issue 41 item 7)."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "mcp.json").write_text("{}\n")
    link = home / ".kimi-code" / "mcp.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(dotfiles / "mcp.json")
    said = run(capsys, "kimi-code", "--disable-builtins")
    assert "filegate" in json.loads((dotfiles / "mcp.json").read_text())["mcpServers"]
    config = home / ".kimi-code" / "config.toml"
    assert said[1].startswith(
        f"Kimi Code: wrote [tools] disabled = Read, Write, Edit, Grep, Glob, ReadMediaFile in {config}"
    )
    assert "ReadMediaFile" in config.read_text()
    assert sorted(os.listdir(dotfiles)) == [
        "mcp.json",
        *sorted(p.name for p in dotfiles.glob("mcp.json.*.bak")),
    ]
    assert not (dotfiles / "config.toml").exists()


# --- owner-only where a token is written (issue 41 item 6) ----------------------------------


@pytest.mark.parametrize("client", [c.name for c in install.CLIENTS.values() if c.http])
def test_a_token_makes_the_file_and_its_backup_owner_only(
    home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    client: str,
) -> None:
    given = tmp_path / "shared" / "client.conf"
    given.parent.mkdir()
    old = "" if install.CLIENTS[client].format == "toml" else "{}\n"
    given.write_text(old)
    given.chmod(0o644)
    said = run(capsys, client, "--transport", "http", "--token", "s3cret-token", "--config", str(given))
    assert "s3cret-token" in given.read_text()
    backups = list(given.parent.glob("client.conf.*.bak"))
    assert len(backups) == 1 and backups[0].read_text() == old and backups[0].name in said[0]
    assert stat.S_IMODE(given.stat().st_mode) == 0o600
    assert stat.S_IMODE(backups[0].stat().st_mode) == 0o600


def test_a_token_left_readable_by_an_earlier_install_is_made_owner_only_on_the_next(
    home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The entry is already there (an earlier version kept the file's 0644): nothing to merge,
    yet the file holds a token, so it is made owner-only and install says so."""
    given = tmp_path / "client.json"
    argv = ["cursor", "--transport", "http", "--token", "s3cret-token", "--config", str(given)]
    run(capsys, *argv)
    given.chmod(0o644)
    said = run(capsys, *argv)
    assert (
        said[0] == f"Cursor: {given} already has this 'filegate' entry; made it owner-only (it holds a token)"
    )
    assert stat.S_IMODE(given.stat().st_mode) == 0o600
    said = run(capsys, *argv)
    assert said[0] == f"Cursor: {given} already has this 'filegate' entry; nothing changed"


def test_a_new_file_is_owner_only_whatever_the_umask_and_a_tokenless_one_keeps_its_mode(
    home: Path,
    project: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    old = os.umask(0o022)
    try:
        run(capsys, "vscode", "--project")
        made = project / ".vscode" / "mcp.json"
        assert stat.S_IMODE(made.stat().st_mode) == 0o600
        made.chmod(0o644)
        run(capsys, "vscode", "--project", "--read-only")
        assert stat.S_IMODE(made.stat().st_mode) == 0o644 and "--read-only" in made.read_text()
    finally:
        os.umask(old)


# --- the folder the entry serves, and where --project writes ---------------------------------


@pytest.mark.parametrize("client", PROJECT_CLIENTS)
def test_project_writes_under_the_workdir_not_under_the_shells_folder(
    home: Path,
    project: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    client: str,
) -> None:
    """Run from another folder (issue 43 item 6): the project's file is the --workdir's, its
    entry serves that folder, and the shell's folder gets nothing."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    said = run(capsys, client, "--project", "--workdir", str(project))
    written = project / str(install.CLIENTS[client].project_file)
    assert said[0].startswith(f"{install.CLIENTS[client].title}: wrote 'filegate' into {written}")
    key = install.CLIENTS[client].key
    assert json.loads(written.read_text())[key]["filegate"]["args"][:2] == ["--workdir", str(project)]
    assert os.listdir(elsewhere) == [] and not home.exists()


@pytest.mark.parametrize(
    ("argv", "env", "said"),
    [
        (["--workdir", "src"], {}, '--workdir src is a relative path'),
        (["--workdir", "."], {}, '--workdir . is a relative path'),
        (["--add-dir", "../notes"], {}, '--add-dir ../notes is a relative path'),
        ([], {"FILEGATE_WORKDIR": "src"}, 'FILEGATE_WORKDIR src is a relative path'),
    ],
)  # fmt: skip
def test_a_relative_folder_for_the_server_is_refused(
    home: Path,
    project: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    env: dict[str, str],
    said: str,
) -> None:
    (project / "src").mkdir()
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    err = refused(capsys, "cursor", *argv)
    assert err.startswith(
        f"filegate install: error: {said}; the client starts the server from a folder of its own"
    )
    assert not home.exists() and os.listdir(project) == ["src"]


@pytest.mark.parametrize("argv", [["--workdir", ""], ["--add-dir", ""]])
def test_an_empty_folder_for_the_server_is_refused(
    home: Path, project: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    err = refused(capsys, "cursor", "--project", *argv)
    assert err == (
        f"filegate: error: {argv[0]}: the value is empty; give a folder (an empty value is never taken as the "
        "current folder)\n"
    )
    assert not home.exists() and os.listdir(project) == []


# --- what the door says when a file cannot be read or changed under it ------------------------


def test_a_fifo_a_huge_file_and_bytes_that_are_not_utf8_are_refused_in_one_line(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # opened without blocking: no writer needed for the refusal
    err = refused(capsys, "cursor", "--config", str(fifo))
    assert err == f"filegate install: error: {fifo} is not a regular file; nothing was changed\n"
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"caf\xe9": 1}')
    err = refused(capsys, "cursor", "--config", str(latin))
    assert err == f"filegate install: error: {latin} is not UTF-8 text; nothing was changed\n"
    monkeypatch.setattr(files, "CONFIG_LIMIT", 10)
    big = tmp_path / "big.json"
    big.write_text('{"theme": "dark"}')
    err = refused(capsys, "cursor", "--config", str(big))
    assert err == (
        f"filegate install: error: {big} is 17 bytes, more than a client's file holds (10 at most); "
        "nothing was changed\n"
    )
    assert latin.read_bytes() == b'{"caf\xe9": 1}' and big.read_text() == '{"theme": "dark"}'
    monkeypatch.setattr(files, "CONFIG_LIMIT", 17)  # exactly at the limit: read and merged
    run(capsys, "cursor", "--config", str(big))
    assert json.loads(big.read_text())["theme"] == "dark"


def test_a_file_name_the_system_refuses_is_one_line(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long = tmp_path / ("x" * 300 + ".json")
    err = refused(capsys, "cursor", "--config", str(long))
    assert err == f"filegate install: error: {long}: File name too long; nothing was changed\n"


def test_a_link_swapped_in_after_the_file_was_located_is_not_followed(tmp_path: Path) -> None:
    """Between locate and load a folder on the way became a link: the no-follow open refuses."""
    real = tmp_path / "real"
    real.mkdir()
    (real / "mcp.json").write_text("{}")
    located = files.locate(tmp_path / "swapped" / "mcp.json", "given")
    (tmp_path / "swapped").symlink_to(real)
    with pytest.raises(files.InstallError) as refusal:
        files.load(located)
    assert (
        str(refusal.value)
        == f"{located} is a symbolic link now, or one appeared on its way; nothing was changed"
    )


def test_a_file_changed_by_someone_else_while_merging_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"a": 1}')

    def merge_while_the_user_edits(old: str, where: Path) -> str:
        path.write_text('{"a": 2, "theirs": true}')
        return '{"a": 1, "ours": true}'

    with pytest.raises(files.InstallError) as refusal:
        install.write_merged(files.locate(path, "given"), merge_while_the_user_edits)
    assert str(refusal.value) == (
        f"{path} changed while filegate install was merging it; nothing was changed. Run the command again"
    )
    assert path.read_text() == '{"a": 2, "theirs": true}'
