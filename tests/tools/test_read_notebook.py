"""ReadFile on Jupyter notebooks (SPEC §8.6): the cell view through a real client, on real
notebooks written as nbformat 4 and 3 JSON in tmp_path."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest

import filegate.tools.documents.notebook as notebook
from tests.conftest import call, connect, texts

NOTE = (
    " Notebook view of {} cells: lines are numbered in this view (cell headers and outputs"
    " included), not in the file; raw=true shows the JSON."
)
RED = "\x1b[0;31m"
RESET = "\x1b[0m"


def cell(source: str | list[str], *outputs: dict[str, Any], kind: str = "code") -> dict[str, Any]:
    c: dict[str, Any] = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        c["execution_count"] = 1
        c["outputs"] = list(outputs)
    return c


def write_nb(path: Path, *cells: dict[str, Any], indent: int = 1) -> None:
    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3"}},
        "cells": list(cells),
    }
    path.write_text(json.dumps(nb, indent=indent))


def png_output(size: int = 30_000) -> dict[str, Any]:
    data = base64.b64encode(os.urandom(size)).decode()
    return {
        "output_type": "display_data",
        "metadata": {},
        "data": {"image/png": data, "text/plain": ["<Figure>"]},
    }


def traceback_error() -> dict[str, Any]:
    frames = [f"{RED}frame {i}{RESET}\n  line of frame {i}" for i in range(5)]
    return {
        "output_type": "error",
        "ename": "ZeroDivisionError",
        "evalue": "division by zero",
        "traceback": [
            f"{RED}-----------{RESET}",
            *frames,
            f"{RED}ZeroDivisionError{RESET}: division by zero",
        ],
    }


async def read(ws: Path, mode: str = "auto", **args: Any) -> tuple[bool, list[str]]:
    async with connect(ws, mode) as c:
        r = await call(c, "ReadFile", **args)
        return r.is_error, texts(r)


async def test_a_notebook_reads_as_cells_with_outputs_trimmed(ws: Path, mode: str) -> None:
    write_nb(
        ws / "analysis.ipynb",
        cell(["# Title\n", "Some prose."], kind="markdown"),
        cell(
            ["import math\n", "print(math.pi)"],
            {"output_type": "stream", "name": "stdout", "text": ["3.14159\n"]},
            png_output(),
            {
                "output_type": "execute_result",
                "metadata": {},
                "execution_count": 1,
                "data": {"text/html": ["<table/>"], "text/plain": ["   a\n", "0  1"]},
            },
        ),
        cell("1/0", traceback_error()),
    )
    err, (out, msg) = await read(ws, mode, path="analysis.ipynb")
    assert not err
    assert out == (
        "     1\t# cell 1 · markdown\n"
        "     2\t# Title\n"
        "     3\tSome prose.\n"
        "     4\t# cell 2 · code · 3 outputs\n"
        "     5\timport math\n"
        "     6\tprint(math.pi)\n"
        "     7\t# out 1 · stdout\n"
        "     8\t3.14159\n"
        "     9\t# out 2 · display_data\n"
        "    10\t<Figure>\n"
        "    11\t[image/png output not shown]\n"
        "    12\t# out 3 · execute_result\n"
        "    13\t   a\n"
        "    14\t0  1\n"
        "    15\t[text/html output not shown]\n"
        "    16\t# cell 3 · code · 1 output\n"
        "    17\t1/0\n"
        "    18\t# out 1 · error\n"
        "    19\tZeroDivisionError: division by zero\n"
        "    20\t… traceback: 6 earlier lines left out …\n"
        "    21\t  line of frame 2\n"
        "    22\tframe 3\n"
        "    23\t  line of frame 3\n"
        "    24\tframe 4\n"
        "    25\t  line of frame 4\n"
        "    26\tZeroDivisionError: division by zero\n"
    )
    assert "\x1b" not in out  # colour codes removed
    assert (
        msg
        == "26 lines read from file starting from line 1. Total lines in file: 26. End of file reached."
        + NOTE.format(3)
    )


async def test_line_windows_and_tails_number_the_view(ws: Path) -> None:
    write_nb(ws / "n.ipynb", *(cell(f"x = {i}") for i in range(1, 11)))  # 2 view lines a cell
    err, (out, msg) = await read(ws, path="n.ipynb", line_offset=5, n_lines=3)
    assert not err
    assert out == "     5\t# cell 3 · code · 0 outputs\n     6\tx = 3\n     7\t# cell 4 · code · 0 outputs\n"
    assert msg == "3 lines read from file starting from line 5. Total lines in file: 20." + NOTE.format(10)
    _, (out, msg) = await read(ws, path="n.ipynb", line_offset=-2)
    assert out == "    19\t# cell 10 · code · 0 outputs\n    20\tx = 10\n"
    assert msg.startswith(
        "2 lines read from file starting from line 19. Total lines in file: 20. End of file"
    )


async def test_a_long_output_keeps_its_first_and_last_lines(ws: Path) -> None:
    log = [f"epoch {i}\n" for i in range(1, 101)]
    write_nb(ws / "train.ipynb", cell("train()", {"output_type": "stream", "name": "stderr", "text": log}))
    _, (out, _msg) = await read(ws, path="train.ipynb")
    rows = [line.split("\t", 1)[1] for line in out.splitlines()]
    assert rows[:5] == ["# cell 1 · code · 1 output", "train()", "# out 1 · stderr", "epoch 1", "epoch 2"]
    assert rows[13] == "… 80 lines of output left out …"
    assert rows[14] == "epoch 91" and rows[-1] == "epoch 100" and len(rows) == 24


async def test_raw_shows_the_json(ws: Path) -> None:
    write_nb(ws / "n.ipynb", cell("x = 1"), png_output() | {"cell_type": "code", "source": "", "outputs": []})
    _, (out, msg) = await read(ws, path="n.ipynb", raw=True, n_lines=3)
    assert out == '     1\t{\n     2\t "nbformat": 4,\n     3\t "nbformat_minor": 5,\n'
    assert "Notebook view" not in msg and msg.startswith("3 lines read from file starting from line 1.")


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('{"cells": [\n  {"cell_type": "code",\n', "it is not valid JSON"),
        ('{"cells": "no",\n "nbformat": 4}\n', "its JSON has no list of cells"),
        ('{"data": [1, 2],\n "nbformat": 2}\n', "its JSON is not a notebook of nbformat 4 or 3"),
    ],
)
async def test_what_is_not_notebook_json_reads_as_text_with_a_note(ws: Path, content: str, why: str) -> None:
    (ws / "broken.ipynb").write_text(content)
    err, (out, msg) = await read(ws, path="broken.ipynb")
    assert not err
    assert out.splitlines()[0] == "     1\t" + content.splitlines()[0]
    assert msg.endswith(
        f" End of file reached. Shown as text: this .ipynb file is not read as a notebook ({why})."
    )


async def test_a_json_object_not_named_ipynb_stays_text(ws: Path) -> None:
    write_nb(ws / "notebook.json", cell("x = 1"))
    _, (out, msg) = await read(ws, path="notebook.json", n_lines=1)
    assert out == "     1\t{\n" and "Notebook" not in msg


async def test_nbformat_3_reads_as_cells(ws: Path) -> None:
    nb = {
        "nbformat": 3,
        "nbformat_minor": 0,
        "metadata": {},
        "worksheets": [
            {
                "cells": [
                    {"cell_type": "heading", "level": 2, "source": ["Results"], "metadata": {}},
                    {
                        "cell_type": "code", "language": "python", "input": ["print(2)"], "metadata": {},
                        "outputs": [
                            {"output_type": "stream", "stream": "stdout", "text": ["2\n"]},
                            {"output_type": "pyout", "text": ["4"], "png": "iVBOR", "metadata": {}},
                            {"output_type": "pyerr", "ename": "KeyError", "evalue": "'k'", "traceback": ["KeyError: 'k'"]},
                        ],
                    },
                ]
            }
        ],
    }  # fmt: skip
    (ws / "old.ipynb").write_text(json.dumps(nb))
    _, (out, msg) = await read(ws, path="old.ipynb")
    assert out == (
        "     1\t# cell 1 · heading · level 2\n"
        "     2\tResults\n"
        "     3\t# cell 2 · code · 3 outputs\n"
        "     4\tprint(2)\n"
        "     5\t# out 1 · stdout\n"
        "     6\t2\n"
        "     7\t# out 2 · pyout\n"
        "     8\t4\n"
        "     9\t[png output not shown]\n"
        "    10\t# out 3 · error\n"
        "    11\tKeyError: 'k'\n"
        "    12\tKeyError: 'k'\n"
    )
    assert msg.endswith(NOTE.format(2))


async def test_a_notebook_over_the_parse_cap_reads_as_its_json(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_nb(ws / "big.ipynb", cell("x = 1", png_output(60_000)))
    monkeypatch.setattr(notebook, "MAX_NOTEBOOK_BYTES", 64 << 10)  # the in-memory server's module
    _, (out, msg) = await read(ws, path="big.ipynb", n_lines=2)
    assert out == '     1\t{\n     2\t "nbformat": 4,\n'
    assert (
        msg.endswith(
            " Shown as text: this .ipynb file is not read as a notebook (it is larger than the 0 MiB"
            " this server parses into cells)."
        )
        is False
    )  # the cap is said in MiB: 64 KiB reads as a fraction, not "0"
    assert "(it is larger than the 0.0625 MiB this server parses into cells)." in msg


async def test_a_sensitive_notebook_is_refused_like_any_file(ws: Path) -> None:
    write_nb(ws / "keys.ipynb", cell("TOKEN = 'abc'"))
    async with connect(ws, secret_patterns=["keys.ipynb"]) as c:
        r = await call(c, "ReadFile", path="keys.ipynb")
        assert r.is_error
        (message,) = texts(r)
        assert "TOKEN" not in message and "cell" not in message and "sensitive" in message.lower()


# A notebook of tens of MB, nearly all of it base64 images (what plotting notebooks are).
BIG_NOTEBOOK_MB = 50
# Its parse holds ~PARSE_COST_FACTOR times the file, then lets it all go; 32 MiB for the rest.
BIG_PEAK_OVER_IDLE = notebook.PARSE_COST_FACTOR * (BIG_NOTEBOOK_MB << 20) + (32 << 20)


def write_big_notebook(path: Path, megabytes: int) -> None:
    image = base64.b64encode(os.urandom(750_000)).decode()  # 1 MB of base64 a cell
    cells = [
        cell(
            [f"plot({i})\n", "show()"],
            {"output_type": "display_data", "metadata": {}, "data": {"image/png": image}},
        )
        for i in range(megabytes)
    ]
    write_nb(path, *cells)


@pytest.mark.slow
async def test_a_big_notebook_with_images_is_parsed_within_the_load_budget(ws: Path) -> None:
    import sys

    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    from tests.stress.procs import server_pid, status

    write_big_notebook(ws / "plots.ipynb", BIG_NOTEBOOK_MB)
    write_nb(ws / "warm.ipynb", cell("x = 1"))
    transport = StdioTransport(
        sys.executable, ["-m", "filegate", "--workdir", str(ws)], cwd=str(ws), keep_alive=False
    )
    async with Client(transport) as c:
        assert not (await call(c, "ReadFile", path="warm.ipynb")).is_error
        pid = server_pid(ws)
        idle = status(pid)["VmRSS"]
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
        r = await call(c, "ReadFile", path="plots.ipynb", n_lines=4)
        peak = status(pid)["VmHWM"]
    assert not r.is_error
    out, msg = texts(r)
    assert (
        out
        == "     1\t# cell 1 · code · 1 output\n     2\tplot(0)\n     3\tshow()\n     4\t# out 1 · display_data\n"
    )
    assert msg.endswith(NOTE.format(BIG_NOTEBOOK_MB))
    assert peak - idle < BIG_PEAK_OVER_IDLE, f"server peak {peak >> 20} MiB over an idle {idle >> 20} MiB"


async def test_column_offset_reads_a_long_view_line_in_pieces(ws: Path) -> None:
    write_nb(ws / "wide.ipynb", cell("x = '" + "ab" * 1500 + "'"))
    _, (out, msg) = await read(ws, path="wide.ipynb", line_offset=2, n_lines=1, column_offset=2990)
    assert out == "     2\tb" + "ab" * 7 + "'\n"  # characters 2990 to 3005 of the source line
    assert "Notebook view of 1 cells" in msg


async def test_reading_the_cell_view_counts_as_a_read_for_an_edit(ws: Path) -> None:
    write_nb(ws / "n.ipynb", cell(["a = 1\n", "b = 2"]))
    async with connect(ws) as c:
        before = await call(
            c, "StrReplaceFile", path="n.ipynb", edit={"old": "a = 1\nb = 2", "new": "a = 3\nb = 4"}
        )
        assert before.is_error and "read" in texts(before)[0].lower()  # the read guard (on here)
        assert not (await call(c, "ReadFile", path="n.ipynb", n_lines=2)).is_error
        after = await call(
            c, "StrReplaceFile", path="n.ipynb", edit={"old": "a = 1\nb = 2", "new": "a = 3\nb = 4"}
        )
    assert not after.is_error, texts(after)
    assert json.loads((ws / "n.ipynb").read_text())["cells"][0]["source"] == ["a = 3\n", "b = 4"]


async def test_missing_fields_line_breaks_and_the_trim_boundaries_read_as_documented(ws: Path) -> None:
    """Every optional field left out, old line breaks, and outputs exactly at the trim limits
    (the mutation target `notebook` found these unchecked)."""
    twenty = "".join(f"o{n}\n" for n in range(20))
    six = [f"t{n}" for n in range(6)]
    write_nb(
        ws / "odd.ipynb",
        {"source": "no type"},
        cell("a\r\nb\rc", {"text": "what"}, {"output_type": "stream", "text": twenty}),
        cell("s", {"output_type": "stream", "stream": "stderr", "text": "old"}),
        cell("e", {"output_type": "error", "traceback": six}),
        {"cell_type": "heading", "source": "H"},
        {"cell_type": "markdown", "source": "m", "outputs": [{"output_type": "stream", "text": "x"}]},
    )
    err, (out, _) = await read(ws, path="odd.ipynb")
    assert not err
    rows = [
        "# cell 1 · unknown", "no type",
        "# cell 2 · code · 2 outputs", "a", "b", "c", "# out 1 · unknown", "what",
        "# out 2 · stdout", *(f"o{n}" for n in range(20)),
        "# cell 3 · code · 1 output", "s", "# out 1 · stderr", "old",
        "# cell 4 · code · 1 output", "e", "# out 1 · error", "Error: ", *six,
        "# cell 5 · heading · level 1", "H",
        "# cell 6 · markdown", "m",
    ]  # fmt: skip
    assert out == "".join(f"{n:6d}\t{row}\n" for n, row in enumerate(rows, 1))


V3_NO_CELLS = "its JSON has no list of cells"


@pytest.mark.parametrize(
    ("notebook_json", "why"),
    [
        ({"nbformat": 3, "worksheets": {"cells": []}}, V3_NO_CELLS),  # not a list
        ({"nbformat": 3, "worksheets": []}, V3_NO_CELLS),  # no worksheet
        ({"nbformat": 3, "worksheets": [["cells"]]}, V3_NO_CELLS),  # a worksheet not an object
        ({"nbformat": 4, "cells": [{"cell_type": "code", "source": "x"}, "x = 1"]}, V3_NO_CELLS),
    ],
)
async def test_json_of_another_shape_reads_as_text_with_why(ws: Path, notebook_json: Any, why: str) -> None:
    """Valid JSON that is not a notebook (SPEC §8.6): its text, with a note that says why."""
    content = json.dumps(notebook_json, indent=1)
    (ws / "odd.ipynb").write_text(content)
    err, (out, msg) = await read(ws, path="odd.ipynb")
    assert not err
    assert out == "".join(f"{n:6d}\t{line}\n" for n, line in enumerate(content.splitlines(), 1))
    assert msg.endswith(f" Shown as text: this .ipynb file is not read as a notebook ({why}).")


@pytest.mark.parametrize("top", [[{"nbformat": 4, "cells": []}], "nbformat 4"])
async def test_json_not_an_object_at_the_top_is_not_a_notebook_candidate(ws: Path, top: Any) -> None:
    """Only a .ipynb that begins as a JSON object is parsed (policy/filetype.document_kind), so
    render_notebook's "no object at the top" is never reached through ReadFile: plain text."""
    content = json.dumps(top, indent=1)
    (ws / "odd.ipynb").write_text(content)
    err, (out, msg) = await read(ws, path="odd.ipynb")
    assert not err
    assert out == "".join(f"{n:6d}\t{line}\n" for n, line in enumerate(content.splitlines(), 1))
    assert msg.endswith(" End of file reached.") and "notebook" not in msg


