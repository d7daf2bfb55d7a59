"""The refusal family (filegate.errors) and its one way into a tool result."""

from __future__ import annotations

import pytest

from filegate.errors import EditFailed, MediaError, PathError, Refusal, WriteError
from filegate.tools.outcome import Outcome


@pytest.mark.parametrize(
    ("cls", "brief"),
    [
        (PathError, "Invalid path"),
        (WriteError, "Failed to write file"),
        (EditFailed, "Failed to edit file"),
        (MediaError, "Failed to read file"),
    ],
)
def test_each_refusal_has_its_default_brief_and_is_a_refusal(cls: type[Refusal], brief: str) -> None:
    exc = cls("the sentence.")
    assert isinstance(exc, Refusal)
    assert (str(exc), exc.message, exc.brief, exc.output) == ("the sentence.", "the sentence.", brief, "")


def test_edit_failed_keeps_its_positional_order_message_output_brief() -> None:
    exc = EditFailed("No match.", "closest region", "No replacements made")
    assert (exc.message, exc.output, exc.brief) == ("No match.", "closest region", "No replacements made")


def test_from_refusal_carries_message_brief_and_output() -> None:
    out = Outcome.from_refusal(EditFailed("No match.", "closest region", "No replacements made"))
    assert (out.is_error, out.message, out.brief, out.output) == (
        True,
        "No match.",
        "No replacements made",
        "closest region",
    )
    assert Outcome.from_path_error(PathError("`x` is not a file.")).brief == "Invalid path"


def test_old_homes_still_export_the_same_classes() -> None:
    from filegate.fsio import atomic
    from filegate.media import image
    from filegate.policy import workspace
    from filegate.tools import str_replace

    assert workspace.PathError is PathError
    assert atomic.WriteError is WriteError
    assert image.MediaError is MediaError
    assert str_replace.EditFailed is EditFailed
