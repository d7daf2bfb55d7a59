"""Which budgets a client gets (SPEC §4 ReadMediaFile, §9): --result-budget, then --client,
then the client's announced name; the one table, policy/budget.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from filegate.policy.budget import KIMI_BUDGET, PRESETS, Budget, budget_for
from filegate.settings import DEFAULT_RESULT_BUDGET, Settings


def settings(tmp_path: Path, **kw: object) -> Settings:
    return Settings(workdir=tmp_path, **kw)  # type: ignore[arg-type]


def test_an_explicit_budget_wins_over_preset_and_name(tmp_path: Path) -> None:
    s = settings(tmp_path, result_budget=5000, client="kimi")
    assert budget_for(s, "Kimi CLI").result == 5000 and budget_for(s, "Kimi CLI").text == 5000


@pytest.mark.parametrize(("client", "budget"), list(PRESETS.items()))
def test_a_preset_wins_over_the_announced_name(tmp_path: Path, client: str, budget: Budget) -> None:
    other = "kimi-cli" if client != "kimi" else "claude-code"
    assert budget_for(settings(tmp_path, client=client), other).result == budget.result
    assert budget_for(settings(tmp_path, client=client), other).text == budget.text


# SPEC §9's text budgets, by the clientInfo.name each client really sends (tests/agents/
# test_reach.py reads them from the newest agents; Claude Desktop's is "claude-ai").
@pytest.mark.parametrize(
    ("name", "text", "result"),
    [("claude-code", 100_000, DEFAULT_RESULT_BUDGET), ("claude-ai", 48_000, DEFAULT_RESULT_BUDGET),
     ("codex-mcp-client", 36_000, DEFAULT_RESULT_BUDGET), ("gemini-cli-mcp-client", 38_000, DEFAULT_RESULT_BUDGET),
     ("kimi-code", 48_000, 48_000), ("Kimi-Code", 48_000, 48_000),
     ("kimi-cli", KIMI_BUDGET, KIMI_BUDGET), ("Kimi CLI", KIMI_BUDGET, KIMI_BUDGET), ("MY-KIMI", KIMI_BUDGET, KIMI_BUDGET),
     ("", 48_000, DEFAULT_RESULT_BUDGET), ("kim", 48_000, DEFAULT_RESULT_BUDGET), ("mcp", 48_000, DEFAULT_RESULT_BUDGET)],
)  # fmt: skip
def test_the_announced_name_decides_last(tmp_path: Path, name: str, text: int, result: int) -> None:
    assert budget_for(settings(tmp_path), name).text == text
    assert budget_for(settings(tmp_path), name).result == result


def test_the_presets_are_spec_9s_text_budgets_and_the_media_budgets() -> None:
    assert KIMI_BUDGET == 100_000 and DEFAULT_RESULT_BUDGET == 1 << 20
    texts = {name: b.text for name, b in PRESETS.items()}
    assert texts == {"claude-code": 100_000, "claude-desktop": 48_000, "codex": 36_000, "gemini-cli": 38_000,
                     "kimi-code": 48_000, "kimi": 100_000, "generic": 48_000}  # fmt: skip
    assert PRESETS["claude-desktop"].result == DEFAULT_RESULT_BUDGET


@pytest.mark.parametrize(
    ("client", "name", "part"),
    [
        (None, "kimi-code", True),
        (None, " Kimi-Code ", True),
        (None, "kimi-cli", False),
        (None, "mcp", False),
        ("kimi-code", "mcp", True),
        ("kimi", "kimi-code", False),  # --client wins over the announced name
    ],
)
def test_only_kimi_code_gets_a_budget_per_media_part(
    tmp_path: Path, client: str | None, name: str, part: bool
) -> None:
    from filegate.policy.budget import KIMI_CODE_MEDIA_PART_CHARS

    settings = Settings(workdir=tmp_path, client=client)
    assert budget_for(settings, name).media_part == (KIMI_CODE_MEDIA_PART_CHARS if part else None)


def test_result_budget_keeps_kimi_codes_budget_per_media_part(tmp_path: Path) -> None:
    """--result-budget sets the text and the whole result; an image Kimi Code shows apart from
    the text keeps its own 10 MB."""
    from filegate.policy.budget import KIMI_CODE_MEDIA_PART_CHARS

    s = settings(tmp_path, result_budget=20_000)
    assert budget_for(s, "kimi-code").media_part == KIMI_CODE_MEDIA_PART_CHARS
    assert budget_for(s, "claude-code").media_part is None


def test_a_tool_fills_its_clients_budget_but_the_room_of_the_closing_lines() -> None:
    """1,000 characters kept for the write id, grant and notice lines; a tiny budget keeps a
    twentieth of itself, in whole characters."""
    from filegate.policy.budget import tool_text_budget

    assert tool_text_budget(100_000) == 99_000 and tool_text_budget(20_000) == 19_000
    assert tool_text_budget(1_024) == 973 and isinstance(tool_text_budget(1_024), int)
    assert tool_text_budget(19_999) == 19_000
