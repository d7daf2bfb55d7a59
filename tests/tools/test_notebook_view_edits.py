"""A notebook edit speaks in the cell view the model read (SPEC §8.6; issue 53 item 12): an `old`
copied from ReadFile's view across two cells is refused saying so, and every refusal, closest
match and diff of a notebook is in the view's lines and numbers, never raw JSON.

The red team's case: StrReplaceFile with an `old` copied from the view across two cells answered
"not found" and showed the closest match as raw JSON lines (with a base64 PNG), numbered as the
model never saw them. Real notebooks in tmp_path, a real client.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import call, connect, text, texts
from tests.fakes import Answers
from tests.tools.test_read_notebook import cell, png_output, write_nb

pytestmark = pytest.mark.usefixtures("read_guard_off")

# What raw JSON looks like in an answer: a key, an escaped line break, a base64 run.
JSON_MARKS = re.compile(r'"(source|cell_type|outputs|metadata|execution_count)"|\\n"|[A-Za-z0-9+/]{60}')


def notebook(path: Path) -> None:
    write_nb(
        path,
        cell(["import math\n", "r = 2\n", "print(math.pi * r)"], png_output(3_000)),
        cell(["# Heading é\n", "prose"], kind="markdown"),
        cell("total = r + 1", {"output_type": "stream", "name": "stdout", "text": ["r = 2\n"]}),
    )


async def view_lines(c: Any) -> dict[int, str]:
    """ReadFile's notebook view, line number → line, as the model read it."""
    r = await call(c, "ReadFile", path="n.ipynb")
    numbered = texts(r)[0].splitlines()
    return {int(n): line for n, _, line in (row.partition("\t") for row in numbered)}


def no_json(said: str) -> None:
    assert not JSON_MARKS.search(said), said


@pytest.mark.parametrize(
    ("old", "cells"),
    [
        # copied from the view: the end of cell 1's source, its output, cell 2's header and source
        ("print(math.pi * r)\n# out 1 · display_data\n<Figure>\n[image/png output not shown]\n"
         "# cell 2 · markdown\n# Heading é", "1 and 2"),
        ("prose\n# cell 3 · code · 1 output\ntotal = r + 1", "2 and 3"),
        ("# Heading é\nprose\n# cell 3 · code · 1 output\ntotal = r + 1\n# out 1 · stdout\nr = 2", "2 and 3"),
    ],
)  # fmt: skip
async def test_an_old_copied_across_two_cells_of_the_view_is_refused_saying_so(
    ws: Path, old: str, cells: str
) -> None:
    notebook(ws / "n.ipynb")
    data = (ws / "n.ipynb").read_bytes()
    async with connect(ws) as c:
        r = await call(c, "StrReplaceFile", path="n.ipynb", edit={"old": old, "new": "x"})
    said = text(r)
    assert r.is_error and f"`old` spans two cells of `n.ipynb` (cells {cells})" in said, said
    assert "edit each cell on its own" in said, said
    no_json(said)
    assert (ws / "n.ipynb").read_bytes() == data


async def test_an_old_that_takes_in_a_cells_outputs_is_refused_saying_so(ws: Path) -> None:
    notebook(ws / "n.ipynb")
    data = (ws / "n.ipynb").read_bytes()
    async with connect(ws) as c:
        r = await call(
            c, "StrReplaceFile", path="n.ipynb", edit={"old": "total = r + 1\n# out 1 · stdout", "new": "x"}
        )
    said = text(r)
    assert r.is_error and "takes in lines of cell 3 that are not its source" in said, said
    no_json(said)
    assert (ws / "n.ipynb").read_bytes() == data


async def test_a_miss_shows_the_closest_match_in_the_view_with_its_numbers(ws: Path) -> None:
    notebook(ws / "n.ipynb")
    async with connect(ws) as c:
        view = await view_lines(c)
        r = await call(
            c, "StrReplaceFile", path="n.ipynb", edit={"old": "r = 2\nprint(math.pi * radius)", "new": "x"}
        )
    said = text(r)
    assert r.is_error and "was not found in any cell of `n.ipynb`" in said, said
    no_json(said)
    shown = [row for row in said.splitlines() if re.match(r"^\s+\d+\t", row)]
    assert shown, said
    for row in shown:  # every line shown is the view's line of that number
        number, _, line = row.partition("\t")
        assert view[int(number)] == line, (row, view)
    assert any(line == "print(math.pi * r)" for line in (row.partition("\t")[2] for row in shown))


async def test_an_edit_already_made_is_told_in_view_lines(ws: Path) -> None:
    notebook(ws / "n.ipynb")
    async with connect(ws) as c:
        view = await view_lines(c)
        r = await call(c, "StrReplaceFile", path="n.ipynb", edit={"old": "r = 5\n", "new": "total = r + 1"})
    said = text(r)
    assert r.is_error and "already there (line 12)" in said and view[12] == "total = r + 1", said
    no_json(said)


async def test_the_preview_question_and_result_diff_the_view(ws: Path) -> None:
    notebook(ws / "n.ipynb")
    answers = Answers("approve")
    async with connect(ws, approval="ask", client_elicitation_handler=answers) as c:
        view = await view_lines(c)
        edit = {"old": "r = 2\nprint(math.pi * r)", "new": "r = 3\nprint(math.tau * r)"}
        preview = await call(c, "StrReplaceFile", path="n.ipynb", edit=edit, dry_run=True)
        done = await call(c, "StrReplaceFile", path="n.ipynb", edit=edit)
    assert view[3] == "r = 2" and view[4] == "print(math.pi * r)"
    for said in (text(preview), answers.messages[0]):
        no_json(said)
        assert "-r = 2\n-print(math.pi * r)\n+r = 3\n+print(math.tau * r)" in said, said
        hunk = re.search(r"@@ -(\d+),\d+ \+(\d+),\d+ @@", said)
        assert hunk is not None, said
        start = int(hunk.group(1))  # the hunk's lines are numbered as the view numbers them
        body = said[hunk.end() :].split("\n")[1:]
        assert view[start] == body[0][1:], (start, body[0], view)
    assert "lines: 14 → 14 (+0)" in text(preview), text(preview)
    assert not done.is_error and "Lines: +2 -2." in text(done), text(done)
    assert json.loads((ws / "n.ipynb").read_text())["cells"][0]["source"][1] == "r = 3\n"


async def test_a_raw_json_edit_still_speaks_json(ws: Path) -> None:
    """An `old` only the JSON holds (read with raw: true) edits the JSON text, diffed as such."""
    notebook(ws / "n.ipynb")
    async with connect(ws) as c:
        r = await call(
            c,
            "StrReplaceFile",
            path="n.ipynb",
            edit={"old": '"name": "python3"', "new": '"name": "py"'},
            dry_run=True,
        )
    assert not r.is_error and '-   "name": "python3"' in text(r), text(r)
