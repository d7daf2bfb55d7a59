"""Codex, configured by ``filegate install codex``, run headless (``codex exec``) against the
scripted OpenAI Responses endpoint (a custom model provider): what its model receives."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents import harness as h
from tests.agents.model import ModelServer

pytestmark = pytest.mark.slow


def codex(tmp: Path, *install_flags: str, steps: list[h.Step] = h.STEPS) -> h.Run:
    agent = h.need("codex")
    ws = h.workspace(tmp)
    home = tmp / "home"
    with ModelServer(steps) as model:
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True)
        # The model provider is the user's; filegate install merges its table beside it.
        (codex_home / "config.toml").write_text(
            'model = "gpt-5.5"\nmodel_provider = "scripted"\n'
            # No analytics or metrics: nothing leaves this machine (they go to chatgpt.com).
            '\n[analytics]\nenabled = false\n\n[otel]\nexporter = "none"\nmetrics_exporter = "none"\n\n'
            "[model_providers.scripted]\n"
            f'name = "scripted model"\nbase_url = "{model.url}/v1"\nwire_api = "responses"\n'
            'env_key = "SCRIPTED_MODEL_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
        )
        env = h.scratch_env(home, CODEX_HOME=str(codex_home), SCRIPTED_MODEL_KEY="scripted-model-key")
        h.install("codex", env, ws, *install_flags)
        # required: the first turn waits for filegate (else its tools come a turn late);
        # approve: Codex itself lets filegate's write tools run (codex exec's approval policy is
        # "never": without it Codex refuses them before filegate sees them).
        over = ["required=true", "startup_timeout_sec=120", 'default_tools_approval_mode="approve"']
        flags = [a for o in over for a in ("-c", f"mcp_servers.filegate.{o}")]
        proc = h.run([*agent.argv, "exec", "--skip-git-repo-check", *flags, "go"], env, ws)
    return h.Run(model.recorder, proc, ws)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> h.Run:
    return codex(tmp_path_factory.mktemp("codex"))


@pytest.fixture(scope="module")
def auto_run(tmp_path_factory: pytest.TempPathFactory) -> h.Run:
    return codex(tmp_path_factory.mktemp("codex-auto"), "--approval", "auto", steps=h.WRITE_STEPS)


def test_tool_names(run: h.Run) -> None:
    assert "mcp__filegate__ReadFile" in run.rec.tool_names, run.rec.tool_names


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


def test_headless_write_is_rejected(run: h.Run) -> None:
    # codex exec declines filegate's question: nothing is written.
    for step in (h.WRITE, h.EDIT):
        seen = run.seen(step)
        assert "rejected by the user" in seen.text, seen.text
    assert not (run.ws / "new.txt").exists()
    assert h.DISTINCTIVE in (run.ws / "notes.txt").read_text()


def test_writes_under_approval_auto(auto_run: h.Run) -> None:
    h.check_written(auto_run, 1, told=False)


def test_the_model_is_told_the_writes_happened(auto_run: h.Run) -> None:
    h.check_written(auto_run, 1)
