"""Claude Code, configured by ``filegate install claude-code``, run headless (``claude -p``)
against the scripted Anthropic Messages endpoint: what its model receives from filegate."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents import harness as h
from tests.agents.model import ModelServer

pytestmark = pytest.mark.slow


def claude(tmp: Path, *install_flags: str, steps: list[h.Step] = h.STEPS) -> h.Run:
    agent = h.need("claude-code")
    ws = h.workspace(tmp)
    home = tmp / "home"
    with ModelServer(steps) as model:
        env = h.scratch_env(
            home,
            ANTHROPIC_BASE_URL=model.url,
            ANTHROPIC_API_KEY="scripted-model-key",
            DISABLE_AUTOUPDATER="1",
            DISABLE_TELEMETRY="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            # Connect MCP servers before the first turn, and list their tools to the model
            # (not behind a tool search): the script needs filegate's tools at once.
            MCP_CONNECTION_NONBLOCKING="false",
            ENABLE_TOOL_SEARCH="false",
        )
        h.install("claude-code", env, ws, *install_flags)
        # The user allows filegate's tools for the run (as one would in settings); the
        # approval of writes is filegate's own question, which headless -p cannot answer.
        proc = h.run([*agent.argv, "-p", "go", "--allowedTools", "mcp__filegate"], env, ws)
    return h.Run(model.recorder, proc, ws)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> h.Run:
    return claude(tmp_path_factory.mktemp("claude"))


@pytest.fixture(scope="module")
def auto_run(tmp_path_factory: pytest.TempPathFactory) -> h.Run:
    return claude(tmp_path_factory.mktemp("claude-auto"), "--approval", "auto", steps=h.WRITE_STEPS)


def test_tool_names(run: h.Run) -> None:
    assert "mcp__filegate__ReadFile" in run.rec.tool_names


def test_read_file(run: h.Run) -> None:
    h.check_read(run.seen(h.READ))


def test_glob(run: h.Run) -> None:
    h.check_glob(run.seen(h.GLOB))


def test_grep(run: h.Run) -> None:
    h.check_grep(run.seen(h.GREP))


def test_env_refused(run: h.Run) -> None:
    h.check_env_refused(run)


def test_image(run: h.Run) -> None:
    h.check_image(run)


def test_headless_write_is_declined(run: h.Run) -> None:
    # claude -p answers filegate's question with "cancel": nothing is written.
    for step in (h.WRITE, h.EDIT):
        seen = run.seen(step)
        assert seen.error and "cancelled" in seen.text, seen.text
    assert not (run.ws / "new.txt").exists()
    assert h.DISTINCTIVE in (run.ws / "notes.txt").read_text()


def test_writes_under_approval_auto(auto_run: h.Run) -> None:
    h.check_written(auto_run, 1, told=False)


def test_the_model_is_told_the_writes_happened(auto_run: h.Run) -> None:
    h.check_written(auto_run, 1)
