"""Resolution and containment at its edges (SPEC §2.1–2.5, §2.8): the exact sentence and brief
of each refusal, what a ResolvedPath holds, containment at '/', root narrowing without
duplicates, and how a long path is quoted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from filegate.errors import PathError
from filegate.policy.secrets import SecretMatcher
from filegate.policy.workspace import MAX_SHOWN_PATH, ResolvedPath, Workspace, abbreviate


def refusal(call: object) -> PathError:
    assert callable(call)
    with pytest.raises(PathError) as err:
        call()
    return err.value


def test_a_resolved_path_holds_the_shown_spelling_the_real_path_and_its_facts(
    ws: Path, outside: Path
) -> None:
    (ws / "a").mkdir()
    (ws / "a" / "f.txt").write_text("x")
    (ws / "link").symlink_to(outside / "secret.txt")
    w = Workspace(ws)
    assert w.resolve("a/../a/f.txt") == ResolvedPath("a/../a/f.txt", ws / "a" / "f.txt", True, False)
    assert w.resolve(str(ws / "link")) == ResolvedPath(str(ws / "link"), outside / "secret.txt", False, False)
    assert w.resolve(".env") == ResolvedPath(".env", ws / ".env", True, True)
    assert Workspace(ws, secrets=SecretMatcher(["*.txt"])).resolve("a/f.txt").sensitive


def test_each_refusal_says_kimis_sentence_with_its_brief(ws: Path, outside: Path) -> None:
    w = Workspace(ws)
    confined = Workspace(ws, confine=True)
    cases = [
        (lambda: w.resolve(""), "File path cannot be empty.", "Empty file path"),
        (
            lambda: w.resolve("../outside/x"),
            "`../outside/x` is not an absolute path. You must provide an absolute path to read a file "
            "outside the working directory.",
            "Invalid path",
        ),
        (
            lambda: w.resolve("../outside/x", "search"),
            "`../outside/x` is not an absolute path. You must provide an absolute path to search "
            "outside the working directory.",
            "Invalid path",
        ),
        (
            lambda: confined.resolve(str(outside / "x")),
            f"`{outside / 'x'}` is outside the workspace. This server is confined to its working "
            "directory and --add-dir directories.",
            "Path outside workspace",
        ),
        (
            lambda: w.resolve("a\0b"),
            "`a\\x00b` contains a NUL byte, which no file path can hold.",
            "Invalid path",
        ),
        (
            lambda: w.resolve("a\ud800b"),
            "`a\\ud800b` contains a lone UTF-16 surrogate, which no file path can hold.",
            "Invalid path",
        ),
        (
            lambda: w.resolve_search_dir("rel/dir"),
            "`rel/dir` is not an absolute path. You must provide an absolute path to search.",
            "Invalid directory",
        ),
        (
            lambda: w.resolve_search_dir(str(outside)),
            f"`{outside}` is outside the workspace. You can only search within the working "
            "directory and additional directories.",
            "Directory outside workspace",
        ),
        (
            lambda: w.resolve_search_dir(str(ws / "nope")),
            f"`{ws / 'nope'}` does not exist.",
            "Directory not found",
        ),
        (
            lambda: w.narrowed([outside]).resolve_search_dir(None),
            "The working directory is outside the roots this client offered. Pass `directory`: an "
            "absolute path inside one of the roots.",
            "Directory outside roots",
        ),
        (
            lambda: w.resolve_search_dir("x\0"),
            "`x\\x00` contains a NUL byte, which no file path can hold.",
            "Invalid path",
        ),
    ]
    for call, message, brief in cases:
        err = refusal(call)
        assert (err.message, err.brief) == (message, brief)


def test_the_search_dir_resolves_its_symlinks_and_keeps_the_shown_spelling(ws: Path) -> None:
    (ws / "real").mkdir()
    (ws / "via").symlink_to(ws / "real")
    assert Workspace(ws).resolve_search_dir(str(ws / "via")) == (str(ws / "via"), ws / "real")
    f = ws / "file"
    f.write_text("x")
    err = refusal(lambda: Workspace(ws).resolve_search_dir(str(f)))
    assert (err.message, err.brief) == (f"`{f}` is not a directory.", "Invalid directory")


def test_tilde_expands_in_the_search_dir_too(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(ws))
    assert Workspace(ws).resolve_search_dir("~") == ("~", ws)  # shown as written (§2.9)
    assert Workspace(ws).resolve("~/x.txt").real == ws / "x.txt"


def test_a_path_is_quoted_whole_up_to_300_characters_then_by_its_ends() -> None:
    exact = "p" * MAX_SHOWN_PATH
    assert abbreviate(exact) == exact
    longer = "s" * 200 + "m" * 21 + "e" * 80
    assert abbreviate(longer) == "s" * 200 + "…" + "e" * 80
    assert abbreviate("a\nb") == "a\\x0ab"
    assert len(abbreviate("\n" * 100)) == 200 + 1 + 80  # escaped first, then cut


def test_everything_is_inside_a_workspace_rooted_at_slash(tmp_path: Path) -> None:
    w = Workspace(Path("/"))
    assert w.contains("/") and w.contains("/etc/passwd")
    assert w.display(Path("/")) == "."
    assert w.display(Path("/etc/passwd")) == "etc/passwd"


def test_containment_is_by_whole_components(ws: Path) -> None:
    w = Workspace(ws, add_dirs=(ws.parent / "extra",))
    assert w.contains(str(ws)) and w.contains(str(ws / "x"))
    assert not w.contains(str(ws) + "x") and not w.contains(str(ws.parent))
    assert w.contains(str(ws.parent / "extra" / "y")) and not w.contains(str(ws.parent / "extra2"))


def test_roots_narrow_to_each_overlap_once(ws: Path, outside: Path) -> None:
    (ws / "sub").mkdir()
    w = Workspace(ws, add_dirs=(outside,))
    narrowed = w.narrowed([ws / "sub", ws / "sub", outside.parent, ws])
    assert narrowed.dirs == (ws / "sub", ws, outside)
    assert (narrowed.workdir, narrowed.add_dirs, narrowed.confine) == (ws, (outside,), False)
    assert Workspace(ws, confine=True).narrowed([ws]).confine
    assert w.narrowed([]).dirs == ()
    # a root given through a symlink is its real directory
    (ws / "lnk").symlink_to(ws / "sub")
    assert w.narrowed([ws / "lnk"]).dirs == (ws / "sub",)


def test_a_missing_file_under_an_unescaped_directory_takes_the_unescaped_spelling(ws: Path) -> None:
    d = ws / os.fsdecode(b"caf\xe9")
    d.mkdir()
    got = Workspace(ws).resolve("caf\\xe9/new.txt", "write")
    assert got.real == d / "new.txt"
    assert got.shown == "caf\\xe9/new.txt"
    # neither the literal nor the unescaped directory exists: the escape is read
    assert Workspace(ws).resolve("no\\x41/new.txt", "write").real == ws / "noA" / "new.txt"


def test_a_reader_is_refused_a_secret_and_a_relative_path_outside_as_a_reader(ws: Path) -> None:
    w = Workspace(ws)
    err = refusal(lambda: w.resolve_for_read("sub/.env"))
    assert (err.message, err.brief) == (
        "`sub/.env` appears to contain secrets (matched sensitive file pattern). Reading this file is "
        "blocked to protect credentials.",
        "Sensitive file",
    )
    err = refusal(lambda: w.resolve_for_read("../x"))
    assert "You must provide an absolute path to read a file outside the working directory." in err.message
    assert w.resolve_for_read("notes.txt") == ResolvedPath("notes.txt", ws / "notes.txt", True, False)


def test_windows_refusals_of_a_search_dir_carry_its_brief_and_the_shown_path() -> None:
    from filegate.policy.pathrules import WINDOWS

    w = Workspace(Path("C:\\proj"), rules=WINDOWS, case_insensitive=True)
    device = refusal(lambda: w.resolve_search_dir("C:\\proj\\CON"))
    assert device.brief == "Invalid directory" and device.message.startswith("`C:\\proj\\CON` ")
    short = refusal(lambda: w.resolve_search_dir("C:\\proj\\PROGRA~1"))
    assert short.brief == "Invalid directory"
    assert short.message.startswith(
        "`C:\\proj\\PROGRA~1` has a part shaped like a Windows 8.3 short name (PROGRA~1)"
    )
    share = refusal(lambda: w.resolve_search_dir("\\\\evil\\share\\x"))
    assert share.brief == "Invalid directory" and "another machine's share" in share.message
