"""Start-up refusals in filegate's own words (issue 41 item 8, issue 42 item 6, SPEC §5): each
names the flag (or the variable) and what to give instead; an empty --workdir/--add-dir is
refused, never read as the current folder; a flag that does nothing over the chosen transport
is refused, a variable named in the start-up line. In-process: cli.parse_settings as `filegate`
runs it (tests/test_cli.py starts the real command for the same one-line shape)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from filegate.cli import parse_settings
from filegate.server.startup import startup_line


@pytest.fixture(autouse=True)
def no_filegate_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [n for n in os.environ if n.startswith("FILEGATE_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as done:
        parse_settings(list(argv))
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("filegate: error: "), err
    return err.removeprefix("filegate: error: ").removesuffix("\n")


EMPTY = "the value is empty; give a folder (an empty value is never taken as the current folder)"


@pytest.mark.parametrize("argv", [["--workdir", ""], ["--workdir", "  "], ["--add-dir", ""],
                                  ["--add-dir", "/tmp", "--add-dir", ""]])  # fmt: skip
def test_an_empty_folder_flag_is_refused_not_served_as_the_current_folder(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert refusal(capsys, *argv) == f"{argv[-2]}: {EMPTY}"


@pytest.mark.parametrize(
    ("variable", "flag"), [("FILEGATE_WORKDIR", "--workdir"), ("FILEGATE_ADD_DIRS", "--add-dir")]
)
def test_an_empty_folder_variable_is_refused_by_its_name(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, variable: str, flag: str
) -> None:
    monkeypatch.setenv(variable, "")
    assert refusal(capsys) == f"{variable} ({flag}): {EMPTY}"


def test_a_file_given_as_the_folder_is_told_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    assert refusal(capsys, "--workdir", "notes.txt") == (
        "--workdir: notes.txt is a file, not a folder; give the folder to serve (maybe its parent)"
    )
    assert refusal(capsys, "--add-dir", str(tmp_path / "gone")) == (
        f"--add-dir: {tmp_path / 'gone'} does not exist or is not a folder; give an existing folder"
    )


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--state-key", "short"], "--state-key: must be at least 16 characters long (a random string, e.g. "
                                   "openssl rand -hex 16)"),
        (["--result-budget", "10"], "--result-budget: must be 1024 or more"),
        (["--image-max-side", "99999"], "--image-max-side: must be 16384 or less"),
        (["--transport", "http", "--port", "99999"], "--port: must be 65535 or less"),
        (["--transport", "http", "--port", "eighty"], "--port: must be a whole number"),
        (["--transport", "http", "--session-idle-timeout", "0"], "--session-idle-timeout: must be more than 0"),
        (["--transport", "http", "--session-idle-timeout", "soon"], "--session-idle-timeout: must be a number"),
        (["--transport", "http", "--path", "mcp"], "--path: must start with '/'"),
    ],
)  # fmt: skip
def test_bad_values_are_said_in_filegates_words_with_the_flag(
    capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    err = refusal(capsys, *argv)
    assert err == said
    assert "Input should" not in err and "after validation" not in err


def test_a_bad_value_from_a_variable_names_it_and_does_not_repeat_a_secret(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FILEGATE_STATE_KEY", "sekrit")
    assert refusal(capsys).startswith("FILEGATE_STATE_KEY (--state-key): must be at least 16 characters")
    monkeypatch.delenv("FILEGATE_STATE_KEY")
    monkeypatch.setenv("FILEGATE_READ_ONLY", "maybe")
    assert refusal(capsys) == "FILEGATE_READ_ONLY (--read-only): must be true or false (or 1 or 0)"
    monkeypatch.delenv("FILEGATE_READ_ONLY")
    monkeypatch.setenv("FILEGATE_TRANSPORT", "pigeon")
    assert refusal(capsys) == "FILEGATE_TRANSPORT (--transport): must be one of stdio or http"


HTTP_FLAGS = [("--host", "0.0.0.0"), ("--port", "9000"), ("--path", "/x"), ("--token", "t0ken"),
              ("--allowed-origin", "https://a.example"), ("--allowed-host", "h:1"),
              ("--max-connections", "9"), ("--max-sessions", "2"), ("--session-idle-timeout", "5"),
              ("--grant-ttl", "10m")]  # fmt: skip


@pytest.mark.parametrize(("flag", "value"), HTTP_FLAGS)
def test_an_http_flag_over_stdio_is_refused(
    capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    assert refusal(capsys, flag, value) == (
        f"{flag} is for --transport http; over stdio it would do nothing. Add --transport http, or leave {flag} out"
    )
    assert parse_settings(["--transport", "http", "--token", "t0ken", flag, value]).transport == "http"


def test_every_http_only_setting_has_a_case_above() -> None:
    from filegate.cli import build_parser
    from filegate.flags import flag_names
    from filegate.settings import HTTP_ONLY

    names = flag_names(build_parser())
    assert sorted(names[f] for f in HTTP_ONLY) == sorted(f for f, _ in HTTP_FLAGS)


def test_an_http_variable_over_stdio_is_named_in_the_start_up_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FILEGATE_TOKEN", "t0ken")
    monkeypatch.setenv("FILEGATE_PORT", "9000")
    settings = parse_settings(["--workdir", str(tmp_path)])
    assert startup_line(settings).endswith(
        "; ignored over stdio (for --transport http): FILEGATE_PORT, FILEGATE_TOKEN"
    )
    assert "t0ken" not in startup_line(settings)
    served = parse_settings(["--workdir", str(tmp_path), "--transport", "http"])
    assert "ignored" not in startup_line(served, "http://127.0.0.1:9000/mcp")


def test_http_flags_after_an_explicit_stdio_are_named_in_the_start_up_line(tmp_path: Path) -> None:
    """`docker run … filegate --transport stdio`: the image's entrypoint gives --host/--port for
    HTTP, the user chose stdio; the flags are named as ignored, never silently dropped."""
    from filegate.server import startup

    try:
        settings = parse_settings(
            ["--transport", "http", "--host", "0.0.0.0", "--port", "8000", "--workdir", str(tmp_path),
             "--transport", "stdio"]
        )  # fmt: skip
        assert settings.transport == "stdio"
        assert startup_line(settings).endswith("; ignored over stdio (for --transport http): --host, --port")
    finally:
        startup.ignore_flags([])
