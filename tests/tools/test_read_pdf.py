"""ReadFile on PDFs (SPEC §8.6) through a real client: text page by page from pypdf in the bounded
worker; PDFs written by hand in the test (tests/pdf_factory.py) or by pypdf's writer."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from pypdf import PdfWriter

from filegate.media import pdf
from filegate.tools.documents import pdf_view
from tests import pdf_factory as pf
from tests.conftest import call, connect, texts
from tests.stress.procs import server_pid, status


async def read(ws: Path, mode: str = "auto", **args: Any) -> tuple[bool, list[str]]:
    async with connect(ws, mode) as c:
        r = await call(c, "ReadFile", **args)
        return r.is_error, texts(r)


def view_note(a: int, b: int, total: int) -> str:
    pages = f"pages {a}-{b}" if b > a else f"page {a}"
    return f" PDF view of {pages} of {total}: lines are numbered in this view, not in the file."


async def test_a_pdf_reads_page_by_page_with_markers(ws: Path, mode: str) -> None:
    pf.write_text_pdf(
        ws / "report.pdf", [["Quarterly report", "Revenue (up)"], None, ["The end"]], flate=True
    )
    err, (out, msg) = await read(ws, mode, path="report.pdf")
    assert not err
    assert out == (
        "     1\t--- page 1 ---\n"
        "     2\tQuarterly report\n"
        "     3\tRevenue (up)\n"
        "     4\t--- page 2 ---\n"
        "     5\t(page 2 has no text layer; ReadMediaFile with pages=2 shows it as an image)\n"
        "     6\t--- page 3 ---\n"
        "     7\tThe end\n"
    )
    assert (
        msg
        == "7 lines read from file starting from line 1. Total lines in file: 7. End of file reached."
        + view_note(1, 3, 3)
    )


async def test_pages_and_line_windows_select_from_the_view(ws: Path) -> None:
    pf.write_text_pdf(ws / "book.pdf", [[f"page {p} line {i}" for i in range(1, 4)] for p in range(1, 8)])
    _, (out, msg) = await read(ws, path="book.pdf", pages="3-4", line_offset=2, n_lines=4)
    assert (
        out == "     2\tpage 3 line 1\n     3\tpage 3 line 2\n     4\tpage 3 line 3\n     5\t--- page 4 ---\n"
    )
    assert msg == "4 lines read from file starting from line 2. Total lines in file: 8." + view_note(3, 4, 7)
    _, (out, _msg) = await read(ws, path="book.pdf", pages="7")
    assert (
        out == "     1\t--- page 7 ---\n     2\tpage 7 line 1\n     3\tpage 7 line 2\n     4\tpage 7 line 3\n"
    )


async def test_a_long_pdf_is_read_twenty_pages_a_call(ws: Path) -> None:
    pf.write_text_pdf(ws / "long.pdf", [[f"p{p}"] for p in range(1, 31)])
    _, (out, msg) = await read(ws, path="long.pdf", line_offset=-2)
    assert out == "    39\t--- page 20 ---\n    40\tp20\n"
    assert msg.endswith(
        view_note(1, 20, 30) + ' Pages after 20 were not read in this call: pass pages="21-30" for more.'
    )


@pytest.mark.parametrize(
    ("pages", "error"),
    [
        ("9", "`three.pdf` has 3 pages; page 9 does not exist."),
        ("3-2", 'pages="3-2" ends before it starts.'),
    ],
)
async def test_pages_outside_the_document_are_refused(ws: Path, pages: str, error: str) -> None:
    pf.write_text_pdf(ws / "three.pdf", [["a"], ["b"], ["c"]])
    err, parts = await read(ws, path="three.pdf", pages=pages)
    assert err and parts == [error]


async def test_an_encrypted_pdf_is_refused(ws: Path) -> None:
    writer = PdfWriter()
    writer.add_blank_page(100, 100)
    writer.encrypt("secret", algorithm="RC4-128")
    writer.write(str(ws / "locked.pdf"))
    err, parts = await read(ws, path="locked.pdf")
    assert err and parts == [
        "Failed to read `locked.pdf` as a PDF (application/pdf): it is encrypted; filegate does not "
        "decrypt PDFs. Ask the user for a decrypted copy."
    ]


async def test_a_sensitive_pdf_is_refused_like_any_other_file(ws: Path) -> None:
    pf.write_text_pdf(ws / "report.pdf", [["SALARY 1000000"]])
    (ws / "report.txt").write_text("SALARY 1000000\n")
    async with connect(ws, secret_patterns=["report.*"]) as c:
        pdf = await call(c, "ReadFile", path="report.pdf", pages="1")
        txt = await call(c, "ReadFile", path="report.txt")
    assert pdf.is_error and txt.is_error
    (message,) = texts(pdf)
    assert message == texts(txt)[0].replace("report.txt", "report.pdf")
    assert "SALARY" not in message and "page" not in message and "sensitive" in message.lower()


async def test_a_broken_pdf_is_refused_in_filegates_words_without_its_bytes(ws: Path, mode: str) -> None:
    """pypdf's own message quotes the bytes around a broken object: none of them is shown."""
    (ws / "broken.pdf").write_bytes(pf.broken_object(b"MARKER-SECRET-42"))
    err, parts = await read(ws, mode, path="broken.pdf")
    assert err and parts == [
        "Failed to read `broken.pdf` as a PDF (application/pdf): pypdf could not read it: its "
        "structure is damaged (the cross-reference table, the page tree or an object) (PdfReadError)."
    ]
    assert "MARKER" not in parts[0]


