"""SPEC §1 (issue 21): a result is text content (plus ReadMediaFile's media) and nothing else,
and it reads right however a client joins its text blocks.

Claude Code and Codex hand the model only a result's structuredContent when it has one, so
filegate's lines, names and matches never reached their models; Kimi Code 2.1 joins text blocks
with nothing between them, so Glob's last name ran into its summary (`src/a.pyFound 1 …`).
Each result below is joined as Kimi Code joins it (``""``) and compared whole: every line of
the data and the summary stand on lines of their own.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tests.conftest import blocks, call, connect

WRITE_ID_LINE = re.compile(r"\nWrite id: w-[0-9a-f]+\.$")

COORDS = (
    "If you need to output coordinates, output relative coordinates first and compute absolute "
    "coordinates using the original image size; if you generate or edit images/videos via "
    "commands or scripts, read the result back immediately before continuing."
)
SKIPPED_ENV = (
    "Skipped 1 sensitive file(s) (.env) to protect secrets. These files may contain credentials "
    "or private keys."
)


@pytest.fixture
def project(ws: Path) -> Path:
    (ws / "notes.txt").write_text("alpha\nbeta")  # no line break at the end
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("print('alpha')\n")
    (ws / ".env").write_text("KEY=alpha\n")
    Image.new("RGB", (4, 4), "red").save(ws / "red.png")
    return ws


CALLS: list[tuple[str, dict[str, Any], str]] = [
    (
        "ReadFile",
        {"path": "notes.txt"},
        "     1\talpha\n     2\tbeta\n"
        "2 lines read from file starting from line 1. Total lines in file: 2. End of file reached.",
    ),
    ("Glob", {"pattern": "**/*.py"}, "src/a.py\nFound 1 matches for pattern `**/*.py`."),
    ("Grep", {"pattern": "alpha"}, "src/a.py\nnotes.txt\n" + SKIPPED_ENV),
    (
        "Grep",
        {"pattern": "a", "output_mode": "content", "head_limit": 1},
        "notes.txt:1:alpha\nResults truncated to 1 lines (total: 3). Use offset=1 to see more. "
        + SKIPPED_ENV,
    ),
    (
        "Grep",
        {"pattern": "alpha", "output_mode": "count_matches"},
        "notes.txt:1\nsrc/a.py:1\nFound 2 total occurrences across 2 files. " + SKIPPED_ENV,
    ),
    (
        "ReadMediaFile",
        {"path": "red.png"},
        '<image path="red.png">\n</image>\n'
        f"Loaded image file `red.png` (image/png, {{size}} bytes, original size 4x4px). {COORDS}",
    ),
    (
        "WriteFile",
        {"path": "new.txt", "content": "x\n"},
        "Created `new.txt`. Current size: 2 bytes. Lines: +1 -0.",
    ),
    (
        "StrReplaceFile",
        {"path": "src/a.py", "edit": {"old": "print('alphx')", "new": "y"}},
        "No replacements were made: the old string was not found in `src/a.py`. Nothing was written. "
        "The closest match is at lines 1-1 (shown below).\n     1\tprint('alpha')\n"
        "Copy `old` exactly from the lines above (or ReadFile the file again), then retry the edit.",
    ),
    (
        "StrReplaceFile",
        {"path": "src/a.py", "edit": {"old": "alpha", "new": "beta"}},
        "File successfully edited. Applied 1 edit(s) with 1 total replacement(s). Lines: +1 -1.",
    ),
]


async def test_every_tool_answers_in_text_that_reads_as_lines_when_joined_with_nothing(
    project: Path, mode: str
) -> None:
    size = (project / "red.png").stat().st_size
    async with connect(project, mode, approval="auto") as c:
        listed = await c.list_tools()
        assert [t.name for t in listed if t.output_schema is not None] == []
        await call(c, "ReadFile", path="src/a.py")  # read before it is edited
        for tool, args, expected in CALLS:
            r = await call(c, tool, **args)
            assert r.structured_content is None, tool
            assert {b.type for b in r.content} <= {"text", "image"}, tool
            sent = blocks(r)
            assert all(b.endswith("\n") for b in sent[:-1]), (tool, sent)
            if tool != "ReadMediaFile":  # SPEC §9: a text-only result is one block
                assert len(r.content) == 1, (tool, sent)
            joined = "".join(sent)
            if tool in ("WriteFile", "StrReplaceFile") and not r.is_error:
                joined, ended = WRITE_ID_LINE.subn("", joined)  # the id, on its own last line
                assert ended == 1, joined
            assert joined == expected.replace("{size}", str(size)), tool
