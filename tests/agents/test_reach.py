"""SPEC §9: filegate reaches the model in the newest agents, at their defaults.

Each agent (the newest versions, installs.NEWEST) runs as it comes: Claude Code with its tool
search on and its MCP servers connected without blocking the first turn, Codex with a catalogue
model (``gpt-5.5``) and its tool search, Gemini CLI and Kimi Code as installed. The scripted
model asks for a ReadFile of 1,200 lines without a window, a Grep at its cap and an edit whose
old text is found nowhere (a long error), and each result must reach the model whole: what
filegate sent is in what the model received (no file pointer, no middle cut, the summary's last
line there). What filegate sent is found by replaying the same calls in process, as the client
the agent said it was (its ``clientInfo.name``, read from filegate's own log).
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from fastmcp import Client
from mcp.types import Implementation

from filegate.policy.budget import budget_for
from filegate.server.app import build_server
from filegate.settings import Settings
from tests.agents import harness as h
from tests.agents import installs, runners
from tests.agents.model import TOOL_SEARCH

pytestmark = [pytest.mark.slow, pytest.mark.timeout(installs.INSTALL_S + h.RUN_S + 300)]

START = {
    "claude-code": runners.claude,
    "codex": runners.codex,
    "gemini-cli": runners.gemini,
    "kimi-code": runners.kimi_code,
}
INSTALL_FLAGS = {"kimi-code": ("--disable-builtins",)}
# The clientInfo.name each agent sends (read from the runs below) and the text budget it gets.
CLIENT_NAMES = {
    "claude-code": "claude-code",
    "codex": "codex-mcp-client",
    "gemini-cli": "gemini-cli-mcp-client",
    "kimi-code": "kimi-code",
}
TEXT_BUDGETS = {"claude-code": 100_000, "codex": 36_000, "gemini-cli": 38_000, "kimi-code": 48_000}


@pytest.fixture(scope="module", params=list(START))
def agent(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def run(agent: str, tmp_path_factory: pytest.TempPathFactory) -> h.Run:
    tmp = tmp_path_factory.mktemp(f"reach-{agent}")
    flags = (*INSTALL_FLAGS.get(agent, ()), "--log-level", "INFO")
    start = START[agent]
    return start(tmp, *flags, steps=h.REACH_STEPS, version=installs.NEWEST[agent], defaults=True)


@pytest.fixture(scope="module")
def sent(run: h.Run, tmp_path_factory: pytest.TempPathFactory) -> list[list[str]]:
    """What filegate sent for each step: the same calls on a fresh copy of the workspace, in
    process, as the client the agent said it was."""
    names = h.client_names(run.log) if run.log else []
    assert names, f"filegate logged no client connecting: {run.log and run.log.read_text()[-2000:]}"
    name, version = names[0]
    ws = h.workspace(tmp_path_factory.mktemp("replay"))

    async def replay() -> list[list[str]]:
        info = Implementation(name=name, version=version)
        out = []
        async with Client(build_server(Settings(workdir=ws)), client_info=info) as client:
            for step in h.REACH_STEPS:
                result = await client.call_tool(step.tool, step.arguments([]), raise_on_error=False)
                out.append([b.text for b in result.content if b.type == "text"])
        return out

    return asyncio.run(replay())


def tool_definitions(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tools a request defines in full, in any of the four formats; a deferred one
    (``defer_loading``: only its name is known to the model) is left out."""
    found: list[dict[str, Any]] = []
    for tool in body.get("tools") or []:
        if tool.get("type") == "namespace":  # Codex: a server's tools grouped
            found += [dict(t, name=tool["name"] + "__" + t.get("name", "")) for t in tool.get("tools") or []]
        elif "functionDeclarations" in tool:  # Gemini
            found += tool["functionDeclarations"]
        elif "function" in tool:  # chat completions
            found.append(tool["function"])
        else:
            found.append(tool)
    return [t for t in found if not t.get("defer_loading")]


def first_request_tools(run: h.Run) -> list[str]:
    """The names of the tools defined in full in the first request that defines any (the first
    turn of the conversation; a side request such as a title has none)."""
    for request in run.rec.requests:
        tools = tool_definitions(request["body"])
        if tools:
            return [str(t.get("name", "")) for t in tools]
    return []


