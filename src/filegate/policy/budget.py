"""How much one tool result may weigh, per client (SPEC §4 ReadMediaFile)."""

from __future__ import annotations

from filegate.settings import DEFAULT_RESULT_BUDGET, Settings

# Kimi CLI drops any MCP result part past 100,000 characters, base64 included
# (MCP_MAX_OUTPUT_CHARS); Claude Desktop refuses a tool result over 1 MiB.
KIMI_BUDGET = 100_000
# Kimi Code caps the text at 100,000 characters too, but gives each media part its own
# 10 MiB (MCP_MAX_BINARY_PART_BYTES, compared as the data URL's base64 characters): an image
# does not share the text's budget.
KIMI_CODE_MEDIA_PART_CHARS = -(-(10 << 20) * 4 // 3)
PRESETS = {
    "kimi": KIMI_BUDGET,
    "kimi-code": KIMI_BUDGET,
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


def is_kimi_code(settings: Settings, client_name: str) -> bool:
    """``--client kimi-code``, or no ``--client`` and a client that announces itself so."""
    if settings.client is not None:
        return settings.client == "kimi-code"
    return client_name.strip().lower() == "kimi-code"


def media_part_budget_for(settings: Settings, client_name: str) -> int | None:
    """Base64 characters each media part may take on its own; None when media share the
    result budget (every client but Kimi Code)."""
    return KIMI_CODE_MEDIA_PART_CHARS if is_kimi_code(settings, client_name) else None