PAGES_IGNORED = " (pages applies to PDFs only: ignored for this file.)"
RAW_IGNORED = " (raw applies to Jupyter notebooks only: ignored for this file.)"


async def test_pages_and_raw_on_files_they_do_not_apply_to_are_ignored_with_a_note(ws: Path) -> None:
    (ws / "a.txt").write_text("one\ntwo\n")
    pf.write_text_pdf(ws / "a.pdf", [["only page"]])
    cell = {"cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": [], "execution_count": 1}
    (ws / "a.ipynb").write_text(
        json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    plain = "2 lines read from file starting from line 1. Total lines in file: 2. End of file reached."
    async with connect(ws) as c:
        txt_pages = texts(await call(c, "ReadFile", path="a.txt", pages="2"))
        txt_raw = texts(await call(c, "ReadFile", path="a.txt", raw=True))
        pdf_raw = texts(await call(c, "ReadFile", path="a.pdf", raw=True))
        nb_pages = texts(await call(c, "ReadFile", path="a.ipynb", pages="1"))
    assert txt_pages == ["     1\tone\n     2\ttwo\n", plain + PAGES_IGNORED]
    assert txt_raw == ["     1\tone\n     2\ttwo\n", plain + RAW_IGNORED]
    assert pdf_raw[0] == "     1\t--- page 1 ---\n     2\tonly page\n"
    assert pdf_raw[1].endswith(view_note(1, 1, 1) + RAW_IGNORED)
    assert nb_pages[0].startswith("     1\t# cell 1 · code")
    assert nb_pages[1].endswith("raw=true shows the JSON." + PAGES_IGNORED)


async def test_grep_on_a_pdf_is_unchanged(ws: Path) -> None:
    """Grep searches the file's bytes as before (rg skips binary files): no PDF text view."""
    pf.write_text_pdf(ws / "doc.pdf", [["needle in a page"]], flate=True)
    (ws / "plain.txt").write_text("needle\n")
    async with connect(ws) as c:
        r = await call(c, "Grep", pattern="needle")
    assert not r.is_error and texts(r)[0].splitlines() == ["plain.txt"]


# --- hostile PDFs: refused within bounds, by a server that stays small -----------------------

# The server never loads a PDF: pypdf runs in the worker. What it holds over its idle size
# while the worker runs is its own bookkeeping (a few MiB); 64 MiB leaves room for the noise.
PEAK_OVER_IDLE = 64 << 20
CALL_GUARD_S = 60

BOMBS = {
    "flate.pdf": (
        pf.flate_bomb,
        "pypdf could not read it: a stream in it inflates past the limit on decompressed bytes "
        "(LimitReachedError).",
    ),
    "cycle.pdf": (
        pf.cyclic_page_tree,
        "pypdf could not read it: its structure is damaged (the cross-reference table, the page "
        "tree or an object) (PdfReadError).",
    ),
    "broken.pdf": (
        pf.broken_xref,
        "pypdf could not read it: its structure is damaged (the cross-reference table, the page "
        "tree or an object) (PdfReadError).",
    ),
}


@pytest.mark.slow
async def test_pdf_bombs_are_refused_in_the_worker_and_the_server_stays_small(ws: Path) -> None:
    for name, (make, _) in BOMBS.items():
        (ws / name).write_bytes(make())
    (ws / "form.pdf").write_bytes(pf.self_drawing_form())
    (ws / "many.pdf").write_bytes(pf.text_pdf([["p"]] * 10_000))
    pf.write_text_pdf(ws / "warm.pdf", [["warm"]])
    transport = StdioTransport(
        sys.executable, ["-m", "filegate", "--workdir", str(ws)], cwd=str(ws), keep_alive=False
    )
    async with Client(transport) as c:
        warm = await call(c, "ReadFile", path="warm.pdf")
        assert not warm.is_error, texts(warm)
        pid = server_pid(ws)
        idle = status(pid)["VmRSS"]
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
        results, seconds = {}, {}
        for name in [*BOMBS, "form.pdf", "many.pdf"]:
            started = time.monotonic()
            with anyio.fail_after(CALL_GUARD_S):
                results[name] = await call(c, "ReadFile", path=name, n_lines=4)
            seconds[name] = time.monotonic() - started
        peak = status(pid)["VmHWM"]
        after = await call(c, "ReadFile", path="warm.pdf")
    for name, (_, why) in BOMBS.items():
        r = results[name]
        assert r.is_error, texts(r)
        assert texts(r)[0].startswith(f"Failed to read `{name}` as a PDF (application/pdf): {why}"), texts(r)
    # A form that draws itself is drawn once; 10,000 pages are counted and only the pages the
    # window of 4 lines needs are read (2 view lines a page).
    assert texts(results["form.pdf"])[0] == "     1\t--- page 1 ---\n     2\tinside\n"
    many = texts(results["many.pdf"])
    assert many[1].endswith(
        view_note(1, 3, 10_000) + ' Pages after 3 were not read in this call: pass pages="4-23" for more.'
    )
    assert not after.is_error  # the server answers on
    assert peak - idle < PEAK_OVER_IDLE, f"server peak {peak >> 20} MiB, idle {idle >> 20} MiB; {seconds}"


async def test_a_forward_window_reads_only_the_pages_it_needs(ws: Path) -> None:
    pf.write_text_pdf(ws / "long.pdf", [[f"p{p} a", f"p{p} b"] for p in range(1, 31)])  # 3 view lines a page
    _, (out, msg) = await read(ws, path="long.pdf", line_offset=4, n_lines=3)
    assert out == "     4\t--- page 2 ---\n     5\tp2 a\n     6\tp2 b\n"
    assert msg == (
        "3 lines read from file starting from line 4. Total lines in file: 9." + view_note(1, 3, 30)
        + ' Pages after 3 were not read in this call: pass pages="4-23" for more.'
    )  # fmt: skip


async def test_windows_ask_the_worker_only_for_the_pages_they_show(ws: Path) -> None:
    pf.write_text_pdf(ws / "long.pdf", [[f"p{p}"] for p in range(1, 31)])  # 2 view lines a page
    pf.write_text_pdf(ws / "five.pdf", [[f"p{p}"] for p in range(1, 6)])
    async with connect(ws) as c:
        head = texts(await call(c, "ReadFile", path="long.pdf", n_lines=4))
        tail = texts(await call(c, "ReadFile", path="five.pdf", line_offset=-2, n_lines=2))
        some = texts(await call(c, "ReadFile", path="five.pdf", pages="2-3"))
    assert head == [
        "     1\t--- page 1 ---\n     2\tp1\n     3\t--- page 2 ---\n     4\tp2\n",
        "4 lines read from file starting from line 1. Total lines in file: 6."
        + view_note(1, 3, 30)
        + ' Pages after 3 were not read in this call: pass pages="4-23" for more.',
    ]
    assert tail[0] == "     9\t--- page 5 ---\n    10\tp5\n"
    assert some == [
        "     1\t--- page 2 ---\n     2\tp2\n     3\t--- page 3 ---\n     4\tp3\n",
        "4 lines read from file starting from line 1. Total lines in file: 4. End of file reached."
        + view_note(2, 3, 5),
    ]


async def test_nul_characters_in_a_pages_text_are_dropped(ws: Path) -> None:
    content = pf.stream(b"BT /F1 12 Tf 72 700 Td (a\\000b) Tj ET")
    (ws / "nul.pdf").write_bytes(pf.build(pf._one_page(content)))
    _, (out, _msg) = await read(ws, path="nul.pdf")
    assert out == "     1\t--- page 1 ---\n     2\tab\n"


async def test_column_offset_reads_a_view_line_from_a_column(ws: Path) -> None:
    pf.write_text_pdf(ws / "wide.pdf", [["0123456789abcdefghij"]])
    _, (out, _msg) = await read(ws, path="wide.pdf", line_offset=2, column_offset=10, n_lines=1)
    assert out.startswith("     2\tabcdefghij")


async def test_text_over_the_character_cap_stops_inside_its_page_and_says_so(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server sends its cap with the request: a small one here, so a small PDF reaches it."""
    monkeypatch.setattr(pdf, "MAX_TEXT_CHARS", 12)
    monkeypatch.setattr(pdf_view, "MAX_TEXT_CHARS", 12)
    pf.write_text_pdf(ws / "cap.pdf", [["1234"], ["abcd"], ["xyz"]])
    _, (out, msg) = await read(ws, path="cap.pdf")
    assert out.endswith("     6\txy\n")
    assert msg.endswith(
        view_note(1, 3, 3) + " The text stops inside page 3: one call reads at most 12 characters."
    )
