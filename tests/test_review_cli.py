"""``filegate changes`` from a terminal (SPEC §10), over writes made through a real client: in
this process (``review_cli.main``, the console script's own entry), and the console script
itself (slow)."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
from pathlib import Path

import pytest

from filegate.cli import main as cli_main
from tests.conftest import FILEGATE, call, connect, text, write_id_of

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "core.hooksPath=/dev/null"]


async def _writes(ws: Path) -> list[str]:
    (ws / "a.txt").write_text("one\n")
    async with connect(ws, approval="auto", read_guard=False) as c:
        return [
            write_id_of(text(await call(c, "WriteFile", path="a.txt", content="two\n"))),
            write_id_of(
                text(await call(c, "WriteFile", path="sub/b.txt", content="new\n", create_dirs=True))
            ),
        ]


@pytest.fixture
def writes(ws: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    ids = asyncio.run(_writes(ws))
    monkeypatch.chdir(ws)
    return ids


def test_changes_prints_the_files_and_the_diff(writes: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["changes"]) == 0
    out = capsys.readouterr().out
    assert f"modified `a.txt` (+1 -1 lines; 1 write: {writes[0]})" in out
    assert f"added `sub/b.txt` (+1 -0 lines; 1 write: {writes[1]})" in out
    assert "-one\n+two" in out
    assert "since the oldest write the history holds" in out
    assert cli_main(["changes", "--since", writes[1], "--path", "sub"]) == 0
    narrowed = capsys.readouterr().out
    assert "sub/b.txt" in narrowed and "a.txt" not in narrowed
    assert cli_main(["changes", "--since", writes[1][:8]]) == 0  # a terminal takes a prefix
    by_prefix = capsys.readouterr().out
    assert "sub/b.txt" in by_prefix and "`a.txt`" not in by_prefix


def test_changes_against_head(ws: Path, writes: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    subprocess.run([*GIT, "init", "-q"], cwd=ws, check=True)
    subprocess.run([*GIT, "add", "a.txt"], cwd=ws, check=True)
    subprocess.run([*GIT, "commit", "-qm", "a"], cwd=ws, check=True)
    (ws / "a.txt").write_text("three\n")
    assert cli_main(["changes", "--since", "1h", "--against", "HEAD"]) == 0
    out = capsys.readouterr().out
    assert "-two\n+three" in out and "changed outside filegate after" in out


def test_changes_refuses_a_bad_since_on_stderr(writes: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["changes", "--since", "w-nothing"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "is not a write id" in captured.err
    with pytest.raises(SystemExit) as exited:
        cli_main(["changes", "--against", "BASE"])
    assert exited.value.code == 2


@pytest.mark.slow  # the console script started
def test_the_console_script_prints_the_changes(writes: list[str], ws: Path) -> None:
    done = subprocess.run(
        [FILEGATE, "changes", "--since", writes[0]],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "modified `a.txt`" in done.stdout and "+new" in done.stdout


# --- filegate undo --since ------------------------------------------------------------------


class Terminal(io.StringIO):
    """A stand-in for a terminal's input (a fake, named as such: no pty here)."""

    def isatty(self) -> bool:
        return True


class NoTerminal(io.StringIO):
    def isatty(self) -> bool:
        return False


def test_undo_since_without_a_terminal_or_yes_says_to_add_yes_and_writes_nothing(
    writes: list[str], ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", NoTerminal("y\n"))
    assert cli_main(["undo", "--since", writes[0]]) == 1
    captured = capsys.readouterr()
    assert "UndoWrite wants to rewind 2 writes from" in captured.out  # the question, shown
    assert "Not undone: there is no terminal to ask; add --yes to undo it without asking." in captured.err
    assert (ws / "a.txt").read_text() == "two\n" and (ws / "sub" / "b.txt").exists()


def test_undo_since_at_a_terminal_asks_once_and_restores_every_file(
    writes: list[str], ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", Terminal("y\n"))
    prompts: list[str] = []
    monkeypatch.setattr("builtins.input", lambda prompt: prompts.append(prompt) or sys.stdin.readline())
    assert cli_main(["undo", "--since", writes[0]]) == 0
    out = capsys.readouterr().out
    assert prompts == ["Undo these writes? [y/N] "]
    assert f"Rewound 2 writes from {writes[0]}" in out
    assert (ws / "a.txt").read_text() == "one\n" and not (ws / "sub" / "b.txt").exists()


def test_undo_since_with_yes_refuses_a_file_changed_by_hand_naming_force(
    writes: list[str], ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (ws / "a.txt").write_text("by hand\n")
    assert cli_main(["undo", "--since", writes[0], "--yes"]) == 1
    err = capsys.readouterr().err
    assert "`a.txt` (it changed after" in err and "`--force` to rewind anyway" in err
    assert (ws / "sub" / "b.txt").exists()
    assert cli_main(["undo", "--since", writes[0], "--yes", "--force"]) == 0
    assert (ws / "a.txt").read_text() == "one\n"


def test_undo_takes_an_id_or_since_not_both(writes: list[str]) -> None:
    for args in (["undo"], ["undo", writes[0], "--since", writes[0]]):
        with pytest.raises(SystemExit) as exited:
            cli_main(args)
        assert exited.value.code == 2
