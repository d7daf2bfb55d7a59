"""How much one tool result may weigh, per client (SPEC §4 ReadMediaFile)."""

from __future__ import annotations

from filegate.settings import DEFAULT_RESULT_BUDGET, Settings

# Kimi CLI drops any MCP result part past 100,000 characters, base64 included
# (MCP_MAX_OUTPUT_CHARS); Claude Desktop refuses a tool result over 1 MiB.
KIMI_BUDGET = 100_000
PRESETS = {
    "kimi": KIMI_BUDGET,
    "claude-desktop": DEFAULT_RESULT_BUDGET,
    "claude-code": DEFAULT_RESULT_BUDGET,
    "generic": DEFAULT_RESULT_BUDGET,
}
# Media files over this are refused before anything else (Kimi's MAX_MEDIA_MEGABYTES).
MAX_MEDIA_BYTES = 100 << 20


def result_budget_for(settings: Settings, client_name: str) -> int:
    """``--result-budget`` wins, then ``--client``, then the client's announced name."""
    if settings.result_budget is not None:
        return settings.result_budget
    if settings.client is not None:
        return PRESETS[settings.client]
    name = client_name.lower()
    if "kimi" in name:
        return KIMI_BUDGET
    return DEFAULT_RESULT_BUDGET
