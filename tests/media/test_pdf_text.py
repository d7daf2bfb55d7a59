"""media/pdf.py's worker side in this process (its answer to a request, as the worker would give
it), on PDFs written by hand: the pages read, the caps, the refusals in filegate's words. The
server's side runs it in the worker (tests/tools/test_read_pdf.py); here mutation testing
reaches it (a worker process imports the unmutated package)."""

from __future__ import annotations

import io
from typing import Any

import pytest
from pypdf import PdfWriter
from pypdf import errors as pypdf_errors

from filegate.errors import MediaError
from filegate.media import pdf
from filegate.media.bounds import DecodeTimeout
from tests import pdf_factory as pf


def answer(data: bytes, first: int = 1, last: int | None = None, **kw: Any) -> dict[str, Any]:
    request = {"first": first, "last": last, "want_lines": None, "max_chars": 1 << 20, "timeout": 30.0, **kw}
    return pdf.answer_in_worker(io.BytesIO(data), request)


def test_the_pages_asked_for_come_back_with_the_total() -> None:
    book = pf.text_pdf([[f"page {p}", "second line"] for p in range(1, 6)])
    assert answer(book) == {
        "total": 5,
        "pages": [[p, f"page {p}\nsecond line\n"] for p in range(1, 6)],
        "cut": False,
    }
    assert answer(book, 2, 3)["pages"] == [[2, "page 2\nsecond line\n"], [3, "page 3\nsecond line\n"]]
    assert answer(book, 4, 4)["pages"] == [[4, "page 4\nsecond line\n"]]
    assert answer(book, 5, 99)["pages"] == [[5, "page 5\nsecond line\n"]]
    assert answer(book, 6) == {"total": 5, "pages": [], "cut": False}


def test_a_call_reads_at_most_max_text_pages() -> None:
    book = pf.text_pdf([[f"p{p}"] for p in range(1, pdf.MAX_TEXT_PAGES + 3)])
    got = answer(book, 2)
    assert [n for n, _ in got["pages"]] == list(range(2, pdf.MAX_TEXT_PAGES + 2))


def test_a_forward_window_stops_after_the_page_that_fills_it() -> None:
    # Each page is a marker line and its text lines; a blank page still takes one line.
    book = pf.text_pdf([["a", "b"], None, ["c"], ["d"]])
    assert [n for n, _ in answer(book, want_lines=3)["pages"]] == [1]
    assert [n for n, _ in answer(book, want_lines=4)["pages"]] == [1, 2]
    assert [n for n, _ in answer(book, want_lines=5)["pages"]] == [1, 2]
    assert [n for n, _ in answer(book, want_lines=6)["pages"]] == [1, 2, 3]
    assert [n for n, _ in answer(book, want_lines=None)["pages"]] == [1, 2, 3, 4]


def test_text_over_the_character_cap_is_cut_inside_its_page() -> None:
    book = pf.text_pdf([["12345"], ["abcdefghij"], ["never"]])  # pypdf ends each line with "\n"
    assert answer(book, max_chars=12) == {"total": 3, "pages": [[1, "12345\n"], [2, "abcdef"]], "cut": True}
    exact = pf.text_pdf([["12345"], ["abcde"], ["next"]])  # exactly at the cap: not cut yet
    assert answer(exact, last=2, max_chars=12) == {
        "total": 3,
        "pages": [[1, "12345\n"], [2, "abcde\n"]],
        "cut": False,
    }
    # The cap counts every page so far, not the last one alone.
    three = pf.text_pdf([["1234"], ["abcd"], ["xyz"]])
    assert answer(three, max_chars=12)["pages"] == [[1, "1234\n"], [2, "abcd\n"], [3, "xy"]]


def test_a_pdf_whose_xref_pointer_is_wrong_is_still_read() -> None:
    """pypdf's lenient mode finds the objects by a scan (strict mode refuses the file)."""
    good = pf.text_pdf([["found anyway"]])
    bad = good.rsplit(b"startxref", 1)[0] + b"startxref\n999999\n%%EOF\n"
    assert answer(bad)["pages"] == [[1, "found anyway\n"]]


def test_an_encrypted_pdf_is_refused() -> None:
    writer = PdfWriter()
    writer.add_blank_page(100, 100)
    writer.encrypt("", algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    with pytest.raises(MediaError) as caught:
        answer(out.getvalue())
    assert str(caught.value) == (
        "it is encrypted; filegate does not decrypt PDFs. Ask the user for a decrypted copy."
    )


def test_a_broken_pdf_is_refused_in_filegates_words_not_pypdfs() -> None:
    with pytest.raises(MediaError) as caught:
        answer(pf.broken_object(b"MARKER-SECRET-42"))
    assert str(caught.value) == (
        "pypdf could not read it: its structure is damaged (the cross-reference table, the page "
        "tree or an object) (PdfReadError)."
    )


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (
            pypdf_errors.LimitReachedError("b'x'"),
            "a stream in it inflates past the limit on decompressed bytes",
        ),
        (pypdf_errors.PdfStreamError("b'x'"), "a stream in it is damaged or cut short"),
        (pypdf_errors.EmptyFileError("b'x'"), "it is empty"),
        (pypdf_errors.FileNotDecryptedError("b'x'"), "it is encrypted"),
        (pypdf_errors.DependencyError("b'x'"), "it needs a decoder this server does not have"),
        (
            pypdf_errors.PdfReadError("b'x'"),
            "its structure is damaged (the cross-reference table, the page tree or an object)",
        ),
        (KeyError("b'x'"), "it is damaged or built in a way pypdf cannot read"),
    ],
)
def test_each_kind_of_failure_has_its_reason(exc: BaseException, reason: str) -> None:
    assert pdf.refusal_reason(exc) == reason


def test_a_read_past_its_deadline_stops_with_a_timeout() -> None:
    book = pf.text_pdf([["a"], ["b"]])
    with pytest.raises(DecodeTimeout):
        answer(book, timeout=-1.0)


class _Exhausting(io.BytesIO):
    """A source whose reads fail as an allocation past the worker's memory limit does."""

    def __init__(self, data: bytes, error: type[BaseException]) -> None:
        super().__init__(data)
        self.error = error

    def read(self, size: int | None = -1, /) -> bytes:
        raise self.error


@pytest.mark.parametrize("error", [MemoryError, RecursionError])
def test_memory_and_recursion_reach_the_worker_unwrapped(error: type[BaseException]) -> None:
    """The worker answers these as 'over memory' (worker._answer): not a pypdf refusal."""
    request = {"first": 1, "last": None, "want_lines": None, "max_chars": 100, "timeout": 30.0}
    with pytest.raises(error):
        pdf.answer_in_worker(_Exhausting(pf.text_pdf([["a"]]), error), request)
