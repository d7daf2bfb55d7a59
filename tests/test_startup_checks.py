"""What would make every call fail is named on the start-up line, with its fix: a workspace or
home folder this user cannot read, a state folder it cannot write, a rule file that cannot be
used. And a call's error then names that real cause and the folder.

Permission bits bind the server here as they bind any user: run as root, the server is a real
process started by util-linux's ``setpriv`` with CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH
dropped (tests/tools/test_glob.py does the same), so a mode-0 folder is closed to it."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from tests.conftest import FILEGATE, call, text


def server_argv(*args: str) -> list[str]:
    if os.geteuid() != 0:
        return [FILEGATE, *args]
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed to check this as root"
    return [setpriv, "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search", "--",
            FILEGATE, *args]  # fmt: skip


@pytest.fixture
def place(tmp_path: Path) -> Iterator[Path]:
    """A workspace with a file, a home folder and a state folder of their own."""
    for name in ("ws", "home", "state"):
        (tmp_path / name).mkdir()
    (tmp_path / "ws" / "a.txt").write_text("hello\n")
    yield tmp_path
    for folder in tmp_path.rglob("*"):  # opened again, so tmp_path can be removed
        if folder.is_dir() and not folder.is_symlink():
            folder.chmod(0o755)
    for name in ("ws", "home", "state"):
        (tmp_path / name).chmod(0o755)


def env_of(place: Path, **extra: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(place / "home"),
            "XDG_STATE_HOME": str(place / "state"), **extra}  # fmt: skip


def startup_line(place: Path, *args: str, **env: str) -> str:
    """The server's stderr when it starts with no client (stdin at its end: it stops at once)."""
    done = subprocess.run(
        server_argv("--workdir", str(place / "ws"), *args),
        env=env_of(place, **env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines and lines[0].startswith("filegate "), done.stderr
    return lines[0]


def test_a_healthy_start_names_no_problem(place: Path) -> None:
    assert "PROBLEM" not in startup_line(place)


def test_an_unreadable_workspace_is_named_with_its_fix(place: Path) -> None:
    (place / "ws").chmod(0)
    line = startup_line(place)
    assert (
        f"PROBLEM: this user cannot read the workspace folder {place / 'ws'} (permission denied): "
        "every call fails; give this user read access to it (chmod, chown) or serve another folder"
    ) in line


def test_an_unreadable_home_is_named_with_its_fix(place: Path) -> None:
    (place / "home").chmod(0)
    line = startup_line(place)
    assert (
        f"PROBLEM: this user cannot enter the home folder {place / 'home'} (HOME; permission denied), "
        "where ~/.claude/settings.json may hold rules: every call fails; set HOME to this user's own "
        "folder, or add --client-rules off"
    ) in line
    assert "PROBLEM" not in startup_line(place, "--client-rules", "off")


def test_an_unwritable_state_folder_is_named_with_its_fix(place: Path) -> None:
    (place / "state").chmod(0o555)
    line = startup_line(place)
    assert (
        f"PROBLEM: this user cannot write the state folder {place / 'state' / 'filegate'} (permission "
        f"denied on {place / 'state'}), where the write history is kept: every write fails; set "
        "XDG_STATE_HOME to a folder this user can write, or add --history off"
    ) in line
    assert "PROBLEM" not in startup_line(place, "--history", "off")
    # Under the home folder it is named from there (no user name on the line).
    home_state = startup_line(place, XDG_STATE_HOME="")
    assert "PROBLEM" not in home_state
    (place / "home").chmod(0o555)
    assert "cannot write the state folder ~/.local/state/filegate (permission denied on ~)" in startup_line(
        place, XDG_STATE_HOME=""
    )


def test_a_broken_user_settings_file_is_named_with_its_fix(place: Path) -> None:
    (place / "home" / ".claude").mkdir()
    (place / "home" / ".claude" / "settings.json").write_text('{"permissions": {"deny": [}}')
    line = startup_line(place)
    assert (
        "PROBLEM: A client rule file cannot be used: `~/.claude/settings.json` is not valid JSON "
        "(Expecting value at line 1 column 27). filegate refuses every call until it is fixed"
    ) in line
    assert "--client-rules off" in line and "SPEC" not in line


def calls(place: Path, *args: str) -> list[str]:
    """Each call's answer from a real client on the server as this test starts it (its stderr
    in place / "stderr")."""
    argv = server_argv("--workdir", str(place / "ws"), "--approval", "auto", *args)
    log = place / "stderr"
    transport = StdioTransport(argv[0], argv[1:], env=env_of(place), keep_alive=False, log_file=log)

    async def go() -> list[str]:
        async with Client(transport) as c:
            read = await call(c, "ReadFile", path="a.txt")
            write = await call(c, "WriteFile", path="b.txt", content="new\n")
        return [text(read), text(write)]

    return anyio.run(go)


def test_a_calls_error_names_the_unreadable_home_not_the_rule_file(place: Path) -> None:
    (place / "home").chmod(0)
    read, write = calls(place)
    assert read == write
    assert read.startswith(
        "A client rule file cannot be used: `~/.claude/settings.json` cannot be read: this user may "
        "not enter the home folder `~` (permission denied)."
    )
    assert "SPEC" not in read and "§" not in read


def test_a_calls_error_names_the_unwritable_state_folder(place: Path) -> None:
    (place / "state").chmod(0o555)
    read, write = calls(place)
    assert read.startswith("     1\thello\n")
    assert write == (
        f"Failed to keep the previous content of `b.txt` in the write history at "
        f"{place / 'state' / 'filegate' / 'history'} (permission denied). Nothing was written. Set "
        "XDG_STATE_HOME to a folder this user can write, or `--history off` turns the history off."
    )
    assert not (place / "ws" / "b.txt").exists()
    # The log line reads as the sentence: filegate's quotes stay backticks (\x60 before).
    assert (
        "error: Failed to keep the previous content of `b.txt` in the write history at "
        in (place / "stderr").read_text()
    )
