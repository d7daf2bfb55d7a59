"""Real agents, configured by ``filegate install`` and run headless against a scripted model
(tests/agents/runners.py): what each one's model receives from filegate. The same checks run on
every agent; where agents differ (their tool names, what a headless run does with filegate's
question), each test says which agents it is for.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from PIL import Image

from tests.agents import harness as h
from tests.agents import installs, runners


@dataclass(frozen=True)
class AgentUnderTest:
    name: str
    start: Callable[..., h.Run]  # (tmp, *install flags, steps=…) -> what the model received
    install_flags: tuple[str, ...] = ()


AGENTS = {
    a.name: a
    for a in (
        AgentUnderTest("claude-code", runners.claude),
        AgentUnderTest("codex", runners.codex),
        AgentUnderTest("gemini-cli", runners.gemini),
        AgentUnderTest("kimi-cli", runners.kimi_cli),
        AgentUnderTest("kimi-code", runners.kimi_code, ("--disable-builtins",)),
    )
}
# The agents that ask filegate's question (they declare elicitation), and so get a second run
# with --approval auto.
ASKING = ["claude-code", "codex", "gemini-cli"]

# Each agent's run takes its install (once) and up to two runs of RUN_S each.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(installs.INSTALL_S + 2 * h.RUN_S + 300)]


def for_agents(*names: str) -> pytest.MarkDecorator:
    return pytest.mark.parametrize("agent", list(names or AGENTS), indirect=True)


@pytest.fixture(scope="module")
def agent(request: pytest.FixtureRequest) -> AgentUnderTest:
    return AGENTS[request.param]


@pytest.fixture(scope="module")
def run(agent: AgentUnderTest, tmp_path_factory: pytest.TempPathFactory) -> h.Run:
    return agent.start(tmp_path_factory.mktemp(agent.name), *agent.install_flags)


@pytest.fixture(scope="module")
def auto_run(agent: AgentUnderTest, tmp_path_factory: pytest.TempPathFactory) -> h.Run:
    tmp = tmp_path_factory.mktemp(f"{agent.name}-auto")
    return agent.start(tmp, *agent.install_flags, "--approval", "auto", steps=h.WRITE_STEPS)


def unattended(agent: AgentUnderTest) -> tuple[str, ...]:
    """Install flags for a run whose writes must land: an asking agent's headless run declines
    filegate's question, so it gets --approval auto."""
    return (*agent.install_flags, *(("--approval", "auto") if agent.name in ASKING else ()))


@pytest.fixture(scope="module")
def ladder_run(agent: AgentUnderTest, tmp_path_factory: pytest.TempPathFactory) -> h.Run:
    tmp = tmp_path_factory.mktemp(f"{agent.name}-ladder")
    return agent.start(tmp, *unattended(agent), steps=h.LADDER_STEPS)


@pytest.fixture(scope="module")
def undo_run(agent: AgentUnderTest, tmp_path_factory: pytest.TempPathFactory) -> h.Run:
    tmp = tmp_path_factory.mktemp(f"{agent.name}-undo")
    return agent.start(tmp, *unattended(agent), steps=h.UNDO_STEPS)


@pytest.fixture(scope="module")
def patch_run(agent: AgentUnderTest, tmp_path_factory: pytest.TempPathFactory) -> h.Run:
    tmp = tmp_path_factory.mktemp(f"{agent.name}-patch")
    args = {"patch": h.PATCH_V4A} if agent.name == "codex" else {"changes": h.PATCH_CHANGES}
    return agent.start(tmp, *unattended(agent), steps=h.patch_steps(args))


@pytest.fixture(scope="module")
def rewind_run(agent: AgentUnderTest, tmp_path_factory: pytest.TempPathFactory) -> h.Run:
    tmp = tmp_path_factory.mktemp(f"{agent.name}-rewind")
    return agent.start(tmp, *unattended(agent), steps=h.REWIND_STEPS)


