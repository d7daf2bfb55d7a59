"""render.py is the transports' last line of defence: whatever string a tool forgot to escape,
the result can be encoded as JSON (a lone surrogate made the encoder raise, which ended a
stdio server). Pure logic: direct tests, with the real MCP types."""

from __future__ import annotations

from filegate.server.render import render, safe_result
from filegate.tools.outcome import ImagePart, Outcome, TextPart


def test_a_lone_surrogate_in_any_string_of_a_result_is_escaped_and_the_result_encodes() -> None:
    outcome = Outcome(
        output="caf\udce9.py\nnext\tline",
        message="1 match in d\udcffr",
        parts=[TextPart("x\ud800y")],
    )
    result = render(outcome)
    encoded = result.to_mcp_result()
    texts = [b.text for b in result.content]  # type: ignore[union-attr]
    assert texts == ["caf\\xe9.py\nnext\tline\n", "x\\ud800y\n", "1 match in d\\xffr"]  # layout kept
    assert result.structured_content is None
    assert "\udce9" not in str(encoded)


def test_an_error_outcome_is_made_safe_too() -> None:
    result = render(Outcome(is_error=True, message="`caf\udce9` does not exist."))
    assert result.content[0].text == "`caf\\xe9` does not exist."  # type: ignore[union-attr]


def test_a_text_only_result_is_one_block_its_summary_and_closing_lines_last() -> None:
    """SPEC §9: the output, the summary, then the write id, the grant line and the change
    notice, each on its own line, in that order, each only when there is one."""
    full = Outcome(output="a.py\nb.py", message="Found 2 matches.", write_id="w-3f9a2c",
                   grant="Granted: edits under src/ for this session.", notice="Changed on disk since you read them: c.py.")  # fmt: skip
    [block] = render(full).content
    assert block.text == (  # type: ignore[union-attr]
        "a.py\nb.py\nFound 2 matches.\nWrite id: w-3f9a2c.\nGranted: edits under src/ for this session.\n"
        "Changed on disk since you read them: c.py."
    )
    for kept in ("write_id", "grant", "notice"):
        partial = Outcome(output="x\n", message="Done.", **{kept: full.__getattribute__(kept)})
        [one] = render(partial).content
        assert one.text.split("\n")[:2] == ["x", "Done."] and len(one.text.split("\n")) == 3  # type: ignore[union-attr]
    assert [b.text for b in render(Outcome(message="Done.")).content] == ["Done."]  # type: ignore[union-attr]
    assert [b.text for b in render(Outcome(output="a\nb")).content] == ["a\nb"]  # type: ignore[union-attr]


def test_every_text_block_another_block_follows_ends_with_a_line_break() -> None:
    """Kimi Code joins text blocks with nothing between them (SPEC §1): joined so, a media
    result still reads as lines. A block's own closing break is not doubled; the last block
    keeps its end as it is; an image between two text blocks does not change that."""
    outcome = Outcome(
        output="a.py\nb.py",
        message="Found 2 matches.",
        write_id="w-3f9a2c",
        parts=[TextPart('<image path="x">'), ImagePart(b"\x89PNG", "image/png"), TextPart("</image>\n")],
    )
    blocks = render(outcome).content
    assert [getattr(b, "text", None) for b in blocks] == [
        "a.py\nb.py\n",
        '<image path="x">\n',
        None,
        "</image>\n",
        "Found 2 matches.\nWrite id: w-3f9a2c.",  # the summary and its lines: the last block
    ]


def test_an_error_is_one_block_what_failed_first_and_what_to_do_last() -> None:
    error = render(Outcome.error("`x` did not apply.", output="   3\tclosest", next_step="Copy it exactly."))
    assert error.is_error and [b.text for b in error.content] == [  # type: ignore[union-attr]
        "`x` did not apply.\n   3\tclosest\nCopy it exactly."
    ]


def test_an_error_too_long_is_cut_in_whole_lines_keeping_its_first_and_last() -> None:
    """SPEC §9: under ERROR_CHARS whatever a tool put in it (the net behind each tool's own fit)."""
    from filegate.policy.budget import ERROR_CHARS

    rows = "\n".join(f"{n:6d}\t" + "y" * 300 for n in range(1, 200))
    error = render(Outcome.error("The edit failed.", output=rows, next_step="Read it again."))
    [block] = error.content
    text = block.text  # type: ignore[union-attr]
    lines = text.split("\n")
    assert len(text) < ERROR_CHARS
    assert lines[0] == "The edit failed." and lines[-1] == "Read it again."
    assert lines[1].startswith("     1\t") and "more lines not shown" in lines[-2]
    shown = [line for line in lines[1:-2]]
    assert all(len(line) == 307 for line in shown)  # whole lines only
    assert render(Outcome.error("x" * 20_000)).content[0].text.endswith("…")  # type: ignore[union-attr]


def test_safe_result_covers_results_render_did_not_build() -> None:
    from fastmcp.tools import ToolResult
    from mcp.types import TextContent

    raw = ToolResult(content=[TextContent(type="text", text="\udce9")])
    safe = safe_result(raw)
    assert safe.content[0].text == "\\xe9"  # type: ignore[union-attr]


