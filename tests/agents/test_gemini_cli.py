"""Gemini CLI, configured by ``filegate install gemini-cli``, run headless (``gemini -p``)
against the scripted Gemini API endpoint: what its model receives from filegate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents import harness as h
from tests.agents.model import ModelServer

pytestmark = pytest.mark.slow


def gemini(tmp: Path, *install_flags: str, steps: list[h.Step] = h.STEPS) -> h.Run:
    agent = h.need("gemini-cli")
    ws = h.workspace(tmp)
    home = tmp / "home"
    (home / ".gemini").mkdir(parents=True)
    # The user's own settings (an API key login, no telemetry), which the install keeps.
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "telemetry": {"enabled": False},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    # Gemini CLI lists the server as "Disabled" in a folder the user has not trusted.
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(ws): "TRUST_FOLDER"}))
    with ModelServer(steps) as model:
        env = h.scratch_env(home, GEMINI_API_KEY="scripted-model-key", GOOGLE_GEMINI_BASE_URL=model.url)
        h.install("gemini-cli", env, ws, *install_flags)
        # yolo: Gemini CLI runs MCP tools without its own confirmation (a headless run cannot
        # confirm); filegate's approval of writes is separate.
        proc = h.run([*agent.argv, "-p", "go", "--approval-mode", "yolo"], env, ws)
    return h.Run(model.recorder, proc, ws)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> h.Run:
    return gemini(tmp_path_factory.mktemp("gemini"))


@pytest.fixture(scope="module")
def auto_run(tmp_path_factory: pytest.TempPathFactory) -> h.Run:
    return gemini(tmp_path_factory.mktemp("gemini-auto"), "--approval", "auto", steps=h.WRITE_STEPS)


def test_tool_names(run: h.Run) -> None:
    assert "mcp_filegate_ReadFile" in run.rec.tool_names, run.rec.tool_names


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


def test_headless_writes_proceed(run: h.Run) -> None:
    # Gemini CLI 0.61 declares no elicitation: filegate writes inside the workspace without
    # asking (it confirms the call itself, here by --approval-mode yolo).
    assert "successfully" in run.seen(h.WRITE).text and "successfully" in run.seen(h.EDIT).text
    assert (run.ws / "new.txt").read_text() == h.WRITTEN


def test_writes_under_approval_auto(auto_run: h.Run) -> None:
    h.check_written(auto_run, 1)
