"""An Outcome → MCP content blocks + isError: text (and media) only, never structuredContent.

SPEC §1: Claude Code and Codex hand the model only a result's structuredContent when it has
one, and Kimi Code shows both; so a result is text content, with every fact in it. Every text
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

from filegate.policy.escape import escape
from filegate.tools.outcome import ImagePart, Outcome, ResourcePart, TextPart

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


def render(outcome: Outcome, notice: str = "") -> ToolResult:
    """The data first, then the one-paragraph summary (a write's ends with its id); an error
    leads with its message. Then, each on its own line when there is one (SPEC §9's order): the
    grant line (SPEC §11) and a ``notice`` (files changed on disk since read, SPEC §8.3)."""
    result = _rendered(outcome)
    for line in (outcome.grant, notice):
        if not line:
            continue
        last = result.content[-1] if result.content else None
        if isinstance(last, TextContent):
            last.text += ("" if last.text.endswith("\n") else "\n") + safe_text(line)
        else:
            result.content = _separated([*result.content, _text(line)])
    return result


def _rendered(outcome: Outcome) -> ToolResult:
    blocks: list[ContentBlock] = []
    for part in outcome.parts:
        if isinstance(part, TextPart):
            blocks.append(_text(part.text))
        elif isinstance(part, ImagePart):
            data = base64.b64encode(part.data).decode("ascii")
            blocks.append(ImageContent(type="image", data=data, mime_type=part.mime))
        elif isinstance(part, ResourcePart):
            blob = base64.b64encode(part.data).decode("ascii")
            res = BlobResourceContents(uri=part.uri, mime_type=part.mime, blob=blob)
            blocks.append(EmbeddedResource(type="resource", resource=res))
    if outcome.is_error:
        blocks.insert(0, _text(outcome.message or "The tool failed."))
        if outcome.output:
            blocks.append(_text(outcome.output))
        return ToolResult(content=_separated(blocks), is_error=True)
    if outcome.output:
        blocks.insert(0, _text(outcome.output))
    if outcome.message:
        blocks.append(_text(outcome.message))
    if not blocks:
        blocks.append(_text("Tool output is empty."))
    return ToolResult(content=_separated(blocks))
