"""``filegate history`` and ``filegate undo`` from a terminal (SPEC §8.4), over writes made through
a real client: the installed console script as a subprocess (slow), and the same command in this
process (``history_cli.main``, the console script's own entry), its refusals in the default set."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
from pathlib import Path

import pytest

from filegate.fsio.history import WriteHistory, history_dir
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


# --- in process: the command's refusals, each writing nothing --------------------------------


class Terminal(io.StringIO):
    """A stand-in for a terminal's input (a fake, named as such: no pty here): a user who types
    ``typed`` at the prompt."""

    def isatty(self) -> bool:
        return True


class NoTerminal(io.StringIO):
    """Input that is not a terminal (a pipe, a CI job, an agent's shell): nobody to confirm."""

    def isatty(self) -> bool:
        return False


@pytest.fixture
def two_writes(ws: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """a.txt rewritten ("one" -> "two") and b.txt created, through a real client; the command
    then runs in the workspace."""
    ids = asyncio.run(_two_writes(ws))
    monkeypatch.chdir(ws)
    return ids


def undo_in_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str, stdin: io.StringIO
) -> tuple[int, str, str]:
    """``filegate undo ARGS`` in this process: (exit status, stdout, stderr)."""
    monkeypatch.setattr(sys, "stdin", stdin)
    status = history_main(["undo", *args])
    out, err = capsys.readouterr()
    return status, out, err


def history_ids() -> list[tuple[str, str]]:
    return [(e.id, e.state) for e in WriteHistory(history_dir()).entries()]


@pytest.mark.parametrize(
    "stdin",
    [NoTerminal(""), NoTerminal("y\n"), Terminal("\n"), Terminal("n\n"), Terminal("")],
    ids=["no-terminal", "no-terminal-piped-yes", "terminal-enter", "terminal-no", "terminal-eof"],
)
def test_undo_without_yes_and_without_a_users_yes_writes_nothing(
    two_writes: tuple[str, str],
    ws: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    stdin: io.StringIO,
) -> None:
    """Without --yes only a user at a terminal typing y confirms: no terminal (even with a "y"
    piped in), Enter alone, "n" or the input's end undo nothing, and the status says so."""
    first, _ = two_writes
    kept = history_ids()
    status, _out, err = undo_in_process(monkeypatch, capsys, first, stdin=stdin)
    assert status != 0 and err.strip()  # a reason, on stderr
    assert (ws / "a.txt").read_text() == "two\n"
    assert history_ids() == kept  # no undo recorded either


@pytest.mark.parametrize("typed", ["y\n", "YES\n"])
def test_undo_at_a_terminal_restores_when_the_user_types_yes(
    two_writes: tuple[str, str], ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    typed: str,
) -> None:  # fmt: skip
    first, _ = two_writes
    status, out, err = undo_in_process(monkeypatch, capsys, first, stdin=Terminal(typed))
    assert status == 0, err
    assert "-two\n+one" in out and f"Undid {first}:" in out  # the diff, then what was done
    assert (ws / "a.txt").read_text() == "one\n"


def test_undo_with_yes_shows_the_diff_and_restores_without_asking(
    two_writes: tuple[str, str], ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = two_writes
    status, out, err = undo_in_process(monkeypatch, capsys, first, "--yes", stdin=NoTerminal(""))
    assert status == 0, err
    assert "-two\n+one" in out and f"Undid {first}:" in out
    assert (ws / "a.txt").read_text() == "one\n"
    status, out, err = undo_in_process(monkeypatch, capsys, second, "--yes", stdin=NoTerminal(""))
    assert status == 0, err
    assert not (ws / "b.txt").exists()  # undoing a creation removes the file


def test_undo_of_an_unknown_id_is_refused_and_writes_nothing(
    two_writes: tuple[str, str], ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = history_ids()
    status, out, err = undo_in_process(monkeypatch, capsys, "w-000000", "--yes", stdin=NoTerminal(""))
    assert status == 1 and out == ""
    assert "w-000000" in err  # the id it did not find
    assert (ws / "a.txt").read_text() == "two\n" and (ws / "b.txt").read_text() == "new\n"
    assert history_ids() == kept


def test_undo_of_a_file_changed_since_is_refused_naming_the_force_flag(
    two_writes: tuple[str, str], ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The terminal's refusal names its own flag, --force (the tool's `force: true` is not a
    thing a terminal user can type); --force then restores."""
    first, _ = two_writes
    (ws / "a.txt").write_text("TWO\n")  # the same length: content, not size, is compared
    status, out, err = undo_in_process(monkeypatch, capsys, first, "--yes", stdin=NoTerminal(""))
    assert status == 1
    assert "`--force`" in err and "force: true" not in err
    assert (ws / "a.txt").read_text() == "TWO\n"
    status, out, err = undo_in_process(monkeypatch, capsys, first, "--yes", "--force", stdin=NoTerminal(""))
    assert status == 0, err
    assert (ws / "a.txt").read_text() == "one\n"


@pytest.mark.parametrize(
    "args", [["history", "--since", "yesterday-ish"], ["undo"], ["undo", "w-000000", "--bogus"]]
)
def test_bad_arguments_exit_2_with_one_line_and_write_nothing(
    two_writes: tuple[str, str], ws: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    kept = history_ids()
    with pytest.raises(SystemExit) as stop:
        history_main(args)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.strip() and f"filegate {args[0]}" in err
    assert (ws / "a.txt").read_text() == "two\n" and history_ids() == kept


def test_history_lists_and_filters_in_process(
    two_writes: tuple[str, str], ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = two_writes
    assert history_main(["history"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == [first, second]
    assert history_main(["history", "--path", "b.txt"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == [second]
    assert history_main(["history", "--since", "2999-01-01"]) == 0
    assert capsys.readouterr().out == ""


def test_a_set_is_undone_from_a_terminal_as_one_and_listed_as_one_entry(
    ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An ApplyPatch set (SPEC §10): `filegate history` lists it as one entry with its files, and
    `filegate undo` of its id shows the combined question and restores every file."""
    (ws / "a.txt").write_text("one\n")
    (ws / "gone.txt").write_text("bye\n")

    async def apply() -> str:
        async with connect(ws, approval="auto", read_guard=False) as c:
            changes = [
                {"path": "a.txt", "content": "two\n"},
                {"path": "gone.txt", "delete": True},
                {"path": "new.txt", "content": "new\n"},
            ]
            return write_id_of(text(await call(c, "ApplyPatch", changes=changes)))

    set_id = asyncio.run(apply())
    monkeypatch.chdir(ws)
    assert history_main(["history"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(f"{set_id}  ") and "ApplyPatch" in line and "set of 3 files:" in line
    status, out, err = undo_in_process(monkeypatch, capsys, set_id, "--yes", stdin=NoTerminal(""))
    assert status == 0, err
    assert (
        f"UndoWrite wants to undo {set_id} (ApplyPatch, " in out and "restoring 3 files as one write" in out
    )
    assert f"Undid {set_id}: 3 files as they were before it." in out
    assert (ws / "a.txt").read_text() == "one\n" and (ws / "gone.txt").read_text() == "bye\n"
    assert not (ws / "new.txt").exists()