async def test_sources_and_tracebacks_of_other_types_show_no_lines(ws: Path) -> None:
    """A source, text or traceback that is neither a string nor a list of strings (a hand-edited
    or foreign notebook) shows nothing for it: the rest of the notebook still reads."""
    write_nb(
        ws / "odd.ipynb",
        cell(7, {"output_type": "stream", "name": "stdout", "text": {"a": 1}}),  # type: ignore[arg-type]
        cell(["a", 1, None, "b\n", "c"], kind="markdown"),  # type: ignore[list-item]
        cell("e", {"output_type": "error", "ename": "E", "evalue": "v", "traceback": "frame 1\nframe 2"}),
        cell("f", {"output_type": "error", "ename": "F", "evalue": "w", "traceback": ["one", 2, "two"]}),
    )
    err, (out, _) = await read(ws, path="odd.ipynb")
    assert not err
    rows = [
        "# cell 1 · code · 1 output", "# out 1 · stdout",
        "# cell 2 · markdown", "ab", "c",
        "# cell 3 · code · 1 output", "e", "# out 1 · error", "E: v",
        "# cell 4 · code · 1 output", "f", "# out 1 · error", "F: w", "one", "two",
    ]  # fmt: skip
    assert out == "".join(f"{n:6d}\t{row}\n" for n, row in enumerate(rows, 1))


