"""Case-insensitive file systems (issue 15 item 3): containment and the secret filter compare as
the file system does, detected per root.

This kernel has no case-folding mount (no casefold ext4/tmpfs, no vfat), so a folding root is
simulated: ``case_insensitive=True`` tells policy what the probe would find on macOS/Windows,
and the probe itself is shown a case-swapped hard link, which stats as the same file exactly as
a case-swapped name does on a folding file system.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from filegate.errors import PathError
from filegate.policy.workspace import Workspace, folds_case


def swapped(p: Path) -> str:
    return str(p).swapcase()


def test_a_folding_root_contains_its_paths_in_any_case(ws: Path) -> None:
    (ws / "a.txt").write_text("x")
    folding = Workspace(ws, confine=True, case_insensitive=True)
    assert folding.contains(swapped(ws / "a.txt"))
    assert folding.contains(str(ws).upper())
    assert not folding.contains(str(ws).upper() + "-EVIL/a.txt")


def test_a_case_sensitive_root_does_not(ws: Path) -> None:
    sensitive = Workspace(ws, confine=True, case_insensitive=False)
    assert not sensitive.contains(swapped(ws / "a.txt"))
    with pytest.raises(PathError, match="outside the workspace"):
        sensitive.resolve(swapped(ws / "a.txt"))


def test_confine_takes_another_spelling_of_the_workspace_on_a_folding_root(ws: Path) -> None:
    rp = Workspace(ws, confine=True, case_insensitive=True).resolve(swapped(ws / "a.txt"))
    assert rp.inside


def test_the_secret_filter_catches_every_case_of_a_secret(ws: Path) -> None:
    for case_insensitive in (True, False):
        w = Workspace(ws, case_insensitive=case_insensitive)
        for name in (".ENV", ".Env", "ID_RSA", ".AWS/Credentials", "KEY.PEM", ".Git/CONFIG"):
            assert w.resolve(name).sensitive, name
            with pytest.raises(PathError, match="appears to contain secrets"):
                w.resolve_for_read(name)


def test_roots_narrow_across_case_on_a_folding_root(ws: Path) -> None:
    (ws / "sub").mkdir()
    folding = Workspace(ws, case_insensitive=True).narrowed([Path(str(ws).upper())])
    assert folding.dirs and folding.contains(str(ws / "sub" / "x"))


def test_the_probe_finds_this_machines_file_system_case_sensitive(ws: Path) -> None:
    (ws / "Readme.md").write_text("x")
    folds_case.cache_clear()
    assert folds_case(str(ws)) is False
    assert Workspace(ws).folds_case(str(ws)) is False


def test_the_probe_finds_a_root_folding_when_a_swapped_name_is_the_same_file(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "Notes").write_text("x")
    os.link(root / "Notes", root / "nOTES")  # what a folding file system shows for either spelling
    folds_case.cache_clear()
    assert folds_case(str(root)) is True
    w = Workspace(Path(os.path.realpath(root)), confine=True)
    assert w.contains(str(w.workdir).swapcase() + "/Notes")


def test_the_probe_uses_the_roots_own_name_when_it_has_no_cased_entries(tmp_path: Path) -> None:
    (tmp_path / "Root").mkdir()
    (tmp_path / "Root" / "123").write_text("x")
    folds_case.cache_clear()
    assert folds_case(str(tmp_path / "Root")) is False
    os.symlink("Root", tmp_path / "rOOT")  # lstat differs: a symlink is not the same entry
    folds_case.cache_clear()
    assert folds_case(str(tmp_path / "Root")) is False
