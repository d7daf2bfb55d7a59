"""The commands beside serving (install, uninstall, check, history, undo, rules), in process:
each answers bad input and a closed pipe in one line, never a traceback; the usage line lists
every one; each --help shows its own flags; a typo gets a suggestion; undo takes the id as a
terminal user types it."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from filegate.cli import COMMANDS, build_parser, main
from tests.conftest import call, connect, text, write_id_of


def run(argv: list[str]) -> int:
    """main() as the console script runs it: argparse's exit is an exit code here."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


@contextlib.contextmanager
def closed_pipe() -> Iterator[None]:
    """stdout is a pipe whose reader is gone (`filegate history | head` once head exits). Set
    inside the test: capsys puts its own stdout back when the test's call begins."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    broken = open(write_end, "w", buffering=1)  # noqa: SIM115 - closed below
    saved, sys.stdout = sys.stdout, broken
    try:
        yield
    finally:
        sys.stdout = saved
        with contextlib.suppress(BrokenPipeError):
            broken.close()


def test_the_usage_line_lists_every_command() -> None:
    usage = build_parser().format_usage()
    for command in COMMANDS:
        assert f"filegate {command} " in usage, command
    assert set(COMMANDS) == {"install", "uninstall", "check", "history", "undo", "changes", "rules"}


def test_a_mistyped_command_gets_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["instal", "claude-desktop"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("filegate: error: unknown command 'instal' (did you mean `filegate install`?")
    assert err.count("\n") == 1
    assert run(["histroy"]) == 2 and "did you mean `filegate history`?" in capsys.readouterr().err
    assert run(["frobnicate"]) == 2
    assert "did you mean" not in capsys.readouterr().err


# The server's flags a command that does not serve must not offer.
SERVING_ONLY = ("--port", "--token", "--max-sessions", "--approval", "--result-budget", "--history-max-age")


@pytest.mark.parametrize("command", ["uninstall", "check", "history", "undo", "changes", "rules"])
def test_each_commands_help_shows_only_its_own_flags(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: filegate {command}")
    for flag in SERVING_ONLY:
        assert flag not in out, f"{command} --help offers {flag}"


def test_install_help_offers_the_server_flags_it_records(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["install", "--help"]) == 0
    assert "--approval" in capsys.readouterr().out


# What each command prints on stdout, for a reader that went away (argparse's own --help
# output swallows a closed pipe, so it proves nothing here).
PRINTING = {
    "install": ["install", "cursor", "--print", "--workdir", "{ws}"],
    "uninstall": ["uninstall", "generic", "--config", "{ws}/mcp.json"],
    "check": ["check", "--workdir", "{ws}"],
    "history": ["history"],
    "undo": ["undo", "{id}", "--yes"],
    "changes": ["changes"],
    "rules": ["rules", "--workdir", "{ws}"],
}


@pytest.mark.parametrize("command", sorted(PRINTING))
def test_a_closed_pipe_is_no_traceback(
    command: str, ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert set(PRINTING) == set(COMMANDS)
    write_id = _write(ws)
    (ws / "mcp.json").write_text('{"mcpServers": {"filegate": {"command": "x"}}}\n')
    monkeypatch.chdir(ws)
    argv = [a.format(ws=ws, id=write_id) for a in PRINTING[command]]
    with closed_pipe():
        assert run(argv) == 0
    assert capsys.readouterr().err == ""


BAD_INPUT = {
    "install": (["install", "claude-dekstop"], 2, "did you mean 'claude-desktop'?"),
    "uninstall": (["uninstall", "nope"], 2, "invalid choice: 'nope'"),
    "check": (["check", "--workdir", "/nonexistent/folder"], 2, "is not a folder"),
    "history": (["history", "--since", "yesterday-ish"], 2, "is neither a date/time"),
    "undo": (["undo", "not-an-id!"], 1, "`not-an-id!` is not a write id"),
    "changes": (["changes", "--since", "yesterday-ish"], 1, "`yesterday-ish` is none of these"),
    "rules": (["rules", "--workdir", "/nonexistent/folder"], 2, "--workdir"),
}


@pytest.mark.parametrize("command", sorted(BAD_INPUT))
def test_bad_input_is_one_line_never_a_traceback(
    command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    argv, code, said = BAD_INPUT[command]
    assert run(argv) == code
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
    assert err.count("\n") == 1, err


def test_an_unexpected_failure_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last guard: a bug in a command is named in one line, not a traceback."""
    import filegate.history_cli

    def broken(*_: Any) -> Any:
        raise ValueError("history line 3 is not JSON")

    monkeypatch.setattr(filegate.history_cli, "list_history", broken)
    assert run(["history"]) == 1
    err = capsys.readouterr().err
    assert err == (
        "filegate history: error: ValueError: history line 3 is not JSON "
        "(this is a bug in filegate; please report it)\n"
    )


