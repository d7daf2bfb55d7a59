"""ReadMediaFile on PDFs (SPEC §8.6): pages drawn by PDFium (pypdfium2, the pdf extra) in the
bounded worker and fitted to the client's budget, through a real client. The PDFs are written
by hand (tests/pdf_factory.py) so that a page has known pixels: the pictures are decoded and
looked at."""

from __future__ import annotations

import base64
import io
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp.types import Implementation
from PIL import Image
from pypdf import PdfWriter

from filegate.media.image import MIN_SIDE
from filegate.media.pdf_pages import MAX_PAGE_IMAGES
from filegate.policy.budget import KIMI_CODE_MEDIA_PART_CHARS
from filegate.tools.documents.media_fit import MIN_MEDIA_CHARS
from filegate.tools.documents.pdf_images import IGNORED_FOR_PDF
from filegate.tools.outcome import BLOCK_FRAME_CHARS
from tests import media_factory as mf
from tests import pdf_factory as pf
from tests.conftest import call, connect, texts
from tests.stress.procs import server_pid, status

# Pictures no larger than this in the default set's tests: quick to draw and encode.
SMALL = 256


def pictures(result: Any) -> list[Image.Image]:
    return [
        Image.open(io.BytesIO(base64.b64decode(b.data))).convert("L")
        for b in result.content
        if getattr(b, "type", "") == "image"
    ]


