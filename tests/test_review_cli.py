"""``filegate changes`` from a terminal (SPEC §10), over writes made through a real client: in
this process (``review_cli.main``, the console script's own entry), and the console script
itself (slow)."""

from __future__ import annotations

import asyncio
import subprocess
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
