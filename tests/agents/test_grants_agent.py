"""Grants (SPEC §11) with a real agent that answers filegate's form headless.

Claude Code is the one agent here that can: a headless ``claude -p`` cancels every MCP
elicitation (tests/agents/test_agents.py), but its ``Elicitation`` hook (a command in the user's
settings, given the question and its form) may answer it instead. The hook here records what
Claude Code hands it and answers "approve edits under the folder" when offered, else "approve".
Codex (``codex exec``) declines every question; Gemini CLI 0.61, Kimi CLI and Kimi Code declare
no elicitation at all, so none of them can grant anything (their writes inside the workspace go
unasked under ``--approval ask``, outside ones are refused).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.agents import harness as h
from tests.agents import installs
from tests.agents.model import ModelServer, Step

pytestmark = [pytest.mark.slow, pytest.mark.timeout(installs.INSTALL_S + h.RUN_S + 300)]

HOOK = """
import json, sys
asked = json.load(sys.stdin)
with open(sys.argv[1], "a") as log:
    log.write(json.dumps(asked) + "\\n")
offered = asked.get("requested_schema", {}).get("properties", {}).get("decision", {}).get("enum", [])
choice = "approve_folder" if "approve_folder" in offered else "approve"
print(json.dumps({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept",
                                         "content": {"decision": choice}}}))
"""

# Three writes under src/, then one outside it (each a new file: no read needed first).
STEPS = [
    Step("WriteFile", {"path": "src/one.py", "content": "one = 1\n"}),
    Step("WriteFile", {"path": "src/pkg/two.py", "content": "two = 2\n", "create_dirs": True}),
    Step("WriteFile", {"path": "src/three.py", "content": "three = 3\n"}),
    Step("WriteFile", {"path": "docs/four.md", "content": "four\n", "create_dirs": True}),
]


def test_claude_code_answering_by_its_elicitation_hook_is_asked_once_for_three_edits_under_src(
    tmp_path: Path,
) -> None:
    agent = h.need("claude-code")
    ws = h.workspace(tmp_path)
    home = tmp_path / "home"
    asked = tmp_path / "asked.jsonl"
    (tmp_path / "hook.py").write_text(HOOK)
    command = f"{sys.executable} {tmp_path / 'hook.py'} {asked}"
    hooks = {"Elicitation": [{"matcher": "filegate", "hooks": [{"type": "command", "command": command}]}]}
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    with ModelServer(STEPS) as model:
        env = h.scratch_env(
            home,
            ANTHROPIC_BASE_URL=model.url,
            ANTHROPIC_API_KEY="scripted-model-key",
            DISABLE_AUTOUPDATER="1",
            DISABLE_TELEMETRY="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            MCP_CONNECTION_NONBLOCKING="false",
            ENABLE_TOOL_SEARCH="false",
            MCP_TIMEOUT="120000",
        )
        h.install("claude-code", env, ws)
        proc = h.run([*agent.argv, "-p", "go", "--allowedTools", "mcp__filegate"], env, ws)
    run = h.Run(model.recorder, proc, ws)
    for step in range(len(STEPS)):
        seen = run.seen(step)
        assert not seen.error and "Write id:" in seen.text, seen.text
    questions = [json.loads(line) for line in asked.read_text().splitlines()]
    # Asked for the first write (the grant given) and for the one outside src/ only.
    assert [q["message"].splitlines()[0] for q in questions] == [
        "Inside the workspace: WriteFile wants to create `src/one.py`.",
        "Inside the workspace: WriteFile wants to create `docs/four.md`.",
    ], questions
    decision = questions[0]["requested_schema"]["properties"]["decision"]
    assert dict(zip(decision["enum"], decision["enumNames"], strict=True)) == {
        "approve": "Approve this write",
        "approve_file": "Approve this file for this session",
        "approve_folder": "Approve edits under `src/` for this session",
        "approve_for_session": "Approve all writes inside the workspace for this session",
        "reject": "Reject",
    }
    assert [p.read_text() for p in (ws / "src" / "three.py", ws / "docs" / "four.md")] == [
        "three = 3\n",
        "four\n",
    ]
