"""Kimi CLI 1.51.0 (archived; its successor is Kimi Code), configured by ``filegate install
kimi``, run headless (``kimi --print``) with its own scripted provider ``_scripted_echo``
(KIMI-REFERENCE §11) in place of a model: ``--output-format stream-json`` prints each tool
result as the model's context holds it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents import harness as h
from tests.agents.model import Recorder, Seen, _collect

pytestmark = pytest.mark.slow


def kimi_cli(tmp: Path) -> h.Run:
    agent = h.need("kimi-cli")
    ws = h.workspace(tmp)
    home = tmp / "home"
    env = h.scratch_env(home)
    h.install("kimi", env, ws)
    # An MCP tool named like a built-in replaces it in Kimi CLI: the calls go to filegate.
    scripts = [
        "tool_call: " + json.dumps({"id": f"call_{i}", "name": s.tool, "arguments": json.dumps(s.args)})
        for i, s in enumerate(h.STEPS)
    ] + ["text: done"]
    (home / "scripts.json").write_text(json.dumps(scripts))
    provider = {"type": "_scripted_echo", "base_url": "", "api_key": "",
                "env": {"KIMI_SCRIPTED_ECHO_SCRIPTS": str(home / "scripts.json")}}  # fmt: skip
    model = {"provider": "p", "model": "scripted_echo", "max_context_size": 50_000_000,
             "capabilities": ["image_in", "video_in"]}  # fmt: skip
    cfg = {"default_model": "s", "models": {"s": model}, "providers": {"p": provider}}
    (home / "cfg.json").write_text(json.dumps(cfg))
    argv = [*agent.argv, "--print", "--yolo", "--config-file", str(home / "cfg.json"),
            "--work-dir", str(ws), "-p", "go", "--output-format", "stream-json"]  # fmt: skip
    proc = h.run(argv, env, ws)
    rec = Recorder(h.STEPS, raw=[proc.stdout.encode()])
    by_id: dict[str, Seen] = {}
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("role") == "assistant":
            rec.tool_names += [c["function"]["name"] for c in msg.get("tool_calls") or []]
        if msg.get("role") == "tool":
            seen = Seen()
            _collect(msg.get("content"), seen)
            seen.error = "<system>ERROR:" in seen.text
            by_id[msg["tool_call_id"]] = seen
    rec.results = [by_id[f"call_{i}"] for i in range(len(h.STEPS)) if f"call_{i}" in by_id]
    return h.Run(rec, proc, ws)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> h.Run:
    return kimi_cli(tmp_path_factory.mktemp("kimi-cli"))


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


def test_writes_proceed_without_elicitation(run: h.Run) -> None:
    # Kimi CLI declares no elicitation (it asks its own question, auto-approved by --yolo).
    h.check_written(run, h.WRITE)
