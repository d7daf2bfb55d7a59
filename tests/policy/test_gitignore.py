"""gitignore(5) semantics of Glob's rules (pure logic: rules in, decisions out)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from filegate.fsio import platform
from filegate.tools.search.ignores import Ignores, Layer, RuleSet, compile_ignore, read_rules


def ignores(*lines: str) -> Ignores:
    rs = compile_ignore(list(lines))
    assert isinstance(rs, RuleSet)
    return Ignores((Layer(rs, "", 0),))


@pytest.mark.parametrize(
    ("lines", "path", "is_dir", "ignored"),
    [
        (["*.log"], "a/b/x.log", False, True),  # no slash: any depth
        (["*.log"], "a/b/x.logs", False, False),
        (["build/"], "src/build", True, True),  # trailing slash: directories only
        (["build/"], "src/build", False, False),
        (["/build"], "build", True, True),  # leading slash: anchored
        (["/build"], "src/build", True, False),
        (["doc/frotz"], "doc/frotz", False, True),  # a middle slash anchors too
        (["doc/frotz"], "a/doc/frotz", False, False),
        (["**/foo"], "a/b/foo", False, True),
        (["**/foo"], "foo", False, True),
        (["a/**/b"], "a/b", False, True),
        (["a/**/b"], "a/x/y/b", False, True),
        (["a/**"], "a/x/y", False, True),
        (["a/**"], "a", True, False),
        (["*.[oa]"], "x.o", False, True),
        (["*.[!oa]"], "x.o", False, False),
        (["*.[!oa]"], "x.c", False, True),
        (["x?z"], "x/z", False, False),  # ? and * never cross a '/'
        (["\\#notes"], "#notes", False, True),
        (["# comment", "x"], "# comment", False, False),
        (["\\!bang"], "!bang", False, True),
        (["trail   "], "trail", False, True),  # trailing spaces dropped
        (["trail\\ "], "trail ", False, True),  # unless escaped
        (["*.log", "!keep.log"], "keep.log", False, False),  # the last matching line wins
        (["!keep.log", "*.log"], "keep.log", False, True),
        (["[z-a"], "[z-a", False, True),  # an unclosed bracket is literal
    ],
)
def test_rules(lines: list[str], path: str, is_dir: bool, ignored: bool) -> None:
    assert ignores(*lines).ignored(path, path.rsplit("/", 1)[-1], is_dir) is ignored


def test_deeper_files_and_leads() -> None:
    top = compile_ignore(["*.tmp", "/sub/gen"])
    below = compile_ignore(["!keep.tmp"])
    assert top and below
    # walk rooted at <top>/sub: the top file sees paths with the lead "sub/"
    ign = Ignores((Layer(below, "", 0), Layer(top, "sub/", 0)))
    assert ign.ignored("gen", "gen", False)
    assert ign.ignored("x.tmp", "x.tmp", False)
    assert not ign.ignored("keep.tmp", "keep.tmp", False)
    assert not ign.ignored("other", "other", False)


def test_a_star_ignores_everything_in_its_folder() -> None:
    assert ignores("*").ignores_everything_in("venv/")
    assert not ignores("*.pyc", "__pycache__/").ignores_everything_in("venv/")


def test_no_rules_or_too_many_are_not_honoured() -> None:
    assert compile_ignore(["", "# only a comment", "   "]) is None
    assert compile_ignore([f"f{i}" for i in range(5000)]) is None


# --- reading an ignore file where the OS has no O_NOFOLLOW (Windows) ------------------------
# platform.NOFOLLOW is 0 there; set to 0 here (a simulation of that one flag), the reader
# must refuse a link and a non-regular file by their status, before it opens anything.


@pytest.mark.parametrize("nofollow", ["posix", "none"])
def test_ignore_rules_are_read_from_a_regular_file_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nofollow: str
) -> None:
    if nofollow == "none":
        monkeypatch.setattr(platform, "NOFOLLOW", 0)
    secret = tmp_path / "outside.txt"
    secret.write_text("TOKEN=abc\n")
    (tmp_path / "rules").write_text("*.log\nbuild/\n")
    (tmp_path / "link").symlink_to(secret)
    os.mkfifo(tmp_path / "fifo")
    assert read_rules(str(tmp_path / "rules")) == ["*.log", "build/"]
    assert read_rules(str(tmp_path / "link")) is None
    assert read_rules(str(tmp_path / "fifo")) is None  # and it did not hang
    assert read_rules(str(tmp_path / "missing")) is None
