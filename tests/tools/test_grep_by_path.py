"""Grep's walk of a tree by path, where the platform has no dir_fd (Windows; issue 29): the same
gate as the walk by descriptor. Run directly (the walk takes ``top_path``) on every platform,
and through the tools under FILEGATE_SIMULATE=no-dirfd (.ci/run)."""

from __future__ import annotations

import os
from pathlib import Path

from filegate.fsio import platform
from filegate.policy.secrets import SecretMatcher
from filegate.tools.grep import walk as grep_walk
from filegate.tools.grep.walk import Secrets, walk_tree


def _secrets(top: Path) -> Secrets:
    matcher = SecretMatcher()  # the default patterns: `.env` among them
    return Secrets(str(top), matcher.is_sensitive, hash(matcher.patterns), matcher.patterns)


def _walk(top: Path, path: Path | None = None) -> grep_walk.TreeIgnores:
    grep_walk._REMEMBERED.clear()  # each walk lists anew
    fd = os.open(top, os.O_RDONLY)
    try:
        return walk_tree(fd, _secrets(top), top_path=str(path or top))
    finally:
        os.close(fd)


def test_the_walk_by_path_finds_what_the_walk_by_descriptor_finds(tmp_path: Path, outside: Path) -> None:
    top = Path(os.path.realpath(tmp_path / "t"))
    for d in ("a/b", ".git", "c"):
        (top / d).mkdir(parents=True)
    (top / ".gitignore").write_text("*.log\n")
    (top / "a/b/.gitignore").write_text("x\n")
    (top / "a/.env").write_text("SECRET\n")
    (top / ".git/.env").write_text("in a VCS folder: never walked\n")
    (top / "c/.gitignore").symlink_to(outside / "secret.txt")  # a link: never honoured
    (top / "link").symlink_to(outside, target_is_directory=True)  # not followed
    (outside / ".env").write_text("OUTSIDE\n")
    by_path = _walk(top)
    if platform.has_dir_fd():  # not under FILEGATE_SIMULATE=no-dirfd: there is no walk by descriptor
        grep_walk._REMEMBERED.clear()
        fd = os.open(top, os.O_RDONLY)
        try:
            by_fd = walk_tree(fd, _secrets(top))
        finally:
            os.close(fd)
        assert by_path == by_fd
    assert by_path.regular == ["", "a/b"] and by_path.unsafe == 1 and by_path.sensitive == ["a/.env"]
    assert by_path.complete


def test_a_top_path_that_is_not_the_pinned_directory_stops_the_walk(tmp_path: Path) -> None:
    """The path was swapped (another directory now at the checked path): nothing is trusted,
    so rg reads no ignore file itself and the rules come from the checked files only."""
    top, other = tmp_path / "top", tmp_path / "other"
    top.mkdir()
    other.mkdir()
    (other / ".gitignore").write_text("*\n")
    found = _walk(top, other)
    assert not found.complete and found.regular == []


def test_a_directory_reached_through_a_link_is_not_listed(tmp_path: Path, outside: Path) -> None:
    top = Path(os.path.realpath(tmp_path / "top"))
    top.mkdir()
    (outside / ".env").write_text("OUTSIDE\n")
    # The walk's top named through a link: its real path differs, so it is not listed at all.
    alias = tmp_path / "alias"
    alias.symlink_to(top, target_is_directory=True)
    (top / ".gitignore").write_text("x\n")
    found = _walk(top, alias)
    assert found.regular == [] and found.sensitive == []
