"""The refusal family (filegate.errors) and its one way into a tool result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from filegate.errors import Busy, EditFailed, MediaError, PathError, Refusal, WriteError
from filegate.tools.outcome import Outcome, answer


@pytest.mark.parametrize(
    ("cls", "brief"),
    [
        (PathError, "Invalid path"),
        (WriteError, "Failed to write file"),
        (EditFailed, "Failed to edit file"),
        (MediaError, "Failed to read file"),
        (Busy, "Server busy"),
    ],
)
def test_each_refusal_has_its_default_brief_and_is_a_refusal(cls: type[Refusal], brief: str) -> None:
    exc = cls("the sentence.")
    assert isinstance(exc, Refusal)
    assert (str(exc), exc.message, exc.brief, exc.output) == ("the sentence.", "the sentence.", brief, "")


def test_edit_failed_keeps_its_positional_order_message_output_brief() -> None:
    exc = EditFailed("No match.", "closest region", "No replacements made")
    assert (exc.message, exc.output, exc.brief) == ("No match.", "closest region", "No replacements made")


def test_from_refusal_carries_message_and_output() -> None:
    # The refusal's brief labels it for its callers (install matches on it); no client sees it.
    out = Outcome.from_refusal(EditFailed("No match.", "closest region", "No replacements made"))
    assert out == Outcome(output="closest region", message="No match.", is_error=True)


async def test_a_refusal_a_handler_raises_becomes_its_error_result_at_the_boundary() -> None:
    async def handler(params: Any, env: Any) -> Outcome:
        raise PathError("`x` is not a file.")

    out = await answer(handler, None, None)
    assert (out.is_error, out.message) == (True, "`x` is not a file.")


def test_only_the_tool_boundary_turns_a_refusal_into_a_result() -> None:
    """One conversion (tools/outcome.answer): no tool catches a refusal to build its own."""
    tools = Path(__file__).resolve().parents[1] / "src" / "filegate" / "tools"
    converting = [
        f"{path.name}:{n}"
        for path in sorted(tools.glob("*.py"))
        if path.name != "outcome.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "from_refusal(" in line or "from_path_error(" in line
    ]
    assert converting == []
