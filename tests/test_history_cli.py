"""``filegate history`` and ``filegate undo`` from a terminal (SPEC §8.4): the installed console
script as a subprocess, over writes made through a real client."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from filegate.history_cli import main as history_main
from filegate.history_cli import parse_since
from tests.conftest import FILEGATE, call, connect, text, write_id_of


def run(ws: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FILEGATE, *args], cwd=ws, input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


async def _two_writes(ws: Path) -> tuple[str, str]:
    (ws / "a.txt").write_text("one\n")
    async with connect(ws, approval="auto", read_guard=False) as c:
        first = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="two\n")))
        second = write_id_of(text(await call(c, "WriteFile", path="b.txt", content="new\n")))
    return first, second


@pytest.mark.slow  # the console script started several times
async def test_history_lists_each_write_with_its_id_and_filters_by_path_and_time(ws: Path) -> None:
    first, second = await _two_writes(ws)
    listed = run(ws, "history")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert [line.split()[0] for line in lines] == [first, second]
    assert f"WriteFile      {ws / 'a.txt'}  (4 -> 4 bytes; auto; fastmcp)" in lines[0]
    assert "(created, 4 bytes; auto; fastmcp)" in lines[1]
    only_a = run(ws, "history", "--path", "a.txt")
    assert [line.split()[0] for line in only_a.stdout.splitlines()] == [first]
    assert run(ws, "history", "--since", "2999-01-01").stdout == ""
    assert len(run(ws, "history", "--since", "1h").stdout.splitlines()) == 2
    bad = run(ws, "history", "--since", "yesterday-ish")
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1


@pytest.mark.slow  # the console script started several times
async def test_undo_shows_the_diff_asks_and_restores_only_when_confirmed(ws: Path) -> None:
    first, _ = await _two_writes(ws)
    unconfirmed = run(ws, "undo", first)  # no terminal to answer: not confirmed
    assert unconfirmed.returncode == 1
    assert "UndoWrite wants to change `a.txt`" in unconfirmed.stdout and "-two\n+one" in unconfirmed.stdout
    assert (ws / "a.txt").read_text() == "two\n"
    done = run(ws, "undo", first, "--yes")
    assert done.returncode == 0, done.stderr
    assert "-two\n+one" in done.stdout and f"Undid {first}:" in done.stdout
    assert (ws / "a.txt").read_text() == "one\n"
    # The terminal's undo is a write too: it is in the history, and undone in turn.
    undo_id = write_id_of(done.stdout.strip())
    assert run(ws, "history").stdout.splitlines()[-1].split()[:4][3] == "UndoWrite"
    again = run(ws, "undo", undo_id, "--yes")
    assert again.returncode == 0 and (ws / "a.txt").read_text() == "two\n"


@pytest.mark.slow  # the console script started several times
async def test_undo_of_a_changed_file_says_what_changed_and_names_the_force_flag(ws: Path) -> None:
    first, _ = await _two_writes(ws)
    (ws / "a.txt").write_text("by hand\n")
    refused = run(ws, "undo", first, "--yes")
    assert refused.returncode == 1
    assert "no longer as" in refused.stderr and "`--force`" in refused.stderr
    assert (ws / "a.txt").read_text() == "by hand\n"
    forced = run(ws, "undo", first, "--yes", "--force")
    assert forced.returncode == 0 and (ws / "a.txt").read_text() == "one\n"


@pytest.mark.parametrize(
    ("value", "ago"), [("90m", 5400.0), ("2h", 7200.0), ("3d", 259200.0), ("1.5h", 5400.0)]
)
def test_since_takes_an_age(value: str, ago: float) -> None:
    assert parse_since(value, now=1_000_000.0) == 1_000_000.0 - ago


def test_history_on_an_empty_state_directory_lists_nothing_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A read-only command: no history folder, lock or log appears where there was none."""
    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.chdir(tmp_path)
    assert history_main(["history"]) == 0
    assert capsys.readouterr().out == ""
    assert list(state.rglob("*")) == []
