"""A PDF's text, page by page, with pypdf in the bounded worker (SPEC §8.6).

pypdf is pure Python, but a PDF's streams inflate (a flate bomb), its page tree and object graph
can be deep or circular, and its xref can be broken so that the whole file is scanned: none of
that can be bounded before parsing starts. So pypdf runs only in the worker process
(``worker.py``) under its memory, CPU and time limits, and the work it is asked for is capped
too: at most ``MAX_TEXT_PAGES`` pages and ``MAX_TEXT_CHARS`` characters a call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Any

from filegate.errors import MediaError

from .bounds import DECODE_TIMEOUT_S, MAX_DECODE_BYTES, Deadline, DecodeTimeout
from .worker import Decoder, run_worker

# Pages one ReadFile extracts, at most: more than a window of 1000 lines holds for a text PDF,
# few enough that the first page of a long document answers quickly.
MAX_TEXT_PAGES = 20
# Characters of text one call brings back from the worker, at most (ReadFile's window then
# takes at most 100 KiB of it): a page that claims more is cut, and the answer says so.
MAX_TEXT_CHARS = 4 << 20
# The worker's address space: Python and pypdf (well under half of it) and room for one
# stream inflated at the decode budget; a flate bomb fails to allocate past it.
WORKER_ADDRESS_SPACE = (256 << 20) + 2 * MAX_DECODE_BYTES
PYPDF = Decoder(
    "pdf",
    "pypdf's reading of it",
    "reading it needed more than the {mib} MiB this server lets one PDF use (a stream that "
    "inflates past it, or an object graph nested too deep), so it was stopped (in a separate process).",
)


@dataclass(frozen=True, slots=True)
class PdfText:
    total_pages: int
    pages: list[tuple[int, str]]  # (page number, its text), in order
    cut: bool  # the text stopped at MAX_TEXT_CHARS inside the last page listed


def pdf_text(
    fd: int, first: int, last: int | None, want_lines: int | None = None, *, timeout: float = DECODE_TIMEOUT_S
) -> PdfText:
    """The text of pages ``first``..``last`` (1-based, inclusive; None: to the end), at most
    MAX_TEXT_PAGES of them, read by pypdf in the worker from the open file ``fd``; it stops
    after the page that brings the view to ``want_lines`` lines (a marker line each page)."""
    request = {
        "first": first, "last": last, "want_lines": want_lines, "max_chars": MAX_TEXT_CHARS,
        "timeout": timeout,
    }  # fmt: skip
    answer = run_worker(fd, request, timeout, WORKER_ADDRESS_SPACE, PYPDF)
    return PdfText(answer["total"], [(int(n), str(t)) for n, t in answer["pages"]], bool(answer["cut"]))


# --- in the worker ------------------------------------------------------------------------------


def answer_in_worker(source: IO[bytes], request: dict[str, Any]) -> dict[str, Any]:
    """The pages' text as JSON, in the worker process (``worker.main``)."""
    deadline = Deadline(request["timeout"])
    try:
        return _text(source, request, deadline)
    except (MemoryError, RecursionError, DecodeTimeout, MediaError):
        raise
    except Exception as exc:  # pypdf's errors on a broken file are of many types; all refuse it
        raise MediaError(f"pypdf could not read it: {refusal_reason(exc)} ({type(exc).__name__}).") from None


# Why pypdf could not read a file, by its exception's class (the nearest in its MRO): filegate's
# own words, never the exception's text, which quotes bytes of the file ("Invalid Elementary
# Object starting with b'…'") and would carry a document's content into the error.
PYPDF_REFUSALS = {
    "LimitReachedError": "a stream in it inflates past the limit on decompressed bytes",
    "PdfStreamError": "a stream in it is damaged or cut short",
    "EmptyFileError": "it is empty",
    "FileNotDecryptedError": "it is encrypted",
    "DependencyError": "it needs a decoder this server does not have",
    "PdfReadError": "its structure is damaged (the cross-reference table, the page tree or an object)",
}
# Any other exception: a damaged file pypdf tripped over (a KeyError, a TypeError, ...).
OTHER_REFUSAL = "it is damaged or built in a way pypdf cannot read"


def refusal_reason(exc: BaseException) -> str:
    """Filegate's words for why ``exc`` stopped pypdf (PYPDF_REFUSALS)."""
    for cls in type(exc).__mro__:
        if cls.__name__ in PYPDF_REFUSALS:
            return PYPDF_REFUSALS[cls.__name__]
    return OTHER_REFUSAL


def _text(source: IO[bytes], request: dict[str, Any], deadline: Deadline) -> dict[str, Any]:
    import pypdf  # under the worker's limits

    # The caps come with the request: the server decides them, the worker applies them.
    first, last, want_lines, max_chars = (request[k] for k in ("first", "last", "want_lines", "max_chars"))

    reader = pypdf.PdfReader(source, strict=False)
    if reader.is_encrypted:
        raise MediaError(
            "it is encrypted; filegate does not decrypt PDFs. Ask the user for a decrypted copy."
        )
    total = len(reader.pages)
    end = min(total, last if last is not None else total, first + MAX_TEXT_PAGES - 1)
    pages: list[list[Any]] = []
    chars = lines = 0
    for number in range(first, end + 1):
        deadline.check()
        text = reader.pages[number - 1].extract_text()
        if chars + len(text) > max_chars:
            pages.append([number, text[: max_chars - chars]])
            return {"total": total, "pages": pages, "cut": True}
        chars += len(text)
        pages.append([number, text])
        lines += 1 + max(1, len(text.splitlines()))
        if want_lines is not None and lines >= want_lines:
            break
    return {"total": total, "pages": pages, "cut": False}
