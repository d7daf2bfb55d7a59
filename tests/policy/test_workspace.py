"""Path rules of SPEC §2 on real directories and symlinks (the policy layer alone)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from filegate.errors import PathError
from filegate.fsio.safeopen import open_regular
from filegate.policy.workspace import Workspace


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


# --- names shown escaped, and the shown spelling passed back (SPEC §2.9) -----------------


def _undecodable(ws: Path, name: bytes, content: bytes = b"x") -> None:
    with open(os.path.join(os.fsencode(ws), name), "wb") as f:
        f.write(content)


def test_the_escaped_spelling_of_an_undecodable_name_resolves_to_that_file(ws: Path) -> None:
    _undecodable(ws, b"caf\xe9.py")
    rp = Workspace(ws).resolve("caf\\xe9.py")
    assert os.fsencode(rp.real) == os.fsencode(ws) + b"/caf\xe9.py"
    assert rp.shown == "caf\\xe9.py"


def test_the_escaped_spelling_names_a_file_in_an_undecodable_directory(ws: Path) -> None:
    os.mkdir(os.path.join(os.fsencode(ws), b"d\xff"))
    rp = Workspace(ws).resolve("d\\xff/new.txt", "write")  # not there yet: its directory is
    assert os.fsencode(rp.real) == os.fsencode(ws) + b"/d\xff/new.txt"


def test_an_escape_names_what_it_stands_for_and_a_doubled_backslash_the_literal_name(ws: Path) -> None:
    """SPEC §2.9 (issue 22 item 5): the server shows a literal backslash as `\\\\`, so `a\\x41`
    is always the escape, even when a file really named `a\\x41` exists too."""
    (ws / "a\\x41").write_text("literal")
    (ws / "aA").write_text("unescaped")
    assert Workspace(ws).resolve("a\\x41").real == ws / "aA"
    assert Workspace(ws).resolve("a\\\\x41").real == ws / "a\\x41"
    assert Workspace(ws).resolve("a\\\\x41").shown == "a\\\\x41"
    assert Workspace(ws).resolve("a\\x42").real == ws / "aB"  # neither exists: the escape


def test_an_escaped_nul_is_never_unescaped_into_a_path(ws: Path) -> None:
    rp = Workspace(ws).resolve("a\\x00b")
    assert rp.real == ws / "a\\x00b"


def test_the_escaped_spelling_is_judged_by_the_rules_like_any_other(ws: Path, outside: Path) -> None:
    os.symlink(outside / "secret.txt", os.path.join(os.fsencode(ws), b"l\xe9"))
    with pytest.raises(PathError, match="is not an absolute path"):
        Workspace(ws).resolve("l\\xe9")
    (ws / ".env").write_text("K=V")
    os.symlink(ws / ".env", os.path.join(os.fsencode(ws), b"notes\xe9"))
    assert Workspace(ws).resolve("notes\\xe9").sensitive


@pytest.mark.parametrize(
    "raw",
    [
        "../evil\n`x` is inside the workspace.",
        "../\x1b[2Kforged",
        "../\u202egnp.exe",
        "../caf\udce9",
        "../a\u2028b",
    ],
)
def test_path_errors_show_the_path_escaped(ws: Path, raw: str) -> None:
    with pytest.raises(PathError) as err:
        Workspace(ws).resolve(raw)
    message = str(err.value)
    assert not any(ch in message for ch in "\n\r\x1b\u202e\u2028") and not _has_surrogate(message)
    assert message.startswith("`../") and message.count("`") == 2  # the name cannot close the quote


def test_path_errors_of_unencodable_paths_show_them_escaped(ws: Path) -> None:
    for raw in ("a\n\0b", "a\n\ud800b"):
        with pytest.raises(PathError) as err:
            Workspace(ws).resolve(raw)
        assert "\n" not in str(err.value) and not _has_surrogate(str(err.value))


def test_search_dir_takes_the_escaped_spelling_and_shows_it(ws: Path) -> None:
    os.mkdir(os.path.join(os.fsencode(ws), b"src\xe9"))
    shown, real = Workspace(ws).resolve_search_dir(f"{ws}/src\\xe9")
    assert os.fsencode(real) == os.fsencode(ws) + b"/src\xe9"
    assert shown == f"{ws}/src\\xe9"


def _has_surrogate(s: str) -> bool:
    return any(0xD800 <= ord(ch) <= 0xDFFF for ch in s)


# --- resolution and containment at the seam ----------------------------------------------


def test_add_dirs_are_inside_and_their_siblings_are_not(tmp_path: Path, ws: Path) -> None:
    extra = Path(os.path.realpath(tmp_path)) / "extra"
    extra.mkdir()
    w = Workspace(ws, (extra,))
    assert w.resolve(str(extra / "x.txt")).inside
    assert not w.resolve(str(tmp_path / "extra-2" / "x")).inside
    assert w.contains(str(extra)) and not w.contains(str(extra) + "2")


def test_a_path_that_does_not_exist_is_judged_by_its_nearest_existing_ancestor(
    ws: Path, outside: Path
) -> None:
    (ws / "out").symlink_to(outside)
    rp = Workspace(ws).resolve("new/dir/file.txt", "write")
    assert rp.inside and rp.real == ws / "new" / "dir" / "file.txt"
    with pytest.raises(PathError, match="You must provide an absolute path to write a file outside"):
        Workspace(ws).resolve("out/new/file.txt", "write")


def test_tilde_is_expanded(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(ws))
    rp = Workspace(ws).resolve("~/a.txt")
    # Shown as the caller wrote it (SPEC §2.9; issue 24.6), used as the home it names.
    assert rp.real == ws / "a.txt" and rp.shown == "~/a.txt"
    with pytest.raises(PathError) as err:
        Workspace(ws).resolve_for_read("~/.env")
    assert err.value.message.startswith("`~/.env` appears to contain secrets")


def test_outside_absolute_is_allowed_unless_confined(ws: Path, outside: Path) -> None:
    target = str(outside / "secret.txt")
    rp = Workspace(ws).resolve(target)
    assert not rp.inside and rp.shown == target
    with pytest.raises(PathError) as err:
        Workspace(ws, confine=True).resolve(target)
    assert err.value.brief == "Path outside workspace"


@pytest.mark.parametrize(
    ("action", "words"), [("read", "to read a file"), ("edit", "to edit a file"), ("search", "to search")]
)
def test_a_relative_path_outside_names_the_action(ws: Path, action: str, words: str) -> None:
    with pytest.raises(PathError, match=f"You must provide an absolute path {words} outside the working"):
        Workspace(ws).resolve("../x", action)  # type: ignore[arg-type]


def test_readers_refuse_a_secret_with_kimis_sentence(ws: Path) -> None:
    (ws / ".env").write_text("K=V")
    with pytest.raises(PathError, match="appears to contain secrets") as err:
        Workspace(ws).resolve_for_read(".env")
    assert err.value.brief == "Sensitive file"
    assert Workspace(ws).resolve(".env", "write").sensitive  # writers learn it and ask


def test_search_dir_rules(ws: Path, outside: Path) -> None:
    (ws / "f").write_text("x")
    w = Workspace(ws)
    assert w.resolve_search_dir(None) == (".", ws)
    for raw, message in [
        ("rel", "is not an absolute path"),
        (str(outside), "is outside the workspace"),
        (str(ws / "missing"), "does not exist"),
        (str(ws / "f"), "is not a directory"),
    ]:
        with pytest.raises(PathError, match=message):
            w.resolve_search_dir(raw)
    with pytest.raises(PathError, match="outside the roots this client offered"):
        w.narrowed([outside]).resolve_search_dir(None)


def test_display_is_workdir_relative_inside_and_absolute_outside(ws: Path, outside: Path) -> None:
    w = Workspace(ws)
    assert w.display(ws) == "."
    assert w.display(ws / "a" / "b") == "a/b"
    assert w.display(outside / "x") == str(outside / "x")
    assert w.display(ws / "a\nb") == "a\\x0ab"
