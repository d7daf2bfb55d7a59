"""render.py is the transports' last line of defence: whatever string a tool forgot to escape,
the result can be encoded as JSON (a lone surrogate made the encoder raise, which ended a
stdio server). Pure logic: direct tests, with the real MCP types."""

from __future__ import annotations

from filegate.server.render import render, safe_result
from filegate.tools.outcome import Outcome, TextPart


def test_a_lone_surrogate_in_any_string_of_a_result_is_escaped_and_the_result_encodes() -> None:
    outcome = Outcome(
        output="caf\udce9.py\nnext\tline",
        message="1 match in d\udcffr",
        parts=[TextPart("x\ud800y")],
        structured={"files": ["caf\udce9.py"], "by_name": {"k\udce9": 1}, "count": 1},
    )
    result = render(outcome, with_structured=True)
    encoded = result.to_mcp_result()
    texts = [b.text for b in result.content]  # type: ignore[union-attr]
    assert texts == ["caf\\xe9.py\nnext\tline", "x\\ud800y", "1 match in d\\xffr"]  # layout kept
    assert result.structured_content == {"files": ["caf\\xe9.py"], "by_name": {"k\\xe9": 1}, "count": 1}
    assert "\udce9" not in str(encoded)


def test_an_error_outcome_is_made_safe_too() -> None:
    result = render(Outcome(is_error=True, message="`caf\udce9` does not exist."), with_structured=False)
    assert result.content[0].text == "`caf\\xe9` does not exist."  # type: ignore[union-attr]


def test_safe_result_covers_results_render_did_not_build() -> None:
    from fastmcp.tools import ToolResult
    from mcp.types import TextContent

    raw = ToolResult(content=[TextContent(type="text", text="\udce9")])
    raw.structured_content = {"a": "\udce9"}  # fastmcp 4.2 refuses it at construction
    safe = safe_result(raw)
    assert safe.content[0].text == "\\xe9" and safe.structured_content == {"a": "\\xe9"}  # type: ignore[union-attr]
