"""An Outcome → MCP content blocks + structuredContent + isError.

Last line of defence for the transports (SPEC §2.9): a lone surrogate (an undecodable byte of a
file name that a tool forgot to escape) makes the JSON encoder raise, and on stdio that ended
the process. :func:`safe_text` / :func:`safe_result` spell any such character with
``escape()`` in every string a result carries, text and structured facts alike; tools still
escape what they show (this net keeps layout characters, so it cannot replace that).
"""

from __future__ import annotations

import base64
import re
from typing import Any

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
    return _SURROGATE.sub(lambda m: escape(m.group()), text) if _SURROGATE.search(text) else text


def safe_value(value: Any) -> Any:
    """A structured value (JSON-like) with :func:`safe_text` applied to every string in it."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        return {safe_value(k): safe_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [safe_value(v) for v in value]
    return value


def safe_result(result: ToolResult) -> ToolResult:
    """The same result, its text blocks and structured content made safe to encode."""
    for block in result.content:
        if isinstance(block, TextContent):
            block.text = safe_text(block.text)
    if result.structured_content is not None:
        result.structured_content = safe_value(result.structured_content)
    return result


def _text(text: str) -> TextContent:
    return TextContent(type="text", text=safe_text(text))


def render(outcome: Outcome, with_structured: bool) -> ToolResult:
    """The data first, then the one-paragraph summary; an error leads with its message."""
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
        return ToolResult(content=blocks, is_error=True)
    if outcome.output:
        blocks.insert(0, _text(outcome.output))
    if outcome.message:
        blocks.append(_text(outcome.message))
    if not blocks:
        blocks.append(_text("Tool output is empty."))
    structured = safe_value(outcome.structured) if with_structured else None
    return ToolResult(content=blocks, structured_content=structured)
