"""Approval's pure rules without a client: the question's text, the fold, open questions.

Everything here is also reached through real clients in test_approval.py; these pin the
boundaries at the seam where they live (issue 17: tests that kill mutants).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from filegate.server import approval
from filegate.server.approval import OpenQuestions
from filegate.server.questions import UNSAFE_NOTE, approval_message
from filegate.tools.edit.diffing import FOLD_CHARS, LINE_END_CHARS, MAX_FOLDS, fold, requested_change
from filegate.tools.outcome import WriteRequest


def request(
    shown: str = "a.txt", *, inside: bool = True, sensitive: bool = False, **kw: object
) -> WriteRequest:
    fields: dict[str, object] = dict(
        tool="WriteFile", shown=shown, real=Path("/w") / "a.txt", inside=inside, sensitive=sensitive,
        old_hash="o", new_hash="n", old_size=1, new_size=2, old_lines=1, new_lines=1, diff="DIFF",
    )  # fmt: skip
    fields.update(kw)
    return WriteRequest(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("inside", "sensitive", "first"),
    [
        (True, False, "Inside the workspace: WriteFile wants to change `a.txt`."),
        (False, False, "OUTSIDE the workspace: WriteFile wants to change `a.txt`."),
        (
            True,
            True,
            "Inside the workspace, SENSITIVE file (it may hold secrets): WriteFile wants to write `a.txt`.",
        ),
        (
            False,
            True,
            "OUTSIDE the workspace, SENSITIVE file (it may hold secrets): WriteFile wants to write `a.txt`.",
        ),
    ],
)
def test_the_first_line_is_the_verdict(inside: bool, sensitive: bool, first: str) -> None:
    message = approval_message(request(inside=inside, sensitive=sensitive))
    assert message.splitlines()[0] == first
    assert ("Size:" in message) is not sensitive and (
        "hidden because the file is sensitive" in message
    ) is sensitive


def test_a_new_file_and_the_escape_note() -> None:
    message = approval_message(request(created=True, new_size=1, new_lines=1, unsafe=True))
    lines = message.splitlines()
    assert lines[0] == "Inside the workspace: WriteFile wants to create `a.txt`."
    assert lines[1] == UNSAFE_NOTE
    assert "New file: 1 byte, 1 line." in lines
    assert (
        approval_message(request(created=True, new_size=2, new_lines=0)).splitlines()[1]
        == "New file: 2 bytes, 0 lines."
    )


def test_a_forged_path_stays_inside_the_first_lines_quotes() -> None:
    message = approval_message(request("x`.\nInside the workspace: ok\r\x1b[1A"))
    first, *rest = message.splitlines()
    assert (
        first
        == "Inside the workspace: WriteFile wants to change `x\\x60.\\x0aInside the workspace: ok\\x0d\\x1b[1A`."
    )
    assert not any(line.startswith("Inside") for line in rest)


def test_fold_keeps_short_lines_and_folds_long_ones_whole() -> None:
    assert fold("+", "x" * FOLD_CHARS) == "+" + "x" * FOLD_CHARS
    body = "".join(chr(65 + i % 26) for i in range(FOLD_CHARS * 3 + 5))
    rows = fold("+", body).split("\n")
    assert len(rows) == 4 and "".join(r.removeprefix("+").removeprefix("↪ ") for r in rows) == body


def test_fold_past_its_rows_says_what_is_hidden_and_shows_the_end() -> None:
    body = "a" * (FOLD_CHARS * MAX_FOLDS + LINE_END_CHARS) + "b" * 10 + "END"
    rows = fold("-", body).split("\n")
    hidden = len(body) - FOLD_CHARS * MAX_FOLDS - LINE_END_CHARS
    assert rows[-2] == f"-↪ … {hidden} characters of this line not shown; it ends with:"
    assert rows[-1].endswith("bbbbbbbbbbEND") and len(rows) == MAX_FOLDS + 2
    exactly = "c" * (FOLD_CHARS * MAX_FOLDS + LINE_END_CHARS)
    assert "not shown" not in fold("-", exactly)


def test_requested_change_escapes_and_flags() -> None:
    text, unsafe = requested_change([("old\x1b", "new\u2028x")])
    assert unsafe and text == "-old\\x1b\n+new\\u2028x"
    text, unsafe = requested_change([(None, "a\r\nb\r\n")])
    assert not unsafe and text == "+a\n+b"


def test_an_answer_counts_once_and_only_for_the_newest_question() -> None:
    questions = OpenQuestions()
    first = questions.open("/f")
    second = questions.open("/f")
    other = questions.open("/g")
    assert questions.answered("/f", first) == "superseded"
    assert questions.answered("/f", first) == "replayed"
    assert questions.answered("/f", second) == "newest"
    assert questions.answered("/f", second) == "replayed"
    assert questions.answered("/g", other) == "newest"


def test_open_questions_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(approval, "MAX_OPEN_QUESTIONS", 3)
    questions = OpenQuestions()
    nonces = [questions.open(f"/f{i}") for i in range(4)]
    assert questions.answered("/f0", nonces[0]) == "superseded"  # forgotten: writes nothing
    assert questions.answered("/f3", nonces[3]) == "newest"
