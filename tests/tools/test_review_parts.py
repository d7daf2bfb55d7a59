"""The review's pure parts (SPEC §10): `since` read as a time or an age, and the combined text
of a list and its diffs fitted to a budget, cut at a line and said."""

from __future__ import annotations

from datetime import datetime

import pytest

from filegate.tools.review.sections import Section, fit
from filegate.tools.review.since import parse_time

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("since", "ago"),
    [
        ("90m", 5400),
        ("1.5h", 5400),
        ("2H", 7200),
        ("3d", 3 * 86400),
        ("1w", 7 * 86400),
        ("45s", 45),
        (" 10m ", 600),
    ],
)
def test_an_age_is_that_long_before_now(since: str, ago: float) -> None:
    assert parse_time(since, NOW) == NOW - ago


@pytest.mark.parametrize("since", ["2026-11-27", "2026-11-27T14:00", "20261127"])
def test_a_time_is_read_as_iso_8601_local_unless_it_says(since: str) -> None:
    assert parse_time(since, NOW) == datetime.fromisoformat(since).timestamp()
    assert (
        parse_time("2026-11-27T14:00Z", NOW) == datetime.fromisoformat("2026-11-27T14:00+00:00").timestamp()
    )


@pytest.mark.parametrize("since", ["1.2.3h", "h", "2x", "yesterday", "1.5.h", ""])
def test_anything_else_is_no_time(since: str) -> None:
    with pytest.raises(ValueError):
        parse_time(since, NOW)


def test_a_section_too_long_for_what_is_left_is_cut_at_a_line_and_says_how_many_are_not_shown() -> None:
    lines = [f"+line {n:03d}" + "x" * 90 for n in range(40)]  # 100 characters each
    fitted = fit(["modified `a.txt`"], [Section("a.txt", "\n".join(lines))], 2000)
    listing, diff = fitted.text.split("\n\n")
    assert listing == "modified `a.txt`"
    shown = diff.split("\n")
    # 2,000 - the list (16) - 2 for the gap, less 80 kept for the closing line: 19 whole lines.
    assert shown[:-1] == lines[:19] and shown[-1] == "… 21 more lines of this diff not shown"
    assert fitted.cut == "a.txt" and fitted.left_out == [] and len(fitted.text) <= 2000
    assert fitted.note("Narrow it.") == "Cut to fit this client's budget: `a.txt`'s diff in part. Narrow it."


def test_the_cut_keeps_every_line_that_fits_and_one_line_left_is_one_line() -> None:
    lines = ["x" * 99] * 5  # 100 characters each with its line break
    # Room for the section: budget - 1 (the list "a") - 2; the closing line's 80 first.
    fitted = fit(["a"], [Section("s", "\n".join(lines))], 80 + 400 + 3)
    assert fitted.text.split("\n")[2:] == [*lines[:4], "… 1 more line of this diff not shown"]
    tighter = fit(["a"], [Section("s", "\n".join(lines))], 80 + 400 + 2)
    assert tighter.text.split("\n")[2:] == [*lines[:3], "… 2 more lines of this diff not shown"]


def test_what_does_not_fit_after_a_cut_is_left_out_and_named() -> None:
    big = Section("big", "\n".join(["y" * 99] * 30))
    rest = [Section(f"f{n}", "z\n") for n in range(7)]
    fitted = fit([], [big, *rest], 1000)
    assert fitted.cut == "big" and fitted.left_out == [f"f{n}" for n in range(7)]
    assert fitted.note("N.") == (
        "Cut to fit this client's budget: `big`'s diff in part; no diff shown for `f0`, `f1`, `f2`, "
        "`f3`, `f4` and 2 more. N."
    )


ROW = "r" * 99  # 100 characters with its line break


@pytest.mark.parametrize(
    ("rows", "budget", "unlisted", "kept", "said"),
    [
        ([ROW] * 5, 1000, 0, 5, ""),  # 500 characters: the list's whole room (half the budget)
        ([ROW] * 4 + [ROW + "r"], 1000, 0, 4, "… and 1 more file"),  # one over: cut, 60 kept for the last row
        ([ROW] * 6, 920, 1, 4, "… and 3 more files"),  # 400 of 460 - 60: four rows fit exactly
        ([ROW] * 6, 918, 0, 3, "… and 3 more files"),  # 399: one character short of the fourth
    ],
)
def test_a_list_longer_than_its_room_is_cut_at_a_row_and_counts_the_rest(
    rows: list[str], budget: int, unlisted: int, kept: int, said: str
) -> None:
    fitted = fit(rows, [], budget, unlisted=unlisted)
    assert fitted.text.split("\n") == [*rows[:kept], *([said] if said else [])]
    assert fitted.listed_out == len(rows) - kept + unlisted


@pytest.mark.parametrize(
    ("size", "whole"),
    [(997, True), (998, False)],  # the list "a" and a gap of 2 leave 997 of 1,000
)
def test_a_section_that_fits_to_the_character_is_shown_whole(size: int, whole: bool) -> None:
    body = "x" * size
    fitted = fit(["a"], [Section("s", body)], 1000)
    assert (fitted.text == f"a\n\n{body}") is whole
    assert fitted.cut == ("" if whole else "s")


def test_a_second_section_is_cut_while_exactly_the_least_room_is_left() -> None:
    """After the list ("a") and a first section with its gap, exactly MIN_SECTION_CHARS (400)
    are left: the second is cut to them, not left out; one character less and it is left out."""
    second = "\n".join(["s" * 99] * 10)
    first = "f" * (1000 - 1 - 2 - 400)
    fitted = fit(["a"], [Section("one", first), Section("two", second)], 1000)
    assert fitted.cut == "two" and fitted.left_out == []
    assert fitted.text.startswith(f"a\n\n{first}\n\nssss")
    assert len(fitted.text) <= 1000
    longer = fit(["a"], [Section("one", first + "f"), Section("two", second)], 1000)
    assert longer.cut == "" and longer.left_out == ["two"]
    assert longer.text == f"a\n\n{first}f"


def test_five_sections_left_out_are_all_named() -> None:
    big = Section("big", "\n".join(["y" * 99] * 30))
    fitted = fit([], [big, *(Section(f"f{n}", "z\n") for n in range(5))], 1000)
    assert fitted.note("N.") == (
        "Cut to fit this client's budget: `big`'s diff in part; no diff shown for `f0`, `f1`, `f2`, "
        "`f3`, `f4`. N."
    )
