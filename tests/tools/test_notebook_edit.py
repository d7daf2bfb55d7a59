"""StrReplaceFile on a Jupyter notebook (SPEC §8.6) through a real client: an ``old`` in a cell's
source is replaced there, the JSON written back in the file's layout, outputs untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from filegate.tools.edit.notebook_edit import MAX_EDIT_BYTES, edit_cells, notebook_of
from tests.conftest import call, connect, texts
from tests.tools.test_read_notebook import cell, png_output, write_nb

pytestmark = pytest.mark.usefixtures("read_guard_off")


def notebook(path: Path, indent: int = 1) -> None:
    write_nb(
        path,
        cell(["import math\n", "r = 2\n", "print(math.pi * r)"], png_output(3_000)),
        cell(["# Heading é\n", "prose"], kind="markdown"),
        cell("total = r + 1", {"output_type": "stream", "name": "stdout", "text": ["r = 2\n"]}),
        indent=indent,
    )


async def edit(ws: Path, **edit: object) -> tuple[bool, list[str]]:
    async with connect(ws) as c:
        r = await call(c, "StrReplaceFile", path="n.ipynb", edit=edit)
        return r.is_error, texts(r)


@pytest.mark.parametrize("indent", [1, 2, 4])
async def test_a_multi_line_old_in_a_cell_is_replaced_and_nothing_else_changes(ws: Path, indent: int) -> None:
    notebook(ws / "n.ipynb", indent)
    before = json.loads((ws / "n.ipynb").read_text())
    err, parts = await edit(ws, old="r = 2\nprint(math.pi * r)", new="r = 3\nprint(math.tau * r)")
    assert not err, parts
    assert parts[0].startswith("File successfully edited. Applied 1 edit(s) with 1 total replacement(s).")
    expected = json.loads(json.dumps(before))
    expected["cells"][0]["source"] = ["import math\n", "r = 3\n", "print(math.tau * r)"]
    raw = (ws / "n.ipynb").read_text()
    assert raw == json.dumps(expected, indent=indent)  # the file's own layout, byte for byte
    assert json.loads(raw)["cells"][0]["outputs"] == before["cells"][0]["outputs"]


async def test_an_old_spanning_two_cells_is_refused(ws: Path) -> None:
    notebook(ws / "n.ipynb")
    data = (ws / "n.ipynb").read_bytes()
    err, parts = await edit(ws, old="print(math.pi * r)\n# Heading é", new="x")
    assert err and parts == [
        "`old` spans two cells of `n.ipynb` (cells 1 and 2): edit each cell on its own. Nothing was written."
    ]
    assert (ws / "n.ipynb").read_bytes() == data


async def test_an_old_in_two_cells_is_ambiguous_and_replace_all_takes_both(ws: Path) -> None:
    notebook(ws / "n.ipynb")
    err, parts = await edit(ws, old="r = 2", new="r = 5")  # cell 1's source; cell 3's output is not a source
    assert not err, parts
    err, parts = await edit(ws, old=" r", new=" radius")
    assert err and parts == [
        "`old` is found 2 times in the cells of `n.ipynb` (cells 1, 3); make it unique or set replace_all. "
        "Nothing was written."
    ]
    err, parts = await edit(ws, old=" r", new=" radius", replace_all=True)
    assert not err and "2 total replacement(s)" in parts[0]
    sources = ["".join(c["source"]) for c in json.loads((ws / "n.ipynb").read_text())["cells"]]
    assert sources == [
        "import math\nr = 5\nprint(math.pi * radius)",
        "# Heading é\nprose",
        "total = radius + 1",
    ]


async def test_an_old_found_twice_in_one_cell_is_ambiguous_and_replace_all_takes_both(ws: Path) -> None:
    """Ambiguity counts occurrences, not cells: two hits in one cell are two candidates."""
    write_nb(ws / "n.ipynb", cell(["x = load()\n", "print(x)\n", "x = load()\n"]), cell("y = 1"))
    data = (ws / "n.ipynb").read_bytes()
    err, parts = await edit(ws, old="x = load()", new="x = load(fresh=True)")
    assert err, parts
    assert "replace_all" in parts[0], parts  # refused as ambiguous, naming the way out
    assert (ws / "n.ipynb").read_bytes() == data  # nothing written
    err, parts = await edit(ws, old="x = load()", new="x = load(fresh=True)", replace_all=True)
    assert not err and "2 total replacement(s)" in parts[0], parts
    sources = ["".join(c["source"]) for c in json.loads((ws / "n.ipynb").read_text())["cells"]]
    assert sources == ["x = load(fresh=True)\nprint(x)\nx = load(fresh=True)\n", "y = 1"]


async def test_an_old_outside_the_cells_edits_the_json_as_before(ws: Path) -> None:
    notebook(ws / "n.ipynb")
    err, parts = await edit(ws, old='"name": "python3"', new='"name": "python3.12"')
    assert not err, parts
    assert json.loads((ws / "n.ipynb").read_text())["metadata"]["kernelspec"]["name"] == "python3.12"


def nb_json(*cells: dict[str, object], pad: str = "") -> dict[str, object]:
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3"}, "pad": pad},
        "cells": list(cells),
    }


# The layouts a notebook is found in: nbformat's own (indent 1, non-ASCII kept, a final line
# break), json.dumps' defaults, and compact one-line JSON with either separator set.
LAYOUTS = {
    "nbformat": {"indent": 1, "ensure_ascii": False, "final": "\n"},
    "indent-2-ascii": {"indent": 2, "ensure_ascii": True, "final": ""},
    "compact": {"separators": (",", ":"), "ensure_ascii": False, "final": ""},
    "compact-ascii-final": {"separators": (",", ":"), "ensure_ascii": True, "final": "\n"},
    "spaced": {"separators": (", ", ": "), "ensure_ascii": False, "final": "\n"},
    "spaced-ascii": {"separators": (", ", ": "), "ensure_ascii": True, "final": ""},
}


def dumped(nb: object, layout: dict[str, object]) -> str:
    options = {k: v for k, v in layout.items() if k != "final"}
    return json.dumps(nb, **options) + str(layout["final"])  # type: ignore[arg-type]


@pytest.mark.parametrize("name", LAYOUTS)
async def test_each_layout_is_written_back_byte_for_byte(ws: Path, name: str) -> None:
    layout = LAYOUTS[name]
    nb = nb_json(cell(["# Überschrift é\n", "prose"], kind="markdown"), cell("r = 2\nprint(r)"))
    (ws / "n.ipynb").write_text(dumped(nb, layout), encoding="utf-8")
    err, parts = await edit(ws, old="r = 2\nprint(r)", new="r = 3\nprint(r)")
    assert not err, parts
    nb["cells"][1]["source"] = "r = 3\nprint(r)"  # type: ignore[index]  # a string stays a string
    assert (ws / "n.ipynb").read_text(encoding="utf-8") == dumped(nb, layout)


async def test_several_edits_are_numbered_in_their_refusals_and_counted_together(ws: Path) -> None:
    notebook(ws / "n.ipynb")
    data = (ws / "n.ipynb").read_bytes()
    first = {"old": "import math", "new": "import cmath"}
    cases = {
        "absent": "`old` of edit 2 (of 2) was not found in any cell of `n.ipynb`. Nothing was written. "
        "No similar text was found either; read the notebook again before editing it.",
        "prose\ntotal": "`old` of edit 2 (of 2) spans two cells of `n.ipynb` (cells 2 and 3): edit each cell "
        "on its own. Nothing was written.",
        " r": "`old` of edit 2 (of 2) is found 2 times in the cells of `n.ipynb` (cells 1, 3); make it "
        "unique or set replace_all. Nothing was written.",
    }
    async with connect(ws) as c:
        for second, message in cases.items():
            r = await call(c, "StrReplaceFile", path="n.ipynb", edit=[first, {"old": second, "new": "x"}])
            assert r.is_error and texts(r) == [message]
            assert (ws / "n.ipynb").read_bytes() == data
        spans = {"old": "prose\ntotal", "new": "x"}
        r = await call(c, "StrReplaceFile", path="n.ipynb", edit=[spans, {"old": "absent", "new": "x"}])
        assert r.is_error and texts(r) == [
            "`old` of edit 1 (of 2) spans two cells of `n.ipynb` (cells 2 and 3): edit each cell on its own. "
            "Nothing was written."
        ]
        r = await call(c, "StrReplaceFile", path="n.ipynb", edit=[first, {"old": "r + 1", "new": "r + 2"}])
    assert not r.is_error and "Applied 2 edit(s) with 2 total replacement(s)." in texts(r)[0]
    sources = ["".join(c["source"]) for c in json.loads((ws / "n.ipynb").read_text())["cells"]]
    assert sources[0].startswith("import cmath\n") and sources[2] == "total = r + 2"


async def test_an_old_found_nowhere_is_not_called_a_span_of_two_cells(ws: Path) -> None:
    notebook(ws / "n.ipynb")
    err, parts = await edit(ws, old="nowhere at all", new="x")
    assert err and "spans" not in parts[0] and "was not found in any cell of `n.ipynb`" in parts[0]


async def test_cells_without_a_string_source_are_skipped_and_their_neighbours_edited(ws: Path) -> None:
    # A cell without a source, one with a number, one with a list holding a non-string: none
    # is an edit's place, none stops an edit of another cell, and each is written back as it was.
    odd = [{"cell_type": "raw"}, {"cell_type": "raw", "source": 5}, {"cell_type": "raw", "source": [1, "b"]}]
    nb = nb_json(cell("a = 1"), *odd, cell("z = 1"))
    (ws / "n.ipynb").write_text(json.dumps(nb, indent=1))
    err, parts = await edit(ws, old="a = 1\n\n\n\nz", new="x")  # across the empty sources: a span
    assert err and "spans several cells of `n.ipynb` (cells 1 to 5)" in parts[0], parts
    err, parts = await edit(ws, old="a = 1", new="a = 2")
    assert not err, parts
    nb["cells"][0]["source"] = "a = 2"  # type: ignore[index]
    assert (ws / "n.ipynb").read_text() == json.dumps(nb, indent=1)


def test_only_nbformat_4_with_a_list_of_cells_up_to_the_cap_is_edited_by_cell() -> None:
    def encoded(nb: dict[str, object]) -> bytes:
        return json.dumps(nb, indent=1).encode()

    assert notebook_of(encoded(nb_json(cell("a")))) is not None
    assert notebook_of(encoded({**nb_json(cell("a")), "nbformat": 3})) is None
    assert notebook_of(encoded({**nb_json(), "cells": None})) is None
    assert notebook_of(b"[]") is None and notebook_of(b"{") is None
    # At the cap exactly, then one byte over it.
    base = len(encoded(nb_json(cell("a"))))
    at_cap = encoded(nb_json(cell("a"), pad="p" * (MAX_EDIT_BYTES - base)))
    assert len(at_cap) == MAX_EDIT_BYTES and notebook_of(at_cap) is not None
    assert notebook_of(at_cap.replace(b'"pad": "', b'"pad": "p')) is None


@pytest.mark.parametrize(("old", "new"), [("r = 2", "r = 22"), ("r = 22", "r = 2"), ("r = 2", "s = 2")])
@pytest.mark.parametrize("where", ["start", "past two blocks"])
def test_the_kept_head_and_tail_are_every_byte_the_edit_left(old: str, new: str, where: str) -> None:
    # An output of 200 KB before the cell puts the change past two of the comparison's blocks.
    big = {"output_type": "stream", "name": "stdout", "text": "o" * 200_000}
    before = [cell("x = 1", big)] if where == "past two blocks" else []
    nb = nb_json(*before, cell(f"{old}\nprint(r)"), cell("tail = 1"))
    data = json.dumps(nb, indent=1).encode()
    done = edit_cells(data, [(old, new, False)], "n.ipynb")
    assert done is not None
    head, tail = done.kept_head, done.kept_tail
    assert data[:head] == done.data[:head] and data[len(data) - tail :] == done.data[len(done.data) - tail :]
    # Both are as long as they can be: the next byte in (from either end) differs, or runs out.
    assert data[head : head + 1] != done.data[head : head + 1]
    assert head + tail == min(len(data), len(done.data)) or data[-tail - 1] != done.data[-tail - 1]
    assert head > (200_000 if before else 0)