@pytest.fixture(scope="module")
def document_run(agent: AgentUnderTest, tmp_path_factory: pytest.TempPathFactory) -> h.Run:
    tmp = tmp_path_factory.mktemp(f"{agent.name}-documents")
    return agent.start(tmp, *agent.install_flags, steps=h.DOCUMENT_STEPS)


# --- every agent ----------------------------------------------------------------------------


@for_agents()
def test_read_file(run: h.Run) -> None:
    h.check_read(run.seen(h.READ))


@for_agents()
def test_glob(run: h.Run) -> None:
    h.check_glob(run.seen(h.GLOB))


@for_agents()
def test_grep(run: h.Run) -> None:
    h.check_grep(run.seen(h.GREP))


@for_agents()
def test_env_refused(run: h.Run) -> None:
    h.check_env_refused(run)


@for_agents()
def test_image(run: h.Run) -> None:
    h.check_image(run)


# The agents whose model is told, beside the text, that a call failed. Codex 0.169 tells it by
# the text alone (tests/agents/model.py responses_state).
MARK_FAILURES = ["claude-code", "gemini-cli", "kimi-cli", "kimi-code"]


@for_agents(*MARK_FAILURES)
def test_a_refused_read_reaches_the_model_as_a_failed_call(run: h.Run) -> None:
    assert run.seen(h.ENV).error, run.seen(h.ENV).text
    assert not run.seen(h.READ).error, run.seen(h.READ).text


@for_agents("codex")
def test_codex_sends_a_failed_call_like_a_success(run: h.Run) -> None:
    # Why Codex is not in MARK_FAILURES: the refused read's item has the same fields as the
    # successful read's, and its text parts only. A Codex that adds a marker fails here, and
    # model.responses_state should then read it.
    last = [r["body"] for r in run.rec.requests if r["path"].endswith("/responses")][-1]
    outputs = [i for i in last["input"] if i.get("type") == "function_call_output"]
    read, refused = outputs[h.READ], outputs[h.ENV]
    assert set(refused) == set(read) == {"type", "id", "call_id", "output"}, (read, refused)
    assert {part["type"] for part in refused["output"]} == {"input_text"}, refused
    assert "blocked to protect credentials" in refused["output"][-1]["text"], refused


# How each agent names filegate's ReadFile to its model.
READ_FILE_NAMES = {
    "claude-code": "mcp__filegate__ReadFile",
    "codex": "mcp__filegate__ReadFile",
    "gemini-cli": "mcp_filegate_ReadFile",
}


@for_agents(*READ_FILE_NAMES)
def test_tool_names(agent: AgentUnderTest, run: h.Run) -> None:
    assert READ_FILE_NAMES[agent.name] in run.rec.tool_names, run.rec.tool_names


# --- a headless run: filegate's question, and writes ----------------------------------------


@for_agents("claude-code")
def test_headless_write_is_declined(run: h.Run) -> None:
    # claude -p answers filegate's question with "cancel": nothing is written.
    check_nothing_written(run, "cancelled", error=True)


@for_agents("codex")
def test_headless_write_is_rejected(run: h.Run) -> None:
    # codex exec declines filegate's question: nothing is written.
    check_nothing_written(run, "rejected by the user")


def check_nothing_written(run: h.Run, said: str, error: bool = False) -> None:
    for step in (h.WRITE, h.EDIT):
        seen = run.seen(step)
        assert said in seen.text and (seen.error or not error), seen.text
    assert not (run.ws / "new.txt").exists()
    assert h.DISTINCTIVE in (run.ws / "notes.txt").read_text()


@for_agents("gemini-cli")
def test_headless_writes_proceed(run: h.Run) -> None:
    # Gemini CLI 0.61 declares no elicitation: filegate writes inside the workspace without
    # asking (it confirms the call itself, here by --approval-mode yolo).
    assert "Created `new.txt`." in run.seen(h.WRITE).text and "successfully" in run.seen(h.EDIT).text
    assert (run.ws / "new.txt").read_text() == h.WRITTEN


