"""StrReplaceFile on a Jupyter notebook (SPEC §8.6) through a real client: an ``old`` in a cell's
source is replaced there, the JSON written back in the file's layout, outputs untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
        "`old` spans two cells of `n.ipynb`: edit each cell on its own. Nothing was written."
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


async def test_an_old_outside_the_cells_edits_the_json_as_before(ws: Path) -> None:
    notebook(ws / "n.ipynb")
    err, parts = await edit(ws, old='"name": "python3"', new='"name": "python3.12"')
    assert not err, parts
    assert json.loads((ws / "n.ipynb").read_text())["metadata"]["kernelspec"]["name"] == "python3.12"