def test_each_part_reaches_the_client_as_its_own_block_and_an_error_is_flagged() -> None:
    """Media as MCP blocks (an image as ImageContent, a video as an embedded blob, both base64),
    the error flag set on errors only, and a sentence where a tool said nothing."""
    from filegate.tools.outcome import ResourcePart

    media = render(Outcome(message="2 parts.", parts=[ImagePart(b"\x89PNG", "image/png"),
                                                     ResourcePart("file:///v.mp4", "video/mp4", b"\0\1")]))  # fmt: skip
    assert not media.is_error
    image, video, summary = media.content
    assert (image.type, image.data, image.mime_type) == ("image", "iVBORw==", "image/png")  # type: ignore[union-attr]
    blob = video.resource  # type: ignore[union-attr]
    assert (video.type, str(blob.uri), blob.mime_type, blob.blob) == (
        "resource",
        "file:///v.mp4",
        "video/mp4",
        "AAE=",
    )
    assert summary.text == "2 parts."  # type: ignore[union-attr]
    failed = render(Outcome.error("", output="   3\tclosest"))
    assert failed.is_error and [b.text for b in failed.content] == ["The tool failed.\n   3\tclosest"]  # type: ignore[union-attr]
    empty = render(Outcome())
    assert not empty.is_error and [b.text for b in empty.content] == ["Tool output is empty."]  # type: ignore[union-attr]


def test_a_change_notice_is_the_last_line_of_any_result() -> None:
    """SPEC §8.3: one line at the very end: after the summary, after an error's next step, and
    after media in a block of its own."""
    notice = "Changed on disk since you read them: caf\udce9.py."
    shown = "Changed on disk since you read them: caf\\xe9.py."
    ok = render(Outcome(output="1\tx\n", message="Read 1 line.", notice=notice))
    assert [b.text for b in ok.content] == ["1\tx\nRead 1 line.\n" + shown]  # type: ignore[union-attr]
    failed = render(
        Outcome(is_error=True, message="`x` did not apply.", output="   3\tclosest\n", notice=notice)
    )
    assert [b.text for b in failed.content] == ["`x` did not apply.\n   3\tclosest\n" + shown]  # type: ignore[union-attr]
    media = render(Outcome(parts=[ImagePart(b"\x89PNG", "image/png")], notice=notice))
    assert [b.type for b in media.content] == ["image", "text"] and media.content[1].text == shown  # type: ignore[union-attr]
    assert render(Outcome(message="Done.")).content[0].text == "Done."  # type: ignore[union-attr]


def _error_text(text: str) -> str:
    [block] = render(Outcome.error(text)).content
    return block.text  # type: ignore[union-attr]


def test_an_error_of_exactly_the_limit_is_cut_one_under_it_is_not() -> None:
    """SPEC §9: an error stays *under* 10,000 characters."""
    from filegate.policy.budget import ERROR_CHARS

    under = "a\n" + "b" * (ERROR_CHARS - 5) + "\nc"
    assert len(under) == ERROR_CHARS - 1 and _error_text(under) == under
    at = "a\n" + "b" * (ERROR_CHARS - 4) + "\nc"
    cut = _error_text(at)
    assert len(cut) < ERROR_CHARS and cut.startswith("a\n") and cut.endswith("\nc")
    assert "[1 more line not shown: an error stays under 10000 characters]" in cut


def test_an_errors_middle_keeps_every_whole_line_that_fits_in_9800_characters() -> None:
    """The first and the last line, then the middle's lines in order while all of them fit in
    9,800 characters (the rest of the 10,000 says what was left out): none fewer, none more."""
    for first, kept in ((100, 96), (101, 95)):
        middle = [f"{n:02d}" + "m" * 97 for n in range(100)]  # 99 characters and a line break each
        text = "\n".join(["F" * first, *middle, "L" * 100])
        lines = _error_text(text).split("\n")
        assert lines[0] == "F" * first and lines[-1] == "L" * 100
        assert lines[1:-2] == middle[:kept], first
        assert lines[-2] == f"[{100 - kept} more lines not shown: an error stays under 10000 characters]"


def test_an_error_with_one_middle_line_left_out_says_one_line() -> None:
    middle = ["m" * 99] * 96 + ["w" * 300]
    lines = _error_text("\n".join(["F" * 100, *middle, "L" * 100])).split("\n")
    assert lines[1:-2] == middle[:96]
    assert lines[-2] == "[1 more line not shown: an error stays under 10000 characters]"


def test_an_errors_first_line_keeps_4900_characters_and_its_last_2450() -> None:
    """What failed and what to do are kept, each cut at its end past its share (half and a
    quarter of the 9,800): a long path in either never pushes the other out."""
    filler = ["m" * 99] * 120
    whole = _error_text("\n".join(["F" * 4900, *filler, "L" * 2450])).split("\n")
    assert whole[0] == "F" * 4900 and whole[-1] == "L" * 2450
    cut = _error_text("\n".join(["F" * 5000, *filler, "L" * 3000])).split("\n")
    assert cut[0] == "F" * 4900 + "…" and cut[-1] == "L" * 2450 + "…"
    # Two lines only: the second is the last, kept (cut at its share), never dropped.
    two = _error_text("F" * 6000 + "\n" + "L" * 6000)
    assert two == "F" * 4900 + "…\n" + "L" * 2450 + "…"
    assert _error_text("x" * 20_000) == "x" * 4900 + "…"  # one line: its start
