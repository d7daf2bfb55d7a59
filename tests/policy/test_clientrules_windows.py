"""policy/clientrules.py on Windows spellings, as pure logic on any OS (issue 38): paths with
drive letters and backslashes (the secret filter's `C:/…` form too), names compared without
case as NTFS does, Claude Code's `//c/…` form for a drive. Settings files come from the reader
the rules are given; nothing on this machine's disk is consulted (there is no `C:` here)."""

from __future__ import annotations

import json
from pathlib import PurePosixPath, PureWindowsPath

import pytest

from filegate.policy.clientrules import ClientRules, Signature, decide, hides
from filegate.policy.gitignore import compile_ignore
from filegate.policy.pathrules import WINDOWS
from filegate.policy.secrets import SecretMatcher

PROJ = PureWindowsPath(r"C:\Users\Me\Proj")
HOME = PureWindowsPath(r"C:\Users\Me")
SETTINGS = {
    "C:/Users/Me/Proj/.claude/settings.json": {
        "permissions": {
            "deny": [
                "Read(./secrets/**)",
                "Read(//c/Users/Me/Proj/abs.txt)",
                "Read(/rel.txt)",
                "Edit(./locked/**)",
                "Read(~/notes2/**)",
            ],
            "ask": ["Write(./Asked.md)"],
        }
    },
    "C:/Users/Me/.claude/settings.json": {"permissions": {"deny": ["Read(~/notes/**)"]}},
}


def reader(path: str, follow: bool) -> tuple[Signature, bytes] | None:
    doc = SETTINGS.get(path)
    return None if doc is None else ((0, 0, 0, 0, 0), json.dumps(doc).encode())


@pytest.fixture
def rules() -> ClientRules:
    r = ClientRules((PROJ,), PROJ, HOME, reader, windows=True, fold_case=True)
    r.check()
    return r


@pytest.mark.parametrize(
    "path",
    [r"C:\Users\Me\Proj\secrets\a.txt", r"c:\users\me\proj\SECRETS\deep\A.TXT", "C:/Users/Me/Proj/Secrets/b",
     r"C:\Users\Me\Proj\ABS.txt", r"C:\Users\Me\Proj\rel.txt", r"C:\Users\Me\Notes\x.md"],
)  # fmt: skip
def test_claude_rules_hide_windows_paths_in_any_spelling_and_case(rules: ClientRules, path: str) -> None:
    assert rules.read_source(path) is not None


@pytest.mark.parametrize(
    "path",
    [r"D:\Users\Me\Proj\secrets\a.txt", r"C:\Users\Me\Proj\secretsx\a.txt", r"C:\Users\Me\Proj\sub\rel.txt",
     r"C:\Users\Me\Other\notes\x.md"],
)  # fmt: skip
def test_what_no_rule_names_stays_visible(rules: ClientRules, path: str) -> None:
    assert rules.read_source(path) is None


def test_sources_are_named_from_the_workdir_and_home(rules: ClientRules) -> None:
    assert rules.read_source(r"C:\Users\Me\Proj\secrets\a.txt") == ".claude/settings.json"
    assert rules.read_source(r"C:\Users\Me\notes\x.md") == "~/.claude/settings.json"


def test_write_verdicts_and_rule_files_on_windows(rules: ClientRules) -> None:
    assert rules.write_rule(r"C:\Users\Me\Proj\Locked\f.txt") == ("deny", ".claude/settings.json")
    assert rules.write_rule(r"c:\users\me\proj\asked.MD") == ("ask", ".claude/settings.json")
    # NTFS opens `.CursorIgnore` as `.cursorignore`: a write to it is a write to the rule file.
    assert rules.rule_file(r"C:\Users\Me\Proj\Sub\.CursorIgnore") == "Sub/.CursorIgnore"
    assert rules.rule_file(r"C:\Users\Me\Proj\.Claude\Settings.Local.json") == ".Claude/Settings.Local.json"
    assert rules.rule_file(r"C:\Users\Me\.claude\SETTINGS.json") == "~/.claude/SETTINGS.json"
    assert rules.rule_file(r"C:\Users\Me\Proj\Sub\cursorignore") is None
    assert rules.rule_file(r"D:\Users\Me\Proj\.cursorignore") is None
    assert rules.rule_file(r"D:\elsewhere\.claude\settings.json") is None  # not the user's own


def test_the_short_cut_follows_windows_spellings(rules: ClientRules) -> None:
    assert rules.may_hide_in(r"C:\Users\Me\Proj\SECRETS\x")
    assert not rules.may_hide_in(r"C:\Users\Me\Proj\src")
    assert not rules.may_hide_in(r"D:\Users\Me\Proj\secrets")


def test_the_secret_filter_hands_windows_paths_to_the_rules(rules: ClientRules) -> None:
    """The workspace judges `WINDOWS.secret_key(real)`: `C:/…`, which is absolute too."""
    matcher = SecretMatcher((), rules)
    key = WINDOWS.secret_key(r"C:\Users\Me\Proj\secrets\a.txt")
    assert key == "C:/Users/Me/Proj/secrets/a.txt"
    assert matcher.is_sensitive(key) and matcher.hidden_by(key) == ".claude/settings.json"
    assert not matcher.is_sensitive(WINDOWS.secret_key(r"C:\Users\Me\Proj\src\a.txt"))


def test_posix_rules_keep_case_and_backslashes() -> None:
    """Off Windows a backslash is part of a name and case counts, as the file system has it."""
    posix = ClientRules(
        (PurePosixPath("/w"),), PurePosixPath("/w"), None,
        lambda p, f: ((0, 0, 0, 0, 0), b'{"permissions": {"deny": ["Read(./secrets/**)"]}}')
        if p == "/w/.claude/settings.json" else None,
    )  # fmt: skip
    posix.check()
    assert posix.read_source("/w/secrets/a") == ".claude/settings.json"
    assert posix.read_source("/w/Secrets/a") is None and posix.read_source("/w\\secrets\\a") is None
    assert posix.rule_file("/w/sub\\.cursorignore") is None and posix.rule_file("/w/sub/.cursorignore")


def test_a_drive_in_claude_codes_form_whatever_the_case_rule() -> None:
    """`C:/x` is `/c/x` to Claude Code's rules, a drive's root too; with names compared by case
    (a case-sensitive NTFS folder) the drive letter still reads as Claude Code writes it. A `~/`
    rule with no home names nothing."""
    exact = ClientRules((PROJ,), PROJ, None, reader, windows=True, fold_case=False)
    exact.check()
    assert exact.claude_form("C:/") == "/c/" and exact.claude_form("C:/Users/Me") == "/c/Users/Me"
    assert exact.read_source(r"C:\Users\Me\Proj\ABS.txt") is None
    assert exact.read_source(r"C:\Users\Me\Proj\abs.txt") == ".claude/settings.json"
    assert exact.read_source(r"C:\Users\Me\notes2\a") is None


def test_ignore_lines_compare_without_case_when_asked() -> None:
    rs = compile_ignore(["*.KEY", "/Build/", "!keep.key"], ignore_case=True)
    assert rs is not None
    assert hides(rs, "a.key") and hides(rs, "build/x.o") and not hides(rs, "KEEP.KEY")
    assert decide(rs, "BUILD", "BUILD", True) is True
    exact = compile_ignore(["*.KEY"])
    assert exact is not None and not hides(exact, "a.key") and hides(exact, "a.KEY")
