"""Which result budget a client gets (SPEC §4 ReadMediaFile): --result-budget, then --client,
then the client's announced name."""

from __future__ import annotations

from pathlib import Path

import pytest

from filegate.policy.budget import KIMI_BUDGET, PRESETS, result_budget_for
from filegate.settings import DEFAULT_RESULT_BUDGET, Settings


def settings(tmp_path: Path, **kw: object) -> Settings:
    return Settings(workdir=tmp_path, **kw)  # type: ignore[arg-type]


def test_an_explicit_budget_wins_over_preset_and_name(tmp_path: Path) -> None:
    s = settings(tmp_path, result_budget=5000, client="kimi")
    assert result_budget_for(s, "Kimi CLI") == 5000


@pytest.mark.parametrize(("client", "budget"), list(PRESETS.items()))
def test_a_preset_wins_over_the_announced_name(tmp_path: Path, client: str, budget: int) -> None:
    other = "kimi-cli" if client != "kimi" else "claude-code"
    assert result_budget_for(settings(tmp_path, client=client), other) == budget


@pytest.mark.parametrize(
    ("name", "budget"),
    [("kimi-cli", KIMI_BUDGET), ("Kimi CLI", KIMI_BUDGET), ("MY-KIMI", KIMI_BUDGET),
     ("claude-ai", DEFAULT_RESULT_BUDGET), ("", DEFAULT_RESULT_BUDGET), ("kim", DEFAULT_RESULT_BUDGET)],
)  # fmt: skip
def test_the_announced_name_decides_last(tmp_path: Path, name: str, budget: int) -> None:
    assert result_budget_for(settings(tmp_path), name) == budget


def test_the_presets_are_kimis_100000_characters_and_1_mib() -> None:
    assert KIMI_BUDGET == 100_000 and DEFAULT_RESULT_BUDGET == 1 << 20
    assert PRESETS["kimi"] == KIMI_BUDGET and PRESETS["claude-desktop"] == DEFAULT_RESULT_BUDGET


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
    from filegate.policy.budget import KIMI_CODE_MEDIA_PART_CHARS, media_part_budget_for

    settings = Settings(workdir=tmp_path, client=client)
    assert media_part_budget_for(settings, name) == (KIMI_CODE_MEDIA_PART_CHARS if part else None)
