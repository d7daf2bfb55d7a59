"""What a media result weighs against the client's limits (SPEC §4 ReadMediaFile): the budget
of the whole result or of each media part, the room left for media once the text blocks are
counted, and the final check. Shared by images, video frames and PDF page images."""

from __future__ import annotations

from dataclasses import dataclass

from filegate.errors import MediaError
from filegate.tools.outcome import (
    BLOCK_FRAME_CHARS,
    ImagePart,
    MediaPart,
    Outcome,
    ResourcePart,
    TextPart,
    ToolEnv,
)

# Below this many base64 characters no image is worth sending (a 32x32 JPEG is ~1 KB).
MIN_MEDIA_CHARS = 1024


@dataclass(frozen=True, slots=True)
class Limits:
    """What the client accepts: ``total`` characters for the whole result, media included; or
    (``part`` set: Kimi Code) ``total`` for the text and ``part`` base64 characters for each
    media part on its own, so an image does not share the text's budget."""

    total: int
    part: int | None = None

    @classmethod
    def of(cls, env: ToolEnv) -> Limits:
        return cls(env.result_budget, env.media_part_budget)

    @property
    def name(self) -> str:
        return "result budget" if self.part is None else "limit per media part"

    @property
    def chars(self) -> int:
        return self.total if self.part is None else self.part


# --- what the result weighs ---------------------------------------------------------------


def media_chars(part: MediaPart) -> int:
    from filegate.media.image import b64_len

    if isinstance(part, ImagePart):
        return b64_len(len(part.data)) + len(part.mime)
    if isinstance(part, ResourcePart):
        return b64_len(len(part.data)) + len(part.mime) + len(part.uri)
    return 0


def result_chars(parts: list[MediaPart], message: str, media: bool = True) -> int:
    """Characters of every content block as the client receives them, base64 included (only
    the text blocks when ``media`` is False). A text block's closing line break counts."""
    total = len(message) + 1 + BLOCK_FRAME_CHARS
    for part in parts:
        if isinstance(part, TextPart):
            total += len(part.text) + 1
        elif media:
            total += media_chars(part)
        total += BLOCK_FRAME_CHARS
    return total


def room_for(limits: Limits, skeleton: Outcome) -> int:
    """Base64 characters left for one media part (Kimi Code) or for all of them, once the text
    blocks of ``skeleton`` are counted."""
    text = result_chars(skeleton.parts, skeleton.message, media=limits.part is None)
    room = limits.total - text
    if limits.part is not None and room >= 0:
        room = limits.part - BLOCK_FRAME_CHARS  # the part's own ceiling; the data URL's prefix
    if room < MIN_MEDIA_CHARS:
        raise MediaError(
            f"this client's result budget of {limits.total} characters leaves no room for media "
            "after the text that describes it; raise --result-budget."
        )
    return room


def checked_fit(outcome: Outcome, limits: Limits) -> Outcome:
    # The reserve was computed with wider numbers: either error is a bug if it happens.
    used = result_chars(outcome.parts, outcome.message, media=limits.part is None)
    if used > limits.total:
        raise MediaError(f"the result would take {used} characters, over the budget of {limits.total}.")
    biggest = max((media_chars(p) for p in outcome.parts), default=0)
    if limits.part is not None and biggest + BLOCK_FRAME_CHARS > limits.part:
        raise MediaError(f"a media part would take {biggest} characters, over the limit of {limits.part}.")
    return outcome
