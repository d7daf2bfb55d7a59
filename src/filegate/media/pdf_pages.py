"""A PDF's pages as images, rendered by PDFium (pypdfium2, the optional ``pdf`` extra) in the
bounded worker (SPEC §8.6).

PDFium is native code reading an untrusted file: its images inflate, its fonts and content
streams are parsed while a page is drawn, and none of that can be bounded before it runs. So it
runs only in the worker process (``worker.py``) under its memory, CPU and time limits, and each
page is drawn at a scale that fits the server's longest side, never at the size its box claims
(a 14400 pt page is drawn at the same pixels as a letter page). Each picture is then fitted to
its share of the client's budget like any image.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import IO, Any

from filegate.errors import MediaError
from filegate.media import installed

from .bounds import DECODE_TIMEOUT_S, MAX_DECODE_BYTES, Deadline, DecodeTimeout, check_decoded_size
from .worker import Decoder, run_worker

# Pages one ReadMediaFile renders, at most: as many as a video's frames, each still legible
# within a share of a 1 MiB result.
MAX_PAGE_IMAGES = 8
# Bytes a pixel of a rendered page takes (PDFium's BGR, then Pillow's RGB copy of it).
RGB_BYTES = 3
# The worker's address space: Python, Pillow and PDFium's library (well under the fixed part),
# and room for one page at the decode budget with its copies; a page whose images inflate past
# it fails to allocate.
WORKER_ADDRESS_SPACE = (320 << 20) + 2 * MAX_DECODE_BYTES
PDFIUM = Decoder(
    "pdfpages",
    "PDFium's rendering of it",
    "rendering it needed more than the {mib} MiB this server lets one PDF use (an image or a "
    "stream in it that inflates past it), so it was stopped (in a separate process).",
)
# PDFium's load errors (FPDF_GetLastError) in filegate's words; its own texts are fixed too,
# but a refusal never quotes a library's message about a file.
PDFIUM_LOAD_ERRORS = {
    2: "it could not be opened",
    3: "it is damaged or not a PDF PDFium can read",
    4: "it is encrypted; filegate does not decrypt PDFs. Ask the user for a decrypted copy",
    5: "it uses a security handler PDFium does not support",
}
DAMAGED = "it is damaged or not a PDF PDFium can read"
ENCRYPTED = PDFIUM_LOAD_ERRORS[4]


def pdfium_installed() -> bool:
    """Whether pypdfium2 (the ``pdf`` extra) can be imported, without importing it here."""
    return installed("pypdfium2")


@dataclass(frozen=True, slots=True)
class PageImage:
    number: int
    width_pt: float  # the page's size in PDF points (1/72 in), as shown (rotation applied)
    height_pt: float
    data: bytes
    mime: str
    out_width: int  # the picture's pixels
    out_height: int


@dataclass(frozen=True, slots=True)
class PageImages:
    total_pages: int
    pages: list[PageImage]


def page_scale(width_pt: float, height_pt: float, max_side: int) -> float:
    """Pixels per point that draw the page with its longer side at ``max_side`` pixels."""
    return max_side / max(width_pt, height_pt, 1.0)


def render_pages(
    fd: int, first: int, last: int, room: int, max_side: int, *, timeout: float = DECODE_TIMEOUT_S
) -> PageImages:
    """Pages ``first``..``last`` (1-based, inclusive; at most MAX_PAGE_IMAGES) of the open PDF
    ``fd``, each fitted to ``room`` base64 characters, rendered by PDFium in the worker."""
    request = {
        "first": first, "last": last, "room": room, "max_side": max_side, "timeout": timeout,
    }  # fmt: skip
    answer = run_worker(fd, request, timeout, WORKER_ADDRESS_SPACE, PDFIUM)
    pages = [
        PageImage(p["number"], p["pt"][0], p["pt"][1], base64.b64decode(p["data"]), p["mime"], *p["px"])
        for p in answer["pages"]
    ]
    return PageImages(answer["total"], pages)


# --- in the worker ------------------------------------------------------------------------------


def answer_in_worker(source: IO[bytes], request: dict[str, Any]) -> dict[str, Any]:
    """The pages' pictures as JSON, in the worker process (``worker.main``)."""
    import pypdfium2  # under the worker's limits

    deadline = Deadline(request["timeout"])
    try:
        document = pypdfium2.PdfDocument(source)
    except pypdfium2.PdfiumError as exc:
        # pypdfium2 sets err_code on every PdfiumError (None where PDFium gave none, 0 for a PDF
        # without pages): a code not listed is refused as damaged.
        raise MediaError(PDFIUM_LOAD_ERRORS.get(exc.err_code, DAMAGED) + ".") from None
    try:
        # Opened without a password (an empty user password) is still encrypted: refused, as
        # ReadFile refuses it (SPEC §8.6).
        if pypdfium2.raw.FPDF_GetSecurityHandlerRevision(document.raw) != -1:
            raise MediaError(ENCRYPTED + ".")
        total = len(document)
        last = min(request["last"], total, request["first"] + MAX_PAGE_IMAGES - 1)
        pages = [
            _page(document, number, request["room"], request["max_side"], deadline)
            for number in range(request["first"], last + 1)
        ]
        return {"total": total, "pages": pages}
    finally:
        document.close()


def _page(document: Any, number: int, room: int, max_side: int, deadline: Deadline) -> dict[str, Any]:
    import pypdfium2

    from .image import encode_to_fit

    deadline.check()
    try:
        page = document[number - 1]
    except pypdfium2.PdfiumError:
        raise MediaError(f"page {number} of it is damaged: PDFium could not load it.") from None
    try:
        width, height = page.get_size()
        scale = page_scale(width, height, max_side)
        px = (max(1, round(width * scale)), max(1, round(height * scale)))
        check_decoded_size(*px, RGB_BYTES, f"page {number}", verdict="so it was not rendered")
        picture = page.render(scale=scale, may_draw_forms=False).to_pil()
    except (MemoryError, DecodeTimeout, MediaError):
        raise
    except Exception:  # PDFium's failures on a damaged page: refused in filegate's words
        raise MediaError(f"page {number} of it is damaged: PDFium could not draw it.") from None
    finally:
        page.close()
    data, mime, out = encode_to_fit(picture, room, max_side, deadline=deadline)
    picture.close()
    encoded = base64.b64encode(data).decode("ascii")
    return {"number": number, "pt": [width, height], "data": encoded, "mime": mime, "px": list(out)}
