"""ReadMediaFile on a PDF (SPEC §8.6): its pages as images, rendered by PDFium in the bounded
worker (media/pdf_pages.py, the optional ``pdf`` extra) and fitted to the client's budget the
way a video's frames are (a share of the result each, or a media part each for Kimi Code)."""

from __future__ import annotations

import html
from dataclasses import replace

from filegate.errors import MediaError, PathError
from filegate.media.pdf_pages import MAX_PAGE_IMAGES, PageImage, PageImages, pdfium_installed, render_pages
from filegate.policy.workspace import ResolvedPath
from filegate.tools.documents.media_fit import Limits, checked_fit, room_for
from filegate.tools.documents.pdf_view import page_range
from filegate.tools.outcome import ImagePart, MediaPart, Outcome, TextPart, ToolEnv

PDF_EXTRA = "pip install 'filegate[pdf]'"
MIME = "application/pdf"
# Said after the summary when image-only parameters were passed for a PDF.
IGNORED_FOR_PDF = " (region and full_resolution apply to images only: ignored for this PDF.)"
# Figures at least as long as any real one: room for the text blocks is reserved with them.
_WIDE = 10**12
_WIDE_PT = 10.0**9


def read_pdf_pages(
    rp: ResolvedPath, fd: int, size: int, env: ToolEnv, pages: str | None, note: str
) -> Outcome:
    """Pages ``pages`` ("3" or "3-7"; None: page 1) of the PDF ``fd`` as images, with ``note``
    said after the summary; a refusal in words when they cannot be drawn."""
    first, last = page_range(pages)  # no pages: page 1 drawn, the others named in the summary
    if last is not None and last < first:
        raise PathError(f'pages="{pages}" ends before it starts.', "Invalid pages")
    if not pdfium_installed():
        raise PathError(
            f"`{rp.shown}` is a PDF: drawing its pages as images needs the server's pdf extra "
            f"(`{PDF_EXTRA}`). ReadFile shows its text without it.",
            "Missing dependency",
        )
    limits = Limits.of(env)
    fits = replace(limits, total=limits.total - len(note))
    wanted = 1 if last is None else min(last - first + 1, MAX_PAGE_IMAGES)
    try:  # a budget too small for any page is refused like a page PDFium cannot draw
        room = room_for(fits, _skeleton(rp))
        each = room if limits.part is not None else room // wanted  # Kimi Code: a part each
        images = render_pages(fd, first, first if last is None else last, each, env.image_max_side)
    except MediaError as exc:
        return Outcome.error(f"Failed to read `{rp.shown}` as a PDF ({MIME}): {exc}")
    if not images.pages:
        raise PathError(
            f"`{rp.shown}` has {images.total_pages} pages; page {first} does not exist.", "Invalid pages"
        )
    outcome = _outcome(rp, size, images, last)
    outcome.message += note
    return checked_fit(outcome, fits)


def _outcome(rp: ResolvedPath, size: int, images: PageImages, last: int | None) -> Outcome:
    tag = html.escape(rp.shown, quote=True)
    a, b = images.pages[0].number, images.pages[-1].number
    span = f"page {a}" if a == b else f"pages {a}-{b}"
    parts: list[MediaPart] = [TextPart(f'<pdf path="{tag}">\n{span.capitalize()} of {images.total_pages}:')]
    for page in images.pages:
        parts.append(TextPart(_page_line(page)))
        parts.append(ImagePart(page.data, page.mime))
    parts.append(TextPart("</pdf>"))
    sent = sum(len(p.data) for p in images.pages)
    message = (
        f"Loaded PDF file `{rp.shown}` ({MIME}, {size} bytes, {_count(images.total_pages, 'page')}): {span} "
        f"as {_count(len(images.pages), 'image')}, {sent} bytes. "
        "ReadFile shows its text."
    )
    wanted_to = images.total_pages if last is None else min(last, images.total_pages)
    if b < wanted_to:
        upto = min(wanted_to, b + MAX_PAGE_IMAGES)
        message += f' Pages after {b} were not drawn in this call: pass pages="{b + 1}-{upto}" for more.'
    return Outcome(message=message, parts=parts)


def _page_line(page: PageImage) -> str:
    return (
        f"Page {page.number} ({page.width_pt:.0f}x{page.height_pt:.0f} pt) as "
        f"{page.out_width}x{page.out_height}px {page.mime}:"
    )


def _skeleton(rp: ResolvedPath) -> Outcome:
    """The result's text blocks at their longest: what they take before the pictures."""
    wide = PageImage(_WIDE, _WIDE_PT, _WIDE_PT, b"", "image/jpeg", _WIDE, _WIDE)
    images = PageImages(_WIDE, [wide] * MAX_PAGE_IMAGES)
    outcome = _outcome(rp, _WIDE, images, None)  # its clause on the pages after: added below
    wide_pages = f"{_WIDE}-{_WIDE}"
    outcome.message += (
        f' Pages after {_WIDE} were not drawn in this call: pass pages="{wide_pages}" for more.'
    )
    return outcome


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"
