"""The command line: help, version, and one-line errors with exit code 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from filegate import __version__
from tests.conftest import FILEGATE


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([FILEGATE, *args], capture_output=True, text=True, timeout=60, env=env,
                          input="")  # fmt: skip


def test_help_explains_every_flag() -> None:
    out = run("--help").stdout
    for flag in ("--workdir", "--add-dir", "--confine", "--secret-pattern", "--transport", "--host",
                 "--port", "--path", "--token", "--log-level", "--approval", "--read-only",
                 "--result-budget", "--image-max-side", "--client", "--allowed-origin", "--allowed-host"):  # fmt: skip
        assert flag in out


def test_help_shows_allowed_values_and_examples() -> None:
    out = run("--help").stdout
    for values in ("{stdio,http}", "{ask,strict,auto,ask-always}", "{DEBUG,INFO,WARNING,ERROR,CRITICAL}",
                   "{kimi,kimi-code,claude-desktop,claude-code,codex,gemini-cli,generic}"):  # fmt: skip
        assert values in out
    examples = out.split("examples:", 1)[1]
    assert "filegate --workdir" in examples and "filegate install" in examples


def test_every_setting_has_a_flag_and_every_flag_a_setting() -> None:
    from filegate.cli import build_parser
    from filegate.flags import flag_names
    from filegate.settings import Settings

    flags = flag_names(build_parser())
    flags.pop("help"), flags.pop("version")
    assert set(flags) == set(Settings.model_fields)
    for field, flag in flags.items():
        assert flag.removeprefix("--") in (field.replace("_", "-"), field.replace("_", "-").removesuffix("s"))


def test_version() -> None:
    assert run("--version").stdout.strip() == f"filegate {__version__}"
    assert run("-V").stdout.strip() == f"filegate {__version__}"
    module = subprocess.run([sys.executable, "-m", "filegate", "--version"], capture_output=True, text=True)
    assert module.stdout.strip() == f"filegate {__version__}"


@pytest.mark.slow
def test_bad_values_are_one_line_errors_with_exit_2(tmp_path: Path) -> None:
    cases = [
        (["--workdir", str(tmp_path / "nope")], "--workdir"),
        (["--transport", "carrier-pigeon"], "--transport"),
        (["--port", "99999"], "--port"),
        (["--approval", "maybe"], "--approval"),
        (["--result-budget", "ten"], "--result-budget"),
        (["--legacy-encoding", "klingon"], "--legacy-encoding"),
        (["--legacy-encoding", "cp037"], "the byte 0x04 reads as"),  # EBCDIC
        (["--legacy-encoding", "hz"], "The codec hz (from --legacy-encoding) is refused"),  # SPEC §8.1
        (["--legacy-encoding", "utf-7"], "The codec utf-7 (from --legacy-encoding) is refused"),
        (["--transport", "http", "--host", "0.0.0.0"], "without a token"),
        (["--bogus"], "unrecognized arguments"),
    ]
    for args, expect in cases:
        proc = run(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert expect in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) <= 3, proc.stderr


def test_environment_variables_are_read(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "FILEGATE_WORKDIR": str(tmp_path / "missing")}
    proc = run(env=env)
    assert proc.returncode == 2 and "--workdir" in proc.stderr


def test_errors_from_variables_name_the_variable_and_a_flag_that_exists(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "FILEGATE_ADD_DIRS": str(tmp_path / "missing")}
    proc = run(env=env)
    assert proc.returncode == 2, proc.stderr
    assert "FILEGATE_ADD_DIRS (--add-dir)" in proc.stderr and "--add-dirs" not in proc.stderr
    proc = run("--add-dir", str(tmp_path / "missing"))
    assert proc.returncode == 2 and proc.stderr.startswith("filegate: error: --add-dir: "), proc.stderr


def test_environment_lists() -> None:
    from filegate.settings import Settings

    env = {
        "FILEGATE_SECRET_PATTERNS": "*.p12, secrets/",
        "FILEGATE_ALLOWED_ORIGINS": '["https://a.example:8443"]',
    }
    import os

    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        s = Settings()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k)
            else:
                os.environ[k] = v
    assert s.secret_patterns == ["*.p12", "secrets/"]
    assert s.allowed_origins == ["https://a.example:8443"]


def test_one_line_on_stderr_at_start_and_nothing_on_stdout(tmp_path: Path) -> None:
    odd = tmp_path / "odd\nname"  # a workdir whose name could forge a second line
    odd.mkdir()
    proc = run("--workdir", str(odd), "--add-dir", str(tmp_path))
    assert proc.returncode == 0 and proc.stdout == "", proc
    (line,) = proc.stderr.splitlines()
    assert line == (f"filegate {__version__}: serving {tmp_path}/odd\\x0aname, {tmp_path} over stdio; "
                    "approval ask; absolute paths outside readable")  # fmt: skip
    quiet = run("--workdir", str(tmp_path), "--read-only", "--confine", "--log-level", "error")
    assert quiet.returncode == 0 and quiet.stderr == "", quiet
    from filegate.server.startup import startup_line
    from filegate.settings import Settings

    line = startup_line(
        Settings(workdir=tmp_path, read_only=True, transport="http"), "http://127.0.0.1:1/mcp"
    )
    assert line.endswith(
        f"serving {tmp_path} over http at http://127.0.0.1:1/mcp; read-only; confined to the workspace; "
        "no token: any local process can connect (set --token or FILEGATE_TOKEN)"
    )


@pytest.mark.slow
def test_http_on_loopback_says_whether_any_local_process_can_connect(tmp_path: Path) -> None:
    """Started for real: the line a user sees names the open door, and not when a token shuts it."""
    from tests.server.served import http_filegate

    for flags, open_door in [((), True), (("--token", "t0ken-for-this-test"), False)]:
        with http_filegate(tmp_path, tmp_path, *flags) as served:
            served.stop()
        (line,) = served.log().splitlines()
        assert f"over http at {served.url};" in line
        assert (
            "no token: any local process can connect (set --token or FILEGATE_TOKEN)" in line
        ) == open_door
        assert "t0ken" not in line


@pytest.mark.slow
def test_stdio_started_at_a_terminal_says_what_it_waits_for_and_ends_on_ctrl_d(tmp_path: Path) -> None:
    """A person who types `filegate` gets a hint instead of a silent prompt; a client (stdin a
    pipe, as in the test above) does not."""
    import os
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen([FILEGATE, "--workdir", str(tmp_path)], stdin=follower, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    os.close(follower)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.rstrip("\n").endswith(
            "; waiting for an MCP client on stdin (clients start filegate themselves: "
            "see `filegate install --help`; Ctrl+D ends)"
        ), line
        os.write(leader, b"\x04")  # Ctrl+D: end of input at the terminal
        assert proc.wait(60) == 0
        assert proc.stdout is not None and proc.stdout.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@pytest.mark.slow
def test_a_port_in_use_is_one_line_and_exit_2(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run("--transport", "http", "--port", str(port), "--workdir", str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"filegate: error: cannot listen on 127.0.0.1:{port}: Address already in use\n"


# main() as the `filegate` script runs it, in a process of its own: the collector's state is
# read after the server has answered and stopped.
GC_PROBE = """
import gc, sys
from filegate.cli import main
seen = []
gc.callbacks.append(lambda phase, info: seen.append(phase) if phase == "stop" else None)
code = main(["--workdir", sys.argv[1], "--log-level", "error"])
collections = len(seen)
print(code, collections > 0, gc.isenabled(), gc.get_freeze_count() > 0)
"""


@pytest.mark.slow
def test_the_collector_is_paused_for_the_start_only(tmp_path: Path) -> None:
    """Start-up pauses Python's garbage collector and freezes what it built (issue 28: its
    passes over fastmcp's and the SDK's objects were ~15 % of the start's CPU); the server then
    serves with the collector on, and a client's calls are answered."""
    from tests.rawstdio import RawStdio

    (tmp_path / "a.txt").write_text("x\n" * 40)
    proc = subprocess.Popen([sys.executable, "-c", GC_PROBE, str(tmp_path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)  # fmt: skip
    client = RawStdio(proc.pid, proc.stdin, proc.stdout)
    client.initialize()
    for _ in range(200):
        answer = client.reply(client.call("ReadFile", {"path": "a.txt"}))
        assert "Total lines in file: 40." in answer["result"]["content"][-1]["text"], answer
    assert proc.stdin and proc.stdout
    proc.stdin.close()
    verdict = proc.stdout.read().decode().strip()
    proc.stdout.close()
    assert proc.wait(timeout=60) == 0
    assert verdict == "0 True True True", verdict  # main's code, collections while serving, on, frozen
