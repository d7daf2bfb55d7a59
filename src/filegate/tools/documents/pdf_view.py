"""A PDF as ReadFile shows it (SPEC §8.6): its pages' text under ``--- page N ---`` lines, a
window of that view; the text comes from pypdf in the bounded worker (media/pdf.py)."""

from __future__ import annotations

from filegate.errors import MediaError, PathError
from filegate.fsio.window import MAX_LINES, Window, rows_window
from filegate.media.pdf import MAX_TEXT_CHARS, MAX_TEXT_PAGES, PdfText, pdf_text
from filegate.policy.workspace import ResolvedPath

# What a page without a text layer shows (a scan, or text drawn as shapes): where to see it.
NO_TEXT = "(page %d has no text layer; ReadMediaFile with pages=%d shows it as an image)\n"


def pdf_view(
    rp: ResolvedPath, fd: int, pages: str | None, line_offset: int, n_lines: int, column: int
) -> tuple[Window, str]:
    """The window of the view of ``pages`` ("3" or "3-7"; None: from page 1), and the note the
    summary ends with (which pages the view holds, and where to continue)."""
    first, last = page_range(pages)
    if last is not None and last < first:
        raise PathError(f'pages="{pages}" ends before it starts.', "Invalid pages")
    try:
        # A forward window needs the pages up to its last line only; a tail needs them all.
        want = line_offset + min(n_lines, MAX_LINES) if line_offset > 0 else None
        text = pdf_text(fd, first, last, want)
    except MediaError as exc:
        raise MediaError(f"Failed to read `{rp.shown}` as a PDF (application/pdf): {exc}") from None
    if first > text.total_pages:
        raise PathError(
            f"`{rp.shown}` has {text.total_pages} pages; page {first} does not exist.", "Invalid pages"
        )
    return rows_window(pdf_rows(text), line_offset, n_lines, column), pdf_note(text, last)


def page_range(pages: str | None) -> tuple[int, int | None]:
    if pages is None:
        return 1, None
    first, _, last = pages.partition("-")
    return int(first), int(last or first)


def pdf_rows(text: PdfText) -> list[str]:
    rows = []
    for number, page in text.pages:
        rows.append(f"--- page {number} ---\n")
        lines = page.replace("\x00", "").splitlines()
        if page.strip():
            rows.extend(line + "\n" for line in lines)
        else:
            rows.append(NO_TEXT % (number, number))
    return rows


def pdf_note(text: PdfText, last: int | None) -> str:
    a, b = text.pages[0][0], text.pages[-1][0]
    note = (
        f" PDF view of page{'s' if b > a else ''} {a}{f'-{b}' if b > a else ''} of {text.total_pages}:"
        " lines are numbered in this view, not in the file."
    )
    if text.cut:
        note += f" The text stops inside page {b}: one call reads at most {MAX_TEXT_CHARS} characters."
    wanted_to = text.total_pages if last is None else min(last, text.total_pages)
    if b < wanted_to:
        more = f"{b + 1}-{min(wanted_to, b + MAX_TEXT_PAGES)}"
        note += f' Pages after {b} were not read in this call: pass pages="{more}" for more.'
    return note