def test_filegates_tools_are_in_the_first_request(agent: str, run: h.Run) -> None:
    names = first_request_tools(run)
    ours = [n for n in names if "filegate" in n and n.endswith("ReadFile")]
    if agent == "codex":
        # Codex defers every MCP tool behind its tool_search (always on; no setting of a server's
        # brings one into the first request): filegate's must be found by a search for the task
        # ("read a file", tests/agents/model.py), by its names, descriptions and instructions.
        assert not ours and TOOL_SEARCH in run.rec.tool_names, names
        found = [n for n in run.rec.tool_names if "filegate" in n and n.endswith("ReadFile")]
        assert found, f"Codex's tool search did not find filegate's ReadFile: {run.rec.tool_names}"
        return
    assert ours, f"{agent}'s first request defines no filegate tool; it defines {names}"


def test_the_agent_is_known_by_the_name_it_sends(agent: str, run: h.Run) -> None:
    names = h.client_names(run.log) if run.log else []
    assert names and names[0][0] == CLIENT_NAMES[agent], names
    assert budget_for(Settings(), names[0][0]).text == TEXT_BUDGETS[agent]


def unquoted(text: str) -> str:
    """``text`` with JSON string escapes read (``\\n`` → a line break, ``\\t`` → a tab, ``\\"``)."""
    return re.sub(r'\\(["\\/bfnrt])', lambda m: json.loads(f'"\\{m.group(1)}"'), text)


def normalized(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").splitlines()).strip()


@pytest.mark.parametrize("step", [h.READ_BIG, h.GREP_CAP, h.MISS], ids=["read", "grep-at-cap", "long-miss"])
def test_the_result_reaches_the_model_whole(agent: str, run: h.Run, sent: list[list[str]], step: int) -> None:
    seen = run.seen(step)
    # Gemini CLI quotes a failed call's text as a JSON string inside its own sentence.
    got = normalized(seen.text) + "\n" + normalized(unquoted(seen.text))
    for block in sent[step]:
        want = normalized(block)
        last = want.splitlines()[-1]
        assert last in got, (
            f"{agent}: the last line filegate sent ({last[:200]!r}) did not reach the model; it got "
            f"{len(seen.text)} characters: {seen.text[:600]!r} … {seen.text[-600:]!r}"
        )
        assert want in got, (
            f"{agent}: filegate sent {len(want)} characters, the model got {len(seen.text)}, not all "
            f"of them: {seen.text[:600]!r} … {seen.text[-600:]!r}"
        )


@pytest.mark.parametrize("step", [h.READ_BIG, h.GREP_CAP, h.MISS], ids=["read", "grep-at-cap", "long-miss"])
def test_the_result_fits_the_clients_budget(agent: str, sent: list[list[str]], step: int) -> None:
    assert sum(len(t) for t in sent[step]) <= TEXT_BUDGETS[agent], [len(t) for t in sent[step]]


def test_report(agent: str, run: h.Run, sent: list[list[str]]) -> None:
    """Not a check: what each step sent and what reached the model (``-s`` prints it)."""
    names = h.client_names(run.log) if run.log else []
    rows = {
        "client": names,
        "first request": [n for n in first_request_tools(run) if "filegate" in n],
        "steps": [
            {
                "sent": [len(t) for t in sent[i]],
                "received": len(run.seen(i).text) if len(run.rec.results) > i else None,
            }
            for i in range(len(h.REACH_STEPS))
        ],
    }
    print(f"\n{agent}: {json.dumps(rows)}")


# --- a routed Claude Code (install --route-builtins): its own file tools off, filegate's used ---


@pytest.fixture(scope="module")
def routed(tmp_path_factory: pytest.TempPathFactory) -> h.Run:
    tmp = tmp_path_factory.mktemp("routed-claude-code")
    steps = [h.STEPS[h.READ], h.STEPS[h.EDIT]]
    flags = ("--route-builtins", "--approval", "auto")
    return runners.claude(tmp, *flags, steps=steps, version=installs.NEWEST["claude-code"], defaults=True)


def test_a_routed_claude_code_reads_and_writes_through_filegate(routed: h.Run) -> None:
    """SPEC §8.5/§9: the tool-only deny rules switch Claude Code's Read/Edit/Write off and bind
    nothing of filegate's: its read and its edit go through filegate and land."""
    names = first_request_tools(routed)
    assert not {"Read", "Edit", "Write", "Glob", "Grep"} & set(names), names
    assert "mcp__filegate__ReadFile" in names and "mcp__filegate__StrReplaceFile" in names, names
    h.check_read(routed.seen(0))
    edited = routed.seen(1)
    assert not edited.error and "successfully" in edited.text, edited.text
    assert "crane flies" in (routed.ws / "notes.txt").read_text()