async def test_colour_codes_are_removed_from_sources_and_outputs(ws: Path) -> None:
    """Terminal codes in a stream (pip, tqdm, a logger) or a source reach no view line."""
    write_nb(
        ws / "c.ipynb",
        cell(
            f"print('{RED}red{RESET}')",
            {"output_type": "stream", "name": "stdout", "text": [f"{RED}red{RESET}\n", "\x1b[2K\x1b[1Gdone"]},
        ),
    )
    _, (out, _) = await read(ws, path="c.ipynb")
    assert out == (
        "     1\t# cell 1 · code · 1 output\n"
        "     2\tprint('red')\n"
        "     3\t# out 1 · stdout\n"
        "     4\tred\n"
        "     5\tdone\n"
    )


async def test_a_notebook_at_the_parse_cap_is_parsed(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_nb(ws / "n.ipynb", cell("x = 1"))
    monkeypatch.setattr(notebook, "MAX_NOTEBOOK_BYTES", (ws / "n.ipynb").stat().st_size)
    _, (out, msg) = await read(ws, path="n.ipynb")
    assert out == "     1\t# cell 1 · code · 0 outputs\n     2\tx = 1\n" and msg.endswith(NOTE.format(1))


async def test_the_parse_waits_for_three_times_the_file_in_the_load_budget(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parse holds the bytes, the text and the parsed strings (PARSE_COST_FACTOR × the file)
    at once: with less room left beside other calls' loads it waits, and is refused when the
    room never comes."""
    from filegate.fsio import loads

    write_nb(ws / "n.ipynb", cell("x = 1"))
    size = (ws / "n.ipynb").stat().st_size
    monkeypatch.setattr(loads, "LOAD_WAIT_S", 0.2)
    free = loads.LOADS.capacity - loads.LOADS.held
    with loads.holding(free - (3 * size - 1)):  # another call's load: one byte short
        err, (message,) = await read(ws, path="n.ipynb")
    assert err and message == (
        "The server was busy holding other calls' files (at most 256 MiB at once) for longer than "
        "0.2 s; nothing was done, try again."
    )
    with loads.holding(free - 3 * size):  # room for the parse exactly
        err, (out, _) = await read(ws, path="n.ipynb")
    assert not err and out == "     1\t# cell 1 · code · 0 outputs\n     2\tx = 1\n"


async def test_a_notebook_past_one_read_chunk_is_joined_whole(ws: Path) -> None:
    """A plotting notebook is often larger than one read chunk: the text across the chunk's end
    reads as written (8 MiB, written and parsed in well under a second)."""
    marker = chunk_spanning_notebook(ws / "plots.ipynb")
    err, (out, msg) = await read(ws, path="plots.ipynb", line_offset=-2)
    assert not err
    assert out == f"     5\t# cell 2 · code · 0 outputs\n     6\t{marker}\n" and msg.endswith(NOTE.format(2))


def chunk_spanning_notebook(path: Path) -> str:
    """A notebook just over one read chunk whose last cell's source spans the chunk's end."""
    image = {"output_type": "display_data", "metadata": {}, "data": {"image/png": ""}}
    marker = "across_the_chunk_end"
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell("plot()", image), cell(marker)]}
    first = json.dumps(nb, indent=1).index(marker)
    image["data"]["image/png"] = "A" * (notebook.READ_CHUNK_BYTES - first - len(marker) // 2)
    content = json.dumps(nb, indent=1)
    assert content.index(marker) < notebook.READ_CHUNK_BYTES < content.index(marker) + len(marker)
    path.write_text(content)
    return marker


@pytest.mark.parametrize("change", ["grows", "shrinks"])
async def test_a_notebook_changed_while_it_is_read_is_read_as_it_was_or_as_text(
    ws: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """A notebook written to while the view reads it (a Jupyter autosave). The race is staged
    by a writer that acts just before the view's first read (notebook.pread wrapped; the reads
    stay real): bytes appended past the size the read started with are not taken in, and a
    file cut short is shown as text, never a crash."""
    p = ws / "live.ipynb"
    marker = chunk_spanning_notebook(p)
    wrote = []

    def writer_then_pread(fd: int, n: int, offset: int) -> bytes:
        if not wrote:
            wrote.append(change)
            with open(p, "r+b") as f:
                if change == "grows":
                    f.seek(0, os.SEEK_END)
                    f.write(b"\n  autosaved tail")
                else:
                    f.truncate(1000)
        return os.pread(fd, n, offset)

    monkeypatch.setattr(notebook, "pread", writer_then_pread)
    err, (out, msg) = await read(ws, path="live.ipynb", line_offset=-2)
    assert not err and wrote == [change]
    if change == "grows":
        assert out == f"     5\t# cell 2 · code · 0 outputs\n     6\t{marker}\n" and msg.endswith(
            NOTE.format(2)
        )
    else:
        assert "Notebook view" not in msg
        assert msg.endswith(
            " Shown as text: this .ipynb file is not read as a notebook (it is not valid JSON)."
        )