def left_black_right_white(im: Image.Image) -> bool:
    y = im.height // 2
    return im.getpixel((im.width // 4, y)) == 0 and im.getpixel((3 * im.width // 4, y)) == 255


async def test_a_page_comes_back_as_an_image_with_its_pixels(ws: Path, mode: str) -> None:
    (ws / "half.pdf").write_bytes(pf.left_half_black())
    async with connect(ws, mode, image_max_side=SMALL) as c:
        r = await call(c, "ReadMediaFile", path="half.pdf", pages="1")
    assert not r.is_error, texts(r)
    (im,) = pictures(r)
    assert im.size == (198, 256) and left_black_right_white(im)
    size = (ws / "half.pdf").stat().st_size
    sent = len(base64.b64decode(next(b.data for b in r.content if b.type == "image")))
    assert texts(r) == [
        '<pdf path="half.pdf">\nPage 1 of 1:\n',
        "Page 1 (612x792 pt) as 198x256px image/png:\n",
        "</pdf>\n",
        f"Loaded PDF file `half.pdf` (application/pdf, {size} bytes, 1 page): page 1 as 1 image, "
        f"{sent} bytes. ReadFile shows its text.",
    ]


async def test_a_quote_in_the_name_is_escaped_in_the_pdf_tag(ws: Path) -> None:
    (ws / 'say "hi".pdf').write_bytes(pf.drawn_pdf([b""], (100, 100)))
    async with connect(ws, image_max_side=SMALL) as c:
        r = await call(c, "ReadMediaFile", path='say "hi".pdf')
    assert texts(r)[0] == '<pdf path="say &quot;hi&quot;.pdf">\nPage 1 of 1:\n'


async def test_pages_choose_the_pages_and_page_1_is_the_default(ws: Path) -> None:
    black, blank = b"0 0 0 rg 0 0 612 792 re f", b""
    (ws / "three.pdf").write_bytes(pf.drawn_pdf([blank, black, blank]))
    async with connect(ws, image_max_side=SMALL) as c:  # small pictures: quick to draw and encode
        first = await call(c, "ReadMediaFile", path="three.pdf")
        later = await call(c, "ReadMediaFile", path="three.pdf", pages="2-3")
        beyond = await call(c, "ReadMediaFile", path="three.pdf", pages="4")
        backwards = await call(c, "ReadMediaFile", path="three.pdf", pages="3-2")
    (im,) = pictures(first)
    assert im.getextrema() == (255, 255)  # page 1 is blank
    assert texts(first)[-1].endswith(
        'ReadFile shows its text. Pages after 1 were not drawn in this call: pass pages="2-3" for more.'
    )
    second, third = pictures(later)
    assert second.getextrema() == (0, 0) and third.getextrema() == (255, 255)
    assert texts(later)[0] == '<pdf path="three.pdf">\nPages 2-3 of 3:\n'
    assert texts(later)[1].startswith("Page 2 (612x792 pt)") and texts(later)[2].startswith("Page 3 ")
    assert ", 3 pages): pages 2-3 as 2 images, " in texts(later)[-1]  # counted, in the plural
    assert beyond.is_error and texts(beyond) == ["`three.pdf` has 3 pages; page 4 does not exist."]
    assert backwards.is_error and texts(backwards) == ['pages="3-2" ends before it starts.']


@pytest.mark.slow
async def test_at_most_eight_pages_a_call_and_the_rest_named(ws: Path) -> None:
    (ws / "ten.pdf").write_bytes(pf.drawn_pdf([b""] * 10))
    async with connect(ws, image_max_side=SMALL) as c:
        r = await call(c, "ReadMediaFile", path="ten.pdf", pages="2-10")
    assert len(pictures(r)) == 8
    assert texts(r)[-1].endswith('Pages after 9 were not drawn in this call: pass pages="10-10" for more.')


@pytest.mark.slow
async def test_pages_share_the_result_budget(ws: Path) -> None:
    """The whole result, base64 included, stays within the budget (Kimi CLI's 100,000
    characters; here 12,000 to keep the pictures small): each page is downscaled to its share."""
    grid = b" ".join(b"%d %d 3 3 re" % (x, y) for x in range(0, 612, 7) for y in range(0, 792, 5))
    (ws / "busy.pdf").write_bytes(pf.drawn_pdf([b"0 0 0 rg " + grid + b" f"] * 3))
    async with connect(ws, result_budget=12_000, image_max_side=512) as c:
        r = await call(c, "ReadMediaFile", path="busy.pdf", pages="1-3")
    assert not r.is_error, texts(r)
    ims = pictures(r)
    assert len(ims) == 3 and all(max(im.size) < 512 for im in ims)  # downscaled to fit
    chars = sum(len(b.data) + len(b.mime_type) if b.type == "image" else len(b.text) for b in r.content)
    assert chars <= 12_000


@pytest.mark.slow
async def test_kimi_code_gets_each_page_in_a_media_part_of_its_own(ws: Path) -> None:
    (ws / "half.pdf").write_bytes(pf.drawn_pdf([b"0 0 0 rg 0 0 306 792 re f"] * 2))
    kimi_code = Implementation(name="kimi-code", version="2.1.0")
    async with connect(ws, client_client_info=kimi_code) as c:
        r = await call(c, "ReadMediaFile", path="half.pdf", pages="1-2")
    ims = pictures(r)
    assert [im.size for im in ims] == [(1583, 2048)] * 2 and all(map(left_black_right_white, ims))


async def test_without_the_pdf_extra_the_error_says_how_to_install_it(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A simulated missing package (not a mock of our code): `import pypdfium2` raises ImportError.
    monkeypatch.setitem(sys.modules, "pypdfium2", None)
    (ws / "half.pdf").write_bytes(pf.left_half_black())
    async with connect(ws) as c:
        r = await call(c, "ReadMediaFile", path="half.pdf")
        text = await call(c, "ReadFile", path="half.pdf")
    assert r.is_error and texts(r) == [
        "`half.pdf` is a PDF: drawing its pages as images needs the server's pdf extra "
        "(`pip install 'filegate[pdf]'`). ReadFile shows its text without it."
    ]
    assert not text.is_error  # the text view needs no extra


@pytest.mark.parametrize("password", ["secret", ""])
async def test_an_encrypted_pdf_is_refused(ws: Path, password: str) -> None:
    """Refused even when PDFium could open it without a password, as ReadFile refuses it."""
    writer = PdfWriter()
    writer.add_blank_page(100, 100)
    writer.encrypt(password, algorithm="AES-128")
    writer.write(str(ws / "locked.pdf"))
    async with connect(ws) as c:
        r = await call(c, "ReadMediaFile", path="locked.pdf")
    assert r.is_error and texts(r) == [
        "Failed to read `locked.pdf` as a PDF (application/pdf): it is encrypted; filegate does not "
        "decrypt PDFs. Ask the user for a decrypted copy."
    ]


async def test_a_damaged_pdf_is_refused_in_filegates_words(ws: Path) -> None:
    (ws / "broken.pdf").write_bytes(pf.broken_xref())
    (ws / "page.pdf").write_bytes(pf.broken_object(b"MARKER-SECRET-42"))
    async with connect(ws) as c:
        broken = await call(c, "ReadMediaFile", path="broken.pdf")
        page = await call(c, "ReadMediaFile", path="page.pdf")
    assert broken.is_error and texts(broken) == [
        "Failed to read `broken.pdf` as a PDF (application/pdf): it is damaged or not a PDF PDFium can read."
    ]
    assert page.is_error and texts(page) == [
        "Failed to read `page.pdf` as a PDF (application/pdf): page 1 of it is damaged: PDFium could not load it."
    ]


async def test_a_sensitive_pdf_is_refused_like_any_other_file(ws: Path) -> None:
    (ws / "report.pdf").write_bytes(pf.left_half_black())
    (ws / "report.png").write_bytes(mf.noise_png_bytes(8, 8))
    async with connect(ws, secret_patterns=["report.*"]) as c:
        pdf = await call(c, "ReadMediaFile", path="report.pdf", pages="1")
        png = await call(c, "ReadMediaFile", path="report.png")
    assert pdf.is_error and png.is_error and not pictures(pdf)
    assert texts(pdf) == [texts(png)[0].replace("report.png", "report.pdf")]
    assert "page" not in texts(pdf)[0] and "sensitive" in texts(pdf)[0].lower()


async def test_parameters_for_other_types_are_ignored_with_a_note(ws: Path) -> None:
    (ws / "half.pdf").write_bytes(pf.left_half_black())
    (ws / "dot.png").write_bytes(mf.noise_png_bytes(8, 8))
    async with connect(ws, image_max_side=SMALL) as c:
        pdf = await call(
            c, "ReadMediaFile", path="half.pdf", region={"x": 0, "y": 0, "width": 5, "height": 5}
        )
        png = await call(c, "ReadMediaFile", path="dot.png", pages="2")
    assert texts(pdf)[-1].endswith(
        "ReadFile shows its text. (region and full_resolution apply to images only: ignored for this PDF.)"
    )
    assert pictures(pdf)[0].size == (198, 256)  # the whole page: no crop
    assert texts(png)[-1].endswith(" (pages applies to PDFs only: ignored for this file.)")
    assert pictures(png)[0].size == (8, 8)


# --- hostile PDFs: drawn or refused within bounds, by a server that stays small --------------

# The server never draws a PDF: PDFium runs in the worker. What the server holds over its idle
# size is its bookkeeping and the pictures sent back (a few MiB); 64 MiB leaves room for noise.
PEAK_OVER_IDLE = 64 << 20
CALL_GUARD_S = 60


@pytest.mark.slow
async def test_pdf_page_bombs_stay_within_bounds_and_the_server_stays_small(ws: Path) -> None:
    (ws / "huge.pdf").write_bytes(pf.left_half_black((14400, 14400)))  # the largest page PDF allows
    (ws / "image.pdf").write_bytes(pf.image_bomb())  # a 16,000 px image: 768 MB decoded
    (ws / "flate.pdf").write_bytes(pf.flate_bomb())  # a 1 GB content stream
    (ws / "many.pdf").write_bytes(pf.text_pdf([["p"]] * 10_000))
    (ws / "broken.pdf").write_bytes(pf.broken_xref())
    (ws / "warm.pdf").write_bytes(pf.left_half_black())
    transport = StdioTransport(
        sys.executable, ["-m", "filegate", "--workdir", str(ws)], cwd=str(ws), keep_alive=False
    )
    async with Client(transport) as c:
        warm = await call(c, "ReadMediaFile", path="warm.pdf")
        assert not warm.is_error, texts(warm)
        pid = server_pid(ws)
        idle = status(pid)["VmRSS"]
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
        results, seconds = {}, {}
        for name, pages in [
            ("huge.pdf", "1"),
            ("image.pdf", "1"),
            ("flate.pdf", "1"),
            ("many.pdf", "10000"),
            ("broken.pdf", "1"),
        ]:
            started = time.monotonic()
            with anyio.fail_after(CALL_GUARD_S):
                results[name] = await call(c, "ReadMediaFile", path=name, pages=pages)
            seconds[name] = time.monotonic() - started
        peak = status(pid)["VmHWM"]
        after = await call(c, "ReadMediaFile", path="warm.pdf")
    # A 200-inch page is drawn at the server's longest side, never at its own size.
    (huge,) = pictures(results["huge.pdf"])
    assert huge.size == (2048, 2048) and left_black_right_white(huge)
    # PDFium draws the huge image downsampled, within the worker's memory: a black page.
    (image,) = pictures(results["image.pdf"])
    assert image.getextrema() == (0, 0), texts(results["image.pdf"])
    # The content stream that inflates to 1 GB: PDFium is stopped by the worker's memory limit.
    flate = results["flate.pdf"]
    assert flate.is_error and texts(flate)[0].startswith(
        "Failed to read `flate.pdf` as a PDF (application/pdf): PDFium's rendering of it "
    ), texts(flate)
    assert "MiB" in texts(flate)[0]
    # 10,000 pages: the last one is drawn alone, without the others.
    assert (
        texts(results["many.pdf"])[-1].startswith("Loaded PDF file `many.pdf` (application/pdf, ")
        and "10000 pages): page 10000 as 1 image" in texts(results["many.pdf"])[-1]
    )
    assert results["broken.pdf"].is_error
    assert not after.is_error  # the server answers on
    assert peak - idle < PEAK_OVER_IDLE, f"server peak {peak >> 20} MiB, idle {idle >> 20} MiB; {seconds}"
    assert max(seconds.values()) < 30, seconds


# --- the budget's edges: what is reserved for the text, and how the pages share the rest -------

# Every figure the text around the pictures may hold, at its widest: the tool reserves room for
# the text as if each page number, count, size and pixel figure were this wide.
WIDE = str(10**12)
WIDE_PT = str(10**9)


def reserved_for_text(name: str, *, kimi_code: bool) -> int:
    """Characters the tool sets aside before the pictures (SPEC §4: the whole result counts):
    the text blocks of a result of MAX_PAGE_IMAGES pages with every figure WIDE and the "Pages
    after" clause, each block with its closing line break and JSON frame; the pictures' frames,
    and, where pictures share the result (every client but Kimi Code), their MIME types."""
    blocks = [
        f'<pdf path="{name}">\nPage {WIDE} of {WIDE}:',
        *[f"Page {WIDE} ({WIDE_PT}x{WIDE_PT} pt) as {WIDE}x{WIDE}px image/jpeg:"] * MAX_PAGE_IMAGES,
        "</pdf>",
        f"Loaded PDF file `{name}` (application/pdf, {WIDE} bytes, {WIDE} pages): page {WIDE} as "
        f"{MAX_PAGE_IMAGES} images, 0 bytes. ReadFile shows its text. Pages after {WIDE} were not "
        f'drawn in this call: pass pages="{WIDE}-{WIDE}" for more.',
    ]
    text = sum(len(block) + 1 + BLOCK_FRAME_CHARS for block in blocks)
    pictures = MAX_PAGE_IMAGES * (BLOCK_FRAME_CHARS + (0 if kimi_code else len("image/jpeg")))
    return text + pictures


def no_room(name: str, budget: int) -> str:
    return (
        f"Failed to read `{name}` as a PDF (application/pdf): this client's result budget of "
        f"{budget} characters leaves no room for media after the text that describes it; raise "
        "--result-budget."
    )


async def test_the_smallest_budget_that_draws_a_page_counts_the_note(ws: Path) -> None:
    """One character under it, the PDF is refused in words (not an internal error); the note
    on ignored parameters takes its room from the budget too."""
    (ws / "p.pdf").write_bytes(pf.drawn_pdf([b""], (100, 100)))
    edge = reserved_for_text("p.pdf", kimi_code=False) + len(IGNORED_FOR_PDF) + MIN_MEDIA_CHARS
    square = {"x": 0, "y": 0, "width": 5, "height": 5}
    async with connect(ws, result_budget=edge, image_max_side=64) as c:
        drawn = await call(c, "ReadMediaFile", path="p.pdf", region=square)
    async with connect(ws, result_budget=edge - 1, image_max_side=64) as c:
        refused = await call(c, "ReadMediaFile", path="p.pdf", region=square)
    assert not drawn.is_error and len(pictures(drawn)) == 1, texts(drawn)
    assert texts(drawn)[-1].endswith(IGNORED_FOR_PDF)
    # (the figure it names is the budget less the note's room, as for images and videos)
    assert refused.is_error and texts(refused) == [no_room("p.pdf", edge - 1 - len(IGNORED_FOR_PDF))]


async def test_kimi_codes_text_budget_edge_leaves_the_pictures_out(ws: Path, mode: str) -> None:
    """Kimi Code's pictures have a part each: only the text counts against its text budget."""
    (ws / "p.pdf").write_bytes(pf.drawn_pdf([b""], (100, 100)))
    edge = reserved_for_text("p.pdf", kimi_code=True)
    kimi_code = Implementation(name="kimi-code", version="2.1.0")
    async with connect(ws, mode, result_budget=edge, image_max_side=64, client_client_info=kimi_code) as c:
        drawn = await call(c, "ReadMediaFile", path="p.pdf")
    async with connect(
        ws, mode, result_budget=edge - 1, image_max_side=64, client_client_info=kimi_code
    ) as c:
        refused = await call(c, "ReadMediaFile", path="p.pdf")
    assert not drawn.is_error and [im.size for im in pictures(drawn)] == [(64, 64)], texts(drawn)
    assert refused.is_error and texts(refused) == [no_room("p.pdf", edge - 1)]


async def test_pages_share_the_room_evenly_and_one_page_has_it_all(ws: Path) -> None:
    """Pages of random pixels take all the room they are given: page 1 of a two-page range is
    the same picture as page 1 drawn by default with half the room; and a range that ends
    before the last page asks for no more."""
    (ws / "noise.pdf").write_bytes(pf.noise_pdf(3, 128))
    share = 4_000
    reserve = reserved_for_text("noise.pdf", kimi_code=False)
    async with connect(ws, result_budget=reserve + 2 * share + 1, image_max_side=128) as c:
        both = await call(c, "ReadMediaFile", path="noise.pdf", pages="1-2")
    async with connect(ws, result_budget=reserve + share, image_max_side=128) as c:
        alone = await call(c, "ReadMediaFile", path="noise.pdf")
    images = [[b.data for b in r.content if b.type == "image"] for r in (both, alone)]
    assert [len(i) for i in images] == [2, 1], [texts(r) for r in (both, alone)]
    assert images[0][0] == images[1][0]
    assert all(share // 2 < len(data) <= share for data in images[0] + images[1])  # it fills its share
    sent = sum(len(base64.b64decode(data)) for data in images[0])
    assert texts(both)[-1].endswith(f"as 2 images, {sent} bytes. ReadFile shows its text.")


async def test_a_share_too_small_for_a_page_is_named_in_whole_characters(ws: Path) -> None:
    """The least room the budget leaves, split four ways: no JPEG is that small."""
    (ws / "noise.pdf").write_bytes(pf.noise_pdf(4, 64))
    budget = reserved_for_text("noise.pdf", kimi_code=False) + MIN_MEDIA_CHARS + 1
    async with connect(ws, result_budget=budget, image_max_side=64) as c:
        r = await call(c, "ReadMediaFile", path="noise.pdf", pages="1-4")
    share = (MIN_MEDIA_CHARS + 1) // 4
    assert r.is_error and texts(r) == [
        f"Failed to read `noise.pdf` as a PDF (application/pdf): even at {MIN_SIDE}px it does not fit in "
        f"{share} characters of base64."
    ]


@pytest.mark.slow
async def test_kimi_code_gives_each_of_four_pages_a_whole_media_part(ws: Path) -> None:
    """Four pages of random pixels at 2048 px take ~3.7 M base64 characters each: more than a
    quarter of Kimi Code's 10 MiB part, within a part of their own."""
    (ws / "noise.pdf").write_bytes(pf.noise_pdf(4, 2048, tile=256))
    kimi_code = Implementation(name="kimi-code", version="2.1.0")
    async with connect(ws, client_client_info=kimi_code) as c:
        r = await call(c, "ReadMediaFile", path="noise.pdf", pages="1-4")
    sizes = [len(b.data) for b in r.content if b.type == "image"]
    assert len(sizes) == 4 and min(sizes) > KIMI_CODE_MEDIA_PART_CHARS // 4, texts(r)
    assert [im.size for im in pictures(r)] == [(2048, 2048)] * 4
