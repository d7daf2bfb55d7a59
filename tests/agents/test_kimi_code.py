"""Kimi Code, configured by ``filegate install kimi-code`` (its built-in file tools switched off
by ``--disable-builtins``), run headless (``kimi -p``) on Node 22 against the scripted OpenAI
chat-completions endpoint: what its model receives from filegate."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from tests.agents import harness as h
from tests.agents.model import ModelServer

pytestmark = pytest.mark.slow

BUILTINS = ["Read", "Write", "Edit", "Grep", "Glob", "ReadMediaFile"]
# 4 MB that does not compress. filegate sends it whole to Kimi Code (10 MB a media part), and
# Kimi Code 2.1.0 itself re-encodes any image over 3.75 MiB before its model sees it (keeping
# the size in pixels, its "Image compressed to fit model limits" note).
BIG = h.png(1000, 1000, noise=True)


def kimi_code(tmp: Path, *install_flags: str, steps: list[h.Step] = h.STEPS) -> h.Run:
    agent = h.need("kimi-code")
    ws = h.workspace(tmp, image=BIG)
    home = tmp / "home"
    with ModelServer(steps) as model:
        env = h.scratch_env(
            home,
            KIMI_CODE_HOME=str(home / ".kimi-code"),
            # Kimi Code's own way to name a model by environment: its kimi provider (OpenAI
            # chat completions) at the scripted endpoint, able to take images.
            KIMI_MODEL_NAME="scripted",
            KIMI_MODEL_API_KEY="scripted-model-key",
            KIMI_MODEL_PROVIDER_TYPE="kimi",
            KIMI_MODEL_BASE_URL=model.url + "/v1",
            KIMI_MODEL_CAPABILITIES="image_in",
            KIMI_MODEL_MAX_CONTEXT_SIZE="2000000",
            KIMI_DISABLE_TELEMETRY="1",
        )
        h.install("kimi-code", env, ws, *install_flags)
        proc = h.run([*agent.argv, "-p", "go", "--output-format", "stream-json"], env, ws)
    return h.Run(model.recorder, proc, ws)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> h.Run:
    return kimi_code(tmp_path_factory.mktemp("kimi-code"), "--disable-builtins")


def test_tools_are_filegates_and_not_the_builtins(run: h.Run) -> None:
    names = run.rec.tool_names
    assert {f"mcp__filegate__{t}" for t in ("ReadFile", "Glob", "Grep", "ReadMediaFile")} <= set(names), names
    assert not set(BUILTINS) & set(names), names


def test_read_file(run: h.Run) -> None:
    h.check_read(run.seen(h.READ))


def test_glob(run: h.Run) -> None:
    h.check_glob(run.seen(h.GLOB))


def test_grep(run: h.Run) -> None:
    h.check_grep(run.seen(h.GREP))


def test_env_refused(run: h.Run) -> None:
    h.check_env_refused(run)


def test_text_blocks_do_not_run_together(run: h.Run) -> None:
    assert "src/a.py\n" in run.seen(h.GLOB).text, run.seen(h.GLOB).text
    assert h.GREP_LINE + "\n" in run.seen(h.GREP).text, run.seen(h.GREP).text


def test_text_within_kimi_codes_budget(run: h.Run) -> None:
    for step in (h.READ, h.GLOB, h.GREP, h.ENV):
        assert len(run.seen(step).text) <= 100_000


def test_the_whole_image_reaches_the_model(run: h.Run) -> None:
    h.check_image(run)
    seen = run.seen(h.MEDIA)
    assert f"{len(BIG)} bytes, original size 1000x1000px)" in seen.text, seen.text  # not "returned as"
    with Image.open(io.BytesIO(seen.images[0])) as got:
        assert got.size == (1000, 1000)


def test_writes_proceed_without_elicitation(run: h.Run) -> None:
    # Kimi Code declares no elicitation: filegate writes inside the workspace without asking.
    h.check_written(run, h.WRITE)
