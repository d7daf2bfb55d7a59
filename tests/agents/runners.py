"""How each real agent is configured and run headless against filegate (tests/agents/test_agents.py
runs the same checks on each): its settings in a scratch HOME, ``filegate install`` as a user
runs it, and its scripted model. Each runner returns what the model received.

- Claude Code (``claude -p``) against the scripted Anthropic Messages endpoint.
- Codex (``codex exec``) against the scripted OpenAI Responses endpoint (a custom model provider).
- Gemini CLI (``gemini -p``) against the scripted Gemini API endpoint.
- Kimi CLI 1.51.0 (archived; its successor is Kimi Code), run with ``kimi --print`` and its own
  scripted provider ``_scripted_echo`` (KIMI-REFERENCE §11) in place of a model:
  ``--output-format stream-json`` prints each tool result as the model's context holds it.
- Kimi Code (``kimi -p``, Node 22; its built-in file tools switched off by
  ``--disable-builtins``) against the scripted OpenAI chat-completions endpoint.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.agents import harness as h
from tests.agents.model import KIMI_ERROR, ModelServer, Recorder, Seen, Step, collect

# 4 MB that does not compress. filegate sends it whole to Kimi Code (10 MB a media part), and
# Kimi Code 2.1.0 itself re-encodes any image over 3.75 MiB before its model sees it (keeping
# the size in pixels, its "Image compressed to fit model limits" note).
BIG = h.png(1000, 1000, noise=True)


def claude(
    tmp: Path,
    *install_flags: str,
    steps: list[Step] = h.STEPS,
    version: str | None = None,
    defaults: bool = False,
) -> h.Run:
    """``defaults``: Claude Code as it comes (tool search on, MCP servers connected without
    blocking the first turn); else filegate's tools listed to the model from the first turn."""
    agent = h.need("claude-code", version)
    ws = h.workspace(tmp)
    home = tmp / "home"
    log = tmp / "filegate.log"
    with ModelServer(steps) as model:
        env = h.scratch_env(
            home,
            ANTHROPIC_BASE_URL=model.url,
            ANTHROPIC_API_KEY="scripted-model-key",
            DISABLE_AUTOUPDATER="1",
            DISABLE_TELEMETRY="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            # A hang guard on connecting, as Codex's startup_timeout_sec below. Claude Code's
            # wait for its servers before the first turn is left at its default, as a user has
            # it: at load 10.5 a tools/list answered 7.39 s after filegate's spawn was in the
            # first request, 7.40 s was not, and filegate answered in 2.1-4.3 s at load 8-11
            # here (docs/CLIENTS.md).
            MCP_TIMEOUT="120000",
        )
        if not defaults:
            # Connect MCP servers before the first turn, and list their tools to the model
            # (not behind a tool search): the script needs filegate's tools at once.
            env |= {"MCP_CONNECTION_NONBLOCKING": "false", "ENABLE_TOOL_SEARCH": "false"}
        h.install("claude-code", env, ws, *install_flags, exe=h.logging_filegate(tmp / "bin", log))
        # The user allows filegate's tools for the run (as one would in settings); the
        # approval of writes is filegate's own question, which headless -p cannot answer.
        proc = h.run([*agent.argv, "-p", "go", "--allowedTools", "mcp__filegate"], env, ws)
    return h.Run(model.recorder, proc, ws, log)


def codex(
    tmp: Path,
    *install_flags: str,
    steps: list[Step] = h.STEPS,
    version: str | None = None,
    defaults: bool = False,
) -> h.Run:
    """``defaults``: Codex as it comes (its MCP servers start beside the first turn); else the
    first turn waits for filegate."""
    agent = h.need("codex", version)
    ws = h.workspace(tmp)
    home = tmp / "home"
    log = tmp / "filegate.log"
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
        h.install("codex", env, ws, *install_flags, exe=h.logging_filegate(tmp / "bin", log))
        # required: the first turn waits for filegate (else its tools come a turn late);
        # approve: Codex itself lets filegate's write tools run (codex exec's approval policy is
        # "never": without it Codex refuses them before filegate sees them).
        over = ["startup_timeout_sec=120", 'default_tools_approval_mode="approve"']
        if not defaults:
            over.insert(0, "required=true")
        flags = [a for o in over for a in ("-c", f"mcp_servers.filegate.{o}")]
        proc = h.run([*agent.argv, "exec", "--skip-git-repo-check", *flags, "go"], env, ws)
    return h.Run(model.recorder, proc, ws, log)


def gemini(
    tmp: Path,
    *install_flags: str,
    steps: list[Step] = h.STEPS,
    version: str | None = None,
    defaults: bool = False,
) -> h.Run:
    agent = h.need("gemini-cli", version)
    ws = h.workspace(tmp)
    home = tmp / "home"
    log = tmp / "filegate.log"
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
        h.install("gemini-cli", env, ws, *install_flags, exe=h.logging_filegate(tmp / "bin", log))
        # yolo: Gemini CLI runs MCP tools without its own confirmation (a headless run cannot
        # confirm); filegate's approval of writes is separate.
        proc = h.run([*agent.argv, "-p", "go", "--approval-mode", "yolo"], env, ws)
    return h.Run(model.recorder, proc, ws, log)


def kimi_cli(tmp: Path, *install_flags: str, steps: list[Step] = h.STEPS) -> h.Run:
    agent = h.need("kimi-cli")
    ws = h.workspace(tmp)
    home = tmp / "home"
    env = h.scratch_env(home)
    h.install("kimi", env, ws, *install_flags)
    # An MCP tool named like a built-in replaces it in Kimi CLI: the calls go to filegate.
    # Its scripted provider replays a script fixed before the run: no step can use a result.
    assert not any(callable(s.args) for s in steps), "Kimi CLI's script cannot use a result"
    scripts = [
        "tool_call: " + json.dumps({"id": f"call_{i}", "name": s.tool, "arguments": json.dumps(s.args)})
        for i, s in enumerate(steps)
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
    rec = Recorder(steps, raw=[proc.stdout.encode()])
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
            collect(msg.get("content"), seen)
            seen.error = KIMI_ERROR in seen.text
            by_id[msg["tool_call_id"]] = seen
    rec.results = [by_id[f"call_{i}"] for i in range(len(steps)) if f"call_{i}" in by_id]
    return h.Run(rec, proc, ws)


def kimi_code(
    tmp: Path,
    *install_flags: str,
    steps: list[Step] = h.STEPS,
    version: str | None = None,
    defaults: bool = False,
) -> h.Run:
    agent = h.need("kimi-code", version)
    ws = h.workspace(tmp, image=BIG)
    home = tmp / "home"
    log = tmp / "filegate.log"
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
        h.install("kimi-code", env, ws, *install_flags, exe=h.logging_filegate(tmp / "bin", log))
        proc = h.run([*agent.argv, "-p", "go", "--output-format", "stream-json"], env, ws)
    return h.Run(model.recorder, proc, ws, log)
