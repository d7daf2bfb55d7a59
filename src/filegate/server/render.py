"""An Outcome → MCP content blocks + structuredContent + isError."""

from __future__ import annotations

import base64

from fastmcp.tools import ToolResult
from mcp.types import (
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    TextContent,
)

from filegate.tools.outcome import ImagePart, Outcome, ResourcePart, TextPart


def _text(text: str) -> TextContent:
    return TextContent(type="text", text=text)


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
    structured = outcome.structured if with_structured else None
    return ToolResult(content=blocks, structured_content=structured)
