"""An Outcome → MCP content blocks + isError: text (and media) only, never structuredContent.

SPEC §1: Claude Code and Codex hand the model only a result's structuredContent when it has
one, and Kimi Code shows both; so a result is text content, with every fact in it. SPEC §9: one
text block where there is no media (Codex drops every block after the first; Gemini CLI and
Kimi Code join them their own ways), the summary and the lines after it at its end. Every text
block that another block follows ends with a line break: Kimi Code joins blocks with nothing
between them, and the last name of a list must not run into the summary.

Last line of defence for the transports (SPEC §2.9): a lone surrogate (an undecodable byte of a
file name that a tool forgot to escape) makes the JSON encoder raise, and on stdio that ended
the process. :func:`safe_text` / :func:`safe_result` spell any such character with
``escape()`` in every text a result carries; tools still escape what they show (this net keeps
layout characters, so it cannot replace that).
"""

from __future__ import annotations

import base64
import re

from fastmcp.tools import ToolResult
from mcp.types import (
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    TextContent,
)

from filegate.policy.budget import ERROR_CHARS
from filegate.policy.escape import escape
from filegate.tools.outcome import ImagePart, MediaPart, Outcome, TextPart, lines_within

_SURROGATE = re.compile("[\ud800-\udfff]")


def safe_text(text: str) -> str:
    """``text`` with every lone surrogate escaped (``\\xNN`` for an undecodable byte)."""
    if text.isascii():  # a flag of the string, not a scan: most results are ASCII
        return text
    return _SURROGATE.sub(lambda m: escape(m.group()), text) if _SURROGATE.search(text) else text


def safe_result(result: ToolResult) -> ToolResult:
    """The same result, its text blocks made safe to encode."""
    for block in result.content:
        if isinstance(block, TextContent) and (text := safe_text(block.text)) is not block.text:
            block.text = text  # a model's attribute set: only when it changed
    return result


def _text(text: str) -> TextContent:
    return TextContent(type="text", text=safe_text(text))


def _separated(blocks: list[ContentBlock]) -> list[ContentBlock]:
    """``blocks`` with every text block but the last ending in a line break, so the text reads
    the same whether a client joins blocks with a line break or with nothing."""
    for block in blocks[:-1]:
        if isinstance(block, TextContent) and not block.text.endswith("\n"):
            block.text += "\n"
    return blocks


def render(outcome: Outcome) -> ToolResult:
    """SPEC §9, one text block: a text-only result is the output, then the summary, then each
    on its own line when there is one: the write id, the grant line, the change notice. A media
    result keeps its blocks and ends with one text block holding the summary and those lines.
    An error's one block leads with its message (what failed), then what it shows, and ends
    with its next step; it stays under ERROR_CHARS (Claude Code cuts a longer one in the
    middle), whatever a tool put in it."""
    if outcome.is_error:
        text = _lines(outcome.message or "The tool failed.", outcome.output, outcome.next_step)
        return ToolResult(content=[_text(fit_error(_lines(text, *trailer(outcome))))], is_error=True)
    closing = _lines(outcome.message, *trailer(outcome))
    if not outcome.parts:
        text = _lines(outcome.output, closing) or "Tool output is empty."
        return ToolResult(content=[_text(text)])
    blocks: list[ContentBlock] = [_text(outcome.output)] if outcome.output else []
    blocks += [_block(part) for part in outcome.parts]
    if closing:
        blocks.append(_text(closing))
    return ToolResult(content=_separated(blocks))


def trailer(outcome: Outcome) -> list[str]:
    """The lines every result ends with, in this order, when there is one (SPEC §9)."""
    write_id = f"Write id: {outcome.write_id}." if outcome.write_id else ""
    return [write_id, outcome.grant, outcome.notice]


def _lines(*pieces: str) -> str:
    """The non-empty ``pieces``, each starting on a line of its own."""
    out = ""
    for piece in pieces:
        if piece:
            out += ("" if not out or out.endswith("\n") else "\n") + piece
    return out


def fit_error(text: str) -> str:
    """``text`` within ERROR_CHARS: whole lines from the middle left out (said in one line),
    the first line (what failed) and the last (what to do) kept; a line too long for that is
    cut at its end. Tools fit their own errors (naming what they left out); this is the net."""
    if len(text) < ERROR_CHARS:
        return text
    lines = text.split("\n")
    first, last = lines[0], lines[-1] if len(lines) > 1 else ""
    room = ERROR_CHARS - 200
    first = first if len(first) <= room // 2 else first[: room // 2] + "…"
    last = last if len(last) <= room // 4 else last[: room // 4] + "…"
    middle = lines[1:-1]
    kept = lines_within(middle, room - len(first) - len(last))
    left_out = len(middle) - len(kept)
    said = f"[{left_out} more line{'s' if left_out != 1 else ''} not shown: an error stays under"
    gap = [f"{said} {ERROR_CHARS} characters]"]
    return "\n".join([first, *kept, *(gap if left_out else []), *([last] if len(lines) > 1 else [])])


def _block(part: MediaPart) -> ContentBlock:
    if isinstance(part, TextPart):
        return _text(part.text)
    if isinstance(part, ImagePart):
        data = base64.b64encode(part.data).decode("ascii")
        return ImageContent(type="image", data=data, mime_type=part.mime)
    blob = base64.b64encode(part.data).decode("ascii")
    res = BlobResourceContents(uri=part.uri, mime_type=part.mime, blob=blob)
    return EmbeddedResource(type="resource", resource=res)
