"""How much one tool result may weigh, per client (SPEC §4 ReadMediaFile, §9): the one table.

Two numbers per client. The **text budget** is what the client shows its model whole (SPEC §9):
past it a client saves the text to a file and shows a pointer (Claude Code, Kimi Code), cuts it
in the middle (Codex, Gemini CLI) or drops it. The **result budget** is what one whole result
may weigh, base64 included (SPEC §4): media are fitted to it. Kimi Code's media parts have a
budget each, apart from the text.
"""

from __future__ import annotations

from dataclasses import dataclass

from filegate.settings import DEFAULT_RESULT_BUDGET, Settings

# Kimi CLI drops any MCP result part past 100,000 characters, base64 included
# (MCP_MAX_OUTPUT_CHARS); Claude Desktop refuses a tool result over 1 MiB.
KIMI_BUDGET = 100_000
# Kimi Code gives each media part its own 10 MiB (MCP_MAX_BINARY_PART_BYTES, compared as the
# data URL's base64 characters): an image does not share the text's budget.
KIMI_CODE_MEDIA_PART_CHARS = -(-(10 << 20) * 4 // 3)

# Text budgets (SPEC §9), each from what the client was seen to do with a larger text:
# Claude Code saves a text over 50,000 characters to a file unless the tool declares
# `anthropic/maxResultSizeChars` (server/app.py declares this one); Claude Desktop drops
# per-tool `_meta`, so it is not told; Codex cuts a result's first text block in the middle at
# ~10,000 tokens and drops every later block; Kimi Code saves a result over 50,000 characters of
# text to a file; Gemini CLI cuts a single block over 40,000 characters to its head and tail.
CLAUDE_CODE_TEXT = 100_000
CODEX_TEXT = 36_000
KIMI_CODE_TEXT = 48_000
GEMINI_CLI_TEXT = 38_000
OTHER_TEXT = 48_000


@dataclass(frozen=True, slots=True)
class Budget:
    text: int  # characters of text one result may have, every text block together
    result: int  # characters of the whole result, base64 included (for Kimi Code: its text)
    media_part: int | None = None  # base64 characters one media part may take on its own


PRESETS: dict[str, Budget] = {
    "claude-code": Budget(CLAUDE_CODE_TEXT, DEFAULT_RESULT_BUDGET),
    "claude-desktop": Budget(OTHER_TEXT, DEFAULT_RESULT_BUDGET),
    "codex": Budget(CODEX_TEXT, DEFAULT_RESULT_BUDGET),
    "gemini-cli": Budget(GEMINI_CLI_TEXT, DEFAULT_RESULT_BUDGET),
    "kimi-code": Budget(KIMI_CODE_TEXT, KIMI_CODE_TEXT, KIMI_CODE_MEDIA_PART_CHARS),
    # Kimi CLI (archived) shows a part whole up to its own cut: what its built-ins return.
    "kimi": Budget(KIMI_BUDGET, KIMI_BUDGET),
    "generic": Budget(OTHER_TEXT, DEFAULT_RESULT_BUDGET),
}
# The clientInfo.name each client really sends (read from the real agents: tests/agents/
# test_reach.py; Claude Desktop's from its MCP logs), folded to lower case.
CLIENT_NAMES = {
    "claude-code": "claude-code",
    "claude-ai": "claude-desktop",
    "codex-mcp-client": "codex",
    "gemini-cli-mcp-client": "gemini-cli",
    "kimi-code": "kimi-code",
}
# SPEC §9: an error text stays under this many characters (Claude Code cuts one over ~11,000 to
# its first and last 5,000).
ERROR_CHARS = 10_000
# Room kept in the text budget for the lines server/render.py ends a result with (the write id,
# a grant line, the change notice of at most five names): tools fill the rest. A tiny budget
# (--result-budget 1024) keeps a twentieth of itself.
TRAILER_CHARS = 1_000


def tool_text_budget(text: int) -> int:
    """The characters a tool may fill of a client's text budget ``text``."""
    return text - min(TRAILER_CHARS, text // 20)


# Media files over this are refused before anything else (Kimi's MAX_MEDIA_MEGABYTES).
MAX_MEDIA_BYTES = 100 << 20


def preset_of(settings: Settings, client_name: str) -> str:
    """``--client`` wins, then the client's announced name; "generic" for any other."""
    if settings.client is not None:
        return settings.client
    name = client_name.strip().lower()
    if name in CLIENT_NAMES:
        return CLIENT_NAMES[name]
    return "kimi" if "kimi" in name else "generic"


def budget_for(settings: Settings, client_name: str) -> Budget:
    """The client's budgets; ``--result-budget`` sets the text and the whole result alike (the
    user knows their client)."""
    budget = PRESETS[preset_of(settings, client_name)]
    if settings.result_budget is None:
        return budget
    return Budget(settings.result_budget, settings.result_budget, budget.media_part)
