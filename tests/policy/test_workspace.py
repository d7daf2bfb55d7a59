"""Path rules of SPEC §2 on real directories and symlinks (the policy layer alone)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from filegate.policy.workspace import PathError, Workspace, open_regular


def test_relative_paths_resolve_against_the_workdir_not_the_process_cwd(ws: Path) -> None:
    (ws / "a.txt").write_text("x")
    rp = Workspace(ws).resolve("a.txt")
    assert rp.real == ws / "a.txt" and rp.inside and rp.shown == "a.txt"


def test_sibling_with_common_prefix_is_outside(tmp_path: Path, ws: Path) -> None:
    evil = Path(str(ws) + "-evil")
    evil.mkdir()
    (evil / "f").write_text("x")
    rp = Workspace(ws).resolve(str(evil / "f"))
    assert not rp.inside
    with pytest.raises(PathError, match="outside the workspace"):
        Workspace(ws, confine=True).resolve(str(evil / "f"))


def test_symlink_pointing_out_is_judged_by_its_target(ws: Path, outside: Path) -> None:
    (ws / "link").symlink_to(outside / "secret.txt")
    with pytest.raises(PathError, match="is not an absolute path"):
        Workspace(ws).resolve("link")


def test_symlink_named_innocently_pointing_at_a_secret_is_sensitive(ws: Path) -> None:
    (ws / ".env").write_text("K=V")
    (ws / "notes").symlink_to(ws / ".env")
    assert Workspace(ws).resolve("notes").sensitive


def test_roots_only_narrow_the_workspace(ws: Path, outside: Path) -> None:
    (ws / "sub").mkdir()
    narrowed = Workspace(ws).narrowed([ws / "sub", outside, Path("/")])
    assert set(narrowed.dirs) == {ws / "sub", ws}
    only_sub = Workspace(ws).narrowed([ws / "sub"])
    assert only_sub.dirs == (ws / "sub",)
    assert not only_sub.contains(str(ws / "other"))
    assert Workspace(ws).narrowed([outside]).dirs == ()


def test_open_regular_refuses_fifos_without_blocking(ws: Path) -> None:
    os.mkfifo(ws / "fifo")
    with pytest.raises(PathError, match="is not a file"):
        open_regular(Workspace(ws).resolve("fifo"))


def test_open_regular_refuses_a_symlink_swapped_in_after_the_check(ws: Path, outside: Path) -> None:
    (ws / "d").mkdir()
    (ws / "d" / "f.txt").write_text("inside")
    rp = Workspace(ws).resolve("d/f.txt")
    (ws / "d").rename(ws / "d-old")
    (ws / "d").symlink_to(outside)  # the checked path now leads outside
    (outside / "f.txt").write_text("OUTSIDE")
    with pytest.raises(PathError, match="symlink"):
        open_regular(rp)


def test_nul_byte_and_empty_path_are_refused(ws: Path) -> None:
    with pytest.raises(PathError, match="NUL byte"):
        Workspace(ws).resolve("a\0b")
    with pytest.raises(PathError, match="File path cannot be empty."):
        Workspace(ws).resolve("")


def test_a_huge_path_is_quoted_by_its_ends(ws: Path) -> None:
    raw = "../" + "x" * 100_000
    with pytest.raises(PathError) as err:
        Workspace(ws).resolve(raw)
    assert len(str(err.value)) < 500 and "…" in str(err.value)
