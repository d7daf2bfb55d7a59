"""media/pdf_pages.py's worker side in this process (its answer to a request, as the worker would
give it), on PDFs written by hand: the pages drawn, the cap, the refusals in filegate's words. The
server's side runs it in the worker (tests/tools/test_read_pdf_images.py); here mutation testing
reaches it (a worker process imports the unmutated package)."""

from __future__ import annotations

import base64
import io
import math
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from pypdf import PdfWriter

from filegate.errors import MediaError
from filegate.media import pdf_pages
from filegate.media.bounds import MAX_DECODE_BYTES, DecodeTimeout
from tests import pdf_factory as pf

pytest.importorskip("pypdfium2")


def answer(data: bytes, first: int = 1, last: int = 1, **kw: Any) -> dict[str, Any]:
    request = {"first": first, "last": last, "room": 1 << 20, "max_side": 200, "timeout": 30.0, **kw}
    return pdf_pages.answer_in_worker(io.BytesIO(data), request)


@pytest.mark.parametrize(
    ("box", "px"),
    [
        ((400, 100), [200, 50]),  # drawn down to the longest side
        ((50, 100), [100, 200]),  # and up to it: not at its size in points
        ((0.5, 0.25), [100, 50]),  # under 1 pt: at the scale of a 1 pt page, not blown up further
        ((1.5, 0.75), [200, 100]),  # from 1 pt on: at the longest side
    ],
)
def test_a_page_is_drawn_at_the_longest_side_with_its_size_in_points(
    box: tuple[float, float], px: list[int]
) -> None:
    got = answer(pf.left_half_black(box))
    assert got["total"] == 1
    [page] = got["pages"]
    assert (page["number"], page["pt"], page["px"]) == (1, pytest.approx(list(box)), px)
    im = Image.open(io.BytesIO(base64.b64decode(page["data"])))
    assert list(im.size) == px and page["mime"] == f"image/{im.format.lower()}"
    gray = im.convert("L")
    width, height = px
    assert gray.getpixel((width // 4, height // 2)) < 30  # the left half black
    assert gray.getpixel((width * 3 // 4, height // 2)) > 225  # the right half blank


def test_the_pages_asked_for_and_at_most_max_page_images() -> None:
    book = pf.drawn_pdf([b""] * (pdf_pages.MAX_PAGE_IMAGES + 3), (100, 100))
    assert [p["number"] for p in answer(book, 2, 3)["pages"]] == [2, 3]
    capped = answer(book, 2, 99)
    assert capped["total"] == pdf_pages.MAX_PAGE_IMAGES + 3
    assert [p["number"] for p in capped["pages"]] == list(range(2, pdf_pages.MAX_PAGE_IMAGES + 2))


@pytest.mark.parametrize("password", ["secret", ""])
def test_an_encrypted_pdf_is_refused(password: str) -> None:
    writer = PdfWriter()
    writer.add_blank_page(100, 100)
    writer.encrypt(password, algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    with pytest.raises(MediaError) as refused:
        answer(out.getvalue())
    assert str(refused.value) == pdf_pages.ENCRYPTED + "."


def test_a_damaged_pdf_is_refused_in_filegates_words() -> None:
    with pytest.raises(MediaError) as broken:
        answer(pf.broken_xref())
    assert str(broken.value) == pdf_pages.DAMAGED + "."
    with pytest.raises(MediaError) as page:
        answer(pf.broken_object(b"MARKER-SECRET-42"))
    assert str(page.value) == "page 1 of it is damaged: PDFium could not load it."


@pytest.mark.parametrize(
    ("box", "max_side", "px"),
    [
        ((400, 100), 20_000, (20_000, 5_000)),
        ((100, 400), 20_000, (5_000, 20_000)),
        # A sliver's short side rounds to no pixel: it is counted as one.
        ((14_400, 0.0001), 45_000_000, (45_000_000, 1)),
        ((0.0001, 14_400), 45_000_000, (1, 45_000_000)),
    ],
)
def test_a_page_too_large_to_draw_is_refused_with_its_pixels_before_drawing(
    box: tuple[float, float], max_side: int, px: tuple[int, int]
) -> None:
    with pytest.raises(MediaError) as refused:
        answer(pf.drawn_pdf([b""], box), max_side=max_side)
    width, height = px
    assert str(refused.value) == (
        f"page 1 is {width}x{height}px with 3 bytes a pixel: {width * height * 3} bytes once decoded, "
        f"over the {MAX_DECODE_BYTES} bytes this server decodes for one picture (a guard against "
        "decompression bombs), so it was not rendered. Make a smaller copy with an image tool and read that."
    )


def test_a_pdf_without_pages_is_refused_as_damaged(tmp_path: Path) -> None:
    # PDFium opens it and pypdfium2 refuses it with FPDF_GetLastError's code, which a successful
    # load leaves as it was: 0 in the worker's fresh process, but whatever an earlier failed load
    # left in this one. So this runs in the worker (the unmutated package, out of mutmut's reach).
    path = tmp_path / "empty.pdf"
    path.write_bytes(
        pf.build([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"])
    )
    with path.open("rb") as f, pytest.raises(MediaError) as refused:
        pdf_pages.render_pages(f.fileno(), 1, 1, 1 << 20, 200)
    assert str(refused.value) == pdf_pages.DAMAGED + "."


def test_pages_asked_for_past_the_end_stop_at_the_last_page() -> None:
    book = pf.drawn_pdf([b""] * 3, (100, 100))
    got = answer(book, 2, 5)
    assert got["total"] == 3
    assert [p["number"] for p in got["pages"]] == [2, 3]
    assert answer(book, 4, 5) == {"total": 3, "pages": []}


def test_a_page_pdfium_cannot_draw_is_refused_in_filegates_words() -> None:
    # Its CropBox lies outside its MediaBox: the page shows nothing, 0 x 0 pt, and drawing it
    # fails (pypdfium2's ValueError, not a PdfiumError).
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 100 100] /CropBox [200 200 300 300] /Contents 4 0 R >>",
        pf.stream(b"0 0 0 rg 0 0 100 100 re f"),
    ]
    with pytest.raises(MediaError) as refused:
        answer(pf.build(objects))
    assert str(refused.value) == "page 1 of it is damaged: PDFium could not draw it."


def star(points: int, side: float) -> bytes:
    """A filled star polygon whose every edge crosses the middle: slow to fill (each row of
    pixels meets every edge), small to write."""
    step = 2 * math.pi * (points // 2) / points
    r = side / 2
    xy = [(r + r * math.cos(i * step), r + r * math.sin(i * step)) for i in range(points)]
    path = [b"%.2f %.2f m" % xy[0]] + [b"%.2f %.2f l" % p for p in xy[1:]]
    return b" ".join(path) + b" f"


def test_a_page_drawn_past_the_deadline_is_stopped_before_it_is_encoded() -> None:
    # Opening the PDF takes about a millisecond and drawing this page far longer than the
    # deadline: the deadline passes while it is drawn, after the page's own check, so only the
    # encoder's checks can stop it.
    slow = pf.drawn_pdf([star(6001, 100)], (100, 100))
    with pytest.raises(DecodeTimeout) as late:
        answer(slow, max_side=400, timeout=0.1)
    assert "longer than the 0.1 s this server allows for one file" in str(late.value)