def test_an_empty_history_says_where_it_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    state = os.environ["XDG_STATE_HOME"]
    assert run(["history"]) == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"No writes in the write history, kept in {state}/filegate/history.\n"
    assert run(["history", "--since", "1h"]) == 0
    assert capsys.readouterr().err.startswith("No write matches in the write history, kept in ")


def _write(ws: Path) -> str:
    (ws / "a.txt").write_text("one\n")

    async def go() -> str:
        async with connect(ws, approval="auto", read_guard=False) as c:
            return write_id_of(text(await call(c, "WriteFile", path="a.txt", content="two\n")))

    return anyio.run(go)


@pytest.mark.parametrize("spelling", ["as given", "without w-", "upper case", "spaces", "a prefix"])
def test_undo_takes_the_id_as_a_terminal_user_types_it(
    spelling: str, ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_id = _write(ws)
    typed = {
        "as given": write_id,
        "without w-": write_id.removeprefix("w-"),
        "upper case": write_id.upper(),
        "spaces": f"  {write_id} ",
        "a prefix": write_id.upper()[:8],  # W- and six digits
    }[spelling]
    monkeypatch.chdir(ws)
    assert run(["undo", typed, "--yes"]) == 0, capsys.readouterr().err
    assert f"Undid {write_id}:" in capsys.readouterr().out
    assert (ws / "a.txt").read_text() == "one\n"


def test_an_unknown_id_is_answered_in_one_line(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ws)
    assert run(["undo", "ABCDEF"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("No write w-abcdef in the history") and err.count("\n") == 1


def test_undo_with_no_terminal_to_ask_says_add_yes(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_id = _write(ws)
    monkeypatch.chdir(ws)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # not a terminal
    assert run(["undo", write_id]) == 1
    out, err = capsys.readouterr()
    assert "-two\n+one" in out  # the question (the diff) is shown
    assert "there is no terminal to ask; add --yes to undo it without asking" in err
    assert (ws / "a.txt").read_text() == "two\n"


def test_check_starts_filegate_lists_its_tools_and_reads_a_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The console script as a client starts it, in a scratch folder: the start-up line, every
    tool listed, the file's line and the summary, then "filegate works"."""
    from filegate.server.app import build_server
    from filegate.settings import Settings

    async def names() -> list[str]:
        return [t.name for t in await build_server(Settings()).list_tools()]

    assert run(["check"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Starting ") and " --workdir " in out.splitlines()[0]
    assert "  start-up line: filegate " in out and "PROBLEM" not in out
    assert f"  tools listed: {', '.join(anyio.run(names))}\n" in out
    assert "         1\thello from filegate\n" in out
    assert "1 lines read from file starting from line 1." in out
    assert out.endswith("filegate works. Next: filegate install CLIENT (see filegate install --help).\n")


def test_check_fails_when_the_server_names_a_problem(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws / "a.txt").write_text("text\n")
    home = ws.parent / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text("{")
    monkeypatch.setenv("HOME", str(home))
    assert run(["check", "--workdir", str(ws)]) == 1
    out, err = capsys.readouterr()
    assert "PROBLEM: A client rule file cannot be used: `~/.claude/settings.json`" in out
    assert err == "filegate check: error: the server named a problem in its start-up line (above)\n"