@for_agents("kimi-cli", "kimi-code")
def test_writes_proceed_without_elicitation(run: h.Run) -> None:
    # Kimi CLI and Kimi Code declare no elicitation (Kimi CLI asks its own question,
    # auto-approved by --yolo): filegate writes inside the workspace without asking.
    h.check_written(run, h.WRITE)


@for_agents(*ASKING)
def test_writes_under_approval_auto(auto_run: h.Run) -> None:
    h.check_written(auto_run, 1, told=False)


@for_agents(*ASKING)
def test_the_model_is_told_the_writes_happened(auto_run: h.Run) -> None:
    h.check_written(auto_run, 1)


# --- edits that land, and undo (SPEC §8.2, §8.4) ---------------------------------------------


@for_agents("claude-code", "codex")
def test_space_indented_edit_of_a_tab_indented_file_lands(ladder_run: h.Run) -> None:
    # A model's usual edit of a Go file: the lines it read, indented with spaces. It lands on
    # the first try, written with tabs, and the model is told what was tolerated and where.
    h.check_ladder_edit(ladder_run)


@for_agents("claude-code", "kimi-code")
def test_undo_restores_the_write_and_the_model_is_told(undo_run: h.Run) -> None:
    # The model undoes its edit by the write id the edit's message ended with.
    h.check_undone(undo_run)


@for_agents("codex", "claude-code")
def test_a_three_file_set_lands_and_its_undo_restores_all_three(patch_run: h.Run) -> None:
    # Codex's model sends the V4A envelope, Claude Code's the changes list (SPEC §10).
    h.check_patched_and_undone(patch_run)


@for_agents("claude-code", "kimi-code")
def test_changes_shows_three_writes_and_a_rewind_restores_all_three(rewind_run: h.Run) -> None:
    # SPEC §10: the review and the rewind, by the id the first write's message ended with.
    h.check_reviewed_and_rewound(rewind_run)


# --- documents (SPEC §8.6) ----------------------------------------------------------------


@for_agents()
def test_a_notebook_reaches_the_model_as_cells(document_run: h.Run) -> None:
    # Cell headers and sources, the error's last line without its colour codes, and the
    # image output as one line: not the JSON, not the base64.
    h.check_notebook(document_run)


@for_agents()
def test_one_pdf_page_reaches_the_model_as_its_text(document_run: h.Run) -> None:
    # pages="2": page 2's text under its marker, nothing of pages 1 and 3.
    h.check_pdf_page(document_run)


# --- Kimi Code: its own built-ins off, text blocks and budgets --------------------------------

BUILTINS = ["Read", "Write", "Edit", "Grep", "Glob", "ReadMediaFile"]


@for_agents("kimi-code")
def test_tools_are_filegates_and_not_the_builtins(run: h.Run) -> None:
    names = run.rec.tool_names
    assert {f"mcp__filegate__{t}" for t in ("ReadFile", "Glob", "Grep", "ReadMediaFile")} <= set(names), names
    assert not set(BUILTINS) & set(names), names


@for_agents("kimi-code")
def test_text_blocks_do_not_run_together(run: h.Run) -> None:
    assert "src/a.py\n" in run.seen(h.GLOB).text, run.seen(h.GLOB).text
    assert h.GREP_LINE + "\n" in run.seen(h.GREP).text, run.seen(h.GREP).text


@for_agents("kimi-code")
def test_text_within_kimi_codes_budget(run: h.Run) -> None:
    for step in (h.READ, h.GLOB, h.GREP, h.ENV):
        assert len(run.seen(step).text) <= 100_000


@for_agents("kimi-code")
def test_the_whole_image_reaches_the_model(run: h.Run) -> None:
    h.check_image(run)
    seen = run.seen(h.MEDIA)
    assert f"{len(runners.BIG)} bytes, original size 1000x1000px)" in seen.text, (
        seen.text
    )  # not "returned as"
    with Image.open(io.BytesIO(seen.images[0])) as got:
        assert got.size == (1000, 1000)
